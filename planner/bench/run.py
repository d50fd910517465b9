"""What a benchmark run measures (quick or full, per device) and the result document it writes."""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from collections.abc import Callable

import torch

from planner.bench.env import environment
from planner.bench.micro import DTYPES, copy_bandwidth, launch_overhead, matmul_tflops, supported_paths
from planner.bench.user_model import run_model, traced_profile
from planner.bench.workload import Point, run_points
from planner.inputs.bench_result import BENCH_VERSION, RESULT_KIND, RESULT_SCHEMA_VERSION
from planner.inputs.models import DecoderProfile, load_models

SYNTHETIC = "synthetic profile for planner.bench --quick (small enough for a 2-core CPU)"
# --quick (and --model's anchor points) time each point in QUICK_ROUNDS interleaved rounds of QUICK_ROUND_S, keeping
# the least disturbed: on a shared machine one round's median swings with other tenants' load, and 21 rounds kept the
# held-out model's error within 15 % where 7 did not (figures: benchmarks/RESULTS.md, 'The bench's design').
QUICK_ROUNDS = 21
QUICK_ROUND_S = 0.05
QUICK_POINT_S = QUICK_ROUNDS * QUICK_ROUND_S  # one point's timing in all
# Two small decoders of different families, so a fit on one can be checked on the other. 512 wide: narrower GEMMs
# run at a lower fraction of the CPU's matmul peak, which one compute efficiency cannot carry across model widths.
TINY_LLAMA = DecoderProfile(id="bench-tiny-llama", name="bench tiny LLaMA-style (4 x 512)", layers=4, hidden=512,
                            heads=8, kv_heads=8, head_dim=64, ffn=1536, ffn_kind="swiglu", vocab=512, context=512,
                            tied_embeddings=True, norm="rmsnorm", learned_pos_emb=False, bias=False, source=SYNTHETIC)
# TINY_GPT, the architecture the fit never sees in tests/bench/test_bench.py, has 8 layers (26 M parameters, 104 MB in
# fp32) so that its decode streams from DRAM: a smaller model partly stays in a large last-level cache and decodes
# faster than the DRAM-fitted calibration predicts.
TINY_GPT = DecoderProfile(id="bench-tiny-gpt", name="bench tiny GPT-2-style (8 x 512)", layers=8, hidden=512, heads=8,
                          kv_heads=8, head_dim=64, ffn=2048, ffn_kind="gelu", vocab=1024, context=512,
                          tied_embeddings=True, norm="layernorm", learned_pos_emb=True, bias=True, source=SYNTHETIC)
# Points that each pin one factor down, so the fit can separate them (a fit on mixed points alone slides along a
# ridge where more launch overhead trades for less bandwidth). NARROW: 0.2 M parameters (under 1 MB), so a decode
# step is its ~50 kernel launches and little else. DEEP: TINY_LLAMA's 512-wide layers, 16 of them: 54 M parameters,
# 218 MB in fp32, far beyond a CPU's last-level cache, so a decode step at batch 1 streams its weights from DRAM
# through the same matrix shapes as the other models (a CPU streams a narrow model's matrix-vector products markedly
# slower than a wide one's, so one bandwidth efficiency can't hold both).
NARROW = DecoderProfile(id="bench-narrow", name="bench narrow (4 x 64): kernel-launch bound", layers=4, hidden=64,
                        heads=2, kv_heads=2, head_dim=32, ffn=192, ffn_kind="swiglu", vocab=256, context=512,
                        tied_embeddings=True, norm="rmsnorm", learned_pos_emb=False, bias=False, source=SYNTHETIC)
DEEP = DecoderProfile(id="bench-deep", name="bench deep (16 x 512): memory-bandwidth bound", layers=16, hidden=512,
                      heads=8, kv_heads=8, head_dim=64, ffn=1536, ffn_kind="swiglu", vocab=512, context=512,
                      tied_embeddings=True, norm="rmsnorm", learned_pos_emb=False, bias=False, source=SYNTHETIC)
# WIDE: the GPU's bandwidth anchor. A 132M-parameter decoder streams its weights in well under a tenth of a
# millisecond on a data-center GPU while its ~200 kernels take milliseconds to dispatch, so no decoder point pins
# bandwidth there and the fit drifts above the datasheet (validation/REPORT.md, 'A real GPU'). LLaMA-65B-wide layers
# (8192, SwiGLU 22016: 809 M weights, 1.6 GB in bf16 each) make one decode step at batch 1 stream GBs through ~25
# kernels a layer: memory time five times the dispatch time on an H200. Layer count sized to the GPU (wide_layers).
WIDE = DecoderProfile(id="bench-wide", name="bench wide (n x 8192): memory-bandwidth bound on a GPU", layers=4,
                      hidden=8192, heads=64, kv_heads=64, head_dim=128, ffn=22016, ffn_kind="swiglu", vocab=512,
                      context=512, tied_embeddings=True, norm="rmsnorm", learned_pos_emb=False, bias=False,
                      source=SYNTHETIC)
WIDE_MAX_LAYERS = 4
WIDE_FORWARD = (4, 512)  # (batch, tokens) of WIDE's compute-bound forward pass on a GPU
# WIDE's weights in the workload dtype stay under this share of the GPU's memory, and its fp32 copy while it is built
# (build() makes fp32 weights, then casts) under WIDE_BUILD_SHARE: room for the other points' models and caches.
WIDE_MEMORY_SHARE, WIDE_BUILD_SHARE = 0.25, 0.5
# Copy size for the bandwidth micro-benchmark on a CPU: 16x a 32 MiB last-level cache, so the copy measures DRAM
# (a copy that partly fits in cache reads a rate that swings from run to run).
CPU_COPY_MIB = 512


def default_precision(device: str) -> str:
    """fp32 on CPU (no fast 16-bit matmul on most CPUs); bf16 on SM80+ and MPS; fp16 on older NVIDIA GPUs."""
    if device == "cpu":
        return "fp32"
    if device == "cuda":
        return "bf16" if torch.cuda.get_device_capability(0) >= (8, 0) else "fp16"
    return "fp16"


def wide_layers(memory_bytes: float, precision: str) -> int:
    """WIDE's layer count for a GPU of `memory_bytes`: as many as WIDE_MEMORY_SHARE (weights in `precision`) and
    WIDE_BUILD_SHARE (their fp32 copy while built) allow, between 1 and WIDE_MAX_LAYERS."""
    layer = WIDE.params / WIDE.layers
    fits = min(WIDE_MEMORY_SHARE * memory_bytes / (layer * DTYPES[precision].itemsize),
               WIDE_BUILD_SHARE * memory_bytes / (layer * DTYPES["fp32"].itemsize))
    return max(1, min(WIDE_MAX_LAYERS, int(fits)))


def anchor_points(device: str, precision: str, memory_bytes: float | None = None) -> list[Point]:
    """Launch-bound (narrow decode) and bandwidth-bound (deep decode on a CPU, wide decode on a GPU) points, and on a
    GPU a compute-bound one (wide forward): what separates the three factors. Batch 1: on a CPU, decode at batch 4 or
    more runs thin GEMMs far slower than either roof, which no single bandwidth or compute efficiency represents. On
    a GPU the deep model is launch-bound too (its 218 MB stream in about 0.1 ms), so WIDE, sized to `memory_bytes`
    (the GPU's; default: the current device's), anchors bandwidth and compute there."""
    P = lambda m, pos: Point(m, "decode", 1, precision, position=pos)
    if device == "cpu":
        return [P(NARROW, 16), P(NARROW, 128), P(DEEP, 16), P(DEEP, 128)]
    if memory_bytes is None:
        memory_bytes = float(torch.cuda.get_device_properties(0).total_memory) if device == "cuda" else 0.0
    if not memory_bytes:  # Apple GPUs: no memory size to size WIDE by, so no bandwidth anchor
        return [P(NARROW, 16), P(NARROW, 128)]
    wide = replace(WIDE, layers=wide_layers(memory_bytes, precision))
    # and compute: a forward pass of WIDE over 2,048 tokens is ~13 TFLOP of large GEMMs (about 20 ms on an H200) under
    # ~1 ms of dispatch, where the decoders' forward and training steps are partly dispatch-bound there
    return [P(NARROW, 16), P(NARROW, 128), P(wide, 16), P(wide, 128),
            Point(wide, "forward", WIDE_FORWARD[0], precision, seq=WIDE_FORWARD[1])]


def workload_points(device: str, quick: bool, precision: str, compile_: bool) -> list[Point]:
    """The workload grid: the anchors, decode at several batches and positions, forward passes, a training step,
    and a second model; sized so --quick stays under a minute on a 2-core CPU and the full CPU run takes a few
    minutes."""
    P = lambda m, kind, b, **kw: Point(m, kind, b, precision, **kw)
    anchors = anchor_points(device, precision)
    if quick and device == "cpu":
        a, g = TINY_LLAMA, TINY_GPT
        pts = [P(a, "decode", 1, position=64), P(a, "forward", 1, seq=64), P(a, "forward", 4, seq=128),
               P(a, "train", 2, seq=64), P(g, "decode", 1, position=64), P(g, "forward", 2, seq=64)]
    else:
        a, g = load_models().get("cfdna-gen"), load_models().get("gpt2-124m")
        if device == "cpu":  # full CPU run: fp32 132M-parameter model, a few seconds per point
            pts = [P(a, "decode", b, position=128) for b in (1, 4, 16)] + [P(a, "decode", 4, position=32),
                   P(a, "forward", 1, seq=128), P(a, "forward", 2, seq=256), P(a, "train", 1, seq=128),
                   P(g, "decode", 4, position=256), P(g, "forward", 1, seq=256)]
        else:
            db = (1, 16, 64) if quick else (1, 16, 128)
            pts = [P(a, "decode", b, position=128) for b in db] + [P(a, "decode", db[1], position=32),
                   P(a, "forward", 8, seq=256), P(a, "forward", 32, seq=256), P(a, "train", 8, seq=256),
                   P(g, "decode", 16, position=512), P(g, "forward", 8, seq=512)]
            if not quick:
                pts += [P(a, "train", 32, seq=256), P(g, "train", 8, seq=512)]
    if compile_:  # the same jobs under torch.compile (Inductor; CUDA graphs on NVIDIA)
        pts += [Point(p.model, p.kind, p.batch, precision, p.position, p.seq, compiled=True)
                for p in (pts[1], next(p for p in pts if p.kind == "forward"))]
    return anchors + pts


def _matmul_sizes(device: str, quick: bool) -> list[int]:
    if device != "cpu":
        return [2048, 4096] if quick else [1024, 2048, 4096, 8192]
    return [256, 512] if quick else [256, 512, 1024, 2048]


def run_micro(device: str, quick: bool, precision: str, clock: str, progress: Callable[[str], None]) -> dict:
    """Copy bandwidth, matmul TFLOPS per dtype and launch overhead: the device's measured peaks."""
    mrt = 0.15 if quick else 0.5
    mib = (1024 if not quick else 256) if device != "cpu" else CPU_COPY_MIB
    progress(f"memory bandwidth: copying {mib} MiB")
    bw = copy_bandwidth(device, mib, mrt, clock)
    progress(f"  {bw['gbps']:.1f} GB/s")
    sizes = _matmul_sizes(device, quick)
    matmul: dict[str, dict] = {}
    for path in supported_paths(device, torch.cuda.get_device_capability(0) if device == "cuda" else None):
        progress(f"matmul {path}: n = {', '.join(map(str, sizes))}")
        runs = []
        try:
            for n in (sizes if path in ("fp32", "tf32", precision) else sizes[:1 if quick else 2]):
                runs.append(matmul_tflops(device, path, n, mrt, clock))
        except (RuntimeError, TypeError) as exc:  # dtype not supported on this device
            matmul[path] = {"status": "unavailable",
                            "reason": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            progress(f"  unavailable ({matmul[path]['reason']})")
            continue
        best = max(r["tflops"] for r in runs)
        matmul[path] = {"status": "ok", "best_tflops": best, "sizes": runs}
        progress(f"  best {best:.3f} TFLOPS")
    progress("launch overhead: chains of tiny kernels")
    lo = launch_overhead(device, mrt, clock=clock)
    progress(f"  {lo['us_per_op']:.2f} us per op")
    return {"memory_bandwidth": bw, "matmul": matmul, "launch_overhead": lo}


def recheck_micro(micro: dict, device: str, quick: bool, precision: str, clock: str,
                  progress: Callable[[str], None]) -> None:
    """Measure the peaks the fit divides by once more after the workloads: copy bandwidth (the median over both
    passes' allocations) and the workload dtype's best matmul (the faster pass). A neighbour's burst of memory
    traffic or CPU use during one pass would otherwise move every fitted efficiency with it."""
    mrt = 0.15 if quick else 0.5
    bw = micro["memory_bandwidth"]
    again = copy_bandwidth(device, bw["tensor_mib"], mrt, clock)
    progress(f"memory bandwidth again: {again['gbps']:.1f} GB/s (before the workloads {bw['gbps']:.1f})")
    passes, draws = [bw["gbps"], again["gbps"]], sorted(bw["allocations_gbps"] + again["allocations_gbps"])
    bw.update(gbps=statistics.median(draws), allocations_gbps=draws, passes_gbps=passes)
    mm = micro["matmul"].get(precision)
    if not mm or mm.get("status") != "ok":
        return
    best = max(mm["sizes"], key=lambda r: r["tflops"])
    run = matmul_tflops(device, precision, best["n"], mrt, clock)
    progress(f"matmul {precision} n={best['n']} again: {run['tflops']:.3f} TFLOPS (before {best['tflops']:.3f})")
    mm["passes_tflops"] = [best["tflops"], run["tflops"]]
    if run["tflops"] > best["tflops"]:
        mm["sizes"][mm["sizes"].index(best)] = run
        mm["best_tflops"] = max(r["tflops"] for r in mm["sizes"])


def _start(device: str, clock: str, progress: Callable[[str], None]) -> dict:
    env = {**environment(device), "clock": clock if device == "cpu" else "device"}
    if device == "cpu" and env["load_average"] > 0.5 * env["cpu_threads"] and clock == "wall":
        progress(f"warning: the machine is busy (load {env['load_average']:.1f} on {env['cpu_threads']} CPUs): "
                 "wall times will be noisy; --threads 1 --clock cpu measures CPU time instead")
    progress(f"device: {env['device_name']} ({device}), torch {env['torch_version']}, {env['torch_threads']} threads")
    return env


def _document(quick: bool, env: dict, micro: dict, workloads: list[dict], compile_status: str, t0: float,
              model_runs: list[dict] | None = None) -> dict:
    doc = {"kind": RESULT_KIND, "schema_version": RESULT_SCHEMA_VERSION, "bench_version": BENCH_VERSION,
           "quick": quick, "environment": env, "micro": micro, "workloads": workloads,
           "torch_compile": compile_status}
    if model_runs is not None:
        doc["model_runs"] = model_runs
    doc["elapsed_s"] = round(time.perf_counter() - t0, 1)
    return doc


def _point_time(default_s: float, default_rounds: int, rounds: int | None) -> float:
    """A point's timing in all for `rounds` rounds (None: the default), each round as long as a default one."""
    return default_s if rounds is None else default_s / default_rounds * rounds


def run_bench(device: str, quick: bool = False, precision: str | None = None, compile_: bool | None = None,
              progress: Callable[[str], None] = lambda text: None, clock: str = "wall",
              points: list[Point] | None = None, rounds: int | None = None,
              workload_time_s: float | None = None) -> dict:
    """Run every benchmark on `device` and return the result document (validated by
    planner.inputs.bench_result.parse_result).

    points: the workload points to time (default: `workload_points` for the device and mode); each is timed for
    about workload_time_s in all, over `rounds` interleaved rounds (defaults: the mode's; `rounds` alone keeps each
    round as long as a default one)."""
    t0 = time.perf_counter()
    precision = precision or default_precision(device)
    compile_ = (not quick) if compile_ is None else compile_
    env = _start(device, clock, progress)
    micro = run_micro(device, quick, precision, clock, progress)
    points = points if points is not None else workload_points(device, quick, precision, compile_)
    # many short rounds: background load on a shared machine comes and goes within seconds
    default_rounds, default_time_s = (QUICK_ROUNDS, QUICK_POINT_S) if quick else (5, 2.0)
    rows = run_points(points, device, workload_time_s or _point_time(default_time_s, default_rounds, rounds),
                      rounds or default_rounds, progress, clock)
    recheck_micro(micro, device, quick, precision, clock, progress)
    if compile_:
        compile_status = "; ".join(f"{r['workload']}: " + (f"ok, compiled in {r['compile_s']:.1f} s"
                                                           if r["status"] == "ok" else f"unavailable ({r['reason']})")
                                   for r in rows if r["compiled"])
    else:
        compile_status = ("skipped: --quick (torch.compile takes tens of seconds per graph on a CPU)" if quick
                          else "skipped: --no-compile")
    return _document(quick, env, micro, rows, compile_status, t0)


def run_model_bench(spec: str, sizes: tuple[int, ...], args: dict, size_name: str, device: str, quick: bool = False,
                    precision: str | None = None, profile_doc: dict | None = None,
                    progress: Callable[[str], None] = lambda text: None, clock: str = "wall",
                    rounds: int | None = None, point_time_s: float | None = None, anchors: bool = True) -> dict:
    """`--model`: the micro-benchmarks, the anchor points (unless `anchors` is False: they pin down the factors the
    model's own steps may not, such as launch overhead for a model that is compute-bound here) and the user's model
    (forward and training step at every size) with its profile (traced here unless `profile_doc` is given). The
    result document."""
    t0 = time.perf_counter()
    precision = precision or default_precision(device)
    trace_s = None
    if profile_doc is None:
        profile_doc, trace_s = traced_profile(spec, sizes, args, size_name, progress)
    env = _start(device, clock, progress)
    micro = run_micro(device, quick, precision, clock, progress)
    rows = (run_points(anchor_points(device, precision), device, _point_time(QUICK_POINT_S, QUICK_ROUNDS, rounds),
                       rounds or QUICK_ROUNDS, progress, clock) if anchors else [])
    default_rounds, default_time_s = (8, 0.7) if quick else (6, 2.0)
    point_s = point_time_s or _point_time(default_time_s, default_rounds, rounds)
    run = run_model(spec, sizes, args, size_name, device, precision, profile_doc, point_s, rounds or default_rounds,
                    clock, progress)
    if trace_s is not None:
        run["trace_s"] = trace_s
    recheck_micro(micro, device, quick, precision, clock, progress)
    return _document(quick, env, micro, rows, "skipped: --model times eager PyTorch", t0, [run])
