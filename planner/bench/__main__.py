"""`python -m planner.bench [--quick] [--device auto|cuda|mps|cpu] [--out FILE]`: measure, fit, write one result file.

`--model MODULE:FACTORY --input NAME=SIZES [--arg KEY=VALUE ...]` measures your own model instead of the built-in
decoders: its forward pass and training step at each size, with its traced profile; the calibration fitted on them
predicts that model on other GPUs (`python -m planner estimate --model PROFILE.yaml --calibration RESULT.json`).
On a CPU the default is one torch thread timed by its process CPU time (`--threads 1 --clock cpu`): stable on a
shared machine; `--threads N --clock wall` times N threads by the wall clock."""

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


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit]


def default_out(result: dict) -> Path:
    env = result["environment"]
    runs = result.get("model_runs") or []
    model = f"_{_slug(str(runs[0]['profile'].get('id', 'model')), 40)}" if runs else ""
    return Path(f"{env['date'][:10]}_{env['device_type']}-{_slug(env['device_name'], 50)}{model}.json")


def _clock_and_threads(device: str, clock: str | None, threads: int | None) -> tuple[str, int | None]:
    """On a CPU: one thread timed by CPU time unless asked otherwise; elsewhere the device's own clock."""
    if device != "cpu":
        return clock or "wall", threads
    if clock is None:
        clock = "cpu" if threads in (None, 1) else "wall"
    return clock, (threads or 1) if clock == "cpu" else threads


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m planner.bench", description=__doc__)
    p.add_argument("--device", default="auto", help="auto (default: CUDA, then MPS, then CPU), cuda, mps or cpu")
    p.add_argument("--quick", action="store_true", help="small models and sizes: under a minute on a 2-core CPU")
    p.add_argument("--precision", choices=("fp32", "tf32", "fp16", "bf16"), default=None,
                   help="workload precision (default: fp32 on CPU, bf16 on SM80+, fp16 otherwise)")
    p.add_argument("--compile", dest="compile_", action="store_true", default=None, help="also time torch.compile")
    p.add_argument("--no-compile", dest="compile_", action="store_false", help="skip torch.compile")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for torch (default on a CPU: 1 with --clock cpu, torch's choice with "
                        "--clock wall)")
    p.add_argument("--clock", choices=("wall", "cpu"), default=None,
                   help="CPU device: process CPU time of one thread (default: stable on a shared machine) or wall time")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="timing rounds per workload point (default: 21 with --quick, 5 otherwise; --model: 8 with "
                        "--quick, 6 otherwise), each as long as a default one: fewer finish sooner and measure noisier")
    p.add_argument("--out", default=None, help="result file (default: <date>_<device>-<name>.json here)")
    p.add_argument("--model", default=None, metavar="MODULE:FACTORY",
                   help="measure your own model (the factory `python -m planner profile` traces) instead of the "
                        "built-in decoders")
    p.add_argument("--input", default=None, metavar="NAME=SIZES",
                   help="with --model: the input sizes to time, e.g. tokens=64,128,256,512 (3 to 12 sizes)")
    p.add_argument("--arg", action="append", default=None, metavar="KEY=VALUE", help="with --model: a factory argument")
    p.add_argument("--profile", default=None, metavar="FILE",
                   help="with --model: the model's profile file (default: trace it now at the --input sizes)")
    p.add_argument("--no-anchors", dest="anchors", action="store_false",
                   help="with --model: skip the built-in launch- and bandwidth-bound decode points (then only your "
                        "model's steps are fitted, and factors they don't exercise stay unpinned)")
    a = p.parse_args(argv)
    if (a.input or a.arg or a.profile) and not a.model:
        p.error("--input, --arg and --profile go with --model MODULE:FACTORY")
    if a.model and not a.input:
        p.error("--model needs --input NAME=SIZES (e.g. --input tokens=64,128,256,512)")
    if a.rounds is not None and not 1 <= a.rounds <= 1000:
        p.error(f"--rounds {a.rounds}: give 1 to 1000 timing rounds per point")
    start = time.perf_counter()
    show = _progress(start)
    show("importing torch")
    import torch

    from planner.base.files import write_atomic
    from planner.base.schema import DataFileError
    from planner.bench.env import pick_device
    from planner.bench.run import run_bench, run_model_bench
    from planner.bench.user_model import profile_document
    from planner.inputs.bench_result import CalibrationError, parse_result
    from planner.calibration.fit import fit
    from planner.calibration.tables import point_table
    from planner.profiling.tracer import ProfileError, parse_factory_arg, parse_input_spec
    from planner.views.calibration_text import fit_lines

    if a.clock == "cpu" and (a.threads or 1) != 1:
        print("error: --clock cpu measures one thread's CPU time: use it with --threads 1 (or leave --threads out)",
              file=sys.stderr)
        return 2
    try:
        device = pick_device(a.device)
        if a.precision == "tf32" and device != "cuda":
            raise ValueError("--precision tf32 needs an NVIDIA GPU (SM80+); use fp32 here")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    clock, threads = _clock_and_threads(device, a.clock, a.threads)
    if threads:
        torch.set_num_threads(threads)
    try:
        if a.model:
            size_name, sizes = parse_input_spec(a.input)
            if len(sizes) < 3:
                raise ProfileError("--input: give at least 3 sizes (one can then be left out of a fit and predicted)")
            args = dict(parse_factory_arg(x) for x in a.arg or ())
            doc = profile_document(a.profile) if a.profile else None
            result = run_model_bench(a.model, sizes, args, size_name, device, a.quick, a.precision, doc, show, clock,
                                     rounds=a.rounds, anchors=a.anchors)
        else:
            result = run_bench(device, a.quick, a.precision, a.compile_, show, clock, rounds=a.rounds)
    except (ProfileError, DataFileError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(a.out) if a.out else default_out(result)
    text = json.dumps(result, indent=1)
    write_atomic(out, text + "\n")
    show(f"wrote {out} ({len(text):,} bytes)")
    try:
        checked = parse_result(text, out.name)
        cal = fit(checked)
    except CalibrationError as exc:
        print(f"error: the result does not validate: {exc}", file=sys.stderr)
        return 1
    show(f"fitted: {cal.to_query()}")
    for line in fit_lines(cal):
        print(f"  {line}")
    for row in point_table(checked, cal):
        print(f"  {row['label']:<46} measured {row['measured_s'] * 1e3:9.2f} ms  "
              f"analytic {row['analytic_s'] * 1e3:9.2f} ms  "
              f"calibrated {row['calibrated_s'] * 1e3:9.2f} ms ({row['calibrated_error_pct']:+.0f} %)")
    print(f"total {time.perf_counter() - start:.1f} s; use it with: python -m planner estimate --calibration {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
