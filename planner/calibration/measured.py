"""What a bench result measured, as the planner sees it: its workload points (bench_points, the plan each is
estimated as, predict_seconds), the measured device with its measured peaks (device_gpu, bench_cpu) and the bare torch
ops' efficiency the fit's factors stand for (factor_efficiency, on_host). This module never imports torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from planner.base.schema import Record, UnknownNameError
from planner.base.units import BYTES_PER_GB, BYTES_PER_GIB
from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.inputs.bench_result import (BENCH_VERSION, PATHS, CalibrationError, datasheet_problem, point_model,
                                         run_model)
from planner.inputs.catalog import GPU, Catalog, Ceiling, load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.models import ModelProfile
from planner.inputs.runtimes import Efficiency

DEVICE_CLASSES = ("hbm", "gddr", "cpu", "mps")
# the bench's training points step torch.optim.AdamW(fused=True) (planner/bench/workload.py)
BENCH_OPTIMIZER = "adamw-fused"
FIT_RUNTIME = "pytorch-eager"  # the workload points run eager PyTorch; compiled points are shown, not fitted
# Host dispatch per kernel (as data/runtimes.yaml counts kernels) of bare torch ops on the host behind eager PyTorch's
# tuned host_us_per_kernel: a GPU calibration scales a runtime's host dispatch by its fitted value over this one.
# The bench's fit on H200 "b" of validation/measured/README.md (2026-11-26; 95 %: +-19 %), the machine whose Hugging
# Face decode eager's tuned host time matches; how it carries to another host: validation/REPORT.md, 'A real GPU'.
BARE_OP_HOST_US = 12.6


@dataclass(frozen=True)
class Point:
    model: ModelProfile
    kind: str
    batch: int
    precision: str
    size: int  # decode: KV position; forward/train: tokens per sample (a model run: its input size)
    runtime: str
    measured_s: float
    from_run: bool = False  # a model run's point (`--model`), not a decoder workload


def _run_points(result: dict) -> list[tuple[dict, dict, ModelProfile]]:
    """(model run, point, the run's model) for every point of every model run (`--model`), in file order."""
    out = []
    for i, run in enumerate(result.get("model_runs") or ()):
        model = run_model(Record("result", f"model_runs[{i}]", run))
        out += [(run, pt, model) for pt in run["points"]]
    return out


def bench_points(result: dict, fitted_only: bool = False) -> list[Point]:
    """Measured points: decoder workloads (compiled ones only unless fitted_only), then model-run points."""
    out = []
    for i, row in enumerate(result["workloads"]):
        if row.get("status") != "ok" or (fitted_only and row.get("compiled")):
            continue
        out.append(Point(point_model(Record("result", f"workloads[{i}]", row)), row["workload"], int(row["batch"]),
                          row["precision"], int(row["position"] if row["workload"] == "decode" else row["seq"]),
                          "torch-compile" if row.get("compiled") else FIT_RUNTIME, float(row["measured_s"])))
    for run, pt, model in _run_points(result):
        if pt.get("status") == "ok":
            out.append(Point(model, pt["workload"], int(run["batch"]), run["precision"], int(pt["size"]), FIT_RUNTIME,
                              float(pt["measured_s"]), from_run=True))
    return out


def point_plan(kind: str, model: ModelProfile, batch: int, size: int, precision: str,
               runtime: str = FIT_RUNTIME) -> Plan:
    """The planner plan a workload point is estimated as (see planner/bench/workload.py)."""
    workload = {"decode": lambda: Generate(batch, size, 2), "forward": lambda: Infer(batch, size),
                "train": lambda: Train(batch, size, 1.0, BENCH_OPTIMIZER)}[kind]()
    return Plan(model, workload, precision, None, "sdpa", runtime, batch)


def _timed_phases(kind: str, work: tuple) -> tuple:
    """Decode points time one generation step: only the decode phase of Generate(batch, position, 2)."""
    return tuple(ph for ph in work if ph.name == "decode") if kind == "decode" else work


def _estimate(kind: str, model: ModelProfile, batch: int, size: int, precision: str, gpu: GPU,
              adjust: Callable[[GPU, Efficiency], Efficiency] | None, runtime: str):
    # a point that ran is timed even where the planner's memory model would call it out of memory
    roomy = replace(gpu, vram_gib=max(gpu.vram_gib, 1e6), reported_vram_mib=None)

    est = estimate_gpu(point_plan(kind, model, batch, size, precision, runtime), roomy, load_facts(),
                       adjust or bare_op_analytic)
    if not est.feasible:
        raise CalibrationError(f"the planner cannot estimate {model.id} {kind} in {precision} on {gpu.name}: "
                               + "; ".join(r.text for r in est.reasons if r.blocking))
    return est, roomy


def bare_op_analytic(gpu: GPU, eff: Efficiency) -> Efficiency:
    """The planner's uncalibrated view of the bench's points: eager PyTorch's bandwidth and compute on this class, its
    per-kernel overhead that of bare torch ops (no framework Python: BARE_OP_HOST_US of host dispatch on a GPU, the
    runtime's launch time on a CPU); a compiled point keeps its runtime's own efficiency."""
    if eff.runtime != FIT_RUNTIME:
        return eff
    overhead = BARE_OP_HOST_US if on_host(gpu.memory_class) else eff.launch_overhead_us
    return factor_efficiency(eff, eff.mem_bw_efficiency, eff.compute_efficiency, overhead, gpu.memory_class)


def point_phases(pt: Point, gpu: GPU) -> tuple:
    est, _ = _estimate(pt.kind, pt.model, pt.batch, pt.size, pt.precision, gpu, None, pt.runtime)
    return _timed_phases(pt.kind, est.work)


def predict_seconds(kind: str, model: ModelProfile, batch: int, size: int, precision: str, gpu: GPU,
                    adjust: Callable[[GPU, Efficiency], Efficiency] | None = None, runtime: str = FIT_RUNTIME) -> float:
    """The planner's time for one workload point on `gpu` (seconds), analytic or with `adjust`."""
    est, roomy = _estimate(kind, model, batch, size, precision, gpu, adjust, runtime)
    return sum(phase_seconds(ph, roomy, est.efficiency) for ph in _timed_phases(kind, est.work))


def measured_points(result: dict) -> list[dict]:
    """Workload points for charts, one uniform row each: label, model, model_name, workload, batch, position (decode)
    and seq (forward/train, a model run's input size; the other is None), precision, runtime, status, measured_s (None
    if unavailable), reason. Decoder workloads first, then model-run points (as `bench_points`)."""
    rows = []
    for row in result["workloads"]:
        decode = row["workload"] == "decode"
        runtime = "torch-compile" if row.get("compiled") else FIT_RUNTIME
        where = f"pos {row['position']}" if decode else f"seq {row['seq']}"
        rows.append({"label": f"{row['model']['id']} {row['workload']} b{row['batch']} {where} {row['precision']}"
                              + (" compiled" if row.get("compiled") else ""),
                     "model": row["model"]["id"], "model_name": row["model"].get("name"), "workload": row["workload"],
                     "batch": row["batch"], "position": row["position"] if decode else None,
                     "seq": None if decode else row["seq"], "precision": row["precision"], "runtime": runtime,
                     "status": row.get("status"), "measured_s": row.get("measured_s"), "reason": row.get("reason")})
    for run, pt, model in _run_points(result):
        rows.append({"label": f"{model.id} {pt['workload']} b{run['batch']} {run['input_size_name']}={pt['size']} "
                              f"{run['precision']}",
                     "model": model.id, "model_name": model.name, "workload": pt["workload"], "batch": run["batch"],
                     "position": None, "seq": pt["size"], "precision": run["precision"], "runtime": FIT_RUNTIME,
                     "status": pt.get("status"), "measured_s": pt.get("measured_s"), "reason": pt.get("reason")})
    return rows


# ---------------------------------------------------------------------------------------------------- device

def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "device"


def measured_peaks(result: dict) -> dict[str, float]:
    mm = result["micro"]["matmul"]
    return {p: float(mm[p]["best_tflops"]) for p in PATHS if isinstance(mm.get(p), dict)
            and mm[p].get("status", "ok") == "ok"}


def build_device(name: str, device_type: str, base: GPU | None, bw_gbps: float, peaks: dict[str, float],
                  memory_gb: float, day: str) -> GPU:
    """The measured device: `base` (a catalog GPU or CPU) with the measured peaks, or a new 'CPU'/'MPS' device."""
    key = base.id if base else f"{device_type}-{slug(name)}"
    how = f"measured: best matmul TFLOPS of python -m planner.bench on {day} (replaces the catalog ceiling)"
    ceilings = tuple((p, Ceiling(v, v / ((base.peak_tflops(p) if base else None) or v), how))
                     for p, v in peaks.items() if v)
    fields = dict(id=f"measured-{key}", name=f"{base.name if base else name} (measured)", aliases=(),
                  ceilings=ceilings,
                  mem_bw_gbps=bw_gbps, fp32_tflops=peaks.get("fp32", 0.0), tf32_tflops=peaks.get("tf32"),
                  fp16_tflops=peaks.get("fp16"), bf16_tflops=peaks.get("bf16"), fp8_tflops=None, int8_tops=None,
                  vram_gib=memory_gb * BYTES_PER_GB / BYTES_PER_GIB, reported_vram_mib=None,  # measured = as reported
                  reported_vram_source="",
                  source=f"measured by python -m planner.bench (bench_version {BENCH_VERSION}) "
                  f"on {day}: copy bandwidth and matmul peaks", notes="peaks are measured, not datasheet figures")
    if base:
        return replace(base, **fields)
    memory_type = "unified memory (Apple)" if device_type == "mps" else "host DRAM"
    return GPU(vendor=device_type.upper(), architecture=device_type.upper(), compute_capability=None, gfx_target=None,
               market="local", memory_type=memory_type, tdp_w=None, pcie_gen=None, pcie_unidir_gbps=None,
               nvlink_unidir_gbps=None, runpod=None, kind="cpu" if device_type == "cpu" else "gpu", **fields)


THIS_MACHINE = ""  # `device` value for a CPU bench that calibrates only the measured machine, no catalog row


def bench_cpu(result: dict, catalog: Catalog, device: str | None = None) -> GPU | None:
    """The catalog CPU a CPU bench result calibrates: `device` (a CPU's id or name; THIS_MACHINE for none), else the
    catalog CPU whose name or alias the bench recorded (the OS's model name, e.g. 'AMD EPYC 9654 96-Core
    Processor'); None when it names none. CalibrationError when `device` is not a catalog CPU."""
    if device == THIS_MACHINE:
        return None
    name = device if device is not None else result["environment"]["device_name"]
    try:
        cpu = catalog.get(name)
    except UnknownNameError as exc:  # an unnamed or ambiguous bench machine: only the machine itself
        if device is None:
            return None
        raise CalibrationError(f"calibration CPU: {exc}") from None
    if cpu.kind != "cpu":
        if device is None:
            return None
        raise CalibrationError(f"calibration CPU: {cpu.id} is a GPU; a CPU bench calibrates a CPU of data/cpus.yaml")
    seen = result["environment"].get("cpu_threads")
    if cpu.cpu and isinstance(seen, int) and seen < cpu.cpu.threads / 2:  # a VM or container slice of that CPU
        if device is None:
            return None
        raise CalibrationError(f"the bench saw {seen} logical CPUs and the {cpu.name} has {cpu.cpu.threads}: it ran "
                               f"on a slice of it (a VM or container), so it calibrates the measured machine, not the "
                               f"{cpu.name} row")
    return cpu


def reference_device(result: dict, catalog: Catalog, device: str | None) -> GPU | None:
    """The catalog device whose datasheet the fit is expressed against: the CUDA GPU, or the CPU (bench_cpu)."""
    env = result["environment"]
    if env["device_type"] == "cuda":
        return catalog.get(env["device_name"])
    if env["device_type"] == "cpu":
        cpu = bench_cpu(result, catalog, device)
        problem = cpu and datasheet_problem(cpu, float(result["micro"]["memory_bandwidth"]["gbps"]),
                                            measured_peaks(result))
        if problem:
            raise CalibrationError(f"this bench can't be from a {cpu.name}: {problem}")
        return cpu
    return None


def device_gpu(result: dict, catalog: Catalog | None = None, device: str | None = None) -> GPU:
    """The measured device as a catalog device whose bandwidth and matmul peaks are the MEASURED ones.

    Id 'measured-<catalog id>' for a catalog GPU or CPU (see bench_cpu; prices and links kept),
    'measured-cpu-<model>' / 'measured-mps-...' otherwise; paths that were not measured have no peak.
    """
    env = result["environment"]
    base = reference_device(result, catalog or load_catalog(), device)
    return build_device(env["device_name"], env["device_type"], base,
                         float(result["micro"]["memory_bandwidth"]["gbps"]), measured_peaks(result),
                         float(env["memory_gb"]), str(env["date"])[:10])


# ---------------------------------------------------------------------------------------------------- bare torch ops

def on_host(device_class: str) -> bool:
    """Whether the bench's per-kernel overhead on this device class is host dispatch that overlaps the device's work
    (a GPU: Python queues each bare torch op and the GPU runs them asynchronously) rather than launch time serial with
    the compute (a CPU, where host and device are one)."""
    return device_class != "cpu"


def factor_efficiency(base: Efficiency, bw: float, mm: float, overhead_us: float, device_class: str) -> Efficiency:
    """The three fitted factors as the Efficiency of bare torch ops (the bench's own decoder, no framework Python).
    On a GPU the overhead is host dispatch per kernel (Efficiency.host_us_per_kernel: the step takes the longer of the
    GPU's work and the host's dispatch) and the GPU-side launch gap per kernel is eager PyTorch's untuned prior
    (bare_op_prior); on a CPU it is the launch time per kernel, added to the compute. On a GPU the additive form
    explains a fast memory-bound decode only with a bandwidth above the datasheet's (validation/REPORT.md, 'A real
    GPU')."""
    if on_host(device_class):
        return replace(base, mem_bw_efficiency=bw, compute_efficiency=mm, host_us_per_kernel=overhead_us,
                       launch_overhead_us=bare_op_prior(device_class)[2], step_host_us=0.0)
    return replace(base, mem_bw_efficiency=bw, compute_efficiency=mm, launch_overhead_us=overhead_us,
                   host_us_per_kernel=0.0, step_host_us=0.0)


@lru_cache(maxsize=4)
def eager_prior(memory_class: str) -> Efficiency:
    """Eager PyTorch as estimates use it on a device class (its tuned values where it has them)."""
    return load_facts().runtimes.get(FIT_RUNTIME).efficiency(memory_class)


def bare_op_prior(memory_class: str) -> tuple[float, float, float]:
    """(bandwidth, compute, launch us) eager PyTorch's priors assume on a GPU class: what bare torch ops, the ones the
    bench times, were expected to reach, before tuning on published runs (which fold framework overheads in)."""
    r = load_facts().runtimes.get(FIT_RUNTIME)
    if memory_class not in dict(r.compute_efficiency):  # a CPU: its profile is never tuned
        e = r.efficiency(memory_class)
        return e.mem_bw_efficiency, e.compute_efficiency, e.launch_overhead_us
    p = r.priors()
    return p[f"mem_bw_efficiency.{memory_class}"], dict(r.compute_efficiency)[memory_class], p["launch_overhead_us"]
