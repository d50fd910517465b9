"""Serving source of round 7 (branch h1-serving), written before its values (validation/serving/to_predict/): the
file loads as planner.validation.serving_first reads it, names what the planner has, and its rows carry the
conditions the post states (evalscope bursts of N requests at once, exactly 2,000 output tokens)."""

from __future__ import annotations

from collections import Counter

from planner import ROOT_DIR
from planner.inputs.catalog import load_catalog
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import validation_models
from planner.validation.serving_first import load_rows

HAITWANG = ROOT_DIR / "validation" / "serving" / "to_predict" / "haitwang-evalscope-h100-llama31-8b.yaml"
LEVELS = (5, 10, 20, 30)  # the levels whose RPS x mean latency equals N (40-100 left out: ~36 in flight)


def test_rows_name_models_gpus_runtimes_and_engines_the_planner_has():
    models, catalog, schedulers = validation_models(), load_catalog(), load_schedulers()
    for row in load_rows(HAITWANG):
        models.get(row.model)
        catalog.get(row.gpu)
        scheduler = schedulers.get(row.runtime)
        if row.engine is not None:
            scheduler.host_us_per_seq(row.engine)  # ValueError for an engine generation the scheduler lacks


def test_rows_are_three_engines_at_four_burst_levels():
    rows = load_rows(HAITWANG)
    assert len(rows) == 3 * 4 * 3  # engines x levels x (TTFT, TPOT, output tokens/s)
    assert Counter((r.runtime, r.engine, r.concurrency, r.metric) for r in rows) == {
        (rt, eng, c, m): 1 for rt, eng in (("vllm", "v0"), ("vllm", "v1"), ("sglang", None)) for c in LEVELS
        for m in ("ttft_median_ms", "tpot_median_ms", "output_tokens_per_s")}
    # --parallel N --number N: N requests sent at once, a finite run of exactly N
    assert all(r.requests == r.concurrency and r.rate is None for r in rows)
    # the post prints means only: TTFT and TPOT rows are scored as means
    assert {r.statistic for r in rows if r.metric != "output_tokens_per_s"} == {"mean"}


def test_lengths_follow_the_command_line():
    rows = load_rows(HAITWANG)
    assert {(r.model, r.gpu, r.tp, r.precision, r.output_tokens, r.lengths) for r in rows} == {
        ("llama-3-8b", "h100-sxm", 1, "bf16", 2000, "fixed")}  # --min-tokens 2000 --max-tokens 2000
    # prompts of 5,000-10,000 characters at ~4.2 a token plus ~30 chat-template tokens: 1,220 to 2,411 tokens
    lo, hi = 5000 / 4.2 + 30, 10000 / 4.2 + 30
    assert all(lo < r.input_tokens < hi for r in rows)


MUSHFIQ = ROOT_DIR / "validation" / "serving" / "to_predict" / "mushfiq-vllm-rtx4090-mistral7b.yaml"


def test_mushfiq_rows_are_one_rtx4090_sweep_of_five_closed_loops():
    rows = load_rows(MUSHFIQ)
    models, catalog, schedulers = validation_models(), load_catalog(), load_schedulers()
    for row in rows:
        models.get(row.model)
        catalog.get(row.gpu)
        schedulers.get(row.runtime)
    # every row of 'Results': 5 levels x (median TTFT, output tokens/s), each a run of 300 requests
    assert Counter((r.concurrency, r.metric) for r in rows) == {
        (c, m): 1 for c in (4, 8, 16, 32, 48) for m in ("ttft_median_ms", "output_tokens_per_s")}
    assert {(r.model, r.gpu, r.runtime, r.engine, r.precision, r.input_tokens, r.requests) for r in rows} == {
        ("mistral-7b", "rtx-4090", "vllm", None, "bf16", 256, 300)}
    # replies under the 128-token cap: the mean the table's own Output Tok/s / Req/s gives, 100 tokens
    assert {r.output_tokens for r in rows} == {100} and all(r.output_tokens < 128 for r in rows)
