"""Benchmark: how stable is a calibration? Run the quick bench several times on this machine, fit each, print the
spread.

Each run is `python -m planner.bench --quick` (on a CPU: one torch thread timed by its process CPU time, the
default) in its own process; the fit of each reports its factors with their 95 % uncertainty. The spread of a factor
is max / min - 1 over the runs; the target is under 10 %. Also printed: the achieved bandwidth and FLOP rate (factor x
measured peak), which don't depend on the micro-benchmarks, and the raw peaks, to show where a spread comes from.

Run: python3 benchmarks/calibration_stability.py [--runs 3] [-- extra bench arguments, e.g. --threads 2 --clock wall]
(about 20 s per run on a 2-core CPU)
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
from planner.calibration.solve import FACTOR_NAMES, FACTORS  # noqa: E402

TARGET_SPREAD_PCT = 10.0


def spread_pct(values: list[float]) -> float:
    return 100 * (max(values) / min(values) - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])  # the first paragraph; argparse rewraps it
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("extra", nargs="*", help="arguments passed to python -m planner.bench (after --)")
    a = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="stability-"))
    fits = []
    for i in range(a.runs):
        out = folder / f"run{i + 1}.json"
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "planner.bench", "--quick", "--out", str(out), *a.extra],
                              cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"run {i + 1} failed:\n{proc.stderr[-3000:]}")
        result = parse_result(out.read_bytes(), out.name)
        cal = fit(result)
        fits.append(cal)
        env = result["environment"]
        print(f"run {i + 1} ({time.perf_counter() - t0:.0f} s, {env['torch_threads']} thread(s), clock {env['clock']}, "
              f"load {env['load_average']}): " + ", ".join(
                  f"{FACTOR_NAMES[f]} {v:.3g} ± {e:.2g} %" for f, v, e in cal.uncertainty())
              + f"; rms {cal.fit_rms_pct:.2g} %" + (f"; NOT pinned: {', '.join(cal.unidentified)}" if cal.unidentified
                                                    else ""))
    print(f"\nspread over {a.runs} runs (max / min - 1; target under {TARGET_SPREAD_PCT:g} %):")
    for j, f in enumerate(FACTORS):
        values = [c.uncertainty()[j][1] for c in fits]
        s = spread_pct(values)
        print(f"  {FACTOR_NAMES[f]:<22} {s:5.1f} %  {'ok' if s < TARGET_SPREAD_PCT else 'OVER'}  "
              f"({', '.join(f'{v:.4g}' for v in values)})")
    achieved_bw = [c.mem_bw_efficiency * c.measured_bw_gbps for c in fits]
    peaks = [dict(c.measured_tflops)[c.compute_path] for c in fits]
    achieved_tf = [c.compute_efficiency * p for c, p in zip(fits, peaks)]
    print(f"  {'achieved GB/s':<22} {spread_pct(achieved_bw):5.1f} %      "
          f"({', '.join(f'{v:.4g}' for v in achieved_bw)})")
    print(f"  {'achieved TFLOPS':<22} {spread_pct(achieved_tf):5.1f} %      "
          f"({', '.join(f'{v:.4g}' for v in achieved_tf)})")
    print(f"  {'copy GB/s (peak)':<22} {spread_pct([c.measured_bw_gbps for c in fits]):5.1f} %      "
          f"({', '.join(f'{c.measured_bw_gbps:.4g}' for c in fits)})")
    print(f"  {'matmul TFLOPS (peak)':<22} {spread_pct(peaks):5.1f} %      ({', '.join(f'{v:.4g}' for v in peaks)})")
    print(f"result files: {folder}")


if __name__ == "__main__":
    main()
