"""GPU memory per job: weights, KV cache, activations, gradients, optimizer states, CUDA context.

Units: decimal GB (1e9 bytes), like the catalog's VRAM. Memory is affine in the batch, so the largest
batch that fits follows from two evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.inputs.models import DecoderProfile, GenericProfile, ModelProfile
from planner.engine.workloads import OPTIMIZERS, Generate, Setup, Train, Workload

GB = 1e9


@dataclass(frozen=True)
class MemoryItem:
    """One memory consumer; `formula` is formatted on demand (estimates are built in a hot loop)."""

    name: str
    gb: float
    template: str
    args: tuple = ()

    @property
    def formula(self) -> str:
        return self.template.format(*self.args)


@dataclass(frozen=True)
class MemoryBreakdown:
    items: tuple[MemoryItem, ...]

    @property
    def total_gb(self) -> float:
        return sum(i.gb for i in self.items)

    def get(self, name: str) -> float:
        return sum(i.gb for i in self.items if i.name == name)

    def as_dict(self) -> dict[str, float]:
        return {i.name: i.gb for i in self.items} | {"total": self.total_gb}


def _decoder_activation_peak(m: DecoderProfile, s: Setup, batch: int, tokens: int, keys: int, logits_tokens: int) -> float:
    """Live bytes at the peak of one forward layer (no grad): hidden state, Q/K/V, MLP hidden, logits."""
    mlp = (3 if m.ffn_kind == "swiglu" else 2) * m.ffn
    per_token = (2 * m.hidden + m.q_dim + 2 * m.kv_dim + mlp) * s.precision.act_bytes / s.tp
    scores = (2.0 * batch * m.heads * tokens * keys * s.precision.act_bytes / s.tp
              if s.attention.scores_materialized else 0.0)
    return batch * tokens * per_token + scores + batch * logits_tokens * m.vocab * 4.0


def breakdown(m: ModelProfile, w: Workload, s: Setup, batch: int, context_gb: float) -> MemoryBreakdown:
    """Memory on each GPU for `batch` sequences/samples in flight."""
    p = s.precision
    items: list[MemoryItem] = []
    if isinstance(w, Train):
        items += _train_items(m, w, s, batch)
    else:
        items.append(MemoryItem("weights", m.params * p.weight_bytes / s.tp / GB, "{:,} params x {:g} B / {} GPU(s)",
                                (m.params, p.weight_bytes, s.tp)))
        if isinstance(w, Generate):
            assert isinstance(m, DecoderProfile)
            total = w.prompt_tokens + w.gen_tokens
            kv = batch * total * m.kv_elems * s.kv_dtype.bytes / s.tp
            items.append(MemoryItem("kv_cache", kv / GB, "batch {} x {} tokens x 2 (K, V) x {} layers x {} x {:g} B ({}) / {} GPU(s)",
                                    (batch, total, m.layers, m.kv_dim, s.kv_dtype.bytes, s.kv_dtype.id, s.tp)))
            act = max(_decoder_activation_peak(m, s, batch, w.prompt_tokens, w.prompt_tokens, 1),
                      _decoder_activation_peak(m, s, batch, 1, total, 1))
            items.append(MemoryItem("activations", act / GB, "peak live tensors of one layer (prefill or decode) + logits"))
        elif isinstance(m, DecoderProfile):
            S = w.input_size
            act = _decoder_activation_peak(m, s, batch, S, S, S)
            items.append(MemoryItem("activations", act / GB, "peak live tensors of one layer + fp32 logits for every token"))
        else:
            L = w.input_size
            elems = m.peak_inference_elems(L) + (m.peak_inference_score_elems(L) if s.attention.scores_materialized else 0)
            items.append(MemoryItem("activations", batch * elems * p.act_bytes / GB,
                                    "batch {} x peak_inference_elems(L={}) x {:g} B", (batch, L, p.act_bytes)))
    items.append(MemoryItem("cuda_context", context_gb, "CUDA context, cuBLAS/cuDNN workspace (runtime profile)"))
    return MemoryBreakdown(tuple(items))


def _train_items(m: ModelProfile, w: Train, s: Setup, batch: int) -> list[MemoryItem]:
    p = s.precision
    params = m.params
    mixed = p.act_bytes < 4
    copy = p.act_bytes if mixed else 0
    k = s.shard
    if k > 1:  # FSDP: fp32 states sharded; the compute-dtype weights of two layers gathered at a time (prefetch)
        layer = getattr(m, "layer_matmul_params", params)
        items = [MemoryItem("weights", (params * 4 / k + 2 * layer * p.act_bytes) / GB,
                            "{:,} params x fp32 master 4 B / {} GPUs + 2 gathered layers x {:g} B", (params, k, p.act_bytes))]
    else:
        items = [MemoryItem("weights", params * (4 + copy) / GB,
                            "{:,} params x (fp32 master 4 B + autocast copy {:g} B)", (params, copy))]
    items += [MemoryItem("gradients", params * 4 / k / GB, "{:,} params x fp32 gradient (4 B) / {} GPU(s)", (params, k)),
              MemoryItem("optimizer", params * OPTIMIZERS[w.optimizer] / k / GB,
                         "{:,} params x {:g} B ({} states in fp32) / {} GPU(s)", (params, OPTIMIZERS[w.optimizer], w.optimizer, k))]
    if isinstance(m, GenericProfile):
        L = w.input_size
        per = m.activation_elems(L) + (m.attention_score_elems(L) if s.attention.scores_materialized else 0)
        if w.checkpointing:  # one checkpointed segment is re-materialised at a time; block inputs are small
            per = per / m.checkpoint_segments
        act = batch * per * p.act_bytes
        formula = f"batch x activation_elems(L={L}) x {p.act_bytes:g} B" + (
            f" / {m.checkpoint_segments:g} checkpointed segments" if w.checkpointing else "")
    else:
        S = w.input_size
        T = batch * S
        per_layer_scores = (2.0 * batch * m.heads * S * S * p.act_bytes if s.attention.scores_materialized else 0.0)
        saved_layer = T * m.saved_act_elems / m.layers * p.act_bytes + per_layer_scores
        if w.checkpointing:
            act = T * m.hidden * m.layers * p.act_bytes + saved_layer
            formula = "layer inputs (tokens x hidden x layers) + one layer recomputed"
        else:
            act = saved_layer * m.layers
            formula = (f"tokens x {m.saved_act_elems:,.0f} saved elements x {p.act_bytes:g} B"
                       + (" + score matrices (manual attention)" if per_layer_scores else ""))
        act += 2 * T * m.vocab * 4.0
        formula += " + fp32 logits and their gradient"
    items.append(MemoryItem("activations", act / GB, formula))
    return items


def max_batch(m: ModelProfile, w: Workload, s: Setup, vram_gb: float, context_gb: float, limit: int,
              at_one: MemoryBreakdown | None = None) -> int:
    """Largest batch (<= limit) whose memory fits in vram_gb; 0 if even batch 1 does not fit.
    Memory is affine in the batch, so batch 1 and 2 determine it."""
    m1 = (at_one or breakdown(m, w, s, 1, context_gb)).total_gb
    if m1 > vram_gb:
        return 0
    slope = breakdown(m, w, s, 2, context_gb).total_gb - m1
    if slope <= 0:
        return limit
    return int(max(1, min(limit, 1 + (vram_gb - m1) // slope)))
