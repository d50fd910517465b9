"""The Serving and Accuracy tabs' tables as plain rows: per GPU, serving latencies and the most sequences served within
latency targets; per regime, the planner's accuracy against published measurements, with the shared column names.
"""

from __future__ import annotations

from datetime import date

from planner.engine.estimate import efficiency_on
from planner.engine.serving import max_concurrency, serving_point
from planner.validation import uncertainty

# The Accuracy tab's column names for a bias and a verdict, shared by its leave-one-source-out and split tables.
BIAS_COLUMN = "median bias % (+ = estimate too fast)"
VERDICT_COLUMN = "meets target (and bias ±10 %)"


def accuracy_rows() -> tuple[list[dict], date]:
    """The leave-one-source-out accuracy per regime as last written by `planner validate --write-uncertainty`, with
    accuracy targets, for the page's Accuracy tab; and the date it was written."""
    table = uncertainty.load_uncertainty()
    return [{"regime": a.regime, "rows": a.rows, "median |error| %": a.median_ape, "90th pct |error| %": a.p90_ape,
             BIAS_COLUMN: a.median_bias_pct, "target %": a.target_ape,
             VERDICT_COLUMN: None if a.meets is None else ("yes" if a.meets else "no")}
            for a in table.accuracy], table.generated


def serving_rows(plan, gpus, facts, prompt: int, output: int, ttft_s: float | None,
                 tpot_s: float | None) -> list[dict]:
    """Per GPU: one sequence alone, and the most sequences served at once within the latency targets (TTFT, TPOT
    in seconds): latencies in ms, output tokens/s and $ per 1M output tokens (planner.engine.serving); a device
    the plan's runtime can't run on (a CPU) is left out."""
    rows = []
    for gpu in gpus:
        if efficiency_on(plan, gpu, facts).unsupported:  # the runtime can't run on this device (a CPU)
            continue
        alone = serving_point(plan, gpu, facts, 1, prompt, output)
        best = max_concurrency(plan, gpu, facts, prompt, output, ttft_s, tpot_s)
        row = {"GPU": gpu.name, "TTFT alone (ms)": alone.ttft_s * 1e3, "TPOT alone (ms)": alone.tpot_s * 1e3,
               "Max concurrency in target": best.concurrency if best else 0,
               "TPOT at max (ms)": best.tpot_s * 1e3 if best else None,
               "Tokens/s at max": best.tokens_per_s if best else None,
               "$ per 1M tokens at max": best.usd_per_m_tokens if best else None, "gpu_id": gpu.id}
        rows.append(row)
    return rows
