"""The work a job does per GPU, as phases of identical steps, each step split into op groups.

A phase is `steps` steps at KV positions p0 .. p0 + steps - 1 (decode) or p = 0, repeated `passes` times
(a pass = one batch through the model). The model profile says what one step costs (planner.inputs.models);
this module only says which steps a job takes. The roofline module times them.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

from planner.base.units import FP32_BYTES
from planner.engine.collectives import allreduce_hops, ring_fraction, ring_traffic
from planner.engine.memory import zero_state_bytes
from planner.engine.train_layout import (bubble_micro_steps, comm_fields, cp_collectives, cp_hidden_share,
                                         pp_comm_fields, pp_hidden_share,
                                         pp_message_bytes, sp_rearranging_copies, split_groups, tp_collectives,
                                         tp_hidden_share)
from planner.inputs.jobs import Generate, Infer, Train, Workload, optimizer_traffic
from planner.inputs.custom_allreduce import CustomAllReduce
from planner.inputs.models import ModelProfile
from planner.inputs.work import ALL_REDUCE, OpGroup, Setup, fold_pipelined, forward_equivalents

# A fused AdamW update does ~10 FLOPs per parameter (two moment updates, bias corrections, the step): negligible
# next to its 28 B of traffic, so the figure only has to be the right order. Eager multi-tensor (foreach) updates
# launch about ten kernels per step whatever the model size.
OPTIMIZER_FLOPS_PER_PARAM = 10.0
OPTIMIZER_KERNELS = 10
FOREACH_WORDS = " as torch.optim's foreach kernels, one per step of the update"
# FSDP (ZeRO-3) per micro-step: all-gather the weights for forward and again for backward, reduce-scatter the
# gradients (Rajbhandari et al. 2020, ZeRO: 3x the parameter volume vs 2x for DDP).
FSDP_COLLECTIVES_PER_STEP = 3
FSDP_REDUCES_PER_STEP = 1  # of them, the gradients' reduce-scatter (the rest gather weights)
# Mixed-precision training keeps fp32 master weights and a 16-bit copy (the memory model's "autocast copy"): autocast
# casts each fp32 weight to 16 bits once per forward (PyTorch docs, torch.autocast: casts of leaf tensors are cached
# inside an autocast-enabled region), reading 4 B and writing 2 B per parameter per micro-step; with fp16, GradScaler
# unscales the fp32 gradients in place before each optimizer step (torch.amp.GradScaler.unscale_, one fused
# _amp_foreach_non_finite_check_and_unscale_: read and write 4 B). bf16 needs no loss scaling.


PREFILL = "prefill"  # the name of a generate job's prompt phase (Phase.name)


class Phase(NamedTuple):
    """`steps` steps per pass, at KV positions p0 .. p0 + steps - 1 (decode) or p = 0; `passes` passes. A NamedTuple,
    like OpGroup: immutable and cheap to build in the catalog sweep."""

    name: str
    groups: tuple[OpGroup, ...]
    kernels: float
    steps: int
    p0: int
    passes: float
    # per step, each kind of collective (tensor/data parallel) as (bytes each GPU sends, ring steps, calls), summed
    # over its equal calls (collectives.ring_traffic): each call's size picks its NCCL protocol
    comm: tuple[tuple[float, float, float], ...] = ()
    comm_gpus: int = 1  # GPUs in each collective: picks the link (a bridged pair reaches only 2)
    comm_overlaps: bool = False  # data-parallel collectives may run under compute (the runtime says how much)
    host_rounds: float = 0.0  # times per pass the host prepares and launches a step's graph (0: once per step)
    # per step, beyond kernels x the runtime's factor: a quantized kernel library's own launches and host dispatches
    # (eager kernel units), summed over the op groups (OpGroup.launches, host_kernels)
    launches: float = 0.0
    host_kernels: float = 0.0
    latency_s: float = 0.0  # per step: its op groups' kernels' fixed latencies (OpGroup.latency_s), summed
    comm_stride: int = 1  # ranks between a collective group's members (a data-parallel group beside TP): its link
    # the runtime's own all-reduce (Setup.custom_ar) and, for each entry of `comm`, the message size in bytes of the
    # all-reduces it may run there instead of NCCL's ring (0: NCCL); used only over NVLink (roofline._protocol_picks)
    custom_ar: CustomAllReduce | None = None
    custom_messages: tuple[float, ...] = ()
    # sequences each step carries (a generate job's batch): an engine generation's CPU work per sequence
    # (Efficiency.host_us_per_seq) is charged for each; 0 where a phase is not a serving engine's step
    sequences: int = 0
    # the share of this phase's collectives that runs under another phase's compute (a model-parallel layout's
    # collectives under the micro-step's GEMMs and attention: train_layout's *_hidden_share); 0: comm_overlaps rules
    comm_hidden: float = 0.0
    # per step (OpGroup.host_syncs, idle_expert_ops, summed): device-to-host round trips the host waits on and an
    # expert loop's idle-expert operator dispatches, serial host time (roofline.host_wait_seconds)
    host_syncs: float = 0.0
    idle_expert_ops: float = 0.0
    # tokens each step (each prefill chunk) runs through the model: a prefill step larger than the runtime's largest
    # CUDA graph is dispatched kernel by kernel (Efficiency.prefill_graph_max_tokens); 0 where not counted
    tokens: int = 0

    @property
    def comm_bytes(self) -> float:
        """Bytes each GPU sends per step in collectives."""
        return sum(c[0] for c in self.comm)

    @property
    def comm_hops(self) -> float:
        """Ring steps per step, each paying a hop latency."""
        return sum(c[1] for c in self.comm)

    @property
    def comm_calls(self) -> float:
        """Collective calls per step, each paying a call latency."""
        return sum(c[2] for c in self.comm)

    def repeated(self, passes: float) -> Phase:
        """This phase run `passes` times. Built by slicing: NamedTuple._replace is several times slower, and the
        catalog sweep does this for every GPU."""
        return Phase(*self[:_PASSES], passes, *self[_PASSES + 1:])


_PASSES = Phase._fields.index("passes")


def _group_costs(groups: tuple[OpGroup, ...]) -> dict:
    """A step's quantized-library launches and host dispatches, its kernels' fixed latencies and an expert loop's
    syncs and idle-expert operators, from its op groups ({} when there are none: work.call_costs sets the first two,
    for a precision with its library's kernels; a decode step's attention the latency; decoder.expert_loop_costs
    the last two). Summed once here, where the phase is built and cached, not in the timing."""
    launches = host = latency = syncs = idle = 0.0
    for g in groups:  # one pass: this runs for every pass the catalog sweep builds
        launches += g.launches
        host += g.host_kernels
        latency += g.latency_s
        syncs += g.host_syncs
        idle += g.idle_expert_ops
    costs = dict(launches=launches, host_kernels=host) if launches or host else {}
    costs = costs | {"host_syncs": syncs, "idle_expert_ops": idle} if syncs else costs
    return costs | {"latency_s": latency} if latency else costs


def _tp_comm(m: ModelProfile, s: Setup, tokens: int, logits_rows: int, rounds: int = 1) -> dict:
    """Tensor-parallel collectives of one step (ModelProfile.tensor_parallel_comm): they never overlap compute, as
    each layer waits for the last all-reduce. An all-reduce the runtime's own kernel takes (CustomAllReduce.takes:
    its GPU counts, below its largest message) is marked with its message size."""
    collectives = m.tensor_parallel_comm(s, tokens, logits_rows, rounds)
    if not collectives:
        return {}
    out = dict(comm=tuple(ring_traffic(c, s.tp) for c in collectives), comm_gpus=s.tp)
    ar = s.custom_ar
    messages = tuple(c.message_bytes if c.kind == ALL_REDUCE and ar.takes(c.message_bytes, s.tp) else 0.0
                     for c in collectives) if ar else ()
    return out | dict(custom_ar=ar, custom_messages=messages) if any(messages) else out


def _dispatched(comm: dict, costs: dict) -> dict:
    """A step's op-group costs (_group_costs) with its tensor-parallel collectives (_tp_comm) counted as host
    dispatches: a runtime that launches from Python calls each collective as it calls a kernel (vLLM before CUDA
    graphs and in its eager prefill steps: tensor_model_parallel_all_reduce -> torch.distributed.all_reduce, one
    call per row-parallel linear, vllm/model_executor/parallel_utils/communication_op.py @v0.2.2; Hugging Face's
    and DeepSpeed's tensor parallel alike), at least one dispatch's host time each (the runtime's host_us_per_kernel;
    c10d's own CPU work per call beyond it is not counted). A runtime that replays CUDA graphs has no per-kernel host
    time, so none is added there."""
    calls = sum(c[2] for c in comm.get("comm", ()))
    return costs | {"host_kernels": costs.get("host_kernels", 0.0) + calls} if calls else costs


def generate_phases(m: ModelProfile, w: Generate, s: Setup, batch: int, passes: float) -> tuple[Phase, ...]:
    """A generate job's prefill and decode phases, `passes` batches of `batch` sequences."""
    return tuple(ph.repeated(passes) for ph in _generate_steps(m, w.prompt_tokens, w.gen_tokens, s, batch))


@lru_cache(maxsize=4096)
def _generate_steps(m: ModelProfile, P: int, G: int, s: Setup, batch: int) -> tuple[Phase, ...]:
    """One pass of generate_phases: the work does not depend on the number of passes, so a job of another size with
    the same batch (the page's sequence count changed) reuses it."""
    kern = m.kernels_per_forward
    chunks = s.prefill_chunks(P)
    prefill = fold_pipelined(m.prefill_work(s, batch, P))
    comm = _tp_comm(m, s, batch * P, batch, chunks)
    phases = [Phase(PREFILL, prefill, kern * chunks, 1, 0, 1.0, **comm, host_rounds=chunks,
                    **_dispatched(comm, _group_costs(prefill)), sequences=batch,
                    tokens=batch * min(P, s.prefill_chunk or P))]
    if G > 1:
        decode = fold_pipelined(m.decode_work(s, batch))
        comm = _tp_comm(m, s, batch, batch)
        phases.append(Phase("decode", decode, kern, G - 1, P + 1, 1.0, **comm,
                            **_dispatched(comm, _group_costs(decode)), sequences=batch))
    return tuple(phases)


def infer_phases(m: ModelProfile, w: Infer, s: Setup, batch: int, passes: float) -> tuple[Phase, ...]:
    """An inference job's forward passes, `passes` batches of `batch` samples."""
    return tuple(ph.repeated(passes) for ph in _infer_steps(m, w.input_size, s, batch))


@lru_cache(maxsize=4096)
def _infer_steps(m: ModelProfile, S: int, s: Setup, batch: int) -> tuple[Phase, ...]:
    """One pass of infer_phases (pass-independent, as _generate_steps)."""
    forward = fold_pipelined(m.forward_work(s, batch, S))
    comm = _tp_comm(m, s, batch * S, batch * S)
    return (Phase("forward", forward, m.kernels_per_forward, 1, 0, 1.0, **comm,
                  **_dispatched(comm, _group_costs(forward))),)


def train_phases(m: ModelProfile, w: Train, s: Setup, batch: int, micro_steps: float, n_gpus: int) -> tuple[Phase, ...]:
    """Micro-steps (forward + backward [+ recompute]) and optimizer steps, per GPU, with the collectives of FSDP
    (ZeRO-3, s.shard > 1) or DDP's gradient all-reduce; both may overlap the micro-step's compute."""
    return tuple(ph.repeated(n) for ph, n in _train_passes(m, w, s, batch, micro_steps, n_gpus))


def _train_passes(m: ModelProfile, w: Train, s: Setup, batch: int, micro_steps: float, n_gpus: int
                  ) -> tuple[tuple[Phase, float], ...]:
    """n_gpus: the data-parallel ranks (all the GPUs without a model-parallel layout)."""
    accum = w.accum_for(batch, n_gpus)
    micro, opt, edge = _train_steps(m, w.input_size, w.checkpointing, w.optimizer, accum, s, batch, n_gpus)
    steps = micro_steps / accum  # optimizer steps
    if edge is None:
        passes = ((micro, micro_steps), (opt, steps))
    else:  # one micro-step per optimizer step carries the step's data-parallel collectives
        passes = ((edge, steps), (opt, steps)) + (((micro, micro_steps - steps),) if accum > 1 else ())
    if s.tp * s.pp * s.cp == 1:
        return passes
    layout = _layout_steps(m, w.input_size, w.checkpointing, accum, s, batch, n_gpus, micro)
    return passes + tuple((ph, micro_steps * k) for ph, k in layout)


@lru_cache(maxsize=1024)
def _layout_steps(m: ModelProfile, input_size: int, checkpointing: bool, accum: int, s: Setup, batch: int, dp: int,
                  micro: Phase) -> tuple[tuple[Phase, float], ...]:
    """A model-parallel layout's phases beside the micro-step, each as (one pass, passes per micro-step): TP (+SP)
    collectives, CP's ring exchange, the pipeline's sends, and the pipeline bubble (planner.engine.train_layout)."""
    tokens = batch * input_size
    out = []
    tp = comm_fields(tp_collectives(m, s, tokens, checkpointing), s.tp, 1)
    if tp and tp_hidden_share(s):
        tp["comm_hidden"] = tp_hidden_share(s)
    if tp:
        out.append((Phase("tensor-parallel collectives (TP + sequence parallel)", (), 0.0, 1, 0, 1.0, **tp), 1.0))
    copies = _sp_copies(m, s, batch, tokens, checkpointing)
    if copies:  # serial with the collectives they follow or feed: their own phase, nothing hides under them
        out.append((Phase("sequence-parallel rearranging copies", copies, 0.0, 1, 0, 1.0, **_group_costs(copies)),
                    1.0))
    cp = comm_fields(cp_collectives(m, s, tokens, checkpointing), s.cp, s.tp)
    if cp and cp_hidden_share(s):
        cp["comm_hidden"] = cp_hidden_share(s)
    if cp:
        out.append((Phase("context-parallel K/V exchange (ring attention)", (), 0.0, 1, 0, 1.0, **cp), 1.0))
    if s.pp > 1:
        sends = pp_comm_fields(pp_message_bytes(m, s, tokens), s, dp)
        if pp_hidden_share(s, accum):
            sends["comm_hidden"] = pp_hidden_share(s, accum)
        out.append((Phase("pipeline sends (activations and their gradients)", (), 0.0, 1, 0, 1.0, **sends), 1.0))
        idle = Phase("pipeline bubble (idle: (p-1)/v micro-steps per optimizer step)", micro.groups + copies,
                     micro.kernels, 1, 0, 1.0, **tp)
        out.append((idle, bubble_micro_steps(s.pp, s.vpp) / accum))
    return tuple(out)


def _sp_copies(m: ModelProfile, s: Setup, batch: int, tokens: int, checkpointing: bool) -> tuple[OpGroup, ...]:
    """A micro-step's sequence-parallel rearranging copies (train_layout.sp_rearranging_copies) as a memory-bound
    op group, one kernel each; () when the stack runs none."""
    nbytes, calls = sp_rearranging_copies(m, s, batch, tokens, checkpointing)
    if not nbytes:
        return ()
    return (OpGroup("sequence-parallel rearranging copies", 0.0, nbytes, s.attention_path,
                    f"bytes = {calls:g} copies x 2 x the {max(1, tokens // s.cp):,} rows' hidden states: each of "
                    "the stack's batch-first sequence-parallel gathers (micro-batch > 1) and reduce-scatters reads "
                    "and writes the whole tensor to put its sequence shards in order (DTensor Shard(1))",
                    launches=calls),)


def job_passes(m: ModelProfile, w: Workload, s: Setup, batch: int, items_per_gpu: int, n_gpus: int
               ) -> tuple[tuple[Phase, float], ...]:
    """The job's phases at `batch` as (one pass, how many passes), each pass one cached object (the same for a job
    of any size): a generate or infer job's full passes and its last, smaller one; a training job's micro-steps and
    optimizer steps over its epochs (`items_per_gpu` per epoch). Phase.repeated makes the phases of a whole job."""
    if isinstance(w, Train):
        micro = math.ceil(items_per_gpu / batch)  # per epoch
        return _train_passes(m, w, s, batch, micro * w.epochs, n_gpus)
    if isinstance(w, Generate):
        P, G = w.prompt_tokens, w.gen_tokens
        one = lambda b: _generate_steps(m, P, G, s, b)  # noqa: E731
    else:
        S = w.input_size
        one = lambda b: _infer_steps(m, S, s, b)  # noqa: E731
    full, rest = divmod(items_per_gpu, batch)
    passes = tuple((ph, float(full)) for ph in one(batch)) if full else ()
    return passes + (tuple((ph, 1.0) for ph in one(rest)) if rest else ())


@lru_cache(maxsize=4096)
def _train_steps(m: ModelProfile, input_size: int, checkpointing: bool, optimizer: str, grad_accum: int, s: Setup,
                 batch: int, n_gpus: int) -> tuple[Phase, Phase, Phase | None]:
    """One micro-step, one optimizer step and, for ZeRO-1, the micro-step that carries the optimizer step's
    data-parallel collectives (None otherwise) of train_phases (pass-independent, as _generate_steps; the job's
    size is no part of the key)."""
    split = s.tp * s.pp  # the model's parameters each GPU holds 1/split of (planner.engine.train_layout)
    params = m.params / split if split > 1 else m.params
    k = s.shard
    mixed = s.precision.act_bytes < FP32_BYTES
    groups = split_groups(fold_pipelined(m.train_work(s, batch, input_size, checkpointing)), s)
    if s.zero_stage:
        return _zero_steps(m, s, groups, checkpointing, optimizer, grad_accum, params)
    if mixed:
        cast = (FP32_BYTES + s.precision.act_bytes) * params / k
        groups += (OpGroup("mixed-precision weight cast", 0.0, cast, "fp32",
                           f"bytes = params x ({FP32_BYTES:g} + {s.precision.act_bytes:g}) B: autocast reads each fp32 "
                           "master weight and writes its 16-bit copy once per micro-step"
                           + (f" (this GPU's 1/{k} shard)" if k > 1 else "")),)
    kernels = m.kernels_per_forward * forward_equivalents(checkpointing) / s.pp
    comm = _fsdp_comm(m, s, params) if k > 1 else _ddp_comm(params, n_gpus, grad_accum) if n_gpus > 1 else {}
    if comm:
        comm["comm_stride"] = s.tp * s.cp  # a data-parallel group's members sit tp x cp ranks apart
    micro = Phase("train micro-step", groups, kernels, 1, 0, 1.0, **comm)
    traffic = optimizer_traffic(optimizer, s.foreach_optimizer)
    unscale = 2 * FP32_BYTES if s.precision.id == "fp16" else 0.0  # GradScaler: read and write each fp32 gradient
    opt = OpGroup("optimizer update", OPTIMIZER_FLOPS_PER_PARAM * params / k, (traffic + unscale) * params / k, "fp32",
                  f"bytes = {traffic:g} B/param ({optimizer}{FOREACH_WORDS if s.foreach_optimizer else ''}: read "
                  "weights, grads, states; write weights, states)"
                  + (f" + {unscale:g} B/param (fp16 loss scaling: the gradients unscaled in place)" if unscale else "")
                  + (f" on this GPU's 1/{k} shard" if k > 1 else ""))
    return micro, Phase("optimizer step", (opt,), OPTIMIZER_KERNELS, 1, 0, 1.0), None


def _zero_steps(m: ModelProfile, s: Setup, groups: tuple[OpGroup, ...], checkpointing: bool, optimizer: str,
                grad_accum: int, params: float) -> tuple[Phase, Phase, Phase | None]:
    """ZeRO stage 1/2 (DeepSpeed) over s.zero_gpus GPUs: the 16-bit weights stay on every GPU (no per-micro-step
    cast); each GPU updates its 1/N partition (writing its 16-bit copy too) and the partitions are all-gathered after
    the step, which waits for it (no compute to hide under). The gradients are reduce-scattered in their own dtype
    during the backward (zero_comm): stage 2 every micro-step, stage 1 once, in the optimizer step's last micro-step
    (its own phase: the collective hides under that one micro-step's compute at most, not under all of the step's).
    A runtime that overlaps the parameter gather (Setup.comm_overlap 'param-gather': Megatron's overlap_param_gather)
    runs it under the next step's first forward instead: it joins that micro-step's collectives."""
    n = s.zero_gpus
    micro_comm, step_comm = (broadcast_zero_comm(m, params, s) if s.zero_stage == 1 and s.zero1_tensors_per_layer
                             else zero_comm(params, s, 1 if s.zero_stage == 1 else grad_accum))
    stride = s.tp * s.cp  # a data-parallel group's members sit tp x cp ranks apart
    micro_comm["comm_stride"] = step_comm["comm_stride"] = stride
    kernels = m.kernels_per_forward * forward_equivalents(checkpointing) / s.pp
    edge = None
    if s.zero_stage == 1:
        if "param-gather" in s.comm_overlap:
            micro_comm["comm"] += step_comm.pop("comm")
        edge = Phase("train micro-step with the step's data-parallel collectives", groups, kernels, 1, 0, 1.0,
                     **micro_comm)
        micro_comm = {}
    micro = Phase("train micro-step", groups, kernels, 1, 0, 1.0, **micro_comm)
    traffic = optimizer_traffic(optimizer, s.foreach_optimizer)
    copy = s.precision.act_bytes if s.precision.act_bytes < FP32_BYTES else 0.0
    unscale = 2 * FP32_BYTES if s.precision.id == "fp16" else 0.0
    opt = OpGroup("optimizer update", OPTIMIZER_FLOPS_PER_PARAM * params / n, (traffic + copy + unscale) * params / n,
                  "fp32", f"bytes = ({traffic:g} B/param ({optimizer}{FOREACH_WORDS if s.foreach_optimizer else ''}: "
                  "read weights, grads, states; write weights, "
                  f"states) + {copy:g} B (the updated 16-bit copy) + {unscale:g} B (fp16 unscaling)) on this GPU's "
                  f"1/{n} partition (ZeRO-{s.zero_stage})")
    if "comm" not in step_comm:
        step_comm = {}
    return micro, Phase("optimizer step", (opt,), OPTIMIZER_KERNELS, 1, 0, 1.0, **step_comm), edge


def zero_comm(params: float, s: Setup, grad_accum: int) -> tuple[dict, dict]:
    """ZeRO stage 1/2's collectives as (per micro-step, per optimizer step) Phase fields (ZeRO paper sec. 7.2.1: a
    reduce-scatter of the gradients and an all-gather of the updated parameters, each (N-1)/N x params x its dtype,
    the same volume as DDP's all-reduce of the same dtype). Stage 1 keeps whole gradients, so it reduces once per
    optimizer step, in the last micro-step's backward (spread over `grad_accum` micro-steps: _zero_steps passes 1
    and gives that micro-step a phase of its own); stage 2
    keeps only its partition, so it reduce-scatters every micro-step (DeepSpeed's engine: "Zero stage 2 communicates
    during non gradient accumulation boundaries as well", github.com/deepspeedai/DeepSpeed/pull/338, read
    2026-11-27). The all-gather follows the optimizer step."""
    n = s.zero_gpus
    weight_b, grad_b, _ = zero_state_bytes(s.precision)
    sent = ring_fraction(n) * grad_b * params
    per = 1 if s.zero_stage >= 2 else 1 / grad_accum
    micro = dict(comm=((sent * per, (n - 1) * per, per),), comm_gpus=n, comm_overlaps=True)
    gather = ring_fraction(n) * weight_b * params
    return micro, dict(comm=((gather, n - 1, 1),), comm_gpus=n)


def broadcast_owners(m: ModelProfile, s: Setup) -> int:
    """Ranks of a ZeRO-1 group of s.zero_gpus that own parameters when each parameter tensor is owned whole
    (InternLM's HybridZeroOptimizer._partition_param_list: tensors sorted by size, each to the least-loaded rank): all
    of them, or one per tensor where there are fewer tensors than ranks (the layers' own; the embedding, head and final
    norm left out)."""
    return max(1, min(s.zero_gpus, m.shard_units * s.zero1_tensors_per_layer // s.pp))


def broadcast_zero_comm(m: ModelProfile, params: float, s: Setup) -> tuple[dict, dict]:
    """ZeRO-1 synchronized as InternLM's HybridZeroOptimizer at c18bec9 (2023-07-08) does it, as (last micro-step,
    optimizer step) Phase fields: the gradients all-reduced over the data-parallel ranks in buckets during the
    backward (reduce_tensor with dst_rank None: dist.all_reduce, 2 x (N-1)/N of the gradients' bytes, on its own
    stream), then after the step each rank that owns parameters broadcasts them to the group (broadcast_params:
    one dist.broadcast per owner, waited on before the next forward, 'TODO: support broadcast overlap'). A ring
    broadcast forwards each owner's shard through every rank: (N-1)/N of the weights' bytes per GPU in all, and N-1
    ring steps per call, so its latency grows with owners x N."""
    n = s.zero_gpus
    weight_b, grad_b, _ = zero_state_bytes(s.precision)
    sent = 2 * ring_fraction(n) * grad_b * params
    micro = dict(comm=((sent, allreduce_hops(n), 1),), comm_gpus=n, comm_overlaps=True)
    owners = broadcast_owners(m, s)
    return micro, dict(comm=((ring_fraction(n) * weight_b * params, owners * (n - 1), owners),), comm_gpus=n)


def _fsdp_comm(m: ModelProfile, s: Setup, params: float) -> dict:
    """FSDP per micro-step: per shard unit (of this pipeline stage's), all-gathers for forward and backward in the
    compute dtype and a reduce-scatter of the gradients in the runtime's reduce dtype (Setup.grad_reduce_bytes; the
    compute dtype when it names none), each (k-1)/k of the unit's size and k-1 ring steps; `params` the GPU's share
    of the model before sharding (all of it without TP or PP)."""
    k, calls = s.shard, FSDP_COLLECTIVES_PER_STEP * m.shard_units / s.pp
    act = s.precision.act_bytes
    per_param = (FSDP_COLLECTIVES_PER_STEP - FSDP_REDUCES_PER_STEP) * act + FSDP_REDUCES_PER_STEP * (
        s.grad_reduce_bytes or act)
    sent = ring_fraction(k) * params * per_param
    return dict(comm=((sent, calls * (k - 1), calls),), comm_gpus=k, comm_overlaps=True)


def _ddp_comm(params: int, n: int, grad_accum: int) -> dict:
    """DDP: one all-reduce of the fp32 gradients per optimizer step, during the backward of its last micro-step;
    spread here over the grad_accum micro-steps (so with accumulation the compute it may hide under is overstated)."""
    sent = 2 * ring_fraction(n) * float(FP32_BYTES) * params / grad_accum
    return dict(comm=((sent, allreduce_hops(n) / grad_accum, 1 / grad_accum),), comm_gpus=n, comm_overlaps=True)
