"""The work a job does per GPU, as phases of identical steps, each step split into op groups.

A phase is `steps` steps at KV positions p0 .. p0 + steps - 1 (decode) or p = 0, repeated `passes` times
(a pass = one batch through the model). The model profile says what one step costs (planner.inputs.models);
this module only says which steps a job takes. The roofline module times them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from planner.base.units import FP32_BYTES
from planner.inputs.jobs import OPTIMIZER_TRAFFIC, Generate, Infer, Train
from planner.inputs.models import ModelProfile
from planner.inputs.work import OpGroup, Setup, forward_equivalents

# A fused AdamW update does ~10 FLOPs per parameter (two moment updates, bias corrections, the step): negligible
# next to its 28 B of traffic, so the figure only has to be the right order. Eager multi-tensor (foreach) updates
# launch about ten kernels per step whatever the model size.
OPTIMIZER_FLOPS_PER_PARAM = 10.0
OPTIMIZER_KERNELS = 10
# FSDP (ZeRO-3) per micro-step: all-gather the weights for forward and again for backward, reduce-scatter the
# gradients (Rajbhandari et al. 2020, ZeRO: 3x the parameter volume vs 2x for DDP).
FSDP_COLLECTIVES_PER_STEP = 3


@dataclass(frozen=True)
class Phase:
    """`steps` steps per pass, at KV positions p0 .. p0 + steps - 1 (decode) or p = 0; `passes` passes."""

    name: str
    groups: tuple[OpGroup, ...]
    kernels: float
    steps: int
    p0: int
    passes: float
    comm_bytes: float = 0.0  # bytes each GPU sends per step in collectives (tensor/data parallel)
    comm_calls: float = 0.0  # collective calls per step (each pays a latency)


def ring_fraction(n: int) -> float:
    """Share of a message each GPU sends in a ring all-gather or reduce-scatter over n GPUs: (n-1)/n."""
    return (n - 1) / n


@lru_cache(maxsize=4096)
def generate_phases(m: ModelProfile, w: Generate, s: Setup, batch: int, passes: float) -> tuple[Phase, ...]:
    P, G = w.prompt_tokens, w.gen_tokens
    kern = m.kernels_per_forward
    comm, calls = m.tensor_parallel_comm(s, batch * P)
    phases = [Phase("prefill", m.prefill_work(s, batch, P), kern * s.prefill_chunks(P), 1, 0, passes, comm, calls)]
    if G > 1:
        comm, calls = m.tensor_parallel_comm(s, batch)
        phases.append(Phase("decode", m.decode_work(s, batch), kern, G - 1, P + 1, passes, comm, calls))
    return tuple(phases)


@lru_cache(maxsize=4096)
def infer_phases(m: ModelProfile, w: Infer, s: Setup, batch: int, passes: float) -> tuple[Phase, ...]:
    S = w.input_size
    comm, calls = m.tensor_parallel_comm(s, batch * S)
    return (Phase("forward", m.forward_work(s, batch, S), m.kernels_per_forward, 1, 0, passes, comm, calls),)


@lru_cache(maxsize=4096)
def train_phases(m: ModelProfile, w: Train, s: Setup, batch: int, micro_steps: float, n_gpus: int) -> tuple[Phase, ...]:
    """Micro-steps (forward + backward [+ recompute]) and optimizer steps, per GPU; with s.shard > 1 the
    collectives of FSDP (ZeRO-3), else a DDP gradient all-reduce per optimizer step."""
    p = s.precision
    groups = m.train_work(s, batch, w.input_size, w.checkpointing)
    kernels = m.kernels_per_forward * forward_equivalents(w.checkpointing)
    params = m.params
    k = s.shard
    # in the compute dtype, one collective per shard unit each (ring: (k-1)/k of the full size)
    fsdp_bytes = FSDP_COLLECTIVES_PER_STEP * ring_fraction(k) * params * p.act_bytes if k > 1 else 0.0
    fsdp_calls = FSDP_COLLECTIVES_PER_STEP * m.shard_units if k > 1 else 0.0
    phases = [Phase("train micro-step", groups, kernels, 1, 0, micro_steps, fsdp_bytes, fsdp_calls)]
    opt_steps = micro_steps / w.grad_accum
    traffic = OPTIMIZER_TRAFFIC[w.optimizer]
    opt = OpGroup("optimizer update", OPTIMIZER_FLOPS_PER_PARAM * params / k, traffic * params / k, "fp32",
                  f"bytes = {traffic:g} B/param ({w.optimizer}: read weights, grads, states; "
                  f"write weights, states)" + (f" on this GPU's 1/{k} shard" if k > 1 else ""))
    ddp = n_gpus > 1 and k == 1  # DDP: one all-reduce of the fp32 gradients per optimizer step
    dp_bytes = 2 * ring_fraction(n_gpus) * float(FP32_BYTES) * params if ddp else 0.0
    phases.append(Phase("optimizer step", (opt,), OPTIMIZER_KERNELS, 1, 0, opt_steps, dp_bytes, 1.0 if ddp else 0.0))
    return tuple(phases)
