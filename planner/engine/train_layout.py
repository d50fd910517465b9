"""Training over a model-parallel layout: tensor parallel with sequence parallel (TP), pipeline parallel (PP, 1F1B or
interleaved) and context parallel (CP), times the data-parallel ranks that hold the rest (DDP, ZeRO-1/2, FSDP).

What each GPU does per micro-step (one micro-batch through its pipeline stage):
- compute: the whole model's micro-step work / (tp x pp x cp): TP splits every layer's matrices and heads, PP gives
  each stage layers/pp of the layers, CP gives each rank 1/cp of every sequence (causal load balancing: each rank
  holds two mirrored chunks, so attention's work splits evenly too). Weight traffic (op groups with GEMMs) splits over
  tp x pp only: a CP rank reads its whole stage's weights for its tokens. With sequence parallel every norm, dropout
  and residual runs on 1/tp of the tokens (Korthikanti et al., 'Reducing Activation Recomputation in Large
  Transformer Models', 2022, https://arxiv.org/abs/2205.05198, sec. 4.2.2), so elementwise traffic splits over tp
  too. GEMM shape efficiency is judged on the shapes one GPU runs (the model's train_work lists them under the
  layout: M = tokens / cp, Megatron-LM's column-parallel N and row-parallel K / tp), so the tile and wave waste of
  TP's narrower matrices counts (planner.engine.gemm).
  Each stage holds layers/pp layers and the same share of the embeddings and LM head (in Megatron-LM the first and
  last stages hold those as well: the slowest stage, not modelled).
- TP: per layer, forward 2 all-gathers and 2 reduce-scatters of the micro-batch's hidden states (b x s/cp x h), the
  backward the same again, a recomputed forward once more (Korthikanti et al. sec. 4.2.2: the same bytes as the 2 +
  2 all-reduces of TP without sequence parallel), inside one node's link. Exposed (each layer waits for them) unless
  the runtime chunks them under their GEMMs (Transformer Engine's userbuffers in NeMo's recipes: tp_hidden_share,
  one chunk of tp exposed); the hidden part slows the GEMMs beside it (roofline.contention_seconds).
- CP: ring attention passes each layer's K and V around the cp ranks: forward once, backward twice (K and V again
  and their gradients) (ModelProfile.context_parallel_comm). Exposed unless the runtime pipelines each step's send
  under the attention of the chunk before (Transformer Engine's P2P ring: cp_hidden_share).
- PP: each stage sends its activations forward and receives their gradients back, one point-to-point message of
  b x s/(cp x tp) x h per micro-batch per direction per virtual stage (Megatron-LM sends the sequence-parallel
  shard), over the node's link when two neighbouring stages share a node, else over the fabric.
- the pipeline bubble: per optimizer step of m micro-batches a stage idles (p-1)/v micro-steps (1F1B: Narayanan et
  al., 'Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM', SC21,
  https://arxiv.org/abs/2104.04473, sec. 2.2: bubble fraction (p-1)/(m+p-1) of the step; interleaved with v virtual
  stages per GPU: (p-1)/v). The bubble is counted as that many micro-steps of compute and TP collectives. With
  virtual stages and the runtime's P2P overlap only the warm-up's and cool-down's sends stay exposed
  (pp_hidden_share).

Ranks are ordered as Megatron-LM orders them (tp, cp, dp, pp: tensor-parallel ranks adjacent): a TP group sits in
one node; a CP group's members are tp apart, a data-parallel group's tp x cp apart, pipeline neighbours tp x cp x dp
apart, and a group whose members are `stride` apart has node_gpus / stride members per node, each with its own NIC.

Memory per GPU: weights, gradients, optimizer states (and FP8 copies) of the whole model / (tp x pp), then sharded
over the data-parallel ranks as the sharding says (FSDP's two gathered layers are whole layers of the stage: / tp only);
activations of one micro-batch / (tp x cp) (sequence parallel
splits every activation over tp, Korthikanti et al. sec. 4.2.2) x the micro-batches a first stage holds of its
layers/pp: p for 1F1B (so L layers' worth, whatever p) and p(1 + (p-1)/(p v)) interleaved (Korthikanti et al. sec.
4.2.3), i.e. x (1 + (p-1)/(p v)) for the whole model's micro-batch; an upper bound when a step has fewer
micro-batches than stages.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engine.collectives import ring_traffic
from planner.inputs.layouts import Layout
from planner.inputs.models import ModelProfile
from planner.inputs.work import ALL_GATHER, ALL_REDUCE, Collective, MemoryItem, OpGroup, Setup

# A micro-step's TP collectives in forward-pass units: forward, backward (the same again), and a recomputed forward
TP_BACKWARD_FORWARDS = 1
# CP: the backward passes K and V again and sends their gradients back (2 forward exchanges' worth)
CP_BACKWARD_FORWARDS = 2
# PP: per micro-batch and virtual stage, one send forward (activations) and one backward (their gradients)
PP_SENDS_PER_MICRO_BATCH = 2
# What layout auto tries: TP inside a node (Megatron-LM's and TorchTitan's guides keep it within NVLink: 8 at most),
# pipeline stages in powers of two, CP only for sequences of LONG_SEQUENCE tokens or more (Megatron-Core's context
# parallel guide: for long context, 'e.g. 8K and above' needs it less than 32K+; the planner tries it from 16K)
AUTO_TP = (1, 2, 4, 8)
AUTO_PP = (1, 2, 4, 8, 16, 32)
AUTO_CP = (1, 2, 4, 8)
AUTO_VPP = (1, 2)
LONG_SEQUENCE = 16_384
# Shardings layout auto pairs with a split layout when the sharding is auto too: Megatron-LM's distributed optimizer
# (ZeRO-1) and TorchTitan's FSDP
SPLIT_SHARDINGS = ("zero1", "fsdp")
# Layout states scaled by tp x pp (planner.engine.memory's item names)
STATE_ITEMS = ("weights", "gradients", "optimizer", "FP8 weight copies")


def bubble_micro_steps(pp: int, vpp: int) -> float:
    """Micro-steps a pipeline stage idles per optimizer step: (p-1)/v (0 without pipeline parallel)."""
    return (pp - 1) / vpp if pp > 1 else 0.0


def bubble_fraction(pp: int, micro_batches: int, vpp: int = 1) -> float:
    """Share of an optimizer step a stage idles: (p-1)/v / (m + (p-1)/v); 1F1B (v = 1): (p-1)/(m+p-1)."""
    idle = bubble_micro_steps(pp, vpp)
    return idle / (micro_batches + idle)


def activations_in_flight(pp: int, vpp: int) -> float:
    """The whole model's micro-batch activations the first stage holds at once: 1 + (p-1)/(p v) for interleaved 1F1B
    (Korthikanti et al. sec. 4.2.3), 1 for 1F1B (p micro-batches of L/p layers)."""
    return 1.0 + (pp - 1) / (pp * vpp) if pp > 1 and vpp > 1 else 1.0


def last_stage_in_flight(pp: int, vpp: int) -> float:
    """The whole model's micro-batch activations the last stage holds at once: rank p-1 of Megatron Core's interleaved
    schedule runs (v-1) x p warmup chunks, then one more forward before its first backward, each chunk L/(p v) layers:
    ((v-1) p + 1) / (p v); 1F1B (v = 1): 1/p (one micro-batch of its L/p layers). Its loss, and so its logits, for one
    micro-batch at a time (the last chunk's forward is followed by its backward)."""
    return ((vpp - 1) * pp + 1) / (pp * vpp) if pp > 1 else 1.0


def tp_hidden_share(s: Setup) -> float:
    """Share of a micro-step's TP (+SP) collectives hidden under the GEMMs they feed or follow, when the runtime chunks
    them there (Setup.comm_overlap 'tp': Transformer Engine's userbuffers, NeMo's tp_comm_overlap): each gather
    becomes tp ring-exchange steps, each reduce-scatter tp chunks pipelined with the split GEMM, 'which exposes one
    reduce-scatter chunk' (NeMo docs, communication_overlap.rst): 1 - 1/tp. 0 without the overlap."""
    return 1.0 - 1.0 / s.tp if s.tp > 1 and "tp" in s.comm_overlap else 0.0


def cp_hidden_share(s: Setup) -> float:
    """Share of context parallel's K/V ring exchange hidden under attention: all of it when the runtime pipelines
    each ring step's send under the attention of the chunk it already holds (Setup.comm_overlap 'cp': Transformer
    Engine's P2P ring attention, 'NeMo hides the context-parallel (CP) communications under the self-attention
    computation', on by default with context_parallel_size > 1); 0 otherwise. It holds while a step's K/V transfer
    takes less than a chunk's attention (at 8k tokens a 70B layer's 4 MB over NVLink, ~12 us, against ~0.2 ms)."""
    return 1.0 if s.cp > 1 and "cp" in s.comm_overlap else 0.0


def pp_warmup_chunks(pp: int, vpp: int, micro_batches: int) -> int:
    """Forward chunk-steps the first stage runs before its 1F1B phase (and backward ones after it) in Megatron-Core's
    interleaved schedule: (p - 1) x 2 + (v - 1) x p, at most m x v (megatron/core/pipeline_parallel/schedules.py,
    forward_backward_pipelining_with_interleaving, microbatch_group_size_per_vp_stage = p by default)."""
    return min(micro_batches * vpp, (pp - 1) * 2 + (vpp - 1) * pp)


def pp_hidden_share(s: Setup, micro_batches: int) -> float:
    """Share of the pipeline sends hidden under compute: with the runtime's P2P overlap (Setup.comm_overlap
    'pp-interleaved': Megatron's overlap_p2p_comm, which NeMo turns on with virtual stages only) each 1F1B step's
    sends run beside the other direction's compute and 'the PP communications in pipeline fill and flush are still
    exposed' (NeMo docs): 1 - warmup / (m x v) of the m x v chunk-steps. 0 with one virtual stage or no overlap."""
    if s.pp == 1 or s.vpp == 1 or "pp-interleaved" not in s.comm_overlap:
        return 0.0
    return 1.0 - pp_warmup_chunks(s.pp, s.vpp, micro_batches) / (micro_batches * s.vpp)


def layout_of(s: Setup) -> Layout:
    return Layout(s.tp, s.pp, s.cp, s.vpp)


def _split_text(s: Setup) -> str:
    lay = layout_of(s)
    return f"; per GPU 1/{lay.model_parallel} of it ({lay.describe()})"


def split_groups(groups: tuple[OpGroup, ...], s: Setup) -> tuple[OpGroup, ...]:
    """A micro-step's op groups (the whole model, one micro-batch) as one GPU of the layout runs them: FLOPs / (tp x
    pp x cp); bytes of GEMM groups (weights) / (tp x pp), of the rest (activations) / (tp x pp x cp). The GEMM shapes
    stay as the model gave them: already one GPU's (ModelProfile.train_work)."""
    model, weights = s.tp * s.pp * s.cp, s.tp * s.pp
    if model == 1:
        return groups
    note = _split_text(s)
    return tuple(g._replace(flops=g.flops / model, bytes=g.bytes / (weights if g.gemms else model),
                            formula=g.formula + note, launches=g.launches / s.pp,
                            host_kernels=g.host_kernels / s.pp, latency_s=g.latency_s / s.pp)
                 for g in groups)


def tp_calls_per_allreduce(m: ModelProfile, s: Setup, checkpointing: bool) -> float:
    """Sequence-parallel collectives per micro-step for each of the model's forward all-reduces: forward (and its
    recompute) an all-gather before the column-parallel matmuls and a reduce-scatter after the row-parallel one; the
    backward the transposes, an all-gather of the output's gradient and a reduce-scatter of the input's. A stack that
    gathers per projection (Setup.tp_gather_per_projection) reduce-scatters each projection's input gradient apart
    (m.tp_projections_per_gather of them) and, eager, gathers for each in the forward too; compiled, the forward's
    identical gathers merge into one (AOTAutograd's common-subexpression pass in the min-cut partitioner Inductor
    uses: counted in torch 2.13 on a KempnerForge-style block, validation/REPORT.md)."""
    return sum(sp_gathers_and_scatters(m, s, checkpointing))


def sp_gathers_and_scatters(m: ModelProfile, s: Setup, checkpointing: bool) -> tuple[float, float]:
    """(all-gathers, reduce-scatters) per micro-step for each of the model's forward all-reduces: the two parts of
    tp_calls_per_allreduce (forward and recompute: the gathers before the column-parallel matmuls and one
    reduce-scatter; backward: one gather of the output's gradient and a reduce-scatter per gathered projection)."""
    per = m.tp_projections_per_gather if s.tp_gather_per_projection else 1.0
    forward_gathers = 1.0 if s.fused_elementwise else per
    forwards = 1 + (1 if checkpointing else 0)
    return forwards * forward_gathers + TP_BACKWARD_FORWARDS, forwards + TP_BACKWARD_FORWARDS * per


def sp_rearranging_copies(m: ModelProfile, s: Setup, batch: int, tokens: int, checkpointing: bool
                          ) -> tuple[float, float]:
    """(bytes, copy kernels) per micro-step on a stage of a stack whose sequence parallel shards batch-first
    activations on their sequence dimension (Setup.sp_rearranges: PyTorch DTensor's Shard(1) on [batch, seq,
    hidden]). NCCL gathers and scatters along dim 0 only, so torch's functional collectives rearrange (torch 2.13,
    torch/distributed/_functional_collectives.py): all_gather_single re-concatenates the gathered [tp x batch,
    seq/tp, hidden] along dim 1 (_maybe_view_chunk_cat: a view only when dim 0 holds one row per rank, i.e. a
    micro-batch of 1), and reduce_scatter_single first concatenates the input's tp chunks of dim 1 along dim 0
    (_chunk_or_narrow_cat: always a torch.cat). Each such copy reads and writes the whole message (`tokens` / cp
    rows of hidden states). 0 without TP or with sequence-first activations (Megatron-LM's [seq, batch, hidden])."""
    if s.tp == 1 or not s.sp_rearranges:
        return 0.0, 0.0
    gathers, scatters = sp_gathers_and_scatters(m, s, checkpointing)
    copies_per = scatters + (gathers if batch > 1 else 0.0)
    one = replace(s, pp=1, cp=1, vpp=1)
    nbytes = calls = 0.0
    for c in m.tensor_parallel_comm(one, max(1, tokens // s.cp), 0):
        if c.kind == ALL_REDUCE:
            calls += c.count * copies_per / s.pp
            nbytes += 2 * c.message_bytes * c.count * copies_per / s.pp
    return nbytes, calls


def tp_collectives(m: ModelProfile, s: Setup, tokens: int, checkpointing: bool) -> tuple[Collective, ...]:
    """One micro-step's TP (+SP) collectives on a stage: the model's forward all-reduces of `tokens` / cp rows, each
    tp_calls_per_allreduce all-gathers and reduce-scatters of the same bytes (4 per forward-equivalent: forward,
    backward, recompute), / pp."""
    if s.tp == 1:
        return ()
    one = replace(s, pp=1, cp=1, vpp=1)
    out = []
    for c in m.tensor_parallel_comm(one, max(1, tokens // s.cp), 0):
        calls = tp_calls_per_allreduce(m, s, checkpointing) if c.kind == ALL_REDUCE else (
            1 + TP_BACKWARD_FORWARDS + (1 if checkpointing else 0))
        out.append(Collective(ALL_GATHER, c.message_bytes, c.count * calls / s.pp))
    return tuple(out)


def cp_collectives(m: ModelProfile, s: Setup, tokens: int, checkpointing: bool) -> tuple[Collective, ...]:
    """One micro-step's CP exchange on a stage: the model's ring-attention gathers of the micro-batch's K and V (per
    TP rank its 1/tp of the heads) x (forward + 2 backward + recompute) / pp."""
    if s.cp == 1:
        return ()
    passes = (1 + CP_BACKWARD_FORWARDS + (1 if checkpointing else 0)) / s.pp
    one = replace(s, tp=1, pp=1, cp=1, vpp=1)
    return tuple(Collective(c.kind, c.message_bytes / s.tp, c.count * passes)
                 for c in m.context_parallel_comm(one, tokens))


def pp_message_bytes(m: ModelProfile, s: Setup, tokens: int) -> float:
    """Bytes of one point-to-point pipeline message: the hidden states of the micro-batch's tokens on this rank,
    tokens / (cp x tp) x hidden x activation bytes (the TP all-reduce's message over tp x cp)."""
    one = replace(s, tp=2, pp=1, cp=1, vpp=1)  # the model's TP all-reduce message is the hidden states of `tokens`
    msgs = [c.message_bytes for c in m.tensor_parallel_comm(one, tokens, 0) if c.kind == ALL_REDUCE]
    return (msgs[0] if msgs else 0.0) / (s.tp * s.cp)


def comm_fields(collectives: tuple[Collective, ...], n: int, stride: int) -> dict:
    """Phase fields of collectives over groups of n GPUs whose members are `stride` ranks apart."""
    comm = tuple(ring_traffic(c, n) for c in collectives)
    return dict(comm=comm, comm_gpus=n, comm_stride=stride) if any(c[2] for c in comm) else {}


def pp_comm_fields(message_bytes: float, s: Setup, dp: int) -> dict:
    """Phase fields of one micro-step's pipeline sends: 2 x v messages of `message_bytes`, each one ring step
    between two neighbouring stages, tp x cp x dp ranks apart."""
    sends = PP_SENDS_PER_MICRO_BATCH * s.vpp
    return dict(comm=((message_bytes * sends, float(sends), float(sends)),), comm_gpus=2,
                comm_stride=s.tp * s.cp * dp)


def scale_memory(items: list[MemoryItem], s: Setup, logits_gb: float = 0.0) -> list[MemoryItem]:
    """Training memory items of the whole model (its states already sharded over the data-parallel ranks) as one GPU
    of the layout holds them: states / (tp x pp); activations / (tp x cp) at the stage that holds most: the first
    (activations_in_flight of the layers') or, with a pipeline, the last (last_stage_in_flight of the layers' and one
    micro-batch's logits, `logits_gb` of the activations item: ModelProfile.train_logits_bytes)."""
    weights, acts = s.tp * s.pp, s.tp * s.cp
    if weights * acts == 1:
        return items
    return [_scaled_activations(i, s, logits_gb) if i.name == "activations" else
            MemoryItem(i.name, i.gb / weights, i.template + " / (TP x PP = {})", (*i.args, weights))
            if i.name in STATE_ITEMS and weights > 1 else i for i in items]


def _scaled_activations(i: MemoryItem, s: Setup, logits_gb: float) -> MemoryItem:
    """The activations item (one whole-model micro-batch, `logits_gb` of it the loss's) on the layout's fullest stage,
    / (tp x cp): sequence parallel splits every activation over tp, the vocabulary-parallel loss its logits too."""
    acts, flight = s.tp * s.cp, activations_in_flight(s.pp, s.vpp)
    layers = i.gb - logits_gb
    last = layers * last_stage_in_flight(s.pp, s.vpp) + logits_gb
    if s.pp == 1 or layers * flight >= last:
        return MemoryItem(i.name, (layers * flight + (logits_gb if s.pp == 1 else 0.0)) / acts,
                          i.template + " x {:.4g} micro-batches in flight" + (
                              " (the first stage's; the logits on the last)" if s.pp > 1 and logits_gb else "")
                          + " / (TP x CP = {}) (sequence parallel)", (*i.args, flight, acts))
    return MemoryItem(i.name, last / acts, i.template + ", on the last stage: layers' x {:.4g} micro-batches in flight "
                      "+ one micro-batch's logits / (TP x CP = {}) (sequence parallel)",
                      (*i.args, last_stage_in_flight(s.pp, s.vpp), acts))


def layout_words(s: Setup, dp: int, micro_batches_hint: str = "") -> str:
    """The layout's degrees in a sentence (a parallelism reason)."""
    lay = layout_of(s)
    tail = (f"; pipeline bubble (p-1)/v = {bubble_micro_steps(s.pp, s.vpp):.3g} idle micro-steps per optimizer "
            f"step{micro_batches_hint}") if s.pp > 1 else ""
    return f"{lay.describe()} x DP {dp}{tail}"



def layout_candidates(m: ModelProfile, input_size: int, gpus: int) -> tuple[Layout, ...]:
    """The layouts layout auto compares on `gpus` GPUs: every AUTO_TP x AUTO_PP x AUTO_CP (x AUTO_VPP with a pipeline)
    whose product divides the GPUs and which the model allows (tp divides its KV heads, pp x v its layers, CP only
    for a decoder's sequences of LONG_SEQUENCE tokens or more, split in 2 x cp chunks); no layout first."""
    heads, layers = m.tensor_parallel_heads, m.shard_units
    out = []
    for tp in AUTO_TP:
        if tp > 1 and (heads is None or heads % tp):
            continue
        for pp in AUTO_PP:
            for cp in AUTO_CP:
                if gpus % (tp * pp * cp) or (cp > 1 and (input_size < LONG_SEQUENCE or input_size % (2 * cp))):
                    continue
                for v in AUTO_VPP if pp > 1 else (1,):
                    if pp * v <= layers and layers % (pp * v) == 0:
                        out.append(Layout(tp, pp, cp, v))
    return tuple(out)
