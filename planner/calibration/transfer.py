"""How a calibration carries to other devices: the transfer rules of Calibration.adjust and bench_adjust (the measured
device gets the fitted factors, another GPU of a CUDA fit the fitted/prior ratio on its own prior, another runtime
its values scaled by the calibrated eager ones) and which member of a Fleet calibrates a GPU.

Each rule reads a Calibration (planner.calibration.fit) passed in as `cal`; this module does not import it, so the
Calibration's methods can delegate here.
"""

from __future__ import annotations

from dataclasses import replace

from planner.calibration.measured import (BARE_OP_HOST_US, FIT_RUNTIME, bare_op_prior, eager_prior, factor_efficiency,
                                          on_host, slug)
from planner.inputs.catalog import GPU
from planner.inputs.runtimes import Efficiency

OTHER_ARCH_WEIGHT = 0.5  # share (geometric) of the measured/prior ratio carried to a GPU of another architecture


def is_measured(cal, gpu: GPU) -> bool:
    """`gpu` is the measured device itself (its measured form) rather than its catalog row or another device."""
    return gpu.id == f"measured-{cal.gpu_id or cal.device_type + '-' + slug(cal.device_name)}"


def measured_factors(cal) -> tuple[float, float]:
    """(bandwidth, compute) efficiency relative to the measured peaks."""
    ref = cal.reference_gpu()
    if ref is None:
        return cal.mem_bw_efficiency, cal.compute_efficiency
    peak = dict(cal.measured_tflops).get(cal.compute_path) or ref.peak_tflops(cal.compute_path) or 1.0
    return (cal.mem_bw_efficiency * ref.mem_bw_gbps / cal.measured_bw_gbps,
            cal.compute_efficiency * (ref.ceiling_tflops(cal.compute_path) or peak) / peak)


def eager_target(cal, gpu: GPU) -> tuple[float, float, float | None, str] | None:
    """Calibrated bare-op (bandwidth, compute, per-kernel overhead or None, how) for `gpu`; None = keep the prior.
    The overhead is the measured machine's own (its host's dispatch on a GPU, its launch time on a CPU): it applies
    to the measured device alone, since another GPU is rented on another host."""
    if is_measured(cal, gpu):
        bw, mm = measured_factors(cal)
        return bw, mm, cal.overhead_us, "fitted on this device"
    if cal.gpu_id is None:
        return None  # a CPU or Apple GPU says nothing about NVIDIA/AMD datacenter parts
    if gpu.id == cal.gpu_id:
        return cal.mem_bw_efficiency, cal.compute_efficiency, cal.overhead_us, \
            "fitted on this CPU" if cal.device_class == "cpu" else "fitted on this GPU"
    if "cpu" in (cal.device_class, gpu.memory_class):
        return None  # a CPU fit says nothing about GPUs (nor about other CPUs), a GPU fit nothing about CPUs
    here, there = eager_prior(cal.device_class), eager_prior(gpu.memory_class)
    ref = cal.reference_gpu()
    w = 1.0 if ref and gpu.architecture == ref.architecture else OTHER_ARCH_WEIGHT
    bw = min(1.0, there.mem_bw_efficiency * (cal.mem_bw_efficiency / here.mem_bw_efficiency) ** w)
    mm = min(1.0, there.compute_efficiency * (cal.compute_efficiency / here.compute_efficiency) ** w)
    how = (f"transferred from {cal.gpu_id} ({cal.device_class.upper()}"
           + (f" -> {gpu.memory_class.upper()} by the prior ratio" if gpu.memory_class != cal.device_class else "")
           + ("" if w == 1.0 else f"; other architecture: {w:g} of the log ratio")
           + "; host dispatch: the runtime's own, another machine)")
    return bw, mm, None, how


def adjust(cal, gpu: GPU, eff: Efficiency) -> Efficiency:
    """Calibrated efficiency for `gpu` under the plan's runtime (`eff` is that runtime's prior).

    - the measured device (catalog form or `measured_gpu()`): the fitted bandwidth and compute;
    - another GPU of a CUDA calibration: the ratio fitted/prior of the measured GPU, applied to this GPU's prior:
      bandwidth' = prior_bw(class') x (fitted_bw / prior_bw(class)), so a GDDR fit carries to HBM scaled by the
      runtime profile's HBM/GDDR prior ratio; same for compute; for another architecture only half of the log
      ratio carries (geometric mean with the prior); transferred fractions are capped at 1;
    - a CPU calibration applies to the CPU it ran on (a catalog CPU row, or the measured machine) and an Apple-GPU
      one to the measured device only; other devices keep their priors, and a GPU fit is not carried to CPUs.
    Another runtime keeps its own values scaled by the calibrated eager value over what eager PyTorch's priors
    assumed for bare ops on this class (bare_op_prior: the bench times bare ops, not a framework's generate);
    fractions are capped at 1 (a datasheet peak or the matmul ceiling).
    The per-kernel overhead, on the measured machine only: from a GPU bench it is the host's dispatch speed, so it
    scales the host dispatch of runtimes that dispatch kernels from Python (host_us_per_kernel, by the fitted value
    over BARE_OP_HOST_US) and leaves every GPU-side launch gap alone (a CUDA-graph runtime's replay is not host
    dispatch); from a CPU bench it is the launch time itself (eager) or scales a runtime's launch time.
    """
    target = eager_target(cal, gpu)
    if target is None:
        return eff
    bw, mm, overhead, how = target
    ref_bw, ref_mm, ref_lo = bare_op_prior(gpu.memory_class)
    if eff.runtime != FIT_RUNTIME:
        bw, mm = min(1.0, eff.mem_bw_efficiency * bw / ref_bw), min(1.0, eff.compute_efficiency * mm / ref_mm)
    changes = dict(mem_bw_efficiency=bw, compute_efficiency=mm)
    if overhead is not None and on_host(cal.device_class):
        changes["host_us_per_kernel"] = eff.host_us_per_kernel * overhead / BARE_OP_HOST_US
    elif overhead is not None:
        changes["launch_overhead_us"] = overhead if eff.runtime == FIT_RUNTIME else \
            eff.launch_overhead_us * overhead / ref_lo
    return replace(eff, **changes, source=f"calibrated: {how}; bench {cal.bench_date} on {cal.device_name} "
                                          f"(fit rms {cal.fit_rms_pct:.1f} % over {cal.fit_points} points)")


def bench_adjust(cal, gpu: GPU, eff: Efficiency) -> Efficiency:
    """What the bench's own points run as on the measured device: bare torch ops at the fitted factors (eager
    points; factor_efficiency), a compiled point as `adjust` makes its runtime."""
    if eff.runtime != FIT_RUNTIME or not is_measured(cal, gpu):
        return adjust(cal, gpu, eff)
    bw, mm = measured_factors(cal)
    return replace(factor_efficiency(eff, bw, mm, cal.overhead_us, gpu.memory_class),
                   source=f"fitted on this device: bench {cal.bench_date} on {cal.device_name}")


def calibration_for(members: tuple, gpu: GPU):
    """The member of a fleet that calibrates `gpu` (None: none does): a GPU that one of them measured gets that fit;
    any other GPU takes the transfer of the first calibration measured on its architecture, else of the first CUDA
    one."""
    own = [c for c in members if gpu.id in (c.gpu_id, f"measured-{c.gpu_id or ''}")
           or gpu.id == c.measured_gpu().id]
    if own:
        return own[0]
    cuda = [c for c in members if c.gpu_id and c.device_class != "cpu"]
    same_arch = [c for c in cuda if c.reference_gpu().architecture == gpu.architecture]
    return (same_arch or cuda or [None])[0]
