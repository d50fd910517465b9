"""Decoder-only transformers (GPT / LLaMA families, dense or mixture-of-experts), derived by formula from their
architecture.

Counting conventions: parameters exactly as a PyTorch module holds them; FLOPs = 2 per multiply-add; an
attention step over `pos` keys costs 4 * heads * head_dim * pos FLOPs per token per layer (QK^T and AV).

Mixture of experts (experts > 1, Mixtral / Qwen-MoE style): every layer's MLP is `experts` MLPs of intermediate size
`ffn`, a router (hidden x experts) sends each token to `experts_per_token` of them, and an optional shared MLP
(`shared_ffn`, 0 = none) sees every token. Memory holds all experts; a token's FLOPs are its top-k experts'; a pass
over N tokens reads the weights of the experts at least one of them was routed to (experts_read).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from planner.base.schema import CachedHash, Record
from planner.base.units import BYTES_PER_GB, FP32_BYTES
from planner.inputs.work import (BACKWARD_FORWARD_RATIO, DEQUANT_GROUP, GEMV_GROUP, Gemm, MemoryItem, OpGroup, Setup,
                                 call_costs, dequant_groups,
                                 forward_equivalents, scaled_gemms, training_gemms)

# QK^T and AV: two multiply-adds (4 FLOPs) per head dimension per key attended, per query token and layer.
ATTN_FLOPS_PER_KEY_DIM = 4.0
# Manual (unfused) attention moves each score element 4 times: QK^T writes it, softmax reads and writes it, AV reads it.
SCORE_TRAFFIC_PASSES = 4.0
FLASH_BWD_FLOP_RATIO = 2.5  # FlashAttention-2 backward = 5 matmuls vs 2 forward (Dao 2023)
# Kernels outside the layers per forward pass: embedding lookup, position add, final norm, LM head, sampling/loss.
FIXED_KERNELS = 5
GRAD_ACCUMULATE_BYTES = 2 * FP32_BYTES  # per matmul weight per micro-step: read and write its fp32 gradient
# A mixture-of-experts layer's router: its matmul, then softmax and top-k (one fused kernel in Mixtral's HF code).
ROUTER_KERNELS = 2
# Each routed expert also gathers its tokens' inputs and scatter-adds its weighted outputs back (HF Mixtral's loop).
EXPERT_GATHER_SCATTER_KERNELS = 2
# Linear modules of a layer's attention in Hugging Face's Llama, Mistral and Qwen code: q_proj, k_proj, v_proj, o_proj
# (a quantization library replaces each by its own module; GPT-2 fuses q, k and v into one)
ATTENTION_LINEAR_MODULES = 4


@dataclass(frozen=True)
class ArchField:
    """One architecture field a user may edit: its name in models.yaml, kind and bounds (one place for all)."""

    name: str
    kind: str  # 'int', 'text', 'bool' or a '|'-separated choice
    lo: int = 1
    hi: int = 10**7

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.kind.split("|")) if "|" in self.kind else ()


ARCH_FIELDS = (
    ArchField("name", "text"),
    ArchField("layers", "int", 1, 1000),
    ArchField("hidden", "int", 1, 10**6),
    ArchField("heads", "int", 1, 4096),
    ArchField("kv_heads", "int", 1, 4096),
    ArchField("head_dim", "int", 1, 4096),
    ArchField("ffn", "int", 1, 10**7),
    ArchField("ffn_kind", "swiglu|gelu"),
    ArchField("experts", "int", 1, 4096),  # MLPs per layer; 1 = a dense MLP
    ArchField("experts_per_token", "int", 1, 4096),  # experts the router sends each token to (top-k)
    ArchField("shared_ffn", "int", 0, 10**7),  # intermediate size of the shared experts every token sees; 0 = none
    ArchField("vocab", "int", 1, 10**7),
    ArchField("context", "int", 1, 10**8),
    ArchField("tied_embeddings", "bool"),
    ArchField("norm", "rmsnorm|layernorm"),
    ArchField("learned_pos_emb", "bool"),
    ArchField("bias", "bool"),
)
ARCH = {f.name: f for f in ARCH_FIELDS}
FIELDS = ("id", "kind", "source") + tuple(f.name for f in ARCH_FIELDS)


@dataclass(frozen=True, eq=True)
class DecoderProfile(CachedHash):
    """A decoder-only transformer (GPT/LLaMA family)."""

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it

    id: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    ffn_kind: str  # 'swiglu' (3 matrices) or 'gelu' (2 matrices)
    vocab: int
    context: int
    tied_embeddings: bool
    norm: str  # 'rmsnorm' (weight) or 'layernorm' (weight + bias)
    learned_pos_emb: bool
    bias: bool  # linear layers carry biases (GPT-2)
    source: str
    experts: int = 1  # MLPs per layer of intermediate size `ffn` (mixture of experts); 1 = dense
    experts_per_token: int = 1  # experts each token is routed to (top-k)
    shared_ffn: int = 0  # intermediate size of the always-active shared MLP (Qwen-MoE's shared experts); 0 = none
    kind: str = field(default="decoder", init=False)

    # ------------------------------------------------------------ the model protocol: what it is
    input_size_name = "tokens"
    can_generate = True  # autoregressive decoding with a KV cache
    counts_tokens = True  # throughput is reported in tokens/s

    @property
    def default_input_size(self) -> int:
        return self.context

    @property
    def trained_context(self) -> int | None:
        return self.context

    @property
    def attention_head_dim(self) -> int | None:
        return self.head_dim

    @property
    def tensor_parallel_heads(self) -> int | None:
        """Tensor parallel splits attention by KV head (Megatron-style)."""
        return self.kv_heads

    @property
    def shard_units(self) -> int:
        """Blocks FSDP gathers one at a time: one per layer."""
        return self.layers

    @property
    def shard_unit_params(self) -> int:
        """Parameters FSDP gathers per unit: one layer's matrices."""
        return self.layer_matmul_params

    def check_size(self, size: int) -> None:
        """Formulas by construction: any positive size is valid (the context limit is a note, not an error)."""

    def architecture(self) -> dict[str, Any]:
        """The fields a user can edit (ARCH_FIELDS), to show or put in a link."""
        return {f.name: getattr(self, f.name) for f in ARCH_FIELDS}

    def describe(self) -> str:
        moe = ""
        if self.experts > 1:
            shared = f" + shared {self.shared_ffn:,}" if self.shared_ffn else ""
            moe = (f" · {self.experts} experts, top {self.experts_per_token}{shared} · "
                   f"{self.active_params / self.params:.0%} of the parameters active per token")
        return f"decoder · {self.layers} layers · hidden {self.hidden} · context {self.context:,}{moe}"

    def listing(self) -> dict[str, int | None]:
        return {"layers": self.layers, "hidden": self.hidden, "context": self.context}

    # ------------------------------------------------------------ counts
    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def mlp_matrices(self) -> int:
        """Matrices of one MLP: SwiGLU gate, up, down; GELU up, down."""
        return 3 if self.ffn_kind == "swiglu" else 2

    @property
    def expert_params(self) -> int:
        """Weights of one MLP of intermediate size `ffn` (one expert's, in a mixture of experts)."""
        return self.mlp_matrices * self.hidden * self.ffn

    @cached_property
    def layer_matmul_params(self) -> int:
        """Weights of the matrices in one layer: Q, K, V, O, the router, every expert's MLP and the shared MLP."""
        attn = self.hidden * self.q_dim + 2 * self.hidden * self.kv_dim + self.q_dim * self.hidden
        router = self.hidden * self.experts if self.experts > 1 else 0
        shared = self.mlp_matrices * self.hidden * self.shared_ffn
        return attn + router + self.experts * self.expert_params + shared

    @cached_property
    def layer_active_params(self) -> int:
        """Matrix weights one token multiplies by in one layer: attention, router, shared MLP, its top-k experts."""
        return self.layer_matmul_params - (self.experts - self.experts_per_token) * self.expert_params

    def experts_read(self, tokens: float) -> float:
        """Expected distinct experts a pass over `tokens` tokens reads in one layer, routing uniform and independent.

        A token's k experts are k distinct of E, so by symmetry it picks a given expert with probability k/E; the
        expert is missed by all N tokens with probability (1 - k/E)^N, and by linearity of expectation
        E * (1 - (1 - k/E)^N) experts are read (the occupancy problem, Feller, An Introduction to Probability Theory,
        vol. 1, ch. II.5): k at N = 1, approaching E as N grows. Real routers are skewed, so this is a typical case.
        """
        E, k = self.experts, self.experts_per_token
        return float(E) if k >= E else E * (1.0 - (1.0 - k / E) ** tokens)

    def layer_read_params(self, tokens: float) -> float:
        """Matrix weights one layer reads in a pass over `tokens` tokens: all but the experts no token was sent to."""
        if self.experts == 1:
            return self.layer_matmul_params
        return self.layer_matmul_params - (self.experts - self.experts_read(tokens)) * self.expert_params

    @cached_property
    def layer_other_params(self) -> int:
        """Norm weights (and biases) plus linear biases of one layer (each MLP's own, the router has none)."""
        per_norm = self.hidden * (2 if self.norm == "layernorm" else 1)
        mlp_bias = lambda f: f * (self.mlp_matrices - 1) + self.hidden  # noqa: E731  (up [+ gate], down)
        biases = (self.q_dim + 2 * self.kv_dim + self.hidden + self.experts * mlp_bias(self.ffn)
                  + (mlp_bias(self.shared_ffn) if self.shared_ffn else 0)) if self.bias else 0
        return 2 * per_norm + biases

    @property
    def lm_head_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def quantizable_params(self) -> int:
        """The layers' matrices: AWQ, GPTQ, FP8 and W8A8 checkpoints keep embeddings and the LM head in 16-bit."""
        return self.layers * self.layer_matmul_params

    @cached_property
    def matmul_params(self) -> int:
        """Weights one token's forward pass multiplies by (layers with its top-k experts + LM head)."""
        return self.layers * self.layer_active_params + self.lm_head_params

    @cached_property
    def active_params(self) -> int:
        """Parameters one token uses: all but the experts it is not routed to (= params for a dense model)."""
        return self.params - self.layers * (self.experts - self.experts_per_token) * self.expert_params

    @property
    def token_ffn(self) -> int:
        """MLP intermediate elements one token passes through per layer: its top-k experts' and the shared MLP's."""
        return self.experts_per_token * self.ffn + self.shared_ffn

    @cached_property
    def params(self) -> int:
        embed = self.vocab * self.hidden + (self.context * self.hidden if self.learned_pos_emb else 0)
        head = 0 if self.tied_embeddings else self.lm_head_params
        final_norm = self.hidden * (2 if self.norm == "layernorm" else 1)
        return self.layers * (self.layer_matmul_params + self.layer_other_params) + embed + head + final_norm

    @cached_property
    def kv_elems(self) -> int:
        """K and V elements cached per token, all layers."""
        return 2 * self.layers * self.kv_dim

    @cached_property
    def act_traffic_elems(self) -> float:
        """Elements read+written per token by the layers' non-matmul kernels and matmul I/O.

        Per layer: two norms (read+write h each), two residual adds (read 2h, write h),
        the activation function (swiglu: read 2f, write f; gelu: read f, write f) and the
        matmuls' inputs/outputs (QKV in h, out q+2kv; O in q, out h; MLP in h, out f or 2f; down in f, out h).
        Mixture of experts: that MLP traffic for each of the token's k experts plus its gather and weighted
        scatter-add (2h each), the shared MLP's, and the router (in h, out E logits, read E by softmax/top-k).
        """
        h, q, kv = self.hidden, self.q_dim, self.kv_dim
        swiglu = self.ffn_kind == "swiglu"
        mlp = lambda f: (3 * f if swiglu else 2 * f) + h + (2 * f if swiglu else f) + f + h  # noqa: E731
        if self.experts == 1:
            ffn_part = mlp(self.ffn)
        else:
            ffn_part = (self.experts_per_token * (mlp(self.ffn) + 2 * h) + (mlp(self.shared_ffn) if self.shared_ffn
                                                                           else 0) + h + 2 * self.experts)
        per_layer = 4 * h + 6 * h + (h + q + 2 * kv) + (q + h) + ffn_part
        return self.layers * per_layer

    @cached_property
    def saved_act_elems(self) -> float:
        """Elements saved for backward per token, all layers, with memory-efficient attention.

        Per layer: norm inputs and outputs (4h), Q, K, V (q + 2kv), attention output (q),
        MLP hidden activations (swiglu in eager PyTorch: gate and up for their backward, silu(gate) for the product's
        backward, the product as the down projection's input = 4f; gelu: pre- and post-activation = 2f).
        Comparable to Korthikanti et al. 2022 (34·s·b·h bytes for a 4h GELU MLP in 16-bit, dropout included).
        Mixture of experts: those MLP elements for the token's k experts and the shared MLP (token_ffn), each
        expert's gathered input (h) and the router's logits (E).
        """
        mlp = 4 * self.token_ffn if self.ffn_kind == "swiglu" else 2 * self.token_ffn
        routing = self.experts_per_token * self.hidden + self.experts if self.experts > 1 else 0
        return self.layers * (4 * self.hidden + 2 * self.q_dim + 2 * self.kv_dim + mlp + routing)

    def kernels_per_layer(self) -> int:
        """Kernel launches per layer in eager PyTorch (norm, QKV, rotary/none, attention, O, add,
        norm, MLP matmuls, activation, add): counted for a LLaMA/GPT block. A mixture-of-experts layer replaces
        the MLP by the router and, at batch 1, its k experts (each an MLP plus a gather and a scatter-add) and the
        shared MLP; a larger batch runs more experts but there launches matter less than the weights read."""
        dense = 12 if self.ffn_kind == "swiglu" else 11
        if self.experts == 1:
            return dense
        mlp = self.mlp_matrices + 1  # its matmuls and the activation
        return (dense - mlp + ROUTER_KERNELS + self.experts_per_token * (mlp + EXPERT_GATHER_SCATTER_KERNELS)
                + (mlp if self.shared_ffn else 0))

    @property
    def kernels_per_forward(self) -> float:
        return float(self.layers * self.kernels_per_layer() + FIXED_KERNELS)

    @lru_cache(maxsize=4096)  # noqa: B019 (profiles are immutable; the batch search asks for the same shapes often)
    def linear_gemms(self, rows: int, logits: int, tp: int) -> tuple[Gemm, ...]:
        """The forward GEMMs of one pass over `rows` tokens (batch x new tokens) with `logits` LM-head rows: per layer
        the fused QKV (N = q + 2 kv), O, the MLP's up [+ gate] and down projections, the column-parallel N and the
        row-parallel K split over tp (Megatron-LM). A mixture of experts runs each of the experts_read(rows) experts a
        pass touches on its expected share of the routed rows, rows x k / experts read (at least 1)."""
        m, L, h = self, self.layers, self.hidden

        def mlp(r: int, ffn: int, count: float) -> list[Gemm]:
            return [(r, max(1, (m.mlp_matrices - 1) * ffn // tp), h, count), (r, h, max(1, ffn // tp), count)]
        out = [(rows, max(1, (m.q_dim + 2 * m.kv_dim) // tp), h, L), (rows, h, max(1, m.q_dim // tp), L)]
        if m.experts == 1:
            out += mlp(rows, m.ffn, L)
        else:
            read = m.experts_read(rows)
            out += mlp(max(1, math.ceil(rows * m.experts_per_token / read)), m.ffn, L * read)
            out += mlp(rows, m.shared_ffn, L) if m.shared_ffn else []
        return (*out, *m.lm_head_gemm(logits, tp))

    def linear_calls(self, rows: int) -> float:
        """Calls of the layers' linear modules in one pass over `rows` tokens (the LM head not counted): per layer the
        attention's projections and the MLP's matrices, in a mixture of experts the router and each expert a pass
        reaches (experts_read) plus the shared MLP. A quantization library's kernels run once per call."""
        m = self
        if m.experts == 1:
            return float(m.layers * (ATTENTION_LINEAR_MODULES + m.mlp_matrices))
        mlps = m.experts_read(rows) + (1 if m.shared_ffn else 0)
        return m.layers * (ATTENTION_LINEAR_MODULES + 1 + mlps * m.mlp_matrices)  # + 1: the router

    def lm_head_gemm(self, logits: int, tp: int) -> tuple[Gemm, ...]:
        """The LM head's GEMM over `logits` rows (vocab split over tp); () when no logits are computed."""
        return ((logits, max(1, self.vocab // tp), self.hidden, 1),) if logits else ()

    # ------------------------------------------------------------ the model protocol: work per step
    def _forward(self, s: Setup, batch: int, tokens: int, keys_sum: float, keys_max: int,
                 logits_tokens: int, name: str) -> tuple[OpGroup, ...]:
        """One forward pass of `batch` sequences of `tokens` new tokens each (p-independent part).

        keys_sum: sum over the new tokens of the keys each attends to (causal prefill: t(t+1)/2).
        """
        m, p, tp = self, s.precision, s.tp
        bt = batch * tokens
        layer_mp = m.layers * m.layer_active_params  # per token: its top-k experts only
        layer_read, note = layer_mp, ""
        if m.experts > 1:  # per pass: every expert some token was routed to
            layer_read, note = m.layers * m.layer_read_params(bt), m._experts_note(bt)
        lin_flops = 2.0 * (bt * layer_mp + batch * logits_tokens * m.lm_head_params) / tp
        buffered = p.kernel is not None and s.buffered(bt)  # the GEMM then reads the 16-bit copy, not the stored format
        lin_bytes = (layer_read * (p.act_bytes if buffered else p.weight_bytes)
                     + m.lm_head_params * p.outside_weight_bytes) / tp
        if s.attention.scores_materialized:  # softmax(QK^T)V computes every score; the causal mask only hides some
            keys_sum = tokens * keys_max
        attn_flops = ATTN_FLOPS_PER_KEY_DIM * m.layers * m.q_dim * batch * keys_sum / tp
        qkvo = bt * m.layers * (2 * m.q_dim + 2 * m.kv_dim) * p.act_bytes / tp
        kv_write = bt * m.kv_elems * s.kv_dtype.bytes / tp
        scores = (SCORE_TRAFFIC_PASSES * batch * m.heads * m.layers * tokens * keys_max * p.act_bytes / tp
                  if s.attention.scores_materialized else 0.0)
        elem_bytes = (bt * m.act_traffic_elems * p.act_bytes / tp
                      + 2 * batch * logits_tokens * m.vocab * float(FP32_BYTES))
        lin_text, attn_text, elem_text = m._forward_formulas(s, name, note, bool(scores))
        # a runtime's CUDA-core GEMV multiplies quantized weights without tensor-core tiles (its dot products are the
        # GEMV group's instructions); with the LM head when the format quantizes it too (GGUF)
        gemv = bool(p.dequant_ops_per_weight) and s.quantized_gemv(bt)
        return (
            OpGroup("linear layers", lin_flops, lin_bytes, p.compute_path,
                    lin_text + ("; the multiply-adds run in the quantized GEMV group" if gemv else "")
                    + (f"; the GEMMs read the 16-bit copy ({p.act_bytes:g} B/weight)" if buffered else ""),
                    gemms=() if gemv else m.linear_gemms(bt, batch * logits_tokens, tp),
                    **(call_costs(s, m.linear_calls(bt) / tp, bt) if p.kernel else {})),
            *(dequant_groups(m._quantized_read(s, layer_read), s, bt) if p.dequant_ops_per_weight else ()),
            OpGroup("attention", attn_flops, qkvo + kv_write + scores, s.attention_path, attn_text,
                    rate_factor=s.attention.speed_vs_fa2),
            OpGroup("elementwise & norms", 0.0, elem_bytes, s.attention_path, elem_text),
        )

    def _quantized_read(self, s: Setup, layer_read: float) -> float:
        """Quantized weights a pass unpacks per GPU: the layers' matrices it reads, and the LM head when the format
        quantizes it too (GGUF files, gpt-fast)."""
        p = s.precision
        return (layer_read + (self.lm_head_params if p.outside_weight_bytes == p.weight_bytes else 0)) / s.tp

    def _chunked_dequant(self, s: Setup, batch: int, c: int, full: int, rest: int) -> list[OpGroup]:
        """The quantized-weight work of a prompt prefilled in `full` chunks of c tokens and one of `rest`: the weights
        are unpacked once per chunk, in the runtime's GEMV for a chunk of at most its GEMV tokens."""
        m = self
        q = m._quantized_read(s, m.layers * m.layer_read_params(batch * (full * c + rest)))
        parts = [g._replace(flops=g.flops * full, bytes=g.bytes * full) for g in dequant_groups(q, s, batch * c)
                 ] if full else []
        for g in dequant_groups(q, s, batch * rest) if rest else ():
            same = next((i for i, x in enumerate(parts) if x.name == g.name), None)
            if same is None:
                parts.append(g)
            else:
                parts[same] = parts[same]._replace(flops=parts[same].flops + g.flops, bytes=parts[same].bytes + g.bytes)
        return [g._replace(formula=g.formula + f"; per chunk ({full + bool(rest)} chunks of {c} tokens)")
                for g in parts]

    @lru_cache(maxsize=1024)  # noqa: B019 (profiles are immutable; the text depends on the setup, not the batch)
    def _forward_formulas(self, s: Setup, name: str, note: str, scores: bool) -> tuple[str, str, str]:
        """The formula texts of _forward's linear, attention and elementwise groups."""
        p, m = s.precision, self
        head = (f" + LM head x {p.outside_weight_bytes:g} B" if p.outside_weight_bytes != p.weight_bytes else "")
        return (f"FLOPs = 2 x {name} tokens x matmul params; bytes = layer matmul params x {p.weight_bytes:g} "
                f"B/weight{head}{note}",
                "FLOPs = 4 x layers x heads x head_dim x keys attended"
                + (" (every score: no causal skipping)" if s.attention.scores_materialized else "")
                + "; bytes = Q,K,V,O + KV-cache write"
                + (" + 4 x score matrices (manual attention)" if scores else ""),
                f"bytes = tokens x {m.act_traffic_elems:,.0f} elements x {p.act_bytes:g} B + logits")

    def _experts_note(self, tokens: int) -> str:
        """How much of a mixture of experts a pass over `tokens` tokens computes and reads ('' when dense)."""
        if self.experts == 1:
            return ""
        E, k = self.experts, self.experts_per_token
        return (f"; mixture of experts: each token's FLOPs use its top {k} of {E} experts, the pass reads "
                f"{self.experts_read(tokens):.3g} experts' weights per layer (E(1-(1-k/E)^N), N = {tokens:,} tokens)")

    def forward_work(self, s: Setup, batch: int, size: int) -> tuple[OpGroup, ...]:
        """A causal forward pass over `size` tokens per sequence, logits for every token."""
        return self._forward(s, batch, size, size * (size + 1) / 2, size, size, "input")

    def prefill_work(self, s: Setup, batch: int, prompt: int) -> tuple[OpGroup, ...]:
        """The prompt's forward pass, logits for the last token only; with a prefill chunk c (llama.cpp's n_ubatch) the
        prompt runs in ceil(prompt / c) passes: the weights are read once per pass, each chunk reads the K and V of
        the chunks before it, and manual attention scores only the keys up to its chunk's end."""
        chunks = s.prefill_chunks(prompt)
        if chunks == 1:
            return self._forward(s, batch, prompt, prompt * (prompt + 1) / 2, prompt, 1, "prompt")
        c, m = s.prefill_chunk, self
        full, rest = divmod(prompt, c)
        # sum over chunks of tokens x keys up to the chunk's end (scores), and of the keys cached before each chunk:
        # a chunk's attention reads each earlier K and V row once for all its tokens (one GEMM, or one flash tile
        # sweep per query block, re-read from L2), not once per token
        scored = c * c * full * (full + 1) / 2 + rest * prompt
        earlier = c * full * (full - 1) / 2 + (full * c if rest else 0)
        groups = self._forward(s, batch, prompt, prompt * (prompt + 1) / 2, c, 1, "prompt")
        out = []
        for g in groups:
            if g.name in (DEQUANT_GROUP, GEMV_GROUP):
                out += m._chunked_dequant(s, batch, c, full, rest)
                continue
            if g.name == "linear layers":
                tiles = lambda rows: () if s.quantized_gemv(rows) else m.linear_gemms(rows, 0, s.tp)  # noqa: E731
                per_chunk = scaled_gemms(tiles(batch * c), full) if full else ()
                last = tiles(batch * rest) if rest else ()
                calls = lambda rows, n: call_costs(s, n * m.linear_calls(rows) / s.tp, rows)  # noqa: E731
                costs = {k: calls(batch * c, full).get(k, 0.0) + (calls(batch * rest, 1).get(k, 0.0) if rest else 0.0)
                         for k in ("launches", "host_kernels")} if s.precision.kernel else {}
                g = g._replace(bytes=g.bytes * chunks, formula=g.formula + f"; weights read once per chunk ({chunks} "
                            f"chunks of {c} tokens, M = {batch * c:,} rows each)",
                            gemms=per_chunk + last + (() if s.quantized_gemv(batch) else m.lm_head_gemm(batch, s.tp)),
                            **costs)
            elif g.name == "attention":
                manual = s.attention.scores_materialized
                flops = ATTN_FLOPS_PER_KEY_DIM * m.layers * m.q_dim * batch * scored / s.tp if manual else g.flops
                kv_read = batch * earlier * m.kv_elems * s.kv_dtype.bytes / s.tp
                scores = (SCORE_TRAFFIC_PASSES * batch * m.heads * m.layers * scored * s.precision.act_bytes / s.tp
                          if manual else 0.0)
                unscored = g.bytes - (SCORE_TRAFFIC_PASSES * batch * m.heads * m.layers * prompt * c
                                      * s.precision.act_bytes / s.tp if manual else 0.0)
                g = g._replace(flops=flops, bytes=unscored + kv_read + scores,
                            formula=g.formula + f"; {chunks} chunks of {c} tokens: each reads the K, V before it")
            out.append(g)
        return tuple(out)

    def decode_work(self, s: Setup, batch: int) -> tuple[OpGroup, ...]:
        """One decode step for `batch` sequences: one new token each, attending p keys (affine in p)."""
        m = self
        *head, attn, elem = self._forward(s, batch, 1, 0.0, 0, 1, "1 x batch")
        kv_read_per_pos = batch * m.kv_elems * s.kv_dtype.bytes / s.tp
        score_per_pos = (SCORE_TRAFFIC_PASSES * batch * m.heads * m.layers * s.precision.act_bytes / s.tp
                         if s.attention.scores_materialized else 0.0)
        attn = OpGroup("attention", 0.0, attn.bytes, attn.compute_path,
                       "FLOPs = 4 x layers x heads x head_dim x p per sequence; bytes = KV cache read (p tokens) + write",
                       flops_per_pos=ATTN_FLOPS_PER_KEY_DIM * m.layers * m.q_dim * batch / s.tp,
                       bytes_per_pos=kv_read_per_pos + score_per_pos, rate_factor=attn.rate_factor)
        return (*head, attn, elem)

    def train_work(self, s: Setup, batch: int, size: int, checkpointing: bool) -> tuple[OpGroup, ...]:
        """One micro-step: forward + backward (2x forward) [+ recomputed forward] over `size` tokens."""
        m, p = self, s.precision
        ckpt = 1.0 if checkpointing else 0.0  # one recomputed forward
        fb = forward_equivalents(checkpointing)
        S = size
        T = batch * S
        manual = s.attention.scores_materialized
        keys = S * S if manual else S * (S + 1) / 2  # manual attention computes every score, fused kernels skip
        attn_fwd = ATTN_FLOPS_PER_KEY_DIM * m.layers * m.q_dim * batch * keys
        # FlashAttention's backward recomputes QK^T (5 matmuls vs 2 forward); a manual backward is the usual 2x
        bwd = FLASH_BWD_FLOP_RATIO if not manual else BACKWARD_FORWARD_RATIO
        attn_mult = 1 + bwd + ckpt
        qkvo = T * m.layers * (2 * m.q_dim + 2 * m.kv_dim) * p.act_bytes
        scores = (SCORE_TRAFFIC_PASSES * batch * m.heads * m.layers * S * S * p.act_bytes if s.attention.scores_materialized else 0.0)
        read = m.layers * m.layer_read_params(T) + m.lm_head_params  # the experts some token was routed to
        return (
            OpGroup("linear layers (fwd+bwd)", 2.0 * fb * T * m.matmul_params,
                    read * (p.act_bytes * fb + float(GRAD_ACCUMULATE_BYTES)), p.compute_path,
                    f"FLOPs = {2 * fb:g} x tokens x matmul params (fwd 2, bwd 4{', recompute 2' if ckpt else ''}); "
                    f"bytes = weights read {fb:g}x + fp32 grad accumulate; GEMMs of M = {T:,} rows and their "
                    "backward transposes" + m._experts_note(T),
                    gemms=training_gemms(m.linear_gemms(T, T, 1), checkpointing)),
            OpGroup("attention (fwd+bwd)", attn_fwd * attn_mult, (qkvo + scores) * fb, s.attention_path,
                    f"FLOPs = 4 x layers x heads x head_dim x {'S^2' if manual else 'S(S+1)/2'} x batch x "
                    f"{attn_mult:g} (bwd = {bwd:g}x fwd)",
                    rate_factor=s.attention.speed_vs_fa2),
            OpGroup("elementwise & norms (fwd+bwd)", 0.0,
                    fb * T * m.act_traffic_elems * p.act_bytes + 3 * T * m.vocab * float(FP32_BYTES),
                    s.attention_path,
                    "bytes = 3 x forward traffic (+1 with checkpointing) + fp32 logits, softmax, grad"),
        )

    def tensor_parallel_comm(self, s: Setup, batch_tokens: int) -> tuple[float, float]:
        """(bytes, collective calls) per step: two all-reduces per layer of the hidden state (ring: 2(n-1)/n)."""
        if s.tp == 1:
            return 0.0, 0.0
        msg = batch_tokens * self.hidden * s.precision.act_bytes
        return 2 * self.layers * 2 * (s.tp - 1) / s.tp * msg, 2 * self.layers

    # ------------------------------------------------------------ the model protocol: memory
    def _activation_peak(self, s: Setup, batch: int, tokens: int, keys: int, logits_tokens: int) -> float:
        """Live bytes at the peak of one forward layer (no grad): hidden state, Q/K/V, MLP hidden, logits."""
        m = self
        mlp = (3 if m.ffn_kind == "swiglu" else 2) * m.token_ffn  # a mixture: its k experts' and the shared MLP's
        per_token = (2 * m.hidden + m.q_dim + 2 * m.kv_dim + mlp) * s.precision.act_bytes / s.tp
        scores = (2.0 * batch * m.heads * tokens * keys * s.precision.act_bytes / s.tp
                  if s.attention.scores_materialized else 0.0)
        return batch * tokens * per_token + scores + batch * logits_tokens * m.vocab * float(FP32_BYTES)

    def inference_memory(self, s: Setup, batch: int, size: int) -> tuple[MemoryItem, ...]:
        act = self._activation_peak(s, batch, size, size, size)
        return (MemoryItem("activations", act / BYTES_PER_GB,
                           "peak live tensors of one layer + fp32 logits for every token"),)

    def generate_memory(self, s: Setup, batch: int, prompt: int, gen: int) -> tuple[MemoryItem, ...]:
        m = self
        total = prompt + gen
        kv = batch * total * m.kv_elems * s.kv_dtype.bytes / s.tp
        chunk = min(prompt, s.prefill_chunk) if s.prefill_chunk else prompt  # live tokens of one prefill pass
        act = max(self._activation_peak(s, batch, chunk, prompt, 1), self._activation_peak(s, batch, 1, total, 1))
        return (MemoryItem("kv_cache", kv / BYTES_PER_GB,
                           "batch {} x {} tokens x 2 (K, V) x {} layers x {} x {:g} B ({}) / {} GPU(s)",
                           (batch, total, m.layers, m.kv_dim, s.kv_dtype.bytes, s.kv_dtype.id, s.tp)),
                MemoryItem("activations", act / BYTES_PER_GB,
                           "peak live tensors of one layer (prefill" + (f" of a {chunk}-token chunk" if chunk < prompt
                                                                       else "") + " or decode) + logits"))

    def train_activation_memory(self, s: Setup, batch: int, size: int, checkpointing: bool) -> MemoryItem:
        m, p = self, s.precision
        S = size
        T = batch * S
        per_layer_scores = (2.0 * batch * m.heads * S * S * p.act_bytes if s.attention.scores_materialized else 0.0)
        saved_layer = T * m.saved_act_elems / m.layers * p.act_bytes + per_layer_scores
        if checkpointing:
            act = T * m.hidden * m.layers * p.act_bytes + saved_layer
            formula = "layer inputs (tokens x hidden x layers) + one layer recomputed"
        else:
            act = saved_layer * m.layers
            formula = (f"tokens x {m.saved_act_elems:,.0f} saved elements x {p.act_bytes:g} B"
                       + (" + score matrices (manual attention)" if per_layer_scores else ""))
        act += 2 * T * m.vocab * float(FP32_BYTES)
        formula += " + fp32 logits and their gradient"
        return MemoryItem("activations", act / BYTES_PER_GB, formula)


def parse_decoder(rec: Record) -> DecoderProfile:
    rec.check_keys(FIELDS)
    A = ARCH
    hidden = rec.number("hidden", lo=A["hidden"].lo, hi=A["hidden"].hi, integer=True)
    heads = rec.number("heads", lo=A["heads"].lo, hi=A["heads"].hi, integer=True)
    kv_heads = rec.number("kv_heads", required=False, lo=A["kv_heads"].lo, hi=A["kv_heads"].hi, integer=True) or heads
    if heads % kv_heads:
        raise rec.fail("kv_heads", f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    head_dim = rec.number("head_dim", required=False, lo=A["head_dim"].lo, hi=A["head_dim"].hi, integer=True)
    if head_dim is None:
        if hidden % heads:
            raise rec.fail("heads", f"hidden ({hidden}) is not divisible by heads ({heads}); give head_dim")
        head_dim = hidden // heads
    count = lambda name: rec.number(name, lo=A[name].lo, hi=A[name].hi, integer=True)  # noqa: E731
    optional = lambda name: rec.number(name, required=False, lo=A[name].lo, hi=A[name].hi, integer=True)  # noqa: E731
    experts, top_k = int(optional("experts") or 1), int(optional("experts_per_token") or 1)
    shared_ffn = int(optional("shared_ffn") or 0)
    if top_k > experts:
        raise rec.fail("experts_per_token", f"each token can't be routed to more experts ({top_k}) than a layer has "
                                            f"(experts: {experts})")
    if shared_ffn and experts == 1:
        raise rec.fail("shared_ffn", "a shared expert belongs to a mixture-of-experts layer (experts > 1); for a "
                                     "dense model put the whole MLP in ffn")
    return DecoderProfile(
        id=rec.text("id"), name=rec.text("name"), layers=count("layers"),
        hidden=hidden, heads=heads, kv_heads=kv_heads, head_dim=head_dim, ffn=count("ffn"),
        ffn_kind=rec.text("ffn_kind", choices=A["ffn_kind"].choices), vocab=count("vocab"), context=count("context"),
        tied_embeddings=rec.flag("tied_embeddings"), norm=rec.text("norm", choices=A["norm"].choices),
        learned_pos_emb=rec.flag("learned_pos_emb", default=False), bias=rec.flag("bias", default=False),
        source=rec.text("source"), experts=experts, experts_per_token=top_k, shared_ffn=shared_ffn,
    )
