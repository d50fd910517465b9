"""Serving sources of round 6 (branch g1-serving), written before their values (validation/serving/to_predict/):
each file loads as planner.validation.serving_first reads it, names what the planner has, and its rows carry the
conditions their sources state."""

from __future__ import annotations

from collections import Counter

from planner import ROOT_DIR
from planner.inputs.catalog import load_catalog
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import validation_models
from planner.validation.serving_first import load_rows

SERVING = ROOT_DIR / "validation" / "serving" / "to_predict"
LHL = SERVING / "lhl-mi300x-vllm064-llama31-405b-bursts.yaml"
REE = SERVING / "ree2raz-inference-bench-l4-a100.yaml"
WMX = SERVING / "wmx-vllm023-l4-qwen25-05b.yaml"
BURSTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)


def test_rows_name_models_gpus_and_runtimes_the_planner_has():
    models, catalog, schedulers = validation_models(), load_catalog(), load_schedulers()
    for row in load_rows(LHL) + load_rows(REE) + load_rows(WMX):
        models.get(row.model)
        catalog.get(row.gpu)
        schedulers.get(row.runtime)


def test_lhl_rows_are_four_servers_of_twelve_bursts_each():
    rows = load_rows(LHL)
    assert len(rows) == 4 * 12
    assert all((r.model, r.gpu, r.tp, r.precision, r.engine, r.metric) ==
               ("llama-3.1-405b", "mi300x", 8, "bf16", "v0", "saturation_output_tokens_per_s") for r in rows)
    assert Counter(r.requests for r in rows) == {n: 4 for n in BURSTS}
    # per server: (max_num_seqs, token_budget, chunked_prefill, scheduler_steps); defaults 256 sequences and vLLM 0.6's
    # 512-token chunked budget; the flags 1024 / 2048; the tuned server's whole prompts: max(131072, 2048) = 131,072
    assert {(r.max_num_seqs, r.token_budget, r.chunked_prefill, r.scheduler_steps) for r in rows} == {
        (256, 512, True, 1), (1024, 1024, True, 1), (2048, 2048, True, 1), (2048, 131072, False, 15)}
    # the first three servers' prompts total 163,741 tokens at 2,048 requests: 79.95 -> 80 a request
    assert {r.input_tokens for r in rows if r.requests == 2048 and r.scheduler_steps == 1} == {80}


def test_ree2raz_rows_are_closed_loops_with_estimated_inputs():
    rows = load_rows(REE)
    assert len(rows) == 74
    assert Counter(r.metric for r in rows) == {"ttft_median_ms": 22, "tpot_median_ms": 22, "output_tokens_per_s": 30}
    # 8 engine/regime/concurrency runs per L4 engine (5 short + 3 long), 3 per A100 precision (short at 1, 16, 64)
    assert Counter((r.gpu, r.runtime, r.precision) for r in rows) == {
        ("l4", "vllm", "bf16"): 24, ("l4", "sglang", "bf16"): 24, ("l4", "llama.cpp", "q4_k_m"): 8,
        ("a100-sxm-40gb", "vllm", "bf16"): 9, ("a100-sxm-40gb", "vllm", "int4"): 9}
    assert {r.concurrency for r in rows if r.gpu == "l4"} == {1, 4, 16, 32, 64}
    assert {r.concurrency for r in rows if r.gpu == "a100-sxm-40gb"} == {1, 16, 64}
    # inputs: mean pre-tokenizer chunks x 1.1 + 30 template tokens: 11.7 x 1.1 + 30 = 42.9 -> 43;
    # 1,394.5 x 1.1 + 30 = 1,563.95 -> 1,564
    assert {(r.input_tokens, r.output_tokens) for r in rows} == {(43, 128), (1564, 512)}
    assert all(r.model == "qwen2-7b" and r.tp == 1 and r.rate is None for r in rows)


def test_wmx_rows_are_one_l4_sweep_of_six_concurrencies():
    rows = load_rows(WMX)
    # every row of the page's table: 6 concurrencies x (TTFT p50, output tokens/s)
    assert Counter((r.concurrency, r.metric) for r in rows) == {
        (c, m): 1 for c in (1, 2, 4, 8, 16, 32) for m in ("ttft_median_ms", "output_tokens_per_s")}
    assert {(r.model, r.gpu, r.runtime, r.precision, r.input_tokens, r.output_tokens) for r in rows} == {
        ("qwen2-0.5b", "l4", "vllm", "bf16", 256, 128)}
