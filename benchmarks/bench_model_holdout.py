"""Benchmark: measure here, predict a size never fitted, for the example models in examples/models.

For each model, `python -m planner.bench --model FACTORY --input NAME=SIZES` traces its profile and times its forward
pass and training step at every size on this machine (CPU: one torch thread, process CPU time; GPU where present),
with the bench's launch- and bandwidth-bound anchor points. Then, for each size in turn, the calibration is fitted
WITHOUT that size and the traced profile x calibrated efficiencies predicts it (planner.calibration
.tables.holdout_table). Prints the error per size and step, the largest interior and overall error per model, and the
factors of the fit on everything with their 95 % uncertainty.

Run: python3 benchmarks/bench_model_holdout.py [--quick] [--keep DIR]   (about 8 min on a 2-core CPU; --quick: 6)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.inputs.bench_result import parse_result  # noqa: E402
from planner.calibration.fit import fit  # noqa: E402
from planner.calibration.tables import holdout_table  # noqa: E402
from planner.views.calibration_text import fit_lines  # noqa: E402

# (name, factory, input spec, factory arguments): configs small enough for a CPU, from each model's own options
MODELS = [
    ("GPT-2 seed-004, SDPA", "examples/models/gpt2.py:build", "tokens=64,128,256,512",
     ["config=seed-004", "attention=sdpa"]),
    ("GPT-2 seed-004, manual attention", "examples/models/gpt2.py:build", "tokens=64,128,256,512",
     ["config=seed-004", "attention=manual"]),
    ("SEA aggregator (50 trials)", "examples/models/sea.py:build", "L=10,20,40,80", ["trials=50"]),
    ("BetaRho reduced", "examples/models/betarho.py:build", "L=16,32,64,128", ["config=reduced"]),
]
QUICK_ARGS = {  # --quick: fewer layers and sizes, the same code paths
    "examples/models/gpt2.py:build": ["layers=4"],
    "examples/models/sea.py:build": ["layers=2"],
    "examples/models/betarho.py:build": ["blocks=2", "ipa_blocks=2"],
}


def bench(factory: str, spec: str, args: list[str], out: Path, quick: bool) -> float:
    cmd = [sys.executable, "-m", "planner.bench", "--model", factory, "--input", spec, "--out", str(out)]
    cmd += [x for a in args + (QUICK_ARGS[factory] if quick else []) for x in ("--arg", a)]
    cmd += ["--quick"] if quick else []
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller configs and --quick timing")
    ap.add_argument("--keep", default=None, help="directory to keep the bench result files in")
    a = ap.parse_args()
    folder = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="holdout-"))
    folder.mkdir(parents=True, exist_ok=True)
    summary = []
    for name, factory, spec, args in MODELS:
        out = folder / (name.lower().replace(" ", "-").replace(",", "").replace("(", "").replace(")", "") + ".json")
        seconds = bench(factory, spec, args, out, a.quick)
        result = parse_result(out.read_bytes(), out.name)
        run = result["model_runs"][0]
        rows = holdout_table(result)
        sizes = sorted({r["size"] for r in rows})
        print(f"\n{name}: {factory} {' '.join(args)}, {run['input_size_name']} = {', '.join(map(str, sizes))} "
              f"(bench {seconds:.0f} s, of which tracing {run.get('trace_s', 0):.0f} s)")
        for r in rows:
            print(f"  held out {run['input_size_name']}={r['size']:<5} {r['workload']:<8} measured "
                  f"{r['measured_s'] * 1e3:9.2f} ms  predicted {r['predicted_s'] * 1e3:9.2f} ms  "
                  f"{r['error_pct']:+6.1f} %")
        for line in fit_lines(fit(result)):
            print(f"  all points: {line}")
        interior = [abs(r["error_pct"]) for r in rows if r["size"] not in (sizes[0], sizes[-1])]
        summary.append((name, max(interior), max(abs(r["error_pct"]) for r in rows)))
    print("\nheld-out size prediction error (|predicted / measured - 1|, forward and train step)")
    print(f"  {'model':<36} {'interior sizes':>15} {'all sizes':>10}")
    for name, interior, worst in summary:
        print(f"  {name:<36} {interior:14.1f} % {worst:8.1f} %")
    print(f"result files: {folder}")


if __name__ == "__main__":
    main()
