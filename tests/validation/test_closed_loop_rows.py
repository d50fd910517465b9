"""Concurrency rows scored as the client's finite closed loop they were (ServingRow.requests on a concurrency row:
serving_sim.closed_loop), and the post-hoc conditions that say so for round 5's closed-loop sources."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError, load_yaml
from planner.inputs.facts import load_facts
from planner.validation.serving_first import SERVING_DIR, load_rows, predict
from planner.validation.serving_rescore import load_posthoc, with_posthoc

FACTS = load_facts()
TO_PREDICT = SERVING_DIR / "to_predict"


def _row(metric: str):
    return next(r for r in load_rows(TO_PREDICT / "staru09-vllm-a100sxm80-8b.yaml")
                if r.concurrency is not None and r.metric == metric and "llama" in r.id)


@pytest.mark.parametrize("metric", ["ttft_median_ms", "tpot_median_ms"])
def test_one_request_at_a_time_is_the_steady_concurrency_of_one(metric):
    """At concurrency 1 a closed loop never overlaps two requests: each one's TTFT is its front end and prefill, its
    TPOT one decode step, what planner.engine.serving's steady concurrency of 1 charges (two models, one answer)."""
    row = replace(_row(metric), concurrency=1)
    loop = predict(replace(row, requests=20), FACTS)
    assert loop == pytest.approx(predict(row, FACTS), rel=0.05)


def test_a_first_burst_queues_its_prefills():
    """80 of 100 requests sent at once: their prompts (80 x 233 tokens) pass vLLM's 2,048-token steps on an A100 in
    ~9 steps, so the median TTFT is several prefill steps, well above the steady concurrency's one prefill."""
    row = replace(_row("ttft_median_ms"), concurrency=80)
    assert predict(replace(row, requests=100), FACTS) > 3 * predict(row, FACTS)


def test_a_concurrency_row_without_its_request_count_still_refuses_simulation_conditions():
    with pytest.raises(ValueError, match="requests"):
        predict(replace(_row("tpot_median_ms"), lengths="sharegpt"), FACTS)


def test_the_posthoc_conditions_give_each_closed_loop_its_own_request_count():
    """lukaLLM's rows say --num-prompts 1000, staru09's 100 requests (its burst rows state requests 100): every
    concurrency row of both sources gets exactly that count and no other source's row gets one from these entries."""
    posthoc = load_posthoc()
    for name, n in (("lukallm-rtxpro6000-qwen3-32b-fp8.yaml", 1000), ("staru09-vllm-a100sxm80-8b.yaml", 100)):
        raw = {r["id"]: str(r["conditions"]) for r in load_yaml(TO_PREDICT / name, "rows")}
        for row in load_rows(TO_PREDICT / name):
            if row.concurrency is not None:
                assert with_posthoc(row, posthoc).requests == n
                assert f"{n:,}" in raw[row.id] or f"{n} " in raw[row.id]
    staru = [with_posthoc(r, posthoc) for r in load_rows(TO_PREDICT / "staru09-vllm-a100sxm80-8b.yaml")]
    assert all(r.enforce_eager for r in staru) and "--enforce-eager" in str(load_yaml(
        TO_PREDICT / "staru09-vllm-a100sxm80-8b.yaml", "rows")[0]["conditions"])


def test_the_mean_of_a_first_burst_is_above_its_median():
    """At concurrency 20 of 100 requests the first 20 prompts (20 x 233 tokens, over two of vLLM's 2,048-token steps on
    the A100) queue behind each other, the other 80 arrive one by one: a few long TTFTs pull the mean above the
    median; a statistic without the run's own request count is refused, named."""
    row = replace(_row("ttft_median_ms"), requests=100, lengths="sharegpt", enforce_eager=True)
    assert predict(replace(row, statistic="mean"), FACTS) > 1.3 * predict(row, FACTS)
    with pytest.raises(ValueError, match="statistic"):
        predict(replace(row, requests=None, lengths="fixed", enforce_eager=False, statistic="mean"), FACTS)


def test_a_posthoc_statistic_is_checked(tmp_path):
    p = tmp_path / "posthoc.yaml"
    p.write_text("schema_version: 1\nconditions:\n  - {rows: 'a-*', statistic: mean, why: the harness's means}\n")
    assert load_posthoc(p) == [("a-*", {"statistic": "mean"})]
    p.write_text("schema_version: 1\nconditions:\n  - {rows: 'a-*', statistic: mode, why: x}\n")
    with pytest.raises(DataFileError, match="statistic"):
        load_posthoc(p)
