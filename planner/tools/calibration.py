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
from typing import Callable, Iterable

from planner.base.units import BYTES_PER_GB, BYTES_PER_GIB
from planner.base.safe_parse import shown
from planner.base.schema import Record, UnknownNameError
from planner.inputs.bench_result import (BENCH_VERSION, BW_GBPS, MAX_RESULT_BYTES, MEMORY_GB, OVER_DATASHEET, PATHS,
                                         TFLOPS, CalibrationError, datasheet_problem, parse_result, point_model)
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.inputs.catalog import GPU, Catalog, load_catalog
from planner.inputs.facts import Facts, load_facts
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.models import DecoderProfile
from planner.inputs.runtimes import Efficiency

DEVICE_CLASSES = ("hbm", "gddr", "cpu", "mps")
FIT_RUNTIME = "pytorch-eager"  # the workload points run eager PyTorch; compiled points are shown, not fitted
OTHER_ARCH_WEIGHT = 0.5  # share (geometric) of the measured/prior ratio carried to a GPU of another architecture
# Fit bounds, relative to the reference peaks (measured ones on the device; a CPU's caches can beat the DRAM copy)
EFF_BOUNDS = (0.005, 8.0)
LO_BOUNDS = (0.01, 5000.0)
PRIOR_WEIGHT = 0.003  # weak log-normal pull toward the micro-benchmarks, so unidentified factors stay sensible


# ---------------------------------------------------------------------------------------------------- points

@dataclass(frozen=True)
class _Point:
    model: DecoderProfile
    kind: str
    batch: int
    precision: str
    size: int  # decode: KV position; forward/train: tokens per sample
    runtime: str
    measured_s: float


def _points(result: dict, fitted_only: bool = False) -> list[_Point]:
    out = []
    for i, row in enumerate(result["workloads"]):
        if row.get("status") != "ok" or (fitted_only and row.get("compiled")):
            continue
        out.append(_Point(point_model(Record("result", f"workloads[{i}]", row)), row["workload"], int(row["batch"]),
                          row["precision"], int(row["position"] if row["workload"] == "decode" else row["seq"]),
                          "torch-compile" if row.get("compiled") else FIT_RUNTIME, float(row["measured_s"])))
    return out


def point_plan(kind: str, model: DecoderProfile, batch: int, size: int, precision: str,
               runtime: str = FIT_RUNTIME) -> Plan:
    """The planner plan a workload point is estimated as (see planner/bench/workload.py)."""
    workload = {"decode": lambda: Generate(batch, size, 2), "forward": lambda: Infer(batch, size),
                "train": lambda: Train(batch, size, 1.0, "adamw")}[kind]()
    return Plan(model, workload, precision, None, "sdpa", runtime, batch)


def _timed_phases(kind: str, work: tuple) -> tuple:
    """Decode points time one generation step: only the decode phase of Generate(batch, position, 2)."""
    return tuple(ph for ph in work if ph.name == "decode") if kind == "decode" else work


def _estimate(kind: str, model: DecoderProfile, batch: int, size: int, precision: str, gpu: GPU,
              adjust: Callable[[GPU, Efficiency], Efficiency] | None, runtime: str):
    # a point that ran is timed even where the planner's memory model would call it out of memory
    roomy = replace(gpu, vram_gib=max(gpu.vram_gib, 1e6), reported_vram_mib=None)

    def bare(g: GPU, eff: Efficiency) -> Efficiency:  # the bench runs bare torch modules: no framework Python
        return replace(adjust(g, eff) if adjust else eff, host_us_per_kernel=0.0)
    est = estimate_gpu(point_plan(kind, model, batch, size, precision, runtime), roomy, load_facts(), bare)
    if not est.feasible:
        raise CalibrationError(f"the planner cannot estimate {model.id} {kind} in {precision} on {gpu.name}: "
                               + "; ".join(r.text for r in est.reasons if r.blocking))
    return est, roomy


def _point_phases(pt: _Point, gpu: GPU) -> tuple:
    est, _ = _estimate(pt.kind, pt.model, pt.batch, pt.size, pt.precision, gpu, None, pt.runtime)
    return _timed_phases(pt.kind, est.work)


def predict_seconds(kind: str, model: DecoderProfile, batch: int, size: int, precision: str, gpu: GPU,
                    adjust: Callable[[GPU, Efficiency], Efficiency] | None = None, runtime: str = FIT_RUNTIME) -> float:
    """The planner's time for one workload point on `gpu` (seconds), analytic or with `adjust`."""
    est, roomy = _estimate(kind, model, batch, size, precision, gpu, adjust, runtime)
    return sum(phase_seconds(ph, roomy, est.efficiency) for ph in _timed_phases(kind, est.work))


def measured_points(result: dict) -> list[dict]:
    """Workload points for charts, one uniform row each: label, model, model_name, workload, batch, position (decode)
    and seq (forward/train; the other is None), precision, runtime, status, measured_s (None if unavailable), reason."""
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
    key = base.id if base else f"{device_type}-{_slug(name)}"
    fields = dict(id=f"measured-{key}", name=f"{base.name if base else name} (measured)", aliases=(),
                  mem_bw_gbps=bw_gbps, fp32_tflops=peaks.get("fp32", 0.0), tf32_tflops=peaks.get("tf32"),
                  fp16_tflops=peaks.get("fp16"), bf16_tflops=peaks.get("bf16"), fp8_tflops=None, int8_tops=None,
                  vram_gib=memory_gb * BYTES_PER_GB / BYTES_PER_GIB, reported_vram_mib=None,  # measured = as reported
                  reported_vram_source="", source=f"measured by python -m planner.bench (bench_version {BENCH_VERSION}) "
                  f"on {day}: copy bandwidth and matmul peaks", notes="peaks are measured, not datasheet figures")
    if base:
        return replace(base, **fields)
    memory_type = "unified memory (Apple)" if device_type == "mps" else "host DRAM"
    return GPU(vendor=device_type.upper(), architecture=device_type.upper(), compute_capability=None, gfx_target=None,
               market="local", memory_type=memory_type, tdp_w=None, pcie_gen=None, pcie_unidir_gbps=None,
               nvlink_unidir_gbps=None, runpod=None, **fields)


def device_gpu(result: dict, catalog: Catalog | None = None) -> GPU:
    """The measured device as a catalog GPU whose bandwidth and matmul peaks are the MEASURED ones.

    Id 'measured-<catalog id>' for a catalog GPU (prices and links kept), 'measured-cpu-<model>' / 'measured-mps-...'
    otherwise; paths that were not measured have no peak.
    """
    env = result["environment"]
    base = (catalog or load_catalog()).get(env["device_name"]) if env["device_type"] == "cuda" else None
    return _build_device(env["device_name"], env["device_type"], base,
                         float(result["micro"]["memory_bandwidth"]["gbps"]), _measured_peaks(result),
                         float(env["memory_gb"]), str(env["date"])[:10])


# ---------------------------------------------------------------------------------------------------- calibration

@lru_cache(maxsize=4)
def _prior(memory_class: str) -> Efficiency:
    return load_facts().runtimes.get(FIT_RUNTIME).efficiency(memory_class)


@dataclass(frozen=True)
class Calibration:
    """Fitted factors of one measured device (for the pytorch-eager runtime) and how they carry to other GPUs.

    mem_bw_efficiency, compute_efficiency: fractions of the REFERENCE peaks: the catalog datasheet when the device is
    a catalog GPU (gpu_id set), else the measured copy bandwidth and matmul peak (CPU, MPS). compute_efficiency is
    fitted on `compute_path` (the workload precision). launch_overhead_us: per kernel, as in data/runtimes.yaml.
    measured_*: the micro-benchmark peaks, so the measured device itself can be estimated (`measured_gpu`).
    """

    device_name: str
    gpu_id: str | None
    device_class: str
    mem_bw_efficiency: float
    compute_efficiency: float
    launch_overhead_us: float
    compute_path: str = "fp32"
    measured_bw_gbps: float = 0.0
    measured_tflops: tuple[tuple[str, float], ...] = ()
    memory_gb: float = 1.0
    bench_date: str = ""
    fit_rms_pct: float = 0.0
    fit_points: int = 0

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
                self.compute_efficiency * (ref.peak_tflops(self.compute_path) or peak) / peak)

    # -- applying
    def _eager_target(self, gpu: GPU) -> tuple[float, float, float, str] | None:
        """Calibrated pytorch-eager (bandwidth, compute, launch us, how) for `gpu`; None = keep the prior."""
        if gpu.id == f"measured-{self.gpu_id or self.device_type + '-' + _slug(self.device_name)}":
            bw, mm = self._measured_factors()
            return bw, mm, self.launch_overhead_us, "fitted on this device"
        if self.gpu_id is None:
            return None  # a CPU or Apple GPU says nothing about NVIDIA/AMD datacenter parts
        if gpu.id == self.gpu_id:
            return self.mem_bw_efficiency, self.compute_efficiency, self.launch_overhead_us, "fitted on this GPU"
        here, there = _prior(self.device_class), _prior(gpu.memory_class)
        ref = self.reference_gpu()
        w = 1.0 if ref and gpu.architecture == ref.architecture else OTHER_ARCH_WEIGHT
        bw = min(1.0, there.mem_bw_efficiency * (self.mem_bw_efficiency / here.mem_bw_efficiency) ** w)
        mm = min(1.0, there.compute_efficiency * (self.compute_efficiency / here.compute_efficiency) ** w)
        lo = there.launch_overhead_us * self.launch_overhead_us / here.launch_overhead_us
        how = (f"transferred from {self.gpu_id} ({self.device_class.upper()}"
               + (f" -> {gpu.memory_class.upper()} by the prior ratio" if gpu.memory_class != self.device_class else "")
               + ("" if w == 1.0 else f"; other architecture: {w:g} of the log ratio") + ")")
        return bw, mm, lo, how

    def adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        """Calibrated efficiency for `gpu` under the plan's runtime (`eff` is that runtime's prior).

        - the measured device (catalog form or `measured_gpu()`): the fitted factors;
        - another GPU of a CUDA calibration: the ratio fitted/prior of the measured GPU, applied to this GPU's prior:
          bandwidth' = prior_bw(class') x (fitted_bw / prior_bw(class)), so a GDDR fit carries to HBM scaled by the
          runtime profile's HBM/GDDR prior ratio; same for compute; for another architecture only half of the log
          ratio carries (geometric mean with the prior); launch overhead (host-side dispatch) carries fully;
          transferred fractions are capped at 1;
        - a CPU or Apple-GPU calibration is not transferred: other GPUs keep their priors.
        Runtimes other than pytorch-eager are scaled by the same calibrated/prior ratio.
        """
        target = self._eager_target(gpu)
        if target is None:
            return eff
        bw, mm, lo, how = target
        prior = _prior(gpu.memory_class)
        return replace(eff, mem_bw_efficiency=eff.mem_bw_efficiency * bw / prior.mem_bw_efficiency,
                       compute_efficiency=eff.compute_efficiency * mm / prior.compute_efficiency,
                       launch_overhead_us=eff.launch_overhead_us * lo / prior.launch_overhead_us,
                       source=f"calibrated: {how}; bench {self.bench_date} on {self.device_name} "
                              f"(fit rms {self.fit_rms_pct:.1f} % over {self.fit_points} points)")

    # -- share links
    def to_query(self) -> str:
        """Compact URL-safe text: 'v=1;dev=rtx-4090;cls=gddr;bw=0.83;mm=0.71;lo=3.2;path=bf16;pbw=950;fp32=80;...'."""
        dev = self.gpu_id or _slug(self.device_name)
        parts = [f"v={BENCH_VERSION}", f"dev={dev}", f"cls={self.device_class}", f"bw={self.mem_bw_efficiency:.4g}",
                 f"mm={self.compute_efficiency:.4g}", f"lo={self.launch_overhead_us:.4g}", f"path={self.compute_path}",
                 f"pbw={self.measured_bw_gbps:.5g}"]
        parts += [f"{p}={t:.5g}" for p, t in self.measured_tflops]
        parts += [f"mem={self.memory_gb:.4g}", f"d={self.bench_date.replace('-', '')}", f"err={self.fit_rms_pct:.3g}",
                  f"n={self.fit_points}"]
        return ";".join(parts)

    @classmethod
    def from_query(cls, text: str, catalog: Catalog | None = None) -> "Calibration":
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
        known = {"v", "dev", "cls", "bw", "mm", "lo", "path", "pbw", "mem", "d", "err", "n", *PATHS}
        unknown = sorted(set(fields) - known)
        missing = sorted({"v", "dev", "cls", "bw", "mm", "lo", "path", "pbw", "mem", "d"} - set(fields))
        if unknown or missing:
            raise CalibrationError(f"calibration link: {'unknown ' + ', '.join(unknown) if unknown else ''}"
                                   f"{'; ' if unknown and missing else ''}{'missing ' + ', '.join(missing) if missing else ''}{hint}")

        def num(key: str, bounds: tuple[float, float]) -> float:
            try:
                value = float(fields[key])
            except ValueError:
                raise CalibrationError(f"calibration link: {key}={shown(fields[key])} is not a number{hint}") from None
            if not (math.isfinite(value) and bounds[0] <= value <= bounds[1]):
                raise CalibrationError(f"calibration link: {key}={fields[key]} is outside {bounds[0]:g}..{bounds[1]:g}{hint}")
            return value

        if fields["v"] != str(BENCH_VERSION):
            raise CalibrationError(f"calibration link is from bench_version {fields['v']}, this planner uses "
                                   f"{BENCH_VERSION}: re-run `python -m planner.bench`{hint}")
        klass = fields["cls"]
        if klass not in DEVICE_CLASSES:
            raise CalibrationError(f"calibration link: cls={shown(klass)} must be one of {', '.join(DEVICE_CLASSES)}{hint}")
        if fields["path"] not in PATHS:
            raise CalibrationError(f"calibration link: path={shown(fields['path'])} must be one of {', '.join(PATHS)}{hint}")
        if not re.fullmatch(r"\d{8}", fields["d"]):
            raise CalibrationError(f"calibration link: d={shown(fields['d'])} must be a date YYYYMMDD{hint}")
        try:
            day = date(int(fields["d"][:4]), int(fields["d"][4:6]), int(fields["d"][6:])).isoformat()
        except ValueError:
            raise CalibrationError(f"calibration link: d={shown(fields['d'])} is not a valid date{hint}") from None
        gpu_id, name = None, fields["dev"]
        if klass in ("hbm", "gddr"):
            try:
                gpu = (catalog or load_catalog()).get(name)
            except UnknownNameError as exc:
                raise CalibrationError(f"calibration link: {exc}{hint}") from None
            if gpu.memory_class != klass:
                raise CalibrationError(f"calibration link: {gpu.id} is a {gpu.memory_class.upper()} GPU, not {klass}{hint}")
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
        return cls(name, gpu_id, klass, num("bw", EFF_BOUNDS), num("mm", EFF_BOUNDS),
                   num("lo", LO_BOUNDS), fields["path"], num("pbw", BW_GBPS), peaks, num("mem", MEMORY_GB), day,
                   num("err", (0, 1000)) if "err" in fields else 0.0,
                   int(num("n", (0, 500))) if "n" in fields else 0)


# ---------------------------------------------------------------------------------------------------- fit

def _nelder_mead(f: Callable[[list[float]], float], x0: list[float], step: float = 0.5, iters: int = 400) -> list[float]:
    """Minimise f from x0 (plain Nelder-Mead; 3 parameters, so no dependency on scipy)."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step if j == i else 0.0) for j in range(n)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < 1e-12:
            break
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        move = lambda t: [c + t * (w - c) for c, w in zip(centroid, simplex[-1])]
        xr = move(-1.0)
        fr = f(xr)
        if fr < values[0]:
            xe = move(-2.0)
            fe = f(xe)
            simplex[-1], values[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = xr, fr
        else:
            xc = move(0.5)
            fc = f(xc)
            if fc < values[-1]:
                simplex[-1], values[-1] = xc, fc
            else:
                simplex = [simplex[0]] + [[b + 0.5 * (x - b) for x, b in zip(s, simplex[0])] for s in simplex[1:]]
                values = [values[0]] + [f(s) for s in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def _clip(x: float, bounds: tuple[float, float]) -> float:
    return min(max(x, math.log(bounds[0])), math.log(bounds[1]))


def fit_factors(points: list[_Point], gpu: GPU, launch_us_prior: float) -> tuple[float, float, float, float]:
    """Least squares on log time: (bandwidth eff, compute eff, launch us, rms relative error) on `gpu`'s peaks.

    A weak log-normal prior (weight PRIOR_WEIGHT per factor) centred on the micro-benchmarks (efficiency 1 of the
    measured peaks, the measured per-op launch time) keeps factors that the points cannot identify sensible.
    """
    if not points:
        raise CalibrationError("no workload points to fit; run the benchmark with at least one workload")
    work = [(_point_phases(pt, gpu), math.log(pt.measured_s)) for pt in points]
    # the bench times bare torch ops: their whole per-op cost is the fitted launch time, with no framework's Python
    base = replace(_prior(gpu.memory_class), host_us_per_kernel=0.0)
    centre = [0.0, 0.0, math.log(launch_us_prior)]

    def params(x):
        return (math.exp(_clip(x[0], EFF_BOUNDS)), math.exp(_clip(x[1], EFF_BOUNDS)), math.exp(_clip(x[2], LO_BOUNDS)))

    def loss(x):
        bw, mm, lo = params(x)
        eff = replace(base, mem_bw_efficiency=bw, compute_efficiency=mm, launch_overhead_us=lo)
        err = sum((math.log(sum(phase_seconds(ph, gpu, eff) for ph in phases)) - y) ** 2 for phases, y in work)
        return err + PRIOR_WEIGHT * sum((a - c) ** 2 for a, c in zip(x, centre))

    starts = [[a, b, c] for a in (-1.0, 0.0, 1.0) for b in (-1.5, 0.0) for c in (centre[2] - 1.0, centre[2] + 1.0)]
    best = min(starts, key=loss)
    x = _nelder_mead(loss, best)
    x = _nelder_mead(loss, x, step=0.1)  # restart: Nelder-Mead can stall on a flat ridge
    bw, mm, lo = params(x)
    eff = replace(base, mem_bw_efficiency=bw, compute_efficiency=mm, launch_overhead_us=lo)
    rel = [sum(phase_seconds(ph, gpu, eff) for ph in phases) / math.exp(y) - 1 for phases, y in work]
    return bw, mm, lo, 100 * math.sqrt(sum(r * r for r in rel) / len(rel))


def _fit_path(points: list[_Point]) -> str:
    counts: dict[str, int] = {}
    for pt in points:
        counts[pt.precision] = counts.get(pt.precision, 0) + 1
    return max(counts, key=counts.get)


def fit(result: dict, catalog: Catalog | None = None, points: list[dict] | None = None) -> Calibration:
    """Fit the calibration from a validated result (`parse_result`); `points` (rows of result['workloads'])
    restricts the fit to some of the measured points (held-out checks)."""
    catalog = catalog or load_catalog()
    env = result["environment"]
    dev = device_gpu(result, catalog)
    pts = _points({"workloads": points if points is not None else result["workloads"]}, fitted_only=True)
    bw_m, mm_m, lo, rms = fit_factors(pts, dev, float(result["micro"]["launch_overhead"]["us_per_op"]))
    path = _fit_path(pts)
    peaks = _measured_peaks(result)
    base = catalog.get(env["device_name"]) if env["device_type"] == "cuda" else None
    if base:  # express as fractions of the datasheet, the reference every other catalog GPU uses
        bw, mm = bw_m * dev.mem_bw_gbps / base.mem_bw_gbps, mm_m * peaks[path] / (base.peak_tflops(path) or peaks[path])
        klass = base.memory_class
    else:
        bw, mm, klass = bw_m, mm_m, env["device_type"]
    return Calibration(env["device_name"] if not base else base.name, base.id if base else None, klass, bw, mm, lo,
                       path, dev.mem_bw_gbps, tuple(sorted(peaks.items(), key=lambda kv: PATHS.index(kv[0]))),
                       float(env["memory_gb"]), str(env["date"])[:10], rms, len(pts))


def load_calibration(path: str | Path) -> Calibration:
    """Read, validate and fit a bench result file (JSON or YAML); CalibrationError naming the problem otherwise."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_RESULT_BYTES:
            raise CalibrationError(f"{path}: file is {size:,} bytes; a bench result is under {MAX_RESULT_BYTES:,} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise CalibrationError(f"{path}: cannot read the file ({exc.strerror})") from None
    return fit(parse_result(data, path.name))


# ---------------------------------------------------------------------------------------------------- comparisons

def point_table(result: dict, cal: Calibration) -> list[dict]:
    """Every measured point with the planner's analytic and calibrated time on the measured device (seconds)."""
    dev = cal.measured_gpu()
    rows = []
    for pt, row in zip(_points(result), [r for r in measured_points(result) if r["status"] == "ok"]):
        analytic = predict_seconds(pt.kind, pt.model, pt.batch, pt.size, pt.precision, dev, runtime=pt.runtime)
        calibrated = predict_seconds(pt.kind, pt.model, pt.batch, pt.size, pt.precision, dev, cal.adjust, pt.runtime)
        rows.append({**row, "analytic_s": analytic, "calibrated_s": calibrated,
                     "calibrated_error_pct": 100 * (calibrated / pt.measured_s - 1)})
    return rows


def side_by_side(plan: Plan, cal: Calibration, facts: Facts | None = None,
                 gpu_names: Iterable[str] | None = None) -> list[dict]:
    """Analytic and calibrated estimates of `plan` per GPU (calibrated ranking order), the measured device first."""
    facts = facts or load_facts()
    analytic = {e.gpu.id: e for e in estimate_all(plan, facts, gpu_names)}
    calibrated = estimate_all(plan, facts, gpu_names, adjust=cal.adjust)
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
        cuda = [c for c in self.members if c.gpu_id]
        same_arch = [c for c in cuda if c.reference_gpu().architecture == gpu.architecture]
        return (same_arch or cuda or [None])[0]

    def adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        cal = self._for(gpu)
        return cal.adjust(gpu, eff) if cal else eff

    def to_query(self) -> str:
        return FLEET_SEPARATOR.join(c.to_query() for c in self.members)

    @classmethod
    def from_query(cls, text: str, catalog: Catalog | None = None) -> "Fleet":
        parts = [p for p in str(text).split(FLEET_SEPARATOR) if p]
        if not parts or len(parts) > MAX_FLEET:
            raise CalibrationError(f"a link carries 1 to {MAX_FLEET} calibrations, got {len(parts)}")
        return cls(tuple(Calibration.from_query(p, catalog) for p in parts))
