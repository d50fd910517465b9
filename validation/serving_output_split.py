"""A finite burst's time split into its decode part and the rest, measured against today's planner (POST HOC: it
reads the measured values). Two rows of one file that differ only in their output length (same GPU, runtime,
precision, prompt length and request count; the longer one twice the shorter) give, for each source:

    marginal = (T2 - T1) / (n x (o2 - o1))   seconds per request and output token: a decode step over its batch
    intercept = T1 - (T2 - T1) x o1 / (o2 - o1)   seconds the burst spends outside decoding (prefill, its waves)

with T = n x o / (output tokens/s), the burst's length. The ratio of the measured marginal to the planner's says
whether a miss is the decode step (ratio far from 1) or the prefill (intercepts far apart). First, the median bias of
the file's saturation rows per model, GPU and runtime.

    python3 validation/serving_output_split.py validation/serving/to_predict/dstack-deepseek-r1-offline.yaml
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.inputs.facts import load_facts  # noqa: E402
from planner.validation.serving_first import load_rows, measured_values, predict  # noqa: E402
from planner.validation.serving_rescore import load_posthoc, with_posthoc  # noqa: E402

METRIC = "saturation_output_tokens_per_s"


def saturation_rows(path: str) -> list[tuple[object, float, float]]:
    """(row, measured, planner's with the post-hoc conditions) of each saturation row of `path` with a value."""
    facts, measured, posthoc = load_facts(), measured_values(), load_posthoc()
    return [(r, measured[r.id], predict(with_posthoc(r, posthoc), facts)) for r in load_rows(path)
            if r.metric == METRIC and r.id in measured]


def burst_seconds(scored: list) -> dict[tuple, tuple[float, float]]:
    """(gpu, runtime, precision, tp, prompt, requests, output) -> (measured, planner's) seconds of each burst."""
    return {(r.gpu, r.runtime, r.precision, r.tp, r.input_tokens, r.requests, r.output_tokens):
            (r.requests * r.output_tokens / m, r.requests * r.output_tokens / p)
            for r, m, p in scored if r.requests is not None}


def main(path: str) -> None:
    scored = saturation_rows(path)
    groups: dict[tuple, list[float]] = {}
    for r, m, p in scored:
        groups.setdefault((r.model, r.gpu, r.runtime), []).append((p - m) / m * 100)
    print(path)
    for key, errs in sorted(groups.items()):
        print(f"{' '.join(key)}: median bias {statistics.median(errs):+.1f} % ({len(errs)} rows)")
    rows = burst_seconds(scored)
    print("gpu runtime precision tp prompt requests o1->o2: marginal ms measured / planner (ratio) | "
          "intercept s measured / planner")
    for key, (m1, p1) in sorted(rows.items()):
        *cond, o1 = key
        if (*cond, 2 * o1) not in rows:
            continue
        m2, p2 = rows[(*cond, 2 * o1)]
        n = cond[-1]
        mm, mp = (m2 - m1) / (n * o1) * 1e3, (p2 - p1) / (n * o1) * 1e3
        print(f"{' '.join(map(str, cond))} {o1}->{2 * o1}: {mm:.3f} / {mp:.3f} (x{mm / mp:.2f}) | "
              f"{m1 - (m2 - m1):.1f} / {p1 - (p2 - p1):.1f}")


if __name__ == "__main__":
    for p in sys.argv[1:] or ["validation/serving/to_predict/dstack-deepseek-r1-offline.yaml"]:
        main(p)
