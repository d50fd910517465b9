"""Sources from web pages and documentation written before their values (validation/to_predict/, branch src-web):
each file loads as the predictors read it, its rows carry the conditions their pages state, and the Qwen3 profiles
added for them count the released models' parameters."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.inputs.facts import load_facts
from planner.validation.measured import load_measurements, plan_for, validation_models

TO_PREDICT = ROOT_DIR / "validation" / "to_predict"


def test_qwen3_page_rows_are_batch1_generations_of_2048_after_the_page_inputs():
    rows = load_measurements(TO_PREDICT / "qwen3-speed-benchmark-h20.yaml", measured=False)
    # 6 dense models + the MoE, 4 inputs each: BF16 and FP8 for all 7, AWQ for the 4 sizes the page ran it on
    assert len(rows) == 7 * 4 * 2 + 4 * 4
    assert {(r.gpu, r.gpus, r.batch, r.gen_tokens, r.framework) for r in rows} == {
        ("h20", 1, 1, 2048, "hf-transformers")}
    assert {r.prompt_tokens for r in rows} == {1, 6144, 14336, 30720}
    awq = {r.model for r in rows if r.precision == "awq-gemm"}
    assert awq == {"qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b"}
    # the page's script: attn_implementation flash_attention_2
    assert {r.attention for r in rows} == {"flash-attn-2"}
    plan, _, _ = plan_for(rows[0], validation_models(), load_facts().rules)
    assert plan.runtime == "pytorch-eager"


def test_qwen3_small_profile_counts_the_released_parameters_less_the_qk_norms():
    # Keras Hub's qwen3_0.6b_en preset: 596,049,920 parameters. The decoder kind has no per-head q/k RMSNorm
    # (2 x 128 weights a layer, 28 layers = 7,168), so the profile holds 596,049,920 - 7,168. By hand: a layer has
    # q and o 2 x 1024 x 2048, k and v 2 x 1024 x 1024, the SwiGLU MLP 3 x 1024 x 3072 and two norms of 1024:
    # 15,730,688; x 28 = 440,459,264, + the tied 151,936 x 1024 embedding (155,582,464) + the final norm (1,024)
    assert 28 * (2 * 1024 * 2048 + 2 * 1024 * 1024 + 3 * 1024 * 3072 + 2 * 1024) + 151936 * 1024 + 1024 \
        == 596_049_920 - 7_168
    assert validation_models().get("qwen3-0.6b").params == 596_049_920 - 7_168


def test_qwen3_moe_profile_routes_8_of_128_experts():
    # active per token, by hand: a layer's attention (q, o 2 x 2048 x 4096; k, v 2 x 2048 x 512) 18,874,368, 8
    # experts of 3 x 2048 x 768 = 37,748,736, the router 2048 x 128 = 262,144 and two norms 4,096: 56,889,344;
    # x 48 = 2,730,688,512, + embedding and untied head 2 x 151,936 x 2048 = 622,329,856, + the final norm 2,048
    model = validation_models().get("qwen3-30b-a3b")
    assert model.active_params == 48 * 56_889_344 + 622_329_856 + 2048 == 3_353_020_416
    assert model.params > 9 * model.active_params  # the other 120 experts of every layer


def test_nim_rows_are_one_request_on_two_h100_in_tensor_parallel():
    rows = load_measurements(TO_PREDICT / "nim-benchmarking-llama33-70b-h100.yaml", measured=False)
    assert len(rows) == 4
    assert {(r.gpu, r.gpus, r.batch, r.precision, r.framework) for r in rows} == {
        ("h100-sxm", 2, 1, "fp8", "tensorrt-llm")}
    # each table gives a TTFT (prefill of the input) and an output throughput (input then output tokens)
    assert {(r.regime, r.prompt_tokens, r.gen_tokens) for r in rows} == {
        ("prefill", 5000, 1), ("decode", 5000, 500), ("prefill", 500, 1), ("decode", 500, 2000)}
    plan, _, _ = plan_for(rows[1], validation_models(), load_facts().rules)
    assert (plan.runtime, plan.gpus, plan.parallel) == ("tensorrt-llm", 2, "tensor")
