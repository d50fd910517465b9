"""What a model does in one step, in the terms the engine times and sizes it by.

OpGroup: FLOPs and DRAM bytes of one kind of work (linear layers, attention, elementwise) in one step, affine in
the KV position p of a decode step (work(p) = a + b * p; b = 0 outside decode). MemoryItem: one consumer of GPU
memory with its formula. Setup: how the model runs (precision, KV-cache dtype, attention backend, tensor-parallel
and FSDP degrees). Model profiles (planner.inputs.models) produce these; the engine consumes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.base.schema import CachedHash
from planner.inputs.precisions import AttentionBackend, KVDtype, Precision

ACTIVATION_PATHS = ("fp32", "tf32", "fp16", "bf16")  # dtypes activations (and attention) can run in
# A backward pass costs about two forwards: gradients w.r.t. inputs and w.r.t. weights (Kaplan et al. 2020: 6N
# training FLOPs per token vs 2N forward).
BACKWARD_FORWARD_RATIO = 2.0


def forward_equivalents(checkpointing: bool) -> float:
    """Forward passes' worth of work in one training micro-step: forward + backward (+ recomputed forward)."""
    return 1.0 + BACKWARD_FORWARD_RATIO + (1.0 if checkpointing else 0.0)


@dataclass(frozen=True)
class OpGroup:
    """Work of one kind in one step: FLOPs and bytes as a + b * p (p = KV position; b = 0 outside decode)."""

    name: str
    flops: float
    bytes: float
    compute_path: str
    formula: str
    flops_per_pos: float = 0.0
    bytes_per_pos: float = 0.0
    rate_factor: float = 1.0  # x the achieved FLOP/s: an attention kernel's speed vs FlashAttention-2 (the reference)


@dataclass(frozen=True)
class MemoryItem:
    """One memory consumer in decimal GB; `formula` is formatted on demand (estimates are built in a hot loop)."""

    name: str
    gb: float
    template: str
    args: tuple = ()

    @property
    def formula(self) -> str:
        return self.template.format(*self.args)


@dataclass(frozen=True, eq=True)
class Setup(CachedHash):
    """How a model runs: resolved precision, KV-cache dtype and attention backend (on one GPU, the kernel it runs as;
    before a GPU is known, the user's choice), and how it is split."""

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it
    precision: Precision
    kv_dtype: KVDtype
    attention: AttentionBackend
    tp: int = 1  # tensor-parallel degree: weights, heads and FLOPs split over tp GPUs
    shard: int = 1  # FSDP/ZeRO-3 degree: training states sharded over `shard` GPUs

    @property
    def attention_path(self) -> str:
        """Attention and elementwise work run in the activation dtype; quantized weights don't change it."""
        p = self.precision
        return p.compute_path if p.compute_path in ACTIVATION_PATHS else "fp16"
