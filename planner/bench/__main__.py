"""`python -m planner.bench [--quick] [--device auto|cuda|mps|cpu] [--out FILE]`: measure, fit, write one result file."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path


def _progress(start: float):
    def show(text: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {text}", file=sys.stderr, flush=True)
    return show


def default_out(result: dict) -> Path:
    env = result["environment"]
    slug = re.sub(r"[^a-z0-9]+", "-", env["device_name"].lower()).strip("-")[:50]
    return Path(f"{env['date'][:10]}_{env['device_type']}-{slug}.json")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m planner.bench", description=__doc__)
    p.add_argument("--device", default="auto", help="auto (default: CUDA, then MPS, then CPU), cuda, mps or cpu")
    p.add_argument("--quick", action="store_true", help="small models and sizes: under a minute on a 2-core CPU")
    p.add_argument("--precision", choices=("fp32", "tf32", "fp16", "bf16"), default=None,
                   help="workload precision (default: fp32 on CPU, bf16 on SM80+, fp16 otherwise)")
    p.add_argument("--compile", dest="compile_", action="store_true", default=None, help="also time torch.compile")
    p.add_argument("--no-compile", dest="compile_", action="store_false", help="skip torch.compile")
    p.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="CPU device: wall time (default) or process CPU time of one thread (for busy machines)")
    p.add_argument("--out", default=None, help="result file (default: <date>_<device>-<name>.json here)")
    a = p.parse_args(argv)
    start = time.perf_counter()
    show = _progress(start)
    show("importing torch")
    import torch

    from planner.bench.env import pick_device
    from planner.bench.run import run_bench
    from planner.inputs.bench_result import CalibrationError, parse_result
    from planner.tools.calibration import fit, point_table

    if a.clock == "cpu" and (a.threads or 1) != 1:
        print("error: --clock cpu measures one thread's CPU time: use it with --threads 1 (or leave --threads out)",
              file=sys.stderr)
        return 2
    if a.threads or a.clock == "cpu":
        torch.set_num_threads(a.threads or 1)
    try:
        device = pick_device(a.device)
        if a.precision == "tf32" and device != "cuda":
            raise ValueError("--precision tf32 needs an NVIDIA GPU (SM80+); use fp32 here")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = run_bench(device, a.quick, a.precision, a.compile_, show, a.clock)
    out = Path(a.out) if a.out else default_out(result)
    text = json.dumps(result, indent=1)
    out.write_text(text + "\n", encoding="utf-8")
    show(f"wrote {out} ({len(text):,} bytes)")
    try:
        checked = parse_result(text, out.name)
        cal = fit(checked)
    except CalibrationError as exc:
        print(f"error: the result does not validate: {exc}", file=sys.stderr)
        return 1
    show(f"fitted: {cal.to_query()}")
    for row in point_table(checked, cal):
        print(f"  {row['label']:<46} measured {row['measured_s'] * 1e3:9.2f} ms  analytic {row['analytic_s'] * 1e3:9.2f} ms"
              f"  calibrated {row['calibrated_s'] * 1e3:9.2f} ms ({row['calibrated_error_pct']:+.0f} %)")
    print(f"total {time.perf_counter() - start:.1f} s; use it with: python -m planner estimate --calibration {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
