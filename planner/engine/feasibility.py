"""Feasibility of a job on a GPU, with every reason: hardware precision support, attention backend,
PyTorch build requirements, memory (with the numbers), context length."""

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
    code: str  # 'oom', 'memory', 'precision', 'kv_dtype', 'attention', 'pytorch_build', 'context', 'price', 'parallelism'
    blocking: bool
    text: str


def _sm_ok(gpu: GPU, need: tuple[int, int] | None) -> bool:
    if need is None or gpu.compute_capability is None:  # AMD: decided by the catalog's rates alone
        return True
    return gpu.compute_capability >= need


def support_reasons(gpu: GPU, s: Setup, builds: Iterable[BuildRule]) -> list[Reason]:
    """What the GPU's hardware and software stack cannot do for this setup (and notes it needs)."""
    out: list[Reason] = []
    p = s.precision
    taken = gpu.run_path(p.compute_path)
    if taken and taken != p.compute_path:  # PyTorch quietly runs the matmuls in another dtype here
        out.append(Reason("precision", False, f"{p.id} matmuls need {sm_label(p.min_sm)}+; {gpu.name} ({gpu.sm}) runs "
                          f"them in {taken}, as PyTorch ignores the {p.id} setting there"))
    elif taken is None or not _sm_ok(gpu, p.min_sm):
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


# A plan that fills this much of its usable memory is said to be close to the limit (a note, not a refusal): a few
# percent is what a longer sequence, a larger workspace or a fragmentation spike takes.
NEAR_LIMIT_FRACTION = 0.95


def capacity_text(gpu: GPU, target: float) -> str:
    """How the usable memory follows from the card's capacity, e.g. '90 % of the 48.3 GB an L40S reports (48 GiB
    less 1/16 kept for ECC)'."""
    reported = gpu.reported_vram_gb
    why = (f"{gpu.vram_gib:g} GiB = {gpu.vram_gb:.1f} GB, of which the driver reports {gpu.reported_vram_mib:,.0f} MiB"
           if gpu.reported_vram_mib is not None else f"{gpu.vram_gib:g} GiB")
    return f"{target:.0%} of the {reported:.1f} GB it reports ({why})"


def memory_reason(gpu: GPU, mem: MemoryBreakdown, batch: int, n_gpus: int, usable_gb: float,
                  target: float) -> Reason | None:
    """A refusal when the plan needs more than the usable memory; a note when it fills nearly all of it."""
    per = " per GPU" if n_gpus > 1 else ""
    need = mem.total_gb
    if need > usable_gb:
        parts = ", ".join(f"{i.name} {i.gb:.2f}" for i in mem.items if i.gb >= 0.005)
        return Reason("oom", True, f"needs {need:.1f} GB{per} at batch {batch}, usable {usable_gb:.1f} GB "
                      f"({capacity_text(gpu, target)}; {need - usable_gb:.1f} GB short; {parts} GB)")
    if need > NEAR_LIMIT_FRACTION * usable_gb:
        return Reason("memory", False, f"close to the limit: {need:.1f} of {usable_gb:.1f} usable GB{per} at batch "
                      f"{batch} ({need / usable_gb:.0%}); {usable_gb - need:.2f} GB of headroom")
    return None


def context_reason(m: ModelProfile, w: Workload) -> Reason | None:
    limit = m.trained_context
    if limit is not None and w.input_size > limit:
        return Reason("context", False, f"{w.input_size} {m.input_size_name} exceed {m.name}'s trained context of "
                                        f"{limit}")
    return None
