"""Serving sources of round 3, written before their values (branch srv-round3, validation/serving/to_predict/):
each file loads as planner.validation.serving_first reads it, names what the planner has, and its rows carry the
conditions their sources state."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.validation.measured import validation_models
from planner.validation.serving_first import load_rows

SERVING = ROOT_DIR / "validation" / "serving" / "to_predict"
LAMBDA = SERVING / "lambda-vllm054-burst320.yaml"
DSTACK = SERVING / "dstack-deepseek-r1-offline.yaml"
D405 = SERVING / "dstack-llama31-405b-h100-mi300x.yaml"


def test_lambda_rows_are_bursts_of_320_under_vllm_054():
    rows = load_rows(LAMBDA)
    # 4 models x 8 GPU counts, less Mixtral on one A100 and one H100 (N/A in the table)
    assert len(rows) == 30
    assert all(r.metric == "saturation_output_tokens_per_s" and r.requests == 320 and r.engine == "v0-sync"
               for r in rows)
    # vLLM 0.5.4 without chunked prefill at max_model_len <= 2,048: max(max_model_len, 2048) tokens a step
    assert {(r.token_budget, r.chunked_prefill, r.max_num_seqs) for r in rows} == {(2048, False, 1024)}
    assert {r.tp for r in rows} == {1, 2, 4, 8}
    assert not [r for r in rows if r.model == "mixtral-8x7b" and r.tp == 1]
    # the seed-0 320-prompt ShareGPT sample: 65,578 Llama-3 tokens / 320 = 204.9 -> 205; 73,671 Mistral tokens / 320
    # = 230.2 -> 230
    assert {r.model: r.input_tokens for r in rows} == {"llama-3-8b": 205, "llama-3-70b": 205, "mistral-7b": 230,
                                                       "mixtral-8x7b": 230}
    # FP8 checkpoints for the Llama rows (weight-only FP8-Marlin on the A100s), bf16 for the Mistral ones
    assert {(r.model, r.precision) for r in rows} == {("llama-3-8b", "fp8"), ("llama-3-70b", "fp8"),
                                                      ("mistral-7b", "bf16"), ("mixtral-8x7b", "bf16")}


def test_dstack_rows_are_deepseek_bursts_at_tp8_with_fixed_lengths():
    rows = load_rows(DSTACK)
    # 8 x H200: SGLang 32-1,024 prompts at 800 out (6) + 256/512/1,024 at 1,600 and 3,200 (6); vLLM 6 + 3 (no 3,200);
    # 8 x MI300X: 32-1,024 at 800 and 1,600 (12) + 256/512/1,024 at 3,200 (3), for each engine
    assert len(rows) == 12 + 9 + 15 + 15
    assert all((r.model, r.tp, r.precision, r.input_tokens, r.lengths) == ("deepseek-v3", 8, "fp8", 3200, "fixed")
               for r in rows)
    assert {r.requests for r in rows} == {32, 64, 128, 256, 512, 1024}
    assert {r.output_tokens for r in rows} == {800, 1600, 3200}
    # vLLM 0.7 offline at --max-model-len 32768, no chunked prefill: max(32768, 2048) tokens a step, 256 sequences
    assert {(r.engine, r.max_num_seqs, r.token_budget, r.chunked_prefill) for r in rows if r.runtime == "vllm"} == {
        ("v0", 256, 32768, False)}
    assert {r.token_budget for r in rows if r.runtime == "sglang"} == {8192}
    assert {r.gpu for r in rows} == {"h200-sxm", "mi300x"}


def test_llama31_405b_profile_has_the_released_shape():
    # 126 x (16384 x (16384 + 2 x 8 x 128) + 16384^2 + 3 x 16384 x 53248) + 2 x 128256 x 16384 = 405.85e9
    layer = 16384 * (16384 + 2 * 8 * 128) + 16384 ** 2 + 3 * 16384 * 53248
    assert 126 * layer + 2 * 128256 * 16384 == 405_849_243_648
    m = validation_models().get("llama-3.1-405b")
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.vocab) == (126, 16384, 128, 8, 53248, 128256)


def test_dstack_405b_rows_split_into_rates_bursts_and_offline_runs():
    rows = load_rows(D405)
    assert len(rows) == 69 and {r.model for r in rows} == {"llama-3.1-405b"}
    rated = [r for r in rows if r.rate is not None]
    # 2 GPUs x rates 16 and 32 x (TTFT, TPOT, output tokens/s); every rate run served 1,000 ShareGPT requests
    assert len(rated) == 12 and {r.rate for r in rated} == {16.0, 32.0}
    assert {(r.requests, r.lengths, r.input_tokens) for r in rated} == {(1000, "sharegpt", 215)}
    # the MI300X server: no chunked prefill, 15 scheduler steps, 1,024 sequences, budget max(131072, 2048)
    assert {(r.scheduler_steps, r.chunked_prefill, r.max_num_seqs, r.token_budget) for r in rows
            if r.gpu == "mi300x" and r.rate is not None} == {(15, False, 1024, 131072)}
    offline = [r for r in rows if "-offline-" in r.id]
    assert len(offline) == 17 + 19 + 19 and {r.output_tokens for r in offline} == {2048}
    assert {r.input_tokens for r in offline} == {128, 2048, 32784}
    # --max-model-len 91680 > 32K: vLLM 0.6 turns chunked prefill on, 512 tokens a step by default
    assert {(r.chunked_prefill, r.token_budget) for r in offline} == {(True, 512)}
    assert {r.tp for r in offline if r.gpu == "mi300x"} == {4, 8}
