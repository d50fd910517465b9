"""CPU seconds of `planner validate` in one process, by stage, cold and then again (as the validation tests run it).

    python3 benchmarks/validate_stages.py [--repeat 2] [--root PATH]

Runs `planner validate --format json` in-process `--repeat` times (the first call cold: every data file parsed and
the leave-one-source-out folds tuned; later calls reuse what the process memoized, as test_validation's CLI tests
do) and prints the process CPU seconds of each call, plus the cold call's stages measured apart in a fresh process:
the predictions files' parsing (their held-out ids and their scoring), the folds, and the band levels and coverage.
--root runs another checkout's planner (a base commit exported with `git archive`) for a before/after comparison.
CPU time, not wall: the machine is shared. Print `uptime` beside the figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STAGES = """
import time, sys
t = time.process_time
from planner.validation import loso, measured, predict_first
from planner.validation.uncertainty import band_levels, coverages
out = {}
a = t(); ids = measured.prediction_first_ids(); scored = predict_first.score_predictions(); out['predictions'] = t() - a
a = t(); held = loso.leave_one_source_out(); out['folds'] = t() - a
first = [r for s in scored for r in s.results]
residuals = [r.result for r in held if r.independent] + first
ids = {r.row_id for r in first}
judged = (lambda r: True, lambda r: r.row_id in ids)
a = t(); levels = band_levels(residuals, loso.source_of, judged=judged)
coverages(residuals, loso.source_of, levels, judged); out['bands'] = t() - a
print(' '.join(f'{k}={v:.2f}' for k, v in out.items()))
"""

CALLS = """
import contextlib, io, sys, time
from planner.cli import main
for i in range({repeat}):
    a = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(['validate', '--format', 'json']) == 0
    print(f'call {{i + 1}}: {{time.process_time() - a:.2f}} s CPU')
"""


def run(root: Path, code: str) -> str:
    """`code` run by a fresh python3 in `root` (its planner package first on the path); its stdout."""
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r})\n{code}"],
                          cwd=root, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2, help="validate calls in one process (default 2)")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to run (default: this one)")
    a = ap.parse_args()
    start = time.monotonic()
    print(f"{a.root}: cold stages (CPU s): {run(a.root, STAGES)}")
    for line in run(a.root, CALLS.format(repeat=a.repeat)).splitlines():
        print(f"{a.root}: {line}")
    print(f"({time.monotonic() - start:.0f} s wall)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
