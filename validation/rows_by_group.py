"""A source's validation rows re-predicted by today's planner, grouped: a diagnostic, POST HOC (it reads measured
values), not part of the planner; it changes nothing. Used for Splitwise's tensor-parallel rows (validation/REPORT.md,
'vLLM before CUDA graphs').

    python3 validation/rows_by_group.py [row-id prefix]   (default: splitwise-)

Per regime, and per regime x GPU x model x GPU count: rows, median |error| / median speed bias (+ = the planner
faster than measured), each row predicted as `planner validate` predicts it (measured.predict_row, with the
conditions read after its prediction was committed).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.validation.measured import load_measurements, predict_row  # noqa: E402


def speed_bias_pct(metric: str, measured: float, predicted: float) -> float:
    """+ = faster than measured: a time metric compares measured / predicted, a rate predicted / measured."""
    ratio = measured / predicted if metric == "step_seconds" else predicted / measured
    return (ratio - 1.0) * 100.0


def main(prefix: str) -> None:
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for row in load_measurements():
        if not row.id.startswith(prefix):
            continue
        predicted = predict_row(row).predicted
        if predicted is None:
            continue
        pair = (abs(predicted - row.value) / row.value * 100.0, speed_bias_pct(row.metric, row.value, predicted))
        for key in ((row.regime,), (row.regime, row.gpu, row.model, f"x{row.gpus}")):
            groups.setdefault(key, []).append(pair)
    for key in sorted(groups, key=str):
        pairs = groups[key]
        print(f"{' '.join(key):50s} {len(pairs):4d}  {statistics.median(a for a, _ in pairs):5.1f} % / "
              f"{statistics.median(b for _, b in pairs):+6.1f} %")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "splitwise-")
