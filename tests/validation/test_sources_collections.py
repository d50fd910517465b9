"""Result collections written before their values (validation/to_predict/, branch src-pp): LocalScore's per-test
results and optimum-benchmark's Llama-2 tables load as the predictors read them, with the conditions their sources
state, and the two profiles added for LocalScore count the released models' parameters."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.inputs.facts import load_facts
from planner.validation.measured import load_measurements, plan_for, validation_models

TO_PREDICT = ROOT_DIR / "validation" / "to_predict"

# LocalScore's nine tests (n_prompt, n_gen): Mozilla-Ocho/llamafile localscore/localscore.cpp
# get_baseline_test_configs(), the same list as cjpais/LocalScore's TestDescriptionsTable
LOCALSCORE_TESTS = {(1024, 16), (4096, 256), (2048, 256), (2048, 768), (1024, 1024), (1280, 3072), (384, 1152),
                    (64, 1024), (16, 1536)}


def test_localscore_rows_are_the_nine_tests_of_three_models_on_one_rtx_3090():
    rows = load_measurements(TO_PREDICT / "localscore-testdb-rtx3090.yaml", measured=False)
    assert len(rows) == 3 * 9 * 2
    assert {(r.gpu, r.gpus, r.batch, r.framework, r.precision, r.attention, r.build) for r in rows} == {
        ("rtx-3090", 1, 1, "llama.cpp", "q4_k_m", "manual", 3599)}
    for model in ("llama-3-8b", "qwen2.5-14b", "llama-3.2-1b"):
        mine = [r for r in rows if r.model == model]
        assert {(r.prompt_tokens, r.gen_tokens) for r in mine if r.regime == "decode"} == LOCALSCORE_TESTS
        # a test's prefill row is its prompt alone
        assert {(r.prompt_tokens, r.gen_tokens) for r in mine if r.regime == "prefill"} == {
            (p, 0) for p, _ in LOCALSCORE_TESTS}
    assert {r.metric for r in rows} == {"tokens_per_s"}
    plan, _, _ = plan_for(rows[0], validation_models(), load_facts().rules)
    assert plan.runtime == "llama.cpp"


def test_llama_3_2_1b_q4_k_m_bits_follow_llama_cpp_type_rule():
    # llama.cpp's Q4_K_M (llama_tensor_get_type): Q4_K = 144 bytes / 256 weights, Q6_K = 210 / 256; Q6_K for the tied
    # embedding (it is the output matrix) and for attn_v and ffn_down of the layers use_more_bits picks: of 16, i < 2,
    # i >= 14 and (i - 2) % 3 == 2, i.e. 0, 1, 4, 7, 10, 13, 14, 15 (8 layers); norms f32.
    q4, q6 = 144 / 256, 210 / 256
    more = 8
    per_layer_q4 = 2 * 2048 * 2048 + 2048 * 512 + 2 * 2048 * 8192  # q, o, k, gate, up
    v_down = 2048 * 512 + 2048 * 8192
    weights = (128256 * 2048 * q6 + 16 * per_layer_q4 * q4 + more * v_down * q6 + (16 - more) * v_down * q4
               + 4 * (16 * 2 * 2048 + 2048))
    params = validation_models().get("llama-3.2-1b").params
    rows = load_measurements(TO_PREDICT / "localscore-testdb-rtx3090.yaml", measured=False)
    (bits,) = {r.weight_bits for r in rows if r.model == "llama-3.2-1b"}
    assert round(weights * 8 / params, 2) == bits
    assert 5.1 < bits < 5.3  # above Llama-3-8B's 4.90: the Q6_K embedding is a fifth of a 1B model


def test_localscore_profiles_count_the_parameters_llama_cpp_reports():
    # LocalScore's database stores llama.cpp's parameter counts of the GGUFs: 14,770,033,664 for Qwen2.5-14B (its
    # q/k/v biases, 48 x (5120 + 2 x 1024) = 344,064, are not a field of the decoder kind) and 1,498,483,200 for
    # Llama-3.2-1B, whose tied 128,256 x 2048 embedding llama.cpp counts twice (once more as the output matrix) and
    # whose Llama-3 RoPE frequency factors (rope_freqs, head_dim / 2 = 32 values) it counts once per layer (16 x 32).
    models = validation_models()
    assert models.get("qwen2.5-14b").params == 14_770_033_664 - 48 * (5120 + 2 * 1024)
    assert models.get("llama-3.2-1b").params == 1_498_483_200 - 128256 * 2048 - 16 * 32


def test_optimum_benchmark_rows_are_forwards_and_generations_of_256_token_prompts_on_an_a100():
    rows = load_measurements(TO_PREDICT / "optimum-benchmark-running-llamas-a100.yaml", measured=False)
    assert len(rows) == 2 * 3 * (7 + 6)  # prefill + decode, three attention variants, 7B at 7 batches, 13B at 6
    assert {(r.gpu, r.gpus, r.framework, r.precision, r.prompt_tokens) for r in rows} == {
        ("a100-sxm-80gb", 1, "hf-transformers", "fp16", 256)}
    assert {r.attention for r in rows} == {"manual", "sdpa", "flash-attn-2"}
    assert {(r.regime, r.metric, r.gen_tokens) for r in rows} == {
        ("prefill", "step_seconds", 0), ("decode", "tokens_per_s", 512)}
    assert {r.batch for r in rows if r.model == "llama-2-7b"} == {1, 2, 4, 8, 16, 32, 64}
    assert {r.batch for r in rows if r.model == "llama-2-13b"} == {1, 2, 4, 8, 16, 32}
    plan, _, _ = plan_for(rows[-1], validation_models(), load_facts().rules)
    assert plan.runtime == "pytorch-eager" and plan.batch == rows[-1].batch
