"""AutoAWQ rows under other host figures per kernel (POST HOC, issue 37; nothing is written).

The autoawq runtime's host figure (data/runtimes.yaml, host_us_per_kernel 6.8) was derived from a bare-op
microbenchmark on a desktop Core i9-11900K; host_speed 1 means the A100/H100 servers' CPUs. This script predicts every
row run by the autoawq runtime (AutoAWQ's README and benchmark threads, TinyChat's README) with the host figure
replaced by each value given, and prints the median speed bias per source, GPU, regime and kernel version, beside the
committed predictions' bias. It changes no data file: validation/REPORT.md's section on AutoAWQ's host says why the
figure was not changed.

    python3 validation/awq_host_trial.py 6.8 25 31.3 [--desktop-speed 1.7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import evaluate_row, load_measurements, validation_models  # noqa: E402
from planner.validation.predict_first import PREDICTION_SPLIT, score_predictions  # noqa: E402

AUTOAWQ_FRAMEWORK = "autoawq"
DESKTOP_HOST = "Ryzen 9 7950X"  # the host AutoAWQ's README names for its RTX 4090 rows


def group_of(row) -> tuple[str, str, str, str]:
    """(source, GPU, regime, kernel version) of a row: the source's repository, thread or file."""
    source = row.source.split(" ")[0].split("@")[0].rstrip(",")
    version = "gemv" if "-gemv-" in row.id else "gemm"
    return source[:60], row.gpu, row.regime, version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host_us", type=float, nargs="+", help="host microseconds per kernel to try")
    parser.add_argument("--desktop-speed", type=float, default=1.0,
                        help="host speed of the rows whose conditions name a Ryzen 9 7950X host (AutoAWQ's README "
                             "rows), over the reference servers'; the tried host figures are divided by it there")
    args = parser.parse_args()
    catalog, models = load_catalog(), validation_models()
    rows = {r.id: r for r in load_measurements()}
    committed: dict[str, float] = {}
    for scored in score_predictions():
        for r in scored.results:
            if r.split == PREDICTION_SPLIT and rows[r.row_id].framework == AUTOAWQ_FRAMEWORK:
                committed[r.row_id] = r.speed_bias_pct
    table: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row_id, bias in committed.items():
        row = rows[row_id]
        key = group_of(row)
        table[key]["committed"].append(bias)
        speed = args.desktop_speed if DESKTOP_HOST in row.conditions else 1.0
        for us in args.host_us:
            def adjust(_gpu, eff, us=us / speed):
                return replace(eff, host_us_per_kernel=us)
            result, _ = evaluate_row(row, catalog, models, adjust)
            table[key][f"{us:g} us"].append(result.speed_bias_pct)
    columns = ["committed"] + [f"{us:g} us" for us in args.host_us]
    print(f"{'source':60s} {'gpu':14s} {'regime':8s} {'kernel':6s} {'rows':>4s} "
          + " ".join(f"{c:>10s}" for c in columns))
    for key in sorted(table):
        cells = table[key]
        print(f"{key[0]:60s} {key[1]:14s} {key[2]:8s} {key[3]:6s} {len(cells['committed']):4d} "
              + " ".join(f"{statistics.median(cells[c]):+10.1f}" for c in columns))


if __name__ == "__main__":
    main()
