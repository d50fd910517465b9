"""What host speeds would do to Spare Cores' llama.cpp rows (a look, POST HOC, nothing entered): each prediction-first
llama-bench row's server (its source names data/<vendor>/<server>/llm/stdout) gets host_speed = that server's PassMark
single-thread rating (data/<server>/passmark/stdout in a local git copy of SpareCores/sc-inspector-data) over the
reference rating of validation/sparecores_hosts.py; the median speed bias and |bias| now, without and with it, by
regime and small model (<= 1.1 B).

    python3 validation/sparecores_llamacpp_hosts.py /path/to/sc-inspector-data.git"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from score_predicted_first import speed_bias_now  # noqa: E402
from sparecores_hosts import reference_rating  # noqa: E402

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import load_measurements, predict_row, validation_models  # noqa: E402
from planner.validation.predict_first import PREDICTION_SPLIT, score_predictions  # noqa: E402

SMALL = {"smollm-135m", "qwen2-0.5b", "llama-3.2-1b", "gemma-3-1b", "tinyllama-1.1b"}


def rating(repo: str, server: str, cache: dict[str, float | None]) -> float | None:
    """`server`'s PassMark CPU_SINGLETHREAD in the data, None where it has none."""
    if server not in cache:
        out = subprocess.run(["git", "-C", repo, "show", f"HEAD:data/{server}/passmark/stdout"], capture_output=True,
                             text=True, check=False).stdout
        m = re.search(r"CPU_SINGLETHREAD: ([0-9.]+)", out)
        cache[server] = float(m.group(1)) if m else None
    return cache[server]


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    repo, cache = sys.argv[1], {}
    catalog, models = load_catalog(), validation_models()
    rows = {r.id: r for r in load_measurements()}
    groups = defaultdict(list)
    for scored in score_predictions():
        for r in scored.results:
            row = rows[r.row_id]
            if r.split != PREDICTION_SPLIT or not row.source.startswith("SpareCores") or row.framework != "llama.cpp":
                continue
            m = re.search(r"data/([a-z]+/[^/]+)/llm/stdout", row.source)
            speed = m and rating(repo, m.group(1), cache)
            if not speed:
                continue
            hs = round(speed / reference_rating(), 2)
            before, after = predict_row(row, catalog, models), predict_row(replace(row, host_speed=hs), catalog, models)
            if before.predicted and after.predicted:
                groups[(row.regime, row.model in SMALL)].append(
                    (speed_bias_now(row, before.predicted), speed_bias_now(row, after.predicted)))
    med = statistics.median
    for (regime, small), v in sorted(groups.items()):
        a, b = [x for x, _ in v], [y for _, y in v]
        print(f"{regime:8s} {'small' if small else 'other':5s} n={len(v):4d}  without {med(a):+7.1f} % "
              f"(|{med(map(abs, a)):.1f}|)  with {med(b):+7.1f} % (|{med(map(abs, b)):.1f}|)")


if __name__ == "__main__":
    main()
