"""Calibration from a local benchmark (`python -m planner.bench`): fit efficiency factors, apply and transfer them.

A bench result holds micro-benchmarks (copy bandwidth, matmul TFLOPS per dtype, launch overhead) and workload points
(a real torch decoder built from a planner model profile, timed on one job). The fit finds the memory-bandwidth
efficiency, the compute efficiency and the per-kernel launch overhead for which the planner's own estimator
(estimate_gpu on `device_gpu(result)`, whose peaks are the measured ones) reproduces the measured times.

The result file's format and validation live in planner.inputs.bench_result (the bench writes it without knowing
this module). This module never imports torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable, Iterable

from planner.base.units import BYTES_PER_GB, BYTES_PER_GIB
from planner.base.safe_parse import shown
from planner.base.schema import Record, UnknownNameError
from planner.inputs.bench_result import (BENCH_VERSION, BW_GBPS, MAX_RESULT_BYTES, MEMORY_GB, OVER_DATASHEET, PATHS,
                                         TFLOPS, CalibrationError, datasheet_problem, parse_result, point_model,
                                         run_model)
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds, time_phase
from planner.inputs.catalog import GPU, Catalog, Ceiling, load_catalog
from planner.inputs.facts import Facts, load_facts
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.models import ModelProfile
from planner.inputs.runtimes import Efficiency
from planner.calibration.growth import solve

DEVICE_CLASSES = ("hbm", "gddr", "cpu", "mps")
FIT_RUNTIME = "pytorch-eager"  # the workload points run eager PyTorch; compiled points are shown, not fitted
OTHER_ARCH_WEIGHT = 0.5  # share (geometric) of the measured/prior ratio carried to a GPU of another architecture
# Fit bounds, relative to the reference peaks (measured ones on the device; a CPU's caches can beat the DRAM copy)
EFF_BOUNDS = (0.005, 8.0)
LO_BOUNDS = (0.01, 5000.0)
PRIOR_WEIGHT = 0.003  # weak log-normal pull toward the micro-benchmarks, so unidentified factors stay sensible
FACTORS = ("bandwidth", "compute", "overhead")  # the fitted factors, in the fit's parameter order
FACTOR_KEYS = {"bandwidth": "bw", "compute": "mm", "overhead": "lo"}  # their keys in a calibration link
FACTOR_NAMES = {"bandwidth": "bandwidth efficiency", "compute": "compute efficiency", "overhead": "per-kernel overhead"}
# What pins each factor down: steps whose time it dominates.
MISSING = {
    "bandwidth": "memory-bound steps (decode at batch 1 of a model whose weights are far larger than the CPU cache "
                 "or GPU L2: `python -m planner.bench` without --model measures one)",
    "compute": "compute-bound steps (forward or training passes over thousands of tokens at once, or your model at "
               "larger input sizes)",
    "overhead": "overhead-bound steps (many small kernels: decode of a narrow model at batch 1, which the default "
                "bench measures, or your model at its smallest input sizes)",
}
# Host dispatch per kernel (as data/runtimes.yaml counts kernels) of bare torch ops on the host behind eager PyTorch's
# tuned host_us_per_kernel: a GPU calibration scales a runtime's host dispatch by its fitted value over this one.
# Read on one machine (H200 "b" of validation/measured/README.md, 2026-11-26): its bench fits 12.6 us (95 %: +-19 %),
# and on the same machine Hugging Face generate decoded Llama-2-7B at batch 1 in 20.7-27 ms a token (its probe log),
# which eager's tuned host time predicts at 22.4 ms. Another H200 ("a") fitted 10.9 us and decoded at 18.5 ms a token
# at best.
BARE_OP_HOST_US = 12.6
NOISE_FLOOR = 0.01  # timing repeatability assumed at least (1 % relative): a perfect fit still has this uncertainty
# A factor is pinned down when a 1 % timing noise moves it by at most COND_LIMIT % (its design standard error):
# e.g. one point whose time it explains entirely gives 1, three points where it explains 30 % about 2.
COND_LIMIT = 3.0
LOOSE_PCT = 50.0  # a pinned factor whose 95 % uncertainty is wider than this is reported as loosely fitted
ERR_CAP_PCT = 1000.0  # uncertainty reported when it can't be estimated (as many points as factors, or worse)
# Two-sided 95 % quantiles of Student's t by degrees of freedom: NIST/SEMATECH e-Handbook of Statistical Methods,
# table 1.3.6.7.2 (https://www.itl.nist.gov/div898/handbook/eda/section3/eda3672.htm), read 2026-11-22.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086,
       21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
       40: 2.021, 60: 2.000, 100: 1.984}


# ---------------------------------------------------------------------------------------------------- points

@dataclass(frozen=True)
class _Point:
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


def _points(result: dict, fitted_only: bool = False) -> list[_Point]:
    """Measured points: decoder workloads (compiled ones only unless fitted_only), then model-run points."""
    out = []
    for i, row in enumerate(result["workloads"]):
        if row.get("status") != "ok" or (fitted_only and row.get("compiled")):
            continue
        out.append(_Point(point_model(Record("result", f"workloads[{i}]", row)), row["workload"], int(row["batch"]),
                          row["precision"], int(row["position"] if row["workload"] == "decode" else row["seq"]),
                          "torch-compile" if row.get("compiled") else FIT_RUNTIME, float(row["measured_s"])))
    for run, pt, model in _run_points(result):
        if pt.get("status") == "ok":
            out.append(_Point(model, pt["workload"], int(run["batch"]), run["precision"], int(pt["size"]), FIT_RUNTIME,
                              float(pt["measured_s"]), from_run=True))
    return out


def point_plan(kind: str, model: ModelProfile, batch: int, size: int, precision: str,
               runtime: str = FIT_RUNTIME) -> Plan:
    """The planner plan a workload point is estimated as (see planner/bench/workload.py)."""
    workload = {"decode": lambda: Generate(batch, size, 2), "forward": lambda: Infer(batch, size),
                "train": lambda: Train(batch, size, 1.0, "adamw")}[kind]()
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


def _point_phases(pt: _Point, gpu: GPU) -> tuple:
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
    if unavailable), reason. Decoder workloads first, then model-run points (as `_points`)."""
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

def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "device"


def _measured_peaks(result: dict) -> dict[str, float]:
    mm = result["micro"]["matmul"]
    return {p: float(mm[p]["best_tflops"]) for p in PATHS if isinstance(mm.get(p), dict)
            and mm[p].get("status", "ok") == "ok"}


def _build_device(name: str, device_type: str, base: GPU | None, bw_gbps: float, peaks: dict[str, float],
                  memory_gb: float, day: str) -> GPU:
    """The measured device: `base` (a catalog GPU or CPU) with the measured peaks, or a new 'CPU'/'MPS' device."""
    key = base.id if base else f"{device_type}-{_slug(name)}"
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


def _reference(result: dict, catalog: Catalog, device: str | None) -> GPU | None:
    """The catalog device whose datasheet the fit is expressed against: the CUDA GPU, or the CPU (bench_cpu)."""
    env = result["environment"]
    if env["device_type"] == "cuda":
        return catalog.get(env["device_name"])
    if env["device_type"] == "cpu":
        cpu = bench_cpu(result, catalog, device)
        problem = cpu and datasheet_problem(cpu, float(result["micro"]["memory_bandwidth"]["gbps"]),
                                            _measured_peaks(result))
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
    base = _reference(result, catalog or load_catalog(), device)
    return _build_device(env["device_name"], env["device_type"], base,
                         float(result["micro"]["memory_bandwidth"]["gbps"]), _measured_peaks(result),
                         float(env["memory_gb"]), str(env["date"])[:10])


# ---------------------------------------------------------------------------------------------------- calibration

def on_host(device_class: str) -> bool:
    """Whether the bench's per-kernel overhead on this device class is host dispatch that overlaps the device's work
    (a GPU: Python queues each bare torch op and the GPU runs them asynchronously) rather than launch time serial with
    the compute (a CPU, where host and device are one)."""
    return device_class != "cpu"


def factor_efficiency(base: Efficiency, bw: float, mm: float, overhead_us: float, device_class: str) -> Efficiency:
    """The three fitted factors as the Efficiency of bare torch ops (the bench's own decoder, no framework Python).
    On a GPU the overhead is host dispatch per kernel (Efficiency.host_us_per_kernel: the step takes the longer of the
    GPU's work and the host's dispatch) and the GPU-side launch gap per kernel is eager PyTorch's untuned prior
    (_bare_op_prior); on a CPU it is the launch time per kernel, added to the compute. An H200 (2026-11-26,
    validation/measured/2026-11-26_nvidia-h200_b_bench.json) shows why: decode of a 6.5 GB model at batch 1 took
    2.1 ms, which the additive form could only explain as its dispatches at 11.8 us each plus the weights streamed at
    2.3 times the datasheet bandwidth."""
    if on_host(device_class):
        return replace(base, mem_bw_efficiency=bw, compute_efficiency=mm, host_us_per_kernel=overhead_us,
                       launch_overhead_us=_bare_op_prior(device_class)[2], step_host_us=0.0)
    return replace(base, mem_bw_efficiency=bw, compute_efficiency=mm, launch_overhead_us=overhead_us,
                   host_us_per_kernel=0.0, step_host_us=0.0)


@lru_cache(maxsize=4)
def _prior(memory_class: str) -> Efficiency:
    """Eager PyTorch as estimates use it on a device class (its tuned values where it has them)."""
    return load_facts().runtimes.get(FIT_RUNTIME).efficiency(memory_class)


def _bare_op_prior(memory_class: str) -> tuple[float, float, float]:
    """(bandwidth, compute, launch us) eager PyTorch's priors assume on a GPU class: what bare torch ops, the ones the
    bench times, were expected to reach, before tuning on published runs (which fold framework overheads in)."""
    r = load_facts().runtimes.get(FIT_RUNTIME)
    if memory_class not in dict(r.compute_efficiency):  # a CPU: its profile is never tuned
        e = r.efficiency(memory_class)
        return e.mem_bw_efficiency, e.compute_efficiency, e.launch_overhead_us
    p = r.priors()
    return p[f"mem_bw_efficiency.{memory_class}"], dict(r.compute_efficiency)[memory_class], p["launch_overhead_us"]


@dataclass(frozen=True)
class Calibration:
    """Fitted factors of one measured device (for the pytorch-eager runtime) and how they carry to other GPUs.

    mem_bw_efficiency, compute_efficiency: fractions of the REFERENCE rates: the catalog datasheet bandwidth and matmul
    ceiling (GPU.ceiling) when the device is a catalog GPU or CPU (gpu_id set), else the measured copy bandwidth and
    matmul peak (other CPUs, MPS). The measured device itself (`measured_gpu`) has the bench's matmul TFLOPS as its
    ceiling. compute_efficiency is fitted on `compute_path` (the workload precision). overhead_us: per kernel as
    data/runtimes.yaml counts kernels: host dispatch on a GPU, launch on a CPU (factor_efficiency). measured_*: the
    micro-benchmark peaks, so the measured device itself can be estimated.
    """

    device_name: str
    gpu_id: str | None
    device_class: str
    mem_bw_efficiency: float
    compute_efficiency: float
    overhead_us: float
    compute_path: str = "fp32"
    measured_bw_gbps: float = 0.0
    measured_tflops: tuple[tuple[str, float], ...] = ()
    memory_gb: float = 1.0
    bench_date: str = ""
    fit_rms_pct: float = 0.0
    fit_points: int = 0
    fit_err_pct: tuple[float, float, float] | None = None  # 95 % half-width per factor (FACTORS order), percent
    unidentified: tuple[str, ...] = ()  # factors (FACTORS names) the points could not pin down

    def uncertainty(self) -> list[tuple[str, float, float | None]]:
        """(factor, value, 95 % relative half-width in percent or None when not recorded) in FACTORS order."""
        values = (self.mem_bw_efficiency, self.compute_efficiency, self.overhead_us)
        errs = self.fit_err_pct or (None,) * len(FACTORS)
        return list(zip(FACTORS, values, errs))

    def problems(self) -> list[str]:
        """What the fit could not pin down, and which measurements would (empty when every factor is pinned)."""
        return fit_problems(self.unidentified, self.fit_points, self.fit_err_pct, self.fit_rms_pct)

    # -- the measured device
    @property
    def device_type(self) -> str:
        return self.device_class if self.device_class in ("cpu", "mps") else "cuda"

    def reference_gpu(self, catalog: Catalog | None = None) -> GPU | None:
        return (catalog or load_catalog()).get(self.gpu_id) if self.gpu_id else None

    def measured_gpu(self, catalog: Catalog | None = None) -> GPU:
        """The measured device with its measured peaks (same as `device_gpu(result)`)."""
        return _build_device(self.device_name, self.device_type, self.reference_gpu(catalog), self.measured_bw_gbps,
                             dict(self.measured_tflops), self.memory_gb, self.bench_date)

    def _measured_factors(self) -> tuple[float, float]:
        """(bandwidth, compute) efficiency relative to the measured peaks."""
        ref = self.reference_gpu()
        if ref is None:
            return self.mem_bw_efficiency, self.compute_efficiency
        peak = dict(self.measured_tflops).get(self.compute_path) or ref.peak_tflops(self.compute_path) or 1.0
        return (self.mem_bw_efficiency * ref.mem_bw_gbps / self.measured_bw_gbps,
                self.compute_efficiency * (ref.ceiling_tflops(self.compute_path) or peak) / peak)

    # -- applying
    def _is_measured(self, gpu: GPU) -> bool:
        """`gpu` is the measured device itself (its measured form) rather than its catalog row or another device."""
        return gpu.id == f"measured-{self.gpu_id or self.device_type + '-' + _slug(self.device_name)}"

    def _eager_target(self, gpu: GPU) -> tuple[float, float, float | None, str] | None:
        """Calibrated bare-op (bandwidth, compute, per-kernel overhead or None, how) for `gpu`; None = keep the prior.
        The overhead is the measured machine's own (its host's dispatch on a GPU, its launch time on a CPU): it applies
        to the measured device alone, since another GPU is rented on another host."""
        if self._is_measured(gpu):
            bw, mm = self._measured_factors()
            return bw, mm, self.overhead_us, "fitted on this device"
        if self.gpu_id is None:
            return None  # a CPU or Apple GPU says nothing about NVIDIA/AMD datacenter parts
        if gpu.id == self.gpu_id:
            return self.mem_bw_efficiency, self.compute_efficiency, self.overhead_us, \
                "fitted on this CPU" if self.device_class == "cpu" else "fitted on this GPU"
        if "cpu" in (self.device_class, gpu.memory_class):
            return None  # a CPU fit says nothing about GPUs (nor about other CPUs), a GPU fit nothing about CPUs
        here, there = _prior(self.device_class), _prior(gpu.memory_class)
        ref = self.reference_gpu()
        w = 1.0 if ref and gpu.architecture == ref.architecture else OTHER_ARCH_WEIGHT
        bw = min(1.0, there.mem_bw_efficiency * (self.mem_bw_efficiency / here.mem_bw_efficiency) ** w)
        mm = min(1.0, there.compute_efficiency * (self.compute_efficiency / here.compute_efficiency) ** w)
        how = (f"transferred from {self.gpu_id} ({self.device_class.upper()}"
               + (f" -> {gpu.memory_class.upper()} by the prior ratio" if gpu.memory_class != self.device_class else "")
               + ("" if w == 1.0 else f"; other architecture: {w:g} of the log ratio")
               + "; host dispatch: the runtime's own, another machine)")
        return bw, mm, None, how

    def adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        """Calibrated efficiency for `gpu` under the plan's runtime (`eff` is that runtime's prior).

        - the measured device (catalog form or `measured_gpu()`): the fitted bandwidth and compute;
        - another GPU of a CUDA calibration: the ratio fitted/prior of the measured GPU, applied to this GPU's prior:
          bandwidth' = prior_bw(class') x (fitted_bw / prior_bw(class)), so a GDDR fit carries to HBM scaled by the
          runtime profile's HBM/GDDR prior ratio; same for compute; for another architecture only half of the log
          ratio carries (geometric mean with the prior); transferred fractions are capped at 1;
        - a CPU calibration applies to the CPU it ran on (a catalog CPU row, or the measured machine) and an Apple-GPU
          one to the measured device only; other devices keep their priors, and a GPU fit is not carried to CPUs.
        Another runtime keeps its own values scaled by the calibrated eager value over what eager PyTorch's priors
        assumed for bare ops on this class (_bare_op_prior: the bench times bare ops, not a framework's generate);
        fractions are capped at 1 (a datasheet peak or the matmul ceiling).
        The per-kernel overhead, on the measured machine only: from a GPU bench it is the host's dispatch speed, so it
        scales the host dispatch of runtimes that dispatch kernels from Python (host_us_per_kernel, by the fitted value
        over BARE_OP_HOST_US) and leaves every GPU-side launch gap alone (a CUDA-graph runtime's replay is not host
        dispatch); from a CPU bench it is the launch time itself (eager) or scales a runtime's launch time.
        """
        target = self._eager_target(gpu)
        if target is None:
            return eff
        bw, mm, overhead, how = target
        ref_bw, ref_mm, ref_lo = _bare_op_prior(gpu.memory_class)
        if eff.runtime != FIT_RUNTIME:
            bw, mm = min(1.0, eff.mem_bw_efficiency * bw / ref_bw), min(1.0, eff.compute_efficiency * mm / ref_mm)
        changes = dict(mem_bw_efficiency=bw, compute_efficiency=mm)
        if overhead is not None and on_host(self.device_class):
            changes["host_us_per_kernel"] = eff.host_us_per_kernel * overhead / BARE_OP_HOST_US
        elif overhead is not None:
            changes["launch_overhead_us"] = overhead if eff.runtime == FIT_RUNTIME else \
                eff.launch_overhead_us * overhead / ref_lo
        return replace(eff, **changes, source=f"calibrated: {how}; bench {self.bench_date} on {self.device_name} "
                                              f"(fit rms {self.fit_rms_pct:.1f} % over {self.fit_points} points)")

    def bench_adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        """What the bench's own points run as on the measured device: bare torch ops at the fitted factors (eager
        points; factor_efficiency), a compiled point as `adjust` makes its runtime."""
        if eff.runtime != FIT_RUNTIME or not self._is_measured(gpu):
            return self.adjust(gpu, eff)
        bw, mm = self._measured_factors()
        return replace(factor_efficiency(eff, bw, mm, self.overhead_us, gpu.memory_class),
                       source=f"fitted on this device: bench {self.bench_date} on {self.device_name}")

    # -- share links
    def to_query(self) -> str:
        """Compact URL-safe text: 'v=1;dev=rtx-4090;cls=gddr;bw=0.83;mm=0.71;lo=3.2;path=bf16;pbw=950;fp32=80;...'."""
        dev = self.gpu_id or _slug(self.device_name)
        parts = [f"v={BENCH_VERSION}", f"dev={dev}", f"cls={self.device_class}", f"bw={self.mem_bw_efficiency:.4g}",
                 f"mm={self.compute_efficiency:.4g}", f"lo={self.overhead_us:.4g}", f"path={self.compute_path}",
                 f"pbw={self.measured_bw_gbps:.5g}"]
        parts += [f"{p}={t:.5g}" for p, t in self.measured_tflops]
        parts += [f"mem={self.memory_gb:.4g}", f"d={self.bench_date.replace('-', '')}", f"err={self.fit_rms_pct:.3g}",
                  f"n={self.fit_points}"]
        if self.fit_err_pct is not None:  # the fit's 95 % uncertainty per factor, and what it could not pin down
            parts += [f"e{FACTOR_KEYS[f]}={e:.4g}" for f, e in zip(FACTORS, self.fit_err_pct)]
        if self.unidentified:
            parts.append("ill=" + ".".join(FACTOR_KEYS[f] for f in self.unidentified))
        return ";".join(parts)

    @classmethod
    def from_query(cls, text: str, catalog: Catalog | None = None) -> Calibration:
        """Parse `to_query` text (e.g. from a hand-edited link); CalibrationError on anything invalid."""
        hint = "; remove the 'cal' parameter from the link or upload the bench result again"
        if not isinstance(text, str) or not text or len(text) > 600 or not re.fullmatch(r"[A-Za-z0-9.=;_+-]+", text):
            raise CalibrationError(f"calibration link is malformed (expected 'v=1;dev=...;bw=...'){hint}")
        fields: dict[str, str] = {}
        for part in text.split(";"):
            key, sep, value = part.partition("=")
            if not sep or not value or key in fields:
                raise CalibrationError(f"calibration link: bad or repeated entry {shown(part)}{hint}")
            fields[key] = value
        err_keys = [f"e{FACTOR_KEYS[f]}" for f in FACTORS]
        known = {"v", "dev", "cls", "bw", "mm", "lo", "path", "pbw", "mem", "d", "err", "n", "ill", *err_keys, *PATHS}
        unknown = sorted(set(fields) - known)
        missing = sorted({"v", "dev", "cls", "bw", "mm", "lo", "path", "pbw", "mem", "d"} - set(fields))
        if unknown or missing:
            raise CalibrationError(f"calibration link: {'unknown ' + ', '.join(unknown) if unknown else ''}"
                                   f"{'; ' if unknown and missing else ''}"
                                   f"{'missing ' + ', '.join(missing) if missing else ''}{hint}")

        def num(key: str, bounds: tuple[float, float]) -> float:
            try:
                value = float(fields[key])
            except ValueError:
                raise CalibrationError(f"calibration link: {key}={shown(fields[key])} is not a number{hint}") from None
            if not (math.isfinite(value) and bounds[0] <= value <= bounds[1]):
                raise CalibrationError(f"calibration link: {key}={fields[key]} is outside "
                                       f"{bounds[0]:g}..{bounds[1]:g}{hint}")
            return value

        if fields["v"] != str(BENCH_VERSION):
            raise CalibrationError(f"calibration link is from bench_version {fields['v']}, this planner uses "
                                   f"{BENCH_VERSION}: re-run `python -m planner.bench`{hint}")
        klass = fields["cls"]
        if klass not in DEVICE_CLASSES:
            raise CalibrationError(f"calibration link: cls={shown(klass)} must be one of "
                                   f"{', '.join(DEVICE_CLASSES)}{hint}")
        if fields["path"] not in PATHS:
            raise CalibrationError(f"calibration link: path={shown(fields['path'])} must be one of "
                                   f"{', '.join(PATHS)}{hint}")
        if not re.fullmatch(r"\d{8}", fields["d"]):
            raise CalibrationError(f"calibration link: d={shown(fields['d'])} must be a date YYYYMMDD{hint}")
        try:
            day = date(int(fields["d"][:4]), int(fields["d"][4:6]), int(fields["d"][6:])).isoformat()
        except ValueError:
            raise CalibrationError(f"calibration link: d={shown(fields['d'])} is not a valid date{hint}") from None
        gpu_id, name = None, fields["dev"]
        catalog = catalog or load_catalog()
        cpu_ids = {c.id for c in catalog.cpus}
        if klass in ("hbm", "gddr") or (klass == "cpu" and name in cpu_ids):  # a catalog GPU, or a catalog CPU row
            try:
                gpu = catalog.get(name)
            except UnknownNameError as exc:
                raise CalibrationError(f"calibration link: {exc}{hint}") from None
            if gpu.memory_class != klass:
                raise CalibrationError(f"calibration link: {gpu.id} is a {gpu.memory_class.upper()} device, not "
                                       f"{klass}{hint}")
            gpu_id, name = gpu.id, gpu.name
        peaks = tuple((p, num(p, TFLOPS)) for p in PATHS if p in fields)
        if fields["path"] not in dict(peaks):
            raise CalibrationError(f"calibration link: no measured peak for path {fields['path']}{hint}")
        if gpu_id:  # the same plausibility checks as an uploaded result
            problem = datasheet_problem(gpu, num("pbw", BW_GBPS), dict(peaks))
            if not problem and max(num("bw", EFF_BOUNDS), num("mm", EFF_BOUNDS)) > OVER_DATASHEET:
                problem = f"an efficiency above {OVER_DATASHEET:g} x the {gpu.name} datasheet"
            if problem:
                raise CalibrationError(f"calibration link: {problem}{hint}")
        if any(k in fields for k in err_keys) and not all(k in fields for k in err_keys):
            raise CalibrationError(f"calibration link: give all of {', '.join(err_keys)} or none{hint}")
        errs = tuple(num(k, (0, ERR_CAP_PCT)) for k in err_keys) if err_keys[0] in fields else None
        by_key = {v: k for k, v in FACTOR_KEYS.items()}
        ill = fields["ill"].split(".") if "ill" in fields else []
        if any(k not in by_key for k in ill) or len(set(ill)) != len(ill):
            raise CalibrationError(f"calibration link: ill={shown(fields['ill'])} must name factors among "
                                   f"{', '.join(by_key)}, each once{hint}")
        return cls(name, gpu_id, klass, num("bw", EFF_BOUNDS), num("mm", EFF_BOUNDS),
                   num("lo", LO_BOUNDS), fields["path"], num("pbw", BW_GBPS), peaks, num("mem", MEMORY_GB), day,
                   num("err", (0, 1000)) if "err" in fields else 0.0,
                   int(num("n", (0, 500))) if "n" in fields else 0, errs,
                   tuple(f for f in FACTORS if FACTOR_KEYS[f] in ill))


# ---------------------------------------------------------------------------------------------------- fit

def _jacobian(resid: Callable[[list[float]], list[float]], x: list[float], h: float = 1e-4) -> list[list[float]]:
    """d residual_i / d x_j by central differences (the roofline's max() has kinks: an average slope there)."""
    cols = []
    for j in range(len(x)):
        up, down = list(x), list(x)
        up[j] += h
        down[j] -= h
        cols.append([(a - b) / (2 * h) for a, b in zip(resid(up), resid(down))])
    return [list(row) for row in zip(*cols)]


def _normal(jac: list[list[float]], weight: float) -> list[list[float]]:
    """J^T J + weight x I (the prior's information added on the diagonal)."""
    k = len(jac[0])
    return [[sum(r[i] * r[j] for r in jac) + (weight if i == j else 0.0) for j in range(k)] for i in range(k)]


def _inverse(a: list[list[float]]) -> list[list[float]]:
    k = len(a)
    cols = [solve(a, [1.0 if i == j else 0.0 for i in range(k)]) for j in range(k)]
    return [[cols[j][i] for j in range(k)] for i in range(k)]


def _levenberg_marquardt(resid: Callable[[list[float]], list[float]], x0: list[float],
                         bounds: list[tuple[float, float]], iters: int = 60) -> list[float]:
    """Minimise the sum of squared residuals within box bounds (a step leaving the box is clipped to it)."""
    clip = lambda x: [min(max(v, lo), hi) for v, (lo, hi) in zip(x, bounds)]
    x = clip(x0)
    cost = sum(r * r for r in resid(x))
    damping = 1e-3
    for _ in range(iters):
        r, jac = resid(x), _jacobian(resid, x)
        a, g = _normal(jac, 0.0), [sum(row[j] * ri for row, ri in zip(jac, r)) for j in range(len(x))]
        while damping < 1e9:
            damped = [[a[i][j] + (damping * (a[i][i] + 1e-9) if i == j else 0.0) for j in range(len(x))]
                      for i in range(len(x))]
            try:
                step = solve(damped, [-v for v in g])
            except ZeroDivisionError:
                step = [0.0] * len(x)
            trial = clip([v + d for v, d in zip(x, step)])
            trial_cost = sum(v * v for v in resid(trial))
            if trial_cost < cost:
                break
            damping *= 4.0
        else:
            return x
        improvement = cost - trial_cost
        x, cost, damping = trial, trial_cost, max(damping / 3.0, 1e-9)
        if improvement < 1e-12 * max(cost, 1e-12) or max(abs(d) for d in step) < 1e-9:
            break
    return x


@dataclass(frozen=True)
class Fit:
    """Fitted factors (fractions of `gpu`'s peaks; launch overhead in us), their 95 % uncertainty and what the points
    could not pin down.

    err_pct: per factor (FACTORS order) the 95 % interval's relative half-width in percent, from the residuals: the
        covariance s^2 (J^T J + prior)^-1 of the log-factors, s^2 the residual variance (at least NOISE_FLOOR^2),
        times Student's t for the points' degrees of freedom. ERR_CAP_PCT when it can't be estimated.
    unidentified: factors that no point constrains (design standard error above COND_LIMIT per unit of timing
        noise) or that ran into their bounds; `problems()` says which measurements would pin them down.
    """

    mem_bw_efficiency: float
    compute_efficiency: float
    overhead_us: float
    rms_pct: float
    points: int
    err_pct: tuple[float, float, float]
    unidentified: tuple[str, ...]


def _t95(dof: int) -> float:
    """Two-sided 95 % quantile of Student's t with `dof` >= 1 degrees of freedom: T95 at the largest tabled dof not
    above it (t falls as dof grows, so this errs wide)."""
    return T95[max(d for d in T95 if d <= dof)]


def fit_problems(unidentified: Iterable[str], points: int, err_pct: Iterable[float] | None = None,
                 rms_pct: float = 0.0) -> list[str]:
    """Plain sentences: which factors the points could not pin down and which measurements would; which ones the
    points pin down but only loosely (95 % uncertainty above LOOSE_PCT: noisy times, or points the roofline can't
    all fit)."""
    out = []
    if 0 < points <= len(FACTORS):
        out.append(f"only {points} measured point{'s' if points > 1 else ''} for {len(FACTORS)} factors: the fit's "
                   "uncertainty can't be estimated; measure more points")
    names = [f for f in FACTORS if f in set(unidentified)]
    if len(names) > 1:
        out.append(f"ill-conditioned: these points can't separate {' from '.join(FACTOR_NAMES[f] for f in names)} "
                   f"(held near the micro-benchmarks); add " + "; and ".join(MISSING[f] for f in names))
    elif names:
        out.append(f"ill-conditioned: no point pins down the {FACTOR_NAMES[names[0]]} (held near the "
                   f"micro-benchmarks); add {MISSING[names[0]]}")
    loose = [FACTOR_NAMES[f] for f, e in zip(FACTORS, err_pct or ()) if f not in names and e > LOOSE_PCT
             and points > len(FACTORS)]
    if loose:
        it, them = ("it", "it dominates") if len(loose) == 1 else ("them", "each dominates")
        out.append(f"loose fit: {', '.join(loose)} uncertain by more than {LOOSE_PCT:g} %: the points constrain "
                   f"{it} only weakly, or disagree with the roofline (rms {rms_pct:.2g} %); more points where {them}, "
                   "or times from an idle machine (on a CPU: --threads 1 --clock cpu, the default), narrow "
                   f"{it}")
    return out


def demonstrated_floors(work: list[tuple[tuple, float]], gpu: GPU, eff: Efficiency) -> tuple[float, float]:
    """The least (bandwidth, compute) efficiency, of `gpu`'s peaks, that the measured steps allow. Each step (phases,
    log seconds) moved the bytes and did the FLOPs the planner counts for it within its measured time, so the device
    streams at least bytes / time, and its compute at full efficiency (the engine's ceilings and GEMM-shape factors)
    takes no more than the measured time times the efficiency. On an H200 (2026-11-26) the other points pulled the fit
    to 0.612 of the datasheet bandwidth while the wide decode step had moved 6.48 GB in 2.18 ms (0.62), and to 0.665 of
    the bf16 ceiling while the wide forward pass did 13.3 TFLOP of large GEMMs in 22.8 ms (0.73)."""
    full = replace(eff, mem_bw_efficiency=1.0, compute_efficiency=1.0)
    bw = mm = 0.0
    for phases, log_s in work:
        seconds = math.exp(log_s)
        groups = [(g, ph.passes) for ph in phases for g in time_phase(ph, gpu, full).groups]
        bw = max(bw, sum(g.bytes * n for g, n in groups) / (seconds * gpu.mem_bw_gbps * BYTES_PER_GB))
        mm = max(mm, sum(g.compute_s * n for g, n in groups) / seconds)
    return bw, mm


def fit_factors(points: list[_Point], gpu: GPU, prior: tuple[float, float, float]) -> Fit:
    """Least squares on log time with box bounds: bandwidth and compute efficiency (of `gpu`'s peaks) and launch
    overhead (us per kernel), with their uncertainty.

    A weak log-normal prior (weight PRIOR_WEIGHT per factor) centred on `prior` (bandwidth, compute, launch us:
    the micro-benchmarks, or another fit) keeps factors that the points cannot identify sensible; such factors are
    reported in Fit.unidentified, never silently trusted. On a GPU bandwidth and compute never go below what a
    measured step demonstrably achieved (demonstrated_floors).
    """
    if not points:
        raise CalibrationError("no workload points to fit; run the benchmark with at least one workload")
    work = [(_point_phases(pt, gpu), math.log(pt.measured_s)) for pt in points]
    base = _prior(gpu.memory_class)
    centre = [math.log(v) for v in prior]
    box = [tuple(map(math.log, b)) for b in (EFF_BOUNDS, EFF_BOUNDS, LO_BOUNDS)]
    # on a GPU only: a CPU's caches can serve a step's bytes faster than its DRAM copy runs (EFF_BOUNDS)
    floors = demonstrated_floors(work, gpu, base) if on_host(gpu.memory_class) else (0.0, 0.0)
    bounds = [(max(b[0], math.log(max(EFF_BOUNDS[0], f))), b[1]) for b, f in zip(box[:2], floors)] + box[2:]
    prior_w = math.sqrt(PRIOR_WEIGHT)

    def efficiency(x):
        return factor_efficiency(base, *(math.exp(v) for v in x), gpu.memory_class)

    def data_resid(x):
        eff = efficiency(x)
        return [math.log(sum(phase_seconds(ph, gpu, eff) for ph in phases)) - y for phases, y in work]

    def resid(x):
        return data_resid(x) + [prior_w * (a - c) for a, c in zip(x, centre)]

    cost = lambda x: sum(r * r for r in resid(x))
    starts = sorted(([centre[0] + a, centre[1] + b, centre[2] + c] for a in (-2.0, -1.0, 0.0, 1.0)
                     for b in (-1.5, -0.5, 0.3) for c in (-1.5, 0.0, 1.5)), key=cost)
    # the roofline's max() makes the surface piecewise: polish the three best starts and keep the best
    x = min((_levenberg_marquardt(resid, s, bounds) for s in starts[:3]), key=cost)
    rel = [math.exp(r) - 1 for r in data_resid(x)]
    n = len(points)
    jac = _jacobian(data_resid, x)
    design = _inverse(_normal(jac, PRIOR_WEIGHT))
    dof = n - len(FACTORS)
    s2 = max(sum(r * r for r in data_resid(x)) / dof, NOISE_FLOOR ** 2) if dof > 0 else math.inf
    err, unidentified = [], []
    for j, name in enumerate(FACTORS):
        half = _t95(dof) * math.sqrt(s2 * design[j][j]) if dof > 0 else math.inf
        err.append(min(ERR_CAP_PCT, 100 * (math.exp(min(half, 50.0)) - 1)))
        at_bound = min(abs(x[j] - box[j][0]), abs(x[j] - box[j][1])) < 1e-6  # the floor is a measurement, not a limit
        if math.sqrt(design[j][j]) > COND_LIMIT or at_bound:
            unidentified.append(name)
    bw, mm, lo = (math.exp(v) for v in x)
    return Fit(bw, mm, lo, 100 * math.sqrt(sum(r * r for r in rel) / n), n, tuple(err), tuple(unidentified))


def _fit_layers(pts: list[_Point], gpu: GPU, launch_us: float) -> Fit:
    """The fit of a result's points. With model runs (`--model`) the factors are the model's own: fitted on its
    points alone, centred on the fit of the decoder points (the bench's anchors) instead of the micro-benchmarks, so a
    factor the model's steps don't exercise (launch overhead, for a model that is compute-bound here) takes the
    anchors' value and uncertainty; a factor neither pins down is reported. One set of factors can't serve both:
    a model's op mix reaches its own fractions of the peaks (its FLOPs are counted by torch, a decoder's by formula)."""
    micro = (1.0, 1.0, launch_us)
    decoders, runs = [pt for pt in pts if not pt.from_run], [pt for pt in pts if pt.from_run]
    if not runs or not decoders:
        return fit_factors(pts, gpu, micro)
    anchors = fit_factors(decoders, gpu, micro)
    own = fit_factors(runs, gpu, (anchors.mem_bw_efficiency, anchors.compute_efficiency, anchors.overhead_us))
    errs, unpinned = [], []
    for j, name in enumerate(FACTORS):
        from_anchors = name in own.unidentified
        errs.append(anchors.err_pct[j] if from_anchors else own.err_pct[j])
        if from_anchors and name in anchors.unidentified:
            unpinned.append(name)
    return replace(own, err_pct=tuple(errs), unidentified=tuple(unpinned), points=len(pts))


def _fit_path(points: list[_Point]) -> str:
    counts: dict[str, int] = {}
    for pt in points:
        counts[pt.precision] = counts.get(pt.precision, 0) + 1
    return max(counts, key=counts.get)


def fit(result: dict, catalog: Catalog | None = None, points: list[dict] | None = None,
        device: str | None = None) -> Calibration:
    """Fit the calibration from a validated result (`parse_result`) over every measured eager point: decoder
    workloads and model runs. `points` (rows of result['workloads']) restricts the workloads to some of them
    (held-out checks; `holdout_table` leaves sizes of a model run out); `device` names the catalog CPU a CPU bench
    calibrates (bench_cpu: default by the recorded CPU name; THIS_MACHINE for the measured machine only)."""
    catalog = catalog or load_catalog()
    env = result["environment"]
    dev = device_gpu(result, catalog, device)
    chosen = points if points is not None else result["workloads"]
    pts = _points({"workloads": chosen, "model_runs": result.get("model_runs")}, fitted_only=True)
    f = _fit_layers(pts, dev, float(result["micro"]["launch_overhead"]["us_per_op"]))
    bw_m, mm_m, lo = f.mem_bw_efficiency, f.compute_efficiency, f.overhead_us
    path = _fit_path(pts)
    peaks = _measured_peaks(result)
    base = _reference(result, catalog, device)
    if base:  # as fractions of the datasheet bandwidth and the catalog matmul ceiling, the references the engine uses
        bw = bw_m * dev.mem_bw_gbps / base.mem_bw_gbps
        mm = mm_m * peaks[path] / (base.ceiling_tflops(path) or peaks[path])
        klass = base.memory_class
        if not (EFF_BOUNDS[0] <= bw <= EFF_BOUNDS[1] and EFF_BOUNDS[0] <= mm <= EFF_BOUNDS[1]):
            raise CalibrationError(f"the fit reaches {bw:.2%} of the {base.name}'s bandwidth and {mm:.2%} of its "
                                   f"{path} peak: this bench did not run on a whole {base.name}")
    else:
        bw, mm, klass = bw_m, mm_m, env["device_type"]
    return Calibration(env["device_name"] if not base else base.name, base.id if base else None, klass, bw, mm, lo,
                       path, dev.mem_bw_gbps, tuple(sorted(peaks.items(), key=lambda kv: PATHS.index(kv[0]))),
                       float(env["memory_gb"]), str(env["date"])[:10], f.rms_pct, len(pts), f.err_pct, f.unidentified)


def load_calibration(path: str | Path, device: str | None = None) -> Calibration:
    """Read, validate and fit a bench result file (JSON or YAML); CalibrationError naming the problem otherwise.
    `device`: the catalog CPU a CPU bench calibrates (see fit); ignored for a GPU bench."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_RESULT_BYTES:
            raise CalibrationError(f"{path}: file is {size:,} bytes; a bench result is under "
                                   f"{MAX_RESULT_BYTES:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read the file ({exc.strerror})") from None
    result = parse_result(data, path.name)
    return fit(result, device=device if result["environment"]["device_type"] == "cpu" else None)


# ---------------------------------------------------------------------------------------------------- comparisons

def point_table(result: dict, cal: Calibration) -> list[dict]:
    """Every measured point with the planner's analytic and calibrated time on the measured device (seconds)."""
    dev = cal.measured_gpu()
    rows = []
    for pt, row in zip(_points(result), [r for r in measured_points(result) if r["status"] == "ok"]):
        analytic = predict_seconds(pt.kind, pt.model, pt.batch, pt.size, pt.precision, dev, runtime=pt.runtime)
        calibrated = predict_seconds(pt.kind, pt.model, pt.batch, pt.size, pt.precision, dev, cal.bench_adjust,
                                     pt.runtime)
        rows.append({**row, "analytic_s": analytic, "calibrated_s": calibrated,
                     "calibrated_error_pct": 100 * (calibrated / pt.measured_s - 1)})
    return rows


def holdout_table(result: dict, run: int = 0) -> list[dict]:
    """Measure here, predict a size never fitted: for each input size of model run `run`, the calibration fitted
    without that size (every other point of the result kept) predicts the size's forward and train steps on the
    measured device. Rows: size, workload, measured_s, predicted_s, error_pct, and the fit's factors."""
    runs = result.get("model_runs") or []
    if not 0 <= run < len(runs):
        raise CalibrationError(f"the result has {len(runs)} model run(s); no run {run} to hold sizes out of")
    model = run_model(Record("result", f"model_runs[{run}]", runs[run]))
    measured = [pt for pt in runs[run]["points"] if pt.get("status") == "ok"]
    rows = []
    for size in sorted({pt["size"] for pt in measured}):
        kept = {**result, "model_runs": [r if i != run else {**r, "points": [pt for pt in r["points"]
                                                                             if pt["size"] != size]}
                                         for i, r in enumerate(runs)]}
        cal = fit(kept)
        dev = cal.measured_gpu()
        for pt in (pt for pt in measured if pt["size"] == size):
            pred = predict_seconds(pt["workload"], model, int(runs[run]["batch"]), size, runs[run]["precision"], dev,
                                   cal.bench_adjust)
            rows.append({"size": size, "workload": pt["workload"], "measured_s": pt["measured_s"],
                         "predicted_s": pred, "error_pct": 100 * (pred / pt["measured_s"] - 1),
                         "mem_bw_efficiency": cal.mem_bw_efficiency, "compute_efficiency": cal.compute_efficiency,
                         "overhead_us": cal.overhead_us})
    return rows


def held_out_model_table(result: dict, model_id: str) -> list[dict]:
    """Measure here, predict another architecture: the calibration fitted without the workload points of model
    `model_id` predicts each of them on the measured device. Rows: workload, batch, size, measured_s, predicted_s,
    error_pct."""
    held = [(i, w) for i, w in enumerate(result.get("workloads") or [])
            if w["model"]["id"] == model_id and w.get("status") == "ok"]
    if not held:
        raise CalibrationError(f"the result has no measured point of model {model_id!s:.80} to hold out")
    cal = fit(result, points=[w for w in result["workloads"] if w["model"]["id"] != model_id])
    dev = cal.measured_gpu()
    rows = []
    for i, w in held:
        size = w.get("position") or w["seq"]
        pred = predict_seconds(w["workload"], point_model(Record("result", f"workloads[{i}]", w)), w["batch"], size,
                               w["precision"], dev, cal.adjust)
        rows.append({"workload": w["workload"], "batch": w["batch"], "size": size, "measured_s": w["measured_s"],
                     "predicted_s": pred, "error_pct": 100 * (pred / w["measured_s"] - 1)})
    return rows


def side_by_side(plan: Plan, cal: Calibration, facts: Facts | None = None,
                 gpu_names: Iterable[str] | None = None, include_cpus: bool = False) -> list[dict]:
    """Analytic and calibrated estimates of `plan` per device (calibrated ranking order), the measured device first;
    a calibrated catalog CPU is always among them."""
    facts = facts or load_facts()
    names = list(gpu_names) if gpu_names else None
    ref = cal.reference_gpu(facts.catalog)
    if ref is not None and ref.kind == "cpu" and not include_cpus and names is None:
        names = [*(g.id for g in facts.catalog.gpus), ref.id]  # the GPUs and the CPU row this fit calibrates
    analytic = {e.gpu.id: e for e in estimate_all(plan, facts, names, include_cpus=include_cpus)}
    calibrated = estimate_all(plan, facts, names, adjust=cal.adjust, include_cpus=include_cpus)
    device_gpu_ = cal.measured_gpu(facts.catalog)
    device = estimate_gpu(plan, device_gpu_, facts, cal.adjust)
    device_analytic = estimate_gpu(plan, device_gpu_, facts)
    rows = []
    for e, a in [(device, device_analytic)] + [(e, analytic[e.gpu.id]) for e in calibrated]:
        rows.append({"gpu_id": e.gpu.id, "gpu": e.gpu.name, "feasible": e.feasible, "analytic_s": a.seconds,
                     "calibrated_s": e.seconds,
                     "change_pct": (100 * (e.seconds / a.seconds - 1)) if e.seconds and a.seconds else None,
                     "efficiency_source": e.efficiency.source})
    return rows


# ---------------------------------------------------------------------------------------------------- a fleet

FLEET_SEPARATOR = "|"  # between calibrations in a link
MAX_FLEET = 8  # calibrations carried at once (a link stays short: each is ~150 characters)


@dataclass(frozen=True)
class Fleet:
    """Several calibrations, each used for its own GPU: a GPU that one of them measured gets that fit; any other
    GPU takes the transfer of the first calibration measured on its architecture, else of the first CUDA one."""

    members: tuple[Calibration, ...]

    def _for(self, gpu: GPU) -> Calibration | None:
        own = [c for c in self.members if gpu.id in (c.gpu_id, f"measured-{c.gpu_id or ''}")
               or gpu.id == c.measured_gpu().id]
        if own:
            return own[0]
        cuda = [c for c in self.members if c.gpu_id and c.device_class != "cpu"]
        same_arch = [c for c in cuda if c.reference_gpu().architecture == gpu.architecture]
        return (same_arch or cuda or [None])[0]

    def adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        cal = self._for(gpu)
        return cal.adjust(gpu, eff) if cal else eff

    def to_query(self) -> str:
        return FLEET_SEPARATOR.join(c.to_query() for c in self.members)

    @classmethod
    def from_query(cls, text: str, catalog: Catalog | None = None) -> Fleet:
        parts = [p for p in str(text).split(FLEET_SEPARATOR) if p]
        if not parts or len(parts) > MAX_FLEET:
            raise CalibrationError(f"a link carries 1 to {MAX_FLEET} calibrations, got {len(parts)}")
        return cls(tuple(Calibration.from_query(p, catalog) for p in parts))
