"""Workload benchmarks: a real decoder (planner.bench.model) running a planner workload at a batch and precision.

Kinds, and the planner workload each one is estimated as (planner.calibration.measured.point_plan):
- decode:  one generation step of `batch` sequences at KV position `position` (the new token attends position + 1
           keys; the cache was filled by an untimed prefill)        -> the decode phase of Generate(batch, position, 2)
- forward: one forward pass over `batch` x `seq` tokens              -> Infer(batch, seq)
- train:   one training step (forward, backward, AdamW step)          -> Train(batch, seq, 1 epoch, adamw)
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from collections.abc import Callable

import torch
import torch.nn.functional as F

from planner.bench.micro import DTYPES
from planner.bench.model import build, new_caches
from planner.bench.timing import measure, synchronize
from planner.inputs.bench_result import KINDS
from planner.inputs.models import DecoderProfile


@dataclass(frozen=True)
class Point:
    """One workload benchmark: `position` for decode, `seq` for forward and train."""

    model: DecoderProfile
    kind: str
    batch: int
    precision: str = "fp32"
    position: int = 0
    seq: int = 0
    compiled: bool = False

    def label(self) -> str:
        where = f"pos {self.position}" if self.kind == "decode" else f"seq {self.seq}"
        return (f"{self.model.id} {self.kind} b{self.batch} {where} {self.precision}"
                + (" compiled" if self.compiled else ""))


def _tokens(p: DecoderProfile, batch: int, length: int, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randint(0, p.vocab, (batch, length), generator=g).to(device)


def _maybe_compile(fn, compiled: bool, device: str):
    if not compiled:
        return fn
    mode = "reduce-overhead" if device == "cuda" else "default"
    return torch.compile(fn, mode=mode, dynamic=False)


def make_callable(pt: Point, device: str, shared: dict | None = None):
    """(callable that runs the workload once, objects to keep alive). Inference points of one model and dtype share
    one set of weights through `shared` (GPU memory); each training point has its own model and optimizer."""
    p, dtype = pt.model, DTYPES[pt.precision]
    torch.set_float32_matmul_precision("high" if pt.precision == "tf32" else "highest")
    if pt.kind == "train":
        model = build(p, device, torch.float32)
        model.train()
        try:  # fused update: the planner estimates these points with optimizer adamw-fused (its 28 B a parameter)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        except (RuntimeError, ValueError):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x = _tokens(p, pt.batch, pt.seq, device)
        y = torch.roll(x, -1, dims=1)
        autocast = pt.precision in ("fp16", "bf16")
        fwd = _maybe_compile(model, pt.compiled, device)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device_type=device, dtype=dtype, enabled=autocast):
                logits = fwd(x)
            loss = F.cross_entropy(logits.float().view(-1, p.vocab), y.view(-1))
            loss.backward()
            opt.step()
        return step, (model, opt)
    shared = {} if shared is None else shared
    key = (p, pt.precision)
    if key not in shared:
        shared[key] = build(p, device, dtype).eval()
    model = shared[key]
    if pt.kind == "forward":
        x = _tokens(p, pt.batch, pt.seq, device)
        fwd = _maybe_compile(model, pt.compiled, device)

        def forward():
            with torch.inference_mode():
                return fwd(x)
        return forward, (model,)
    caches = new_caches(p, pt.batch, pt.position + 1, device, dtype)
    with torch.inference_mode():
        model(_tokens(p, pt.batch, pt.position, device), caches, 0)  # prefill: fills positions 0 .. position-1
    tok = _tokens(p, pt.batch, 1, device)
    pos = pt.position
    if pt.compiled:
        # The step writes into the caches: as plain inputs, Inductor's CUDA graphs skip a function that mutates them
        # ('skipping cudagraphs due to mutated inputs', torch 2.11) and the step runs as separate kernel
        # launches. A static address (what gpt-fast's cache buffers get) lets the graph write in place.
        for k, v in caches:
            torch._dynamo.mark_static_address(k)
            torch._dynamo.mark_static_address(v)
    fwd = _maybe_compile(model, pt.compiled, device)

    def decode():
        with torch.inference_mode():
            return fwd(tok, caches, pos).argmax(dim=-1)  # greedy sampling of the next token
    return decode, (model, caches)


def _row(pt: Point) -> dict:
    row = {"model": pt.model.record(), "workload": pt.kind, "batch": pt.batch, "precision": pt.precision,
           "compiled": pt.compiled, "runtime": "torch-compile" if pt.compiled else "pytorch-eager"}
    row.update({"position": pt.position} if pt.kind == "decode" else {"seq": pt.seq})
    return row


def _check(pt: Point) -> None:
    if pt.kind not in KINDS:
        raise ValueError(f"workload kind must be one of {', '.join(KINDS)}, got {pt.kind!r}")
    if pt.kind == "decode" and not 1 <= pt.position < pt.model.context:
        raise ValueError(f"decode position must be in 1..{pt.model.context - 1} for {pt.model.id}")
    if pt.kind != "decode" and not 1 <= pt.seq <= pt.model.context:
        raise ValueError(f"seq must be in 1..{pt.model.context} for {pt.model.id}")


def reason_of(exc: BaseException) -> str:
    """Why a point could not run, in one line: the exception's type and first line."""
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}"


def timed_rounds(fns: list[Callable[[], object]], device: str, min_run_time_s: float, rounds: int, clock: str = "wall",
                 on_round: Callable[[int], None] = lambda r: None) -> list[dict]:
    """Time each of `fns` (already warmed up) in `rounds` interleaved passes, each timing every function for
    min_run_time_s / rounds and taking the median over its runs; per function, the timing record whose median_s is
    the smallest of its round medians: the round least disturbed by other work (on a shared machine other processes
    slow whole rounds down; nothing makes a round faster than the hardware)."""
    meds: list[list] = [[] for _ in fns]
    for r in range(rounds):
        on_round(r)
        for k in range(len(fns)):  # start each round at another function: none always follows the same one
            i = (k + r) % len(fns)
            # on the CPU, Timer's block-size estimate already runs the workload before timing it
            meds[i].append(measure(fns[i], device, min_run_time_s / rounds, warmup=0 if device == "cpu" else 1,
                                   clock=clock))
    out = []
    for m in meds:
        best = min(t.median_s for t in m)
        out.append({"median_s": best, "median_of_rounds_s": statistics.median(t.median_s for t in m),
                    "round_medians_s": [t.median_s for t in m], "runs": sum(t.runs for t in m),
                    "method": m[0].method + f", median per round, least-disturbed of {len(m)} rounds"})
    return out


def run_points(points: list[Point], device: str, min_run_time_s: float, rounds: int = 3,
               progress: Callable[[str], None] = lambda text: None, clock: str = "wall") -> list[dict]:
    """Measure points interleaved: `rounds` passes over all of them, each timing every point for
    min_run_time_s / rounds and taking the median over its runs. measured_s is the smallest of those round
    medians: the median of the round least disturbed by other work (on a shared machine other processes slow
    whole rounds down; nothing makes a round faster than the hardware). Points that cannot run (out of memory,
    dtype unsupported, torch.compile failing) report status 'unavailable' with the reason."""
    for pt in points:
        _check(pt)
    live, rows, shared = [], [], {}
    for i, pt in enumerate(points):
        progress(f"[{i + 1}/{len(points)}] preparing {pt.label()}"
                 + (" (compiling, can take a minute)" if pt.compiled else ""))
        row = _row(pt)
        t0 = time.perf_counter()
        try:
            fn, keep = make_callable(pt, device, shared)
            fn()  # first call compiles when compiled; warm-up either way (excluded from the timing)
            synchronize(device)
        except Exception as exc:  # noqa: BLE001 - out of memory, dtype unsupported here, torch.compile failures
            reason = reason_of(exc)
            progress(f"  unavailable: {reason}")
            rows.append({**row, "status": "unavailable", "reason": reason})
            if device == "cuda":
                torch.cuda.empty_cache()  # an out-of-memory point leaves cached blocks behind
            continue
        if pt.compiled:
            row["compile_s"] = round(time.perf_counter() - t0, 3)
        rows.append(row)
        live.append((row, fn, keep))
    timings = timed_rounds([fn for _, fn, _ in live], device, min_run_time_s, rounds, clock,
                           lambda r: progress(f"timing round {r + 1}/{rounds} over {len(live)} workload points"))
    for (row, _, _), timing in zip(live, timings):
        row.update(status="ok", measured_s=timing["median_s"], timing=timing)
    return rows
