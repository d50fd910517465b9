"""Serving sources of round 5 (branch f3-serving-sources), written before their values
(validation/serving/to_predict/): each file loads as planner.validation.serving_first reads it, names what the
planner has, and its rows carry the conditions their sources state."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.inputs.catalog import load_catalog
from planner.validation.measured import validation_models
from planner.validation.serving_first import load_rows

SERVING = ROOT_DIR / "validation" / "serving" / "to_predict"
SURAJ = SERVING / "surajssd-vllm083-llama33-70b-a100x8.yaml"


def _resolves(rows):
    catalog, models = load_catalog(), validation_models()
    return all(catalog.get(r.gpu).id == r.gpu and models.get(r.model).id == r.model for r in rows)


def test_surajssd_rows_are_three_rates_and_a_burst_of_200_at_tp8():
    rows = load_rows(SURAJ)
    assert _resolves(rows)
    # 3 rates x (TTFT, TPOT, output tokens/s) + the rate-inf run's throughput as a burst
    assert len(rows) == 3 * 3 + 1
    assert {r.rate for r in rows} == {1.0, 4.0, 16.0, None}
    # Standard_ND96asr_v4: 8 x A100 SXM4 40GB, one server at tensor parallel 8, the checkpoint's bf16
    assert {(r.gpu, r.tp, r.model, r.precision, r.runtime) for r in rows} == {
        ("a100-sxm-40gb", 8, "llama-3-70b", "bf16", "vllm")}
    # every run: the same 200 ShareGPT prompts, 42,659 prompt tokens in all -> 213.3 a request
    assert {(r.requests, r.lengths, r.input_tokens) for r in rows} == {(200, "sharegpt", 213)}
    burst = [r for r in rows if r.rate is None]
    assert [r.metric for r in burst] == ["saturation_output_tokens_per_s"]


STARU = SERVING / "staru09-vllm-a100sxm80-8b.yaml"


def test_staru09_rows_are_closed_loops_and_bursts_of_100_in_eager_fp16():
    rows = load_rows(STARU)
    assert _resolves(rows)
    loops = [r for r in rows if r.concurrency is not None]
    bursts = [r for r in rows if r.concurrency is None]
    # 2 models x concurrency 20/50/80 x (TTFT, TPOT, output tokens/s); at 100 the 100 prompts all go at once
    assert len(loops) == 2 * 3 * 3 and {r.concurrency for r in loops} == {20, 50, 80}
    assert len(bursts) == 2 and {(r.metric, r.requests, r.enforce_eager) for r in bursts} == {
        ("saturation_output_tokens_per_s", 100, True)}
    # a closed-loop row may state neither the run's length nor --enforce-eager (serving_first.predict refuses them)
    assert {(r.requests, r.enforce_eager, r.lengths) for r in loops} == {(None, False, "fixed")}
    assert {(r.gpu, r.tp, r.precision) for r in rows} == {("a100-sxm-80gb", 1, "fp16")}
    # prompts: the harness's 198 characters/4 plus the chat template (Llama 3.1 about 35 tokens, Qwen3 about 8)
    assert {r.model: r.input_tokens for r in rows} == {"llama-3-8b": 233, "qwen3-8b": 206}
    # replies are capped at max_tokens 1024
    assert all(r.output_tokens <= 1024 for r in rows)


LUKA = SERVING / "lukallm-rtxpro6000-qwen3-32b-fp8.yaml"


def test_lukallm_rows_are_two_servers_two_datasets_at_concurrency_512():
    rows = load_rows(LUKA)
    assert _resolves(rows)
    # 2 servers x 2 datasets x (TTFT, TPOT, output tokens/s), every run a closed loop of 512 at tensor parallel 1
    assert len(rows) == 2 * 2 * 3 and {(r.concurrency, r.tp) for r in rows} == {(512, 1)}
    assert {r.runtime for r in rows} == {"vllm", "tensorrt-llm"}
    assert {(r.gpu, r.model, r.precision) for r in rows} == {("rtx-pro-6000-blackwell", "qwen3-32b", "fp8")}
    # random lengths uniform over 1..1,024: 512,842 / 1,000 -> 513 in, 510,855 / 1,000 -> 511 out; ShareGPT:
    # 302,118 and 195,775 over 1,000 requests
    assert {(r.input_tokens, r.output_tokens) for r in rows} == {(513, 511), (302, 196)}
