"""Your own model on this device: `python -m planner.bench --model MODULE:FACTORY --input NAME=SIZES`.

The factory is the one `python -m planner profile` traces (planner.profiling.tracer): `factory(size, **args)` returns
the model, its inputs for ONE sample (batch 1) and optionally a loss. At each size the model is built on the device
(under `torch.device(device)`, so the factory's own tensors land there too) and two steps are timed:
  forward: a no-grad forward pass in eval mode                          -> the planner's Infer(1, size)
  train:   forward, loss (the factory's, else the sum of the outputs), backward and an AdamW step (fused where torch
           has one), in train mode                                      -> Train(1, size, one step, adamw)
Under fp16/bf16 both run under torch.autocast (fp32 weights). Warm-up calls come first (the first training step
allocates the optimizer's states); then forward and train are timed in interleaved rounds (timed_rounds). Sizes run
one after the other, so only one copy of the model is alive at a time, in PASSES passes up the sizes (each point's
figure is the least-disturbed round of all of them); a size that can't run (out of memory) is recorded as unavailable,
with the reason.

The calibration (planner.calibration.fit) prices each timed step with the model's profile, traced by
`python -m planner profile` at the same sizes unless --profile gives one, and fits the factors to these times.
"""

from __future__ import annotations

import json
import time
from typing import Any
from collections.abc import Callable

import torch
import yaml
from torch.utils._pytree import tree_map

from planner.base.schema import DataFileError, Record, parse_yaml
from planner.bench.micro import DTYPES
from planner.bench.timing import synchronize
from planner.bench.workload import reason_of, timed_rounds
from planner.inputs.models import parse_model
from planner.profiling.tracer import (ProfileError, Request, default_loss, explain, load_factory, normalise,
                                    profile)


# Passes up the sizes, each building the model afresh: a size's rounds sit in PASSES windows a pass over the other
# sizes apart, so a slow spell on a shared machine does not fall on all of one size's rounds. Four passes did a little
# better than two or eight under a bursty neighbour (figures: benchmarks/RESULTS.md, 'The bench's design'); the rest is
# the machine's speed changing for seconds at a time, which sizes timed apart cannot cancel.
PASSES = 4


def traced_profile(spec: str, sizes: tuple[int, ...], args: dict[str, Any], size_name: str,
                   progress: Callable[[str], None]) -> tuple[dict, float]:
    """Trace the factory at `sizes` (in a capped child process, as `planner profile` does): (profile document, s)."""
    progress(f"tracing {spec} at {size_name} = {', '.join(map(str, sizes))} (no real tensors)")
    t0 = time.perf_counter()
    text, model, warnings = profile(Request(spec, tuple(sizes), tuple(args.items()), size_name))
    for w in warnings:
        progress(f"  warning: {w}")
    progress(f"  {model.describe()}")
    return yaml.safe_load(text), round(time.perf_counter() - t0, 3)


def profile_document(path: str) -> dict:
    """A model profile file given with --profile (YAML, one model), validated as the result will be, as the
    document to embed (dates as text, like JSON); DataFileError naming the problem otherwise."""
    with open(path, encoding="utf-8") as f:
        doc = parse_yaml(f.read(), path)
    if isinstance(doc, dict) and isinstance(doc.get("models"), list) and len(doc["models"]) == 1:
        doc = doc["models"][0]
    if not isinstance(doc, dict):
        raise DataFileError(path, "-", "-", "expected one model profile as a YAML mapping (`python -m planner "
                                            "profile` writes one)")
    doc = json.loads(json.dumps(doc, default=str))
    parse_model(Record.of(path, 0, doc))
    return doc


def _to_device(x: Any, device: str) -> Any:
    return x.to(device) if isinstance(x, torch.Tensor) else x


def _steps(factory: Callable[..., Any], spec: str, size: int, args: dict[str, Any], device: str, precision: str):
    """(forward, train, objects to keep alive) for the model at `size`; ProfileError when the factory raises."""
    try:
        with torch.device(device):
            built = normalise(factory(size, **args), spec)
    except ProfileError:
        raise
    except Exception as exc:  # the user's code: named, never a traceback
        raise explain(exc, f"the factory {spec} at size {size}") from None
    model = built.model.to(device)
    inputs, kwargs = tree_map(lambda x: _to_device(x, device), built.args), tree_map(
        lambda x: _to_device(x, device), built.kwargs)
    autocast = precision in ("fp16", "bf16")
    cast = lambda: torch.autocast(device_type=device, dtype=DTYPES[precision], enabled=autocast)
    try:  # fused update: the planner estimates these points with optimizer adamw-fused (its 28 B a parameter)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    except (RuntimeError, ValueError):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = built.loss or default_loss

    def forward():
        model.eval()
        with torch.no_grad(), cast():
            return model(*inputs, **kwargs)

    def train():
        model.train()
        opt.zero_grad(set_to_none=True)
        with cast():
            loss = loss_fn(model(*inputs, **kwargs))
        loss.backward()
        opt.step()

    return forward, train, (model, opt)


def _merge(a: dict | None, b: dict) -> dict:
    """The passes' timing records of one point as one: every round median, the least-disturbed one kept."""
    if a is None:
        return b
    rounds = a["round_medians_s"] + b["round_medians_s"]
    best = min(rounds)
    return {**a, "median_s": best, "median_of_rounds_s": sorted(rounds)[len(rounds) // 2], "round_medians_s": rounds,
            "runs": a["runs"] + b["runs"], "method": b["method"].rsplit(", least", 1)[0]
            + f", least-disturbed of {len(rounds)} rounds in {PASSES} passes over the sizes"}


def run_model(spec: str, sizes: tuple[int, ...], args: dict[str, Any], size_name: str, device: str, precision: str,
              profile_doc: dict, min_run_time_s: float, rounds: int, clock: str = "wall",
              progress: Callable[[str], None] = lambda text: None, warmup: int = 2) -> dict:
    """Time forward and train of the factory's model at every size, in PASSES passes up the sizes,
    each building the model afresh and timing its share of the rounds: a disturbance that lasts while one size is timed
    (or an unlucky allocation) can't set that size's figure alone. The result's model-run record
    (planner.inputs.bench_result checks it)."""
    factory = load_factory(spec)
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    timings: dict[tuple[str, int], dict] = {}
    failed: dict[int, str] = {}
    per_pass = max(1, -(-rounds // PASSES))
    for k in range(PASSES):
        for size in sizes:
            if size in failed:
                continue
            progress(f"pass {k + 1}/{PASSES}, {size_name}={size}: building and warming up")
            try:
                forward, train, keep = _steps(factory, spec, size, args, device, precision)
                for _ in range(warmup):
                    forward()
                    train()
                synchronize(device)
            except ProfileError:
                raise
            except Exception as exc:  # noqa: BLE001 - out of memory or a dtype the device lacks: recorded, not fatal
                failed[size] = reason_of(exc)
                progress(f"  unavailable: {failed[size]}")
                if device == "cuda":
                    torch.cuda.empty_cache()
                continue
            measured = timed_rounds([forward, train], device, min_run_time_s / PASSES, per_pass, clock)
            for workload, timing in zip(("forward", "train"), measured):
                timings[workload, size] = _merge(timings.get((workload, size)), timing)
            progress(f"  forward {measured[0]['median_s'] * 1e3:.2f} ms, "
                     f"train step {measured[1]['median_s'] * 1e3:.2f} ms")
            del forward, train, keep
            if device == "cuda":
                torch.cuda.empty_cache()
    points = []
    for size in sizes:
        for workload in ("forward", "train"):
            if size in failed:
                points.append({"workload": workload, "size": size, "status": "unavailable", "reason": failed[size]})
            else:
                t = timings[workload, size]
                points.append({"workload": workload, "size": size, "status": "ok", "measured_s": t["median_s"],
                               "timing": t})
    return {"factory": spec, "args": args, "input_size_name": size_name, "precision": precision, "batch": 1,
            "profile": profile_doc, "points": points}
