"""Calibration from a local benchmark (`python -m planner.bench`): the fitted factors of one measured device
(Calibration), several of them each for its own GPU (Fleet), and the entry that fits a bench result (fit,
load_calibration).

A bench result holds micro-benchmarks (copy bandwidth, matmul TFLOPS per dtype, launch overhead) and workload points
(a real torch decoder built from a planner model profile, timed on one job). The fit finds the memory-bandwidth
efficiency, the compute efficiency and the per-kernel launch overhead for which the planner's own estimator
(estimate_gpu on `device_gpu(result)`, whose peaks are the measured ones) reproduces the measured times.

The parts, each in its module: what the bench measured (measured: points, the measured device, bare-op efficiency),
the least-squares solver (solve), how a fit carries to other GPUs (transfer), the share-link text (codec) and the
comparison tables (tables). The result file's format and validation live in planner.inputs.bench_result (the bench
writes it without knowing this package). Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from planner.base.files import UserFileError, read_regular
from planner.calibration import codec, transfer
from planner.calibration.measured import Point, bench_points, build_device, device_gpu, measured_peaks, reference_device
from planner.calibration.solve import EFF_BOUNDS, FACTORS, fit_layers, fit_problems
from planner.inputs.bench_result import MAX_RESULT_BYTES, PATHS, CalibrationError, parse_result
from planner.inputs.catalog import GPU, Catalog, load_catalog
from planner.inputs.runtimes import Efficiency


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
        return build_device(self.device_name, self.device_type, self.reference_gpu(catalog), self.measured_bw_gbps,
                             dict(self.measured_tflops), self.memory_gb, self.bench_date)

    # -- applying (the rules: planner.calibration.transfer)
    def adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        """Calibrated efficiency for `gpu` under the plan's runtime (`eff` is that runtime's prior): transfer.adjust."""
        return transfer.adjust(self, gpu, eff)

    def bench_adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        """What the bench's own points run as on the measured device: transfer.bench_adjust."""
        return transfer.bench_adjust(self, gpu, eff)

    # -- share links (the field table: planner.calibration.codec)
    def to_query(self) -> str:
        """Compact URL-safe text: 'v=1;dev=rtx-4090;cls=gddr;bw=0.83;mm=0.71;lo=3.2;path=bf16;pbw=950;fp32=80;...'."""
        return codec.encode(self)

    @classmethod
    def from_query(cls, text: str, catalog: Catalog | None = None) -> Calibration:
        """Parse `to_query` text (e.g. from a hand-edited link); CalibrationError on anything invalid."""
        return cls(**codec.decode(text, catalog))


@dataclass(frozen=True)
class Fleet:
    """Several calibrations, each used for its own GPU: a GPU that one of them measured gets that fit; any other
    GPU takes the transfer of the first calibration measured on its architecture, else of the first CUDA one."""

    members: tuple[Calibration, ...]

    def adjust(self, gpu: GPU, eff: Efficiency) -> Efficiency:
        cal = transfer.calibration_for(self.members, gpu)
        return cal.adjust(gpu, eff) if cal else eff

    def to_query(self) -> str:
        return codec.FLEET_SEPARATOR.join(c.to_query() for c in self.members)

    @classmethod
    def from_query(cls, text: str, catalog: Catalog | None = None) -> Fleet:
        return cls(tuple(Calibration.from_query(p, catalog) for p in codec.split_fleet(text)))


def _fit_path(points: list[Point]) -> str:
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
    pts = bench_points({"workloads": chosen, "model_runs": result.get("model_runs")}, fitted_only=True)
    f = fit_layers(pts, dev, float(result["micro"]["launch_overhead"]["us_per_op"]))
    bw_m, mm_m, lo = f.mem_bw_efficiency, f.compute_efficiency, f.overhead_us
    path = _fit_path(pts)
    peaks = measured_peaks(result)
    base = reference_device(result, catalog, device)
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
        data = read_regular(path, MAX_RESULT_BYTES, "bench result file")
    except UserFileError as exc:
        raise CalibrationError(str(exc)) from None
    result = parse_result(data, path.name)
    return fit(result, device=device if result["environment"]["device_type"] == "cpu" else None)
