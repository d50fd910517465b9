"""Round 8's quantized rows (issue 37 P3, POST HOC): committed against re-predicted-now error, by regime and file.

Median |error| and median speed bias (+ = the planner faster) of the committed predictions and of the same rows
re-predicted by the planner of this checkout (with validation/conditions_read_after.yaml), for rows whose id starts
with one of the given prefixes. validation/REPORT.md quotes it.

Run from the repository root: `python3 validation/round8_library_presets.py obm- obv- litgpt-tp- premai-`.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the planner of this checkout, not an installed one
sys.path.insert(0, str(Path(__file__).resolve().parent))

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import load_measurements, predict_row, validation_models  # noqa: E402
from planner.validation.predict_first import PREDICTION_SPLIT, score_predictions  # noqa: E402
from score_predicted_first import speed_bias_now  # noqa: E402


def main(prefixes: tuple[str, ...]) -> None:
    catalog, models = load_catalog(), validation_models()
    rows = {r.id: r for r in load_measurements()}
    groups: dict[tuple[str, ...], list[tuple[float, float, float, float]]] = defaultdict(list)
    for scored in score_predictions():
        for r in scored.results:
            if r.split != PREDICTION_SPLIT or not r.row_id.startswith(prefixes):
                continue
            row = rows[r.row_id]
            now = predict_row(row, catalog, models).predicted
            for key in (("all",), (r.regime,), (r.regime, row.id.split("-")[0])):
                groups[key].append((r.ape, r.speed_bias_pct, abs(now - row.value) / row.value * 100,
                                    speed_bias_now(row, now)))
    med = statistics.median
    for key in sorted(groups):
        v = groups[key]
        print(f"{'/'.join(key):34s} n={len(v):3d} committed {med(a[0] for a in v):6.1f} {med(a[1] for a in v):+7.1f}"
              f" | now {med(a[2] for a in v):6.1f} {med(a[3] for a in v):+7.1f}")


if __name__ == "__main__":
    main(tuple(sys.argv[1:]) or ("obm-", "obv-", "litgpt-tp-", "premai-"))
