"""Benchmark: the quick bench on this machine, and how well a calibration fitted without one model predicts it.

Runs `python -m planner.bench --quick` (CPU: one torch thread, process CPU time; a GPU where present), then fits the
calibration on every point but the GPT-style model's and predicts that model's decode step and forward pass
(planner.calibration.tables.held_out_model_table). Prints each prediction's error: the figure a live run gives on this
machine today (tests/bench/test_bench.py checks the same on a recorded run).

Run: python3 benchmarks/bench_quick_holdout.py [--runs N]   (about 45 s a run on a 2-core CPU)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.bench.run import TINY_GPT  # noqa: E402
from planner.calibration.tables import held_out_model_table  # noqa: E402
from planner.inputs.bench_result import parse_result  # noqa: E402


def one_run(folder: Path, i: int) -> list[dict]:
    out = folder / f"quick-{i}.json"
    subprocess.run([sys.executable, "-m", "planner.bench", "--quick", "--out", str(out)], cwd=ROOT, check=True,
                   capture_output=True, text=True)
    return held_out_model_table(parse_result(out.read_bytes(), out.name), TINY_GPT.id)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.runs):
            for r in one_run(Path(tmp), i):
                print(f"run {i + 1}: {TINY_GPT.id} {r['workload']} b{r['batch']}: "
                      f"measured {r['measured_s'] * 1e3:.2f} ms, "
                      f"calibrated {r['predicted_s'] * 1e3:.2f} ms ({r['error_pct']:+.1f} %)")


if __name__ == "__main__":
    main()
