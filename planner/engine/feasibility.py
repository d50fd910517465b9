"""Feasibility of a job on a GPU or a CPU device, with every reason: hardware precision support, attention backend,
PyTorch build requirements, memory (with the numbers), context length. A CPU is judged by its instruction-set
extensions (planner.inputs.cpus), never by GPU compute capabilities."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from planner.base.schema import sm_label
from planner.engine.memory import MemoryBreakdown
from planner.inputs.catalog import GPU
from planner.inputs.jobs import Workload
from planner.inputs.models import ModelProfile
from planner.inputs.precisions import BuildRule
from planner.inputs.work import Setup


@dataclass(frozen=True)
class Reason:
    code: str  # 'oom', 'precision', 'kv_dtype', 'attention', 'pytorch_build', 'context', 'price', 'parallelism',
    # 'device' (runs on the CPU), 'runtime' (the runtime can't run on this device)
    blocking: bool
    text: str


def _sm_ok(gpu: GPU, need: tuple[int, int] | None) -> bool:
    if need is None or gpu.compute_capability is None:  # AMD: decided by the catalog's rates alone
        return True
    return gpu.compute_capability >= need


def cpu_reasons(cpu: GPU, s: Setup) -> list[Reason]:
    """What a CPU device can't do for this setup, and the note that the plan runs on the CPU: precisions by the
    CPU's matmul paths (a slow fallback is a note), KV-cache dtypes by the same, GPU-only attention kernels."""
    spec = cpu.cpu
    what = spec.describe() if spec else f"{cpu.mem_bw_gbps:,.0f} GB/s measured"
    out = [Reason("device", False, f"runs on the CPU, not a GPU: {cpu.name}, {what}")]
    p = s.precision
    slow = spec.slow_path(p.compute_path) if spec else None
    if cpu.peak_tflops(p.compute_path) is None:
        why = spec.why_no_path(p.compute_path) if spec else f"no {p.compute_path} matmul was measured"
        out.append(Reason("precision", True, f"{p.id} can't run on {cpu.name}: {why}; fp32 runs on every CPU"))
    elif slow:
        out.append(Reason("precision", False, f"{p.id} on {cpu.name}: {slow.note}"))
    kv = s.kv_dtype
    if kv.min_sm is not None and cpu.peak_tflops(kv.id) is None:
        out.append(Reason("kv_dtype", True, f"{kv.id} KV cache: {cpu.name} has no {kv.id} arithmetic"))
    if s.attention.min_sm is not None:  # a kernel defined by a compute capability is a CUDA kernel
        out.append(Reason("attention", True, f"{s.attention.id} is a CUDA kernel for NVIDIA GPUs "
                          f"({sm_label(s.attention.min_sm)}+): on a CPU use sdpa (PyTorch's CPU flash or math kernel)"))
    return out


def support_reasons(gpu: GPU, s: Setup, builds: Iterable[BuildRule]) -> list[Reason]:
    """What the GPU's (or CPU's) hardware and software stack cannot do for this setup (and notes it needs)."""
    if gpu.kind == "cpu":
        return cpu_reasons(gpu, s)
    out: list[Reason] = []
    p = s.precision
    if gpu.peak_tflops(p.compute_path) is None or not _sm_ok(gpu, p.min_sm):
        need = f"needs {sm_label(p.min_sm)}+" if p.min_sm else "is not supported"
        out.append(Reason("precision", True, f"{p.id} {need}; {gpu.name} is {gpu.sm} ({gpu.architecture})"
                          if gpu.compute_capability else f"{p.id}: {gpu.name} has no {p.compute_path} path in the catalog"))
    if not _sm_ok(gpu, s.kv_dtype.min_sm):
        out.append(Reason("kv_dtype", True, f"{s.kv_dtype.id} KV cache needs {sm_label(s.kv_dtype.min_sm)}+; "
                          f"{gpu.name} is {gpu.sm}"))
    if not _sm_ok(gpu, s.attention.min_sm):
        out.append(Reason("attention", True, f"{s.attention.id} needs {sm_label(s.attention.min_sm)}+; "
                          f"{gpu.name} is {gpu.sm}: use sdpa (memory-efficient kernel) instead"))
    for rule in builds:
        if rule.applies(gpu.compute_capability):
            out.append(Reason("pytorch_build", False, rule.text))
    return out


def memory_reason(gpu: GPU, mem: MemoryBreakdown, batch: int, n_gpus: int) -> Reason | None:
    has = gpu.vram_gb
    if mem.total_gb <= has:
        return None
    parts = ", ".join(f"{i.name} {i.gb:.2f}" for i in mem.items if i.gb >= 0.005)
    per = " per GPU" if n_gpus > 1 else ""
    return Reason("oom", True, f"needs {mem.total_gb:.1f} GB{per} at batch {batch}, has {has:.1f} GB "
                  f"({gpu.vram_gib:g} GiB; {mem.total_gb - has:.1f} GB short; {parts} GB)")


def context_reason(m: ModelProfile, w: Workload) -> Reason | None:
    limit = m.trained_context
    if limit is not None and w.input_size > limit:
        return Reason("context", False, f"{w.input_size} {m.input_size_name} exceed {m.name}'s trained context of "
                                        f"{limit}")
    return None
