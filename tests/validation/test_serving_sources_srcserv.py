"""Serving sources written before their values (branch src-serv, validation/serving/to_predict/): each file loads as
planner.validation.serving_first reads it, and its rows carry the conditions their sources state."""

from __future__ import annotations

import pytest

from planner import ROOT_DIR
from planner.engine.serving_sim import Requests
from planner.inputs.catalog import load_catalog
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import validation_models
from planner.validation.serving_first import load_rows

SERVING = ROOT_DIR / "validation" / "serving" / "to_predict"
VARAD = SERVING / "varad-a10g-vllm-sglang.yaml"
LLMPERF = SERVING / "philschmid-llmperf-a10g.yaml"
DATACRUNCH = SERVING / "datacrunch-sglang-h200-llama33-70b.yaml"


@pytest.mark.parametrize("path", sorted(SERVING.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_serving_row_names_a_model_gpu_and_scheduler_the_planner_has(path):
    models, catalog, schedulers = validation_models(), load_catalog(), load_schedulers()
    for row in load_rows(path):
        models.get(row.model)
        catalog.get(row.gpu)
        schedulers.get(row.runtime)


def test_varad_rows_pair_ttft_and_tpot_per_closed_loop_level():
    rows = load_rows(VARAD)
    assert len(rows) == 218 and all(r.gpu == "a10g" and r.tp == 1 and r.rate is None for r in rows)
    levels = {r.id.rsplit("-", 1)[0] for r in rows}
    assert {(lvl, m) for lvl in levels for m in ("ttft_median_ms", "tpot_median_ms")} == {
        (r.id.rsplit("-", 1)[0], r.metric) for r in rows}
    assert {r.concurrency for r in rows} == {1, 2, 4, 8, 16, 32, 64}
    # vLLM's gemma runs needed --enforce-eager (and --max-model-len 2048 for gemma-2-9b): left out
    assert not {r for r in rows if r.runtime == "vllm" and r.model.startswith("gemma")}
    # throughput_ramp cycles the 4 long_generation prompts (17, 18, 13 and 17 words), 25 times each in a level of
    # 100: 16.25 words x 1.3 tokens a word = 21.1 -> 21, + BOS = 22; single_request_latency cycles the 5 short_chat
    # prompts (8, 8, 10, 7, 7 words), 10 each in 50: 8.0 x 1.3 = 10.4 -> 10, + BOS = 11
    assert {r.input_tokens for r in rows if "-ramp-" in r.id} == {22}
    assert {r.input_tokens for r in rows if "-single-" in r.id} == {11}
    # max_tokens 256 (ramp) and 128 (single) bound the mean output
    assert all(r.output_tokens <= (256 if "-ramp-" in r.id else 128) for r in rows)


def test_llmperf_rows_convert_llama2_token_counts():
    rows = load_rows(LLMPERF)
    assert {(r.runtime, r.concurrency) for r in rows} == {(e, c) for e in ("vllm", "tensorrt-llm")
                                                          for c in (1, 2, 4, 8, 16, 32, 64)}
    # 550 Llama-2 tokens / (177 / 150 Llama-2 tokens a Llama-3 token) = 466.1 -> 466, + 15 chat-template tokens
    assert {(r.input_tokens, r.output_tokens, r.precision, r.metric) for r in rows} == {
        (481, 150, "fp16", "ttft_median_ms")}


def test_datacrunch_rows_are_finite_poisson_runs_and_bursts_at_tp4():
    rows = load_rows(DATACRUNCH)
    assert all((r.model, r.gpu, r.tp, r.runtime) == ("llama-3-70b", "h200-sxm", 4, "sglang") for r in rows)
    assert {r.rate for r in rows if r.rate is not None} == {1.0, 2.0, 4.0, 8.0, 16.0}
    assert sum(r.metric == "saturation_output_tokens_per_s" for r in rows) == 6
    # the 1 request/s run: --num-prompts 300, total_input_tokens 152612 and total_output_tokens 160347 -> means
    # 508.7 and 534.5 (534.49) -> 509 and 534, drawn uniformly from 1..1024 (--random-range-ratio 0.0)
    row = next(r for r in rows if r.id.endswith("rand1024-1024-rps1-ttft"))
    assert (row.requests, row.input_tokens, row.output_tokens, row.lengths) == (300, 509, 534, "uniform")
    for r in rows:  # the simulator builds each run's lengths at its own request count
        reqs = Requests.spread(r.input_tokens, r.output_tokens, r.lengths, rows=r.requests)
        assert len(reqs.outputs) == r.requests
