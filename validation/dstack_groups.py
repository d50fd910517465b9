"""dstack's saturation rows (DeepSeek-R1 and Llama 3.1 405B) per model, GPU, engine and tensor-parallel degree:
the committed predictions (the headline), today's planner on the conditions as entered, with the post-hoc
conditions (validation/serving/posthoc.yaml), and with them less --enforce-eager. Secondary: it reads the measured
values, so every figure but the committed predictions' is post hoc.

    python3 validation/dstack_groups.py
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.inputs.facts import load_facts  # noqa: E402
from planner.validation.serving_first import (SERVING_DIR, committed_predictions, load_rows,  # noqa: E402
                                              measured_values, predict)
from planner.validation.serving_rescore import load_posthoc, with_posthoc  # noqa: E402

COLUMNS = ("committed", "now as entered", "now + post hoc", "post hoc less enforce_eager")


def main() -> None:
    facts = load_facts()
    measured, committed = measured_values(), committed_predictions()
    posthoc = load_posthoc()
    groups: dict[tuple[str, ...], list[tuple[float, ...]]] = {}
    for path in sorted((SERVING_DIR / "to_predict").glob("dstack*.yaml")):
        for r in load_rows(path):
            if r.id not in measured or r.metric != "saturation_output_tokens_per_s":
                continue
            v, late = measured[r.id], with_posthoc(r, posthoc)
            preds = (committed[r.id], predict(r, facts), predict(late, facts),
                     predict(replace(late, enforce_eager=False), facts))
            errs = tuple((p - v) / v * 100 for p in preds)
            for key in ((r.model, r.gpu, r.runtime, f"tp{r.tp}"), ("all",)):
                groups.setdefault(key, []).append(errs)
    print("group | rows | " + " | ".join(COLUMNS) + "   (median |error| / median bias, %)")
    for key, errs in groups.items():
        cols = [[e[i] for e in errs] for i in range(len(COLUMNS))]
        print(" ".join(key), "|", len(errs), "|", " | ".join(
            f"{statistics.median(map(abs, c)):.1f} / {statistics.median(c):+.1f}" for c in cols))


if __name__ == "__main__":
    main()
