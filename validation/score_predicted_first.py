"""The prediction-first rows seen three more ways than `planner validate` prints (validation/REPORT.md quotes them).

An analysis of the rows, not part of the planner:
- by runtime: median |error| and median speed bias (+ = the planner faster) of the committed predictions;
- now: the same rows re-predicted by the planner as it is today (a secondary figure: the committed predictions stay
  the headline, since a change made after the values were seen can have been shaped by them);
- band: how many of them the shipped 80 % band (data/uncertainty.yaml) holds around the committed prediction, per
  regime, and how many had no band.

Run from the repository root: `python3 validation/score_predicted_first.py`.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the planner of this checkout, not an installed one

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import load_measurements, predict_row, validation_models  # noqa: E402
from planner.validation.predict_first import PREDICTION_SPLIT, score_predictions  # noqa: E402
from planner.validation.uncertainty import band_or_note, load_uncertainty, regime_of  # noqa: E402


def speed_bias_now(row, predicted: float) -> float:
    """Speed bias in % of a prediction in the row's metric (+ = faster than measured)."""
    ratio = predicted / row.value
    return 100.0 * ((1.0 / ratio if row.metric == "step_seconds" else ratio) - 1.0)


def main() -> None:
    catalog, models = load_catalog(), validation_models()
    rows = {r.id: r for r in load_measurements()}
    cells = load_uncertainty()
    by_runtime: dict[str, list] = defaultdict(list)
    by_regime: dict[str, list] = defaultdict(list)
    held: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # regime -> [in band, outside, no band]
    for scored in score_predictions():
        for r in scored.results:
            if r.split != PREDICTION_SPLIT:
                continue
            row = rows[r.row_id]
            p = predict_row(row, catalog, models)
            # a row excluded now (a condition read since shows the engine cannot predict it: prompt_echo) has no
            # re-predicted figure; its committed one stays
            now = None if p.excluded else (abs(p.predicted - row.value) / row.value * 100.0,
                                            speed_bias_now(row, p.predicted))
            entry = ((r.ape, r.speed_bias_pct), now)
            by_runtime[row.framework].append(entry)
            by_regime[r.regime].append(entry)
            by_regime["all"].append(entry)
            band = band_or_note(p.estimate)
            if not isinstance(band, tuple):
                held[r.regime][2] += 1
                continue
            cell = cells.cell(regime_of(p.estimate), p.estimate.gpu.memory_class)
            inside = min(cell.low, 1.0) <= r.seconds_ratio <= max(cell.high, 1.0)
            held[r.regime][0 if inside else 1] += 1
    med = statistics.median
    print("| rows | n | committed: median |error| / bias | re-predicted now |")
    for name, entries in [*sorted(by_regime.items()), *sorted(by_runtime.items())]:
        c = [e[0] for e in entries]
        n = [e[1] for e in entries if e[1] is not None]
        now = f"{med(x[0] for x in n):.1f} % / {med(x[1] for x in n):+.1f} %" if n else "-"
        dropped = f" ({len(entries) - len(n)} excluded now)" if len(n) < len(entries) else ""
        print(f"| {name} | {len(entries)} | {med(x[0] for x in c):.1f} % / {med(x[1] for x in c):+.1f} % | "
              f"{now}{dropped} |")
    print("\n| regime | in the 80 % band | no band |")
    for regime, (inside, outside, none) in sorted(held.items()):
        print(f"| {regime} | {inside} of {inside + outside} | {none} |")
    inside, outside, none = (sum(v[i] for v in held.values()) for i in range(3))
    print(f"| all | {inside} of {inside + outside} ({100.0 * inside / max(1, inside + outside):.0f} %) | {none} |")


if __name__ == "__main__":
    main()
