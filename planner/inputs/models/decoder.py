"""Decoder-only transformers (GPT / LLaMA families, dense or mixture-of-experts), derived by formula from their
architecture.

Counting conventions: parameters exactly as a PyTorch module holds them; FLOPs = 2 per multiply-add; an
attention step over `pos` keys costs 4 * heads * head_dim * pos FLOPs per token per layer (QK^T and AV).

Mixture of experts (experts > 1, Mixtral / Qwen-MoE style): every layer's MLP is `experts` MLPs of intermediate size
`ffn`, a router (hidden x experts) sends each token to `experts_per_token` of them, and an optional shared MLP
(`shared_ffn`, 0 = none) sees every token. Memory holds all experts; a token's FLOPs are its top-k experts'; a pass
over N tokens reads the weights of the experts at least one of them was routed to (experts_read). DeepSeek-style
mixtures put `dense_layers` layers with one dense MLP of `dense_ffn` before them (first_k_dense_replace).

Multi-head latent attention (kv_lora_rank > 0, DeepSeek-V2/V3, arXiv 2405.04434 section 2.1): each layer caches one
latent of kv_lora_rank plus a decoupled RoPE key of rope_dim per token, shared by every head; K and V per head are its
up-projections (kv_b_proj). Prefill decompresses them (scores over head_dim = nope + rope, values over v_head_dim);
decode absorbs the up-projections into the query and the output (the paper's section 2.1.2, vLLM's and SGLang's MLA
decode): each head scores the latent and the RoPE key (kv_lora_rank + rope_dim per key) and sums latents
(kv_lora_rank per key), reading the latent cache once for all heads. The absorbed products multiply each new token by
kv_b_proj's weights once, so the linear layers' FLOPs (2 x weights per token) are the same either way.

Sliding windows (Mistral, Gemma 2/3): `window_layers` of the layers attend over the last `window` tokens only, so they
cache at most `window` tokens per sequence and a token attends min(position, window) keys there.

State-space layers (Jamba's Mamba layers; Mamba-2 blocks): `state_layers` of the layers mix tokens with a selective
scan instead of attention (Gu and Dao 2023, arXiv 2312.00752; Mamba-2: Dao and Gu 2024, arXiv 2405.21060). Such a
layer keeps a fixed state per sequence (ssm_inner x ssm_state, and the last ssm_conv - 1 inputs of its causal
convolution) instead of a KV cache: its memory does not grow with the context, and a decode step reads and writes it
once. Mamba-1 (ssm_dt_rank > 0): in_proj (hidden -> 2 inner), conv, x_proj (inner -> dt_rank + 2 state), dt_proj
(dt_rank -> inner), A and D, out_proj; Mamba-2 (ssm_heads > 0): in_proj (hidden -> 2 inner + 2 groups x state +
heads), conv over inner + 2 groups x state channels, dt bias, A and D per head, a gated norm, out_proj.

Encoders (BERT, RoBERTa, ViT; `encoder`): the same stack attending both ways (every token to all S tokens), with no KV
cache, no generation and no LM head: an infer job over sequences or images, items/s. Their embeddings: `vocab` rows
(ViT: the patch projection's inputs, channels x patch x patch), learned positions, `token_types` rows (BERT's segment
embeddings); a `pooler` (hidden x hidden + bias, BERT and ViT models) and a classifier of `head_outputs` (hidden x
outputs + bias) on one token: their FLOPs are left out (one token of S).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from planner.base.schema import CachedHash, Record
from planner.base.units import BYTES_PER_GB, FP32_BYTES
import planner.inputs.models.decoder_text as text
from planner.inputs.models.autocast_chains import (fused_loss_bytes, gelu_tanh_chain_bytes, loss_bytes,
                                                   stream_backward_bytes, stream_forward_bytes)
from planner.inputs.models.decoder_fields import ARCH_FIELDS, read_decoder
from planner.inputs.models.eager_chains import (rmsnorm_backward_chain_bytes, rmsnorm_chain_bytes,
                                                rotary_backward_chain_bytes, rotary_chain_bytes, softmax_upcast_bytes)
from planner.inputs.catalog import SGEMM_FAMILY
from planner.inputs.precisions import EXPERTS_SCOPE, MLP_SCOPE
from planner.inputs.models.fp8_training import FP8_BYTES, fp8_linear_groups
from planner.inputs.work import (ALL_GATHER, ALL_REDUCE, ATTENTION_GROUP, BACKWARD_FORWARD_RATIO, DEQUANT_GROUP,
                                 GEMV_GROUP, PROMPT_SCALE_GROUP, Collective, Gemm, MemoryItem, OpGroup, Setup,
                                 call_costs, dequant_groups, merge_costs, mlp_gemv_groups, split_k_groups,
                                 forward_equivalents, scaled_gemms, training_gemms)

# Manual attention (scores materialized) moves each S x S score element this many times per forward pass. Fused
# elementwise (a runtime that runs scale, mask and softmax as one kernel: llama.cpp's ggml_soft_max_ext, a compiler):
# QK^T writes it, softmax reads and writes it, AV reads it = 4. Eager PyTorch runs the scaling and the mask as two more
# kernels that each read and write the scores (Hugging Face transformers eager_attention_forward: `matmul(q, k^T) *
# scaling`, `+ causal_mask`; NVIDIA DeepLearningExamples BERT BertSelfAttention: `/ sqrt(d)`, `+ attention_mask`) = 8.
SCORE_TRAFFIC_PASSES = 4.0
EAGER_SCORE_TRAFFIC_PASSES = 8.0
# The same chain's backward: AV's backward writes dP and reads P (for dV), softmax's backward reads P and dP and writes
# dS, QK^T's backward reads dS twice (dQ, dK) = 7; eager adds the scaling's backward (a read and a write) = 9. An
# additive mask's backward launches nothing (the mask needs no gradient); a masked_fill/where mask would add 2.
SCORE_BACKWARD_PASSES = 7.0
EAGER_SCORE_BACKWARD_PASSES = 9.0
# Dropout in training (PyTorch's native_dropout on CUDA, one kernel): forward reads x, writes y and a 1-byte bool mask;
# backward reads the gradient and the mask and writes the gradient. Sites per layer: after the attention output
# projection and after the MLP (BERT, GPT-2: hidden_dropout_prob / resid_pdrop), and on the softmax output of manual
# attention (attention_probs_dropout_prob / attn_pdrop); a fused attention kernel drops inside the kernel.
DROPOUT_HIDDEN_SITES = 2
DROPOUT_MASK_BYTES = 1.0
# Eager manual attention leaves its output as (batch, heads, tokens, head_dim); the output projection needs (batch,
# tokens, heads x head_dim), so `.transpose(1, 2).contiguous()` (Hugging Face eager attention, DeepLearningExamples'
# BertSelfAttention `permute(0, 2, 1, 3).contiguous()`) copies it: a read and a write of q per token forward, and
# backward two copies of its gradient (traced: two aten.clone of q elements per token, torch 2.13.0).
HEAD_LAYOUT_COPY_FWD = 2.0
HEAD_LAYOUT_COPY_BWD = 4.0


def score_passes(s: Setup) -> tuple[float, float]:
    """(forward, backward) passes over each S x S score element of materialized attention under `s`'s runtime."""
    if s.fused_elementwise:
        return SCORE_TRAFFIC_PASSES, SCORE_BACKWARD_PASSES
    return EAGER_SCORE_TRAFFIC_PASSES, EAGER_SCORE_BACKWARD_PASSES


def dropout_bytes_per_elem(act_bytes: float) -> float:
    """Bytes one element costs a dropout site, forward (read x, write y and the 1-byte mask) plus backward (read the
    gradient and the mask, write the gradient)."""
    return 2 * (2 * act_bytes + DROPOUT_MASK_BYTES)
FLASH_BWD_FLOP_RATIO = 2.5  # FlashAttention-2 backward = 5 matmuls vs 2 forward (Dao 2023)
# A training step's attention, timed as two groups: the forward (with its recomputation under checkpointing) and the
# backward, each at its kernel's own measured rate (AttentionBackend.peak_fractions, backward_peak_fractions)
ATTENTION_FORWARD_GROUP = "attention forward"
ATTENTION_BACKWARD_GROUP = "attention backward"
# A KV cache appended by torch.cat (Hugging Face's DynamicCache) is copied whole each step: read once, written once.
KV_CONCAT_PASSES = 2.0
# KV heads repeated to the query heads before attention (Hugging Face's repeat_kv: expand + reshape, a copy): the
# copy is written once and attention reads it once, each `heads / kv_heads` times the cache's size; the read of the
# cache that makes the copy stands for attention's own read of it (RuntimeProfile.kv_heads_repeated_on).
KV_REPEAT_PASSES = 2.0
# Kernels outside the layers per forward pass: embedding lookup, position add, final norm, LM head, sampling/loss.
FIXED_KERNELS = 5
# Of those kernels, the ones that move only a token's hidden vector or two (per layer: two norms, rotary or the
# position add, two residual adds, the activation; outside the layers: embedding, position add, final norm,
# sampling): at decode each takes the GPU's minimum kernel duration, not its bytes' time (OpGroup.small_kernels).
# A layer's remaining kernels are its GEMMs (QKV, O, the MLP's matrices) and its attention.
SMALL_KERNELS_PER_LAYER = 6
SMALL_FIXED_KERNELS = FIXED_KERNELS - 1  # all but the LM head's GEMM
GRAD_ACCUMULATE_BYTES = 2 * FP32_BYTES  # per matmul weight per micro-step: read and write its fp32 gradient
# A mixture-of-experts layer's router: its matmul, then softmax and top-k (one fused kernel in Mixtral's HF code).
ROUTER_KERNELS = 2
# Each routed expert also gathers its tokens' inputs and scatter-adds its weighted outputs back (HF Mixtral's loop).
EXPERT_GATHER_SCATTER_KERNELS = 2
# Linear modules of a layer's attention in Hugging Face's Llama, Mistral and Qwen code: q_proj, k_proj, v_proj, o_proj
# (a quantization library replaces each by its own module; GPT-2 fuses q, k and v into one)
ATTENTION_LINEAR_MODULES = 4
# Latent attention's projections where a LLaMA block runs one fused QKV (HF DeepseekV3Attention): without a Q latent
# q_proj, kv_a_proj, kv_a_layernorm, kv_b_proj (4); with one q_a_proj, q_a_layernorm, q_b_proj as well, minus q_proj (6)
MLA_KERNELS = {False: 4, True: 6}
# Its linear modules (q_proj or q_a_proj + q_b_proj, kv_a_proj_with_mqa, kv_b_proj, o_proj)
MLA_LINEAR_MODULES = {False: 4, True: 5}
WINDOW_GROUP = "sliding-window attention"  # a decode step's window layers: min(p, window) keys each
# Fields that give a decoder layers of more than one kind; the page's form does not edit them
LAYER_KIND_FIELDS = ("dense_layers", "dense_ffn", "kv_lora_rank", "q_lora_rank", "rope_dim", "v_head_dim", "window",
                     "window_layers", "encoder", "token_types", "pooler", "head_outputs", "state_layers", "ssm_inner",
                     "ssm_state", "ssm_conv", "ssm_dt_rank", "ssm_heads", "ssm_groups")
# A selective scan's FLOPs per channel and state element per token: the decay exp(dt x A) (a multiply and an exp),
# dt x B x x (two multiplies), h = decay x h + dt B x (a multiply and an add), y += C x h (a multiply and an add)
SCAN_FLOPS_PER_STATE = 8.0
# Kernels of a state-space mixer where an attention block runs QKV, rotary, attention and O (4): Mamba-1 (HF
# MambaMixer's fast path) in_proj, conv1d, x_proj, dt_proj, the selective scan, out_proj (6); Mamba-2 in_proj, conv1d,
# the chunked scan, the gated norm, out_proj (5)
SSM_KERNELS = {True: 6, False: 5}
SSM_LINEAR_MODULES = {True: 4, False: 2}  # Mamba-1: in_proj, x_proj, dt_proj, out_proj; Mamba-2: in_proj, out_proj


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
    dense_layers: int = 0  # layers of a mixture of experts with one dense MLP of dense_ffn (DeepSeek's first layers)
    dense_ffn: int = 0
    kv_lora_rank: int = 0  # multi-head latent attention: width of the cached latent; 0 = K and V per KV head
    q_lora_rank: int = 0  # MLA: Q goes through a latent of this width (0: one projection)
    rope_dim: int = 0  # MLA: the decoupled RoPE key's width, cached beside the latent (qk_rope_head_dim)
    v_head_dim: int = 0  # MLA: a head's value width (0: head_dim)
    window: int = 0  # sliding window in tokens of the window_layers local layers (0: none)
    window_layers: int = 0
    encoder: bool = False  # bidirectional, no KV cache, no LM head (BERT, ViT)
    token_types: int = 0  # encoder: segment-embedding rows (BERT's type_vocab_size)
    pooler: bool = False  # encoder: a hidden x hidden pooler with its bias
    head_outputs: int = 0  # encoder: a classifier's outputs on the pooled token (0: none)
    state_layers: int = 0  # layers with a state-space (Mamba) mixer instead of attention
    ssm_inner: int = 0  # the mixer's inner width (expand x hidden)
    ssm_state: int = 0  # its state per channel (d_state)
    ssm_conv: int = 0  # its causal convolution's kernel width
    ssm_dt_rank: int = 0  # Mamba-1: the step size's low rank (0: Mamba-2)
    ssm_heads: int = 0  # Mamba-2: heads (0: Mamba-1)
    ssm_groups: int = 0  # Mamba-2: groups sharing B and C
    dropout: bool = False  # dropout layers active in training (p > 0: BERT's hidden and attention-probs dropout)
    # the MLP's GELU is Hugging Face's NewGELUActivation (activation_function gelu_new: GPT-2), a chain of eight
    # elementwise ops in Python rather than one kernel (autocast_chains.gelu_tanh_chain_bytes)
    gelu_tanh_chain: bool = False
    cross_check: str = ""  # where the profile disagrees with what its source reports, and why
    # its config.json model_type ('qwen2', 'mistral'): the Hugging Face modeling code it runs in transformers, where
    # a release's attention class has costs of its own (Setup.rotary_sync_types); '' = not stated
    model_type: str = ""
    kind: str = field(default="decoder", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", "encoder" if self.encoder else "decoder")  # what the page and messages say

    # ------------------------------------------------------------ the model protocol: what it is
    input_size_name = "tokens"
    @property
    def can_generate(self) -> bool:
        """Autoregressive decoding with a KV cache (an encoder: no)."""
        return not self.encoder

    @property
    def counts_tokens(self) -> bool:
        """Throughput in tokens/s (an encoder's: sequences or images per second)."""
        return not self.encoder

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
    def tp_projections_per_gather(self) -> float:
        """Column-parallel matmuls that read one of tensor parallel's gathered inputs, averaged over a layer's two:
        Q, K and V after the attention norm, the MLP's gate and up (SwiGLU) or up (GELU) after the MLP norm. A stack
        that gathers per module (Megatron-LM's fused QKV, TorchTitan's PrepareModuleInput) gathers once either way."""
        return (3 + self.mlp_matrices - 1) / 2

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

    @property
    def layer_kinds_mixed(self) -> bool:
        """Whether the profile uses fields beyond the page's form (latent attention, windows, dense first layers)."""
        return any(getattr(self, f) for f in LAYER_KIND_FIELDS)

    def architecture(self) -> dict[str, Any] | None:
        """The fields a user can edit (ARCH_FIELDS), to show or put in a link; None when the profile has layers
        of kinds the form can't say (it then travels as its file's text)."""
        return None if self.layer_kinds_mixed else self._form_fields()

    def _form_fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in ARCH_FIELDS}

    def record(self) -> dict[str, Any]:
        """The profile as a data record parse_decoder reads back (a bench result carries it): the architecture and
        its provenance, not the page's cross-check note."""
        kinds = {f: getattr(self, f) for f in LAYER_KIND_FIELDS if getattr(self, f)}
        return {"kind": self.kind, "id": self.id, "source": self.source, "dropout": self.dropout,
                **({"gelu_tanh_chain": True} if self.gelu_tanh_chain else {}),
                **({"model_type": self.model_type} if self.model_type else {}),
                **self._form_fields(), **kinds}

    def describe(self) -> str:
        line = text.describe(self.layers, self.hidden, self.context, self.experts, self.experts_per_token,
                             self.shared_ffn, self.active_params / self.params) + text.layer_kinds_text(
            self.dense_layers, self.kv_lora_rank, self.rope_dim, self.window, self.window_layers, self.state_layers)
        return text.ENCODER_WORDS + line.removeprefix("decoder") if self.encoder else line

    def listing(self) -> dict[str, int | None]:
        return {"layers": self.layers, "hidden": self.hidden, "context": self.context}

    # ------------------------------------------------------------ counts
    @property
    def kv_dim(self) -> int:
        """K (or V) elements per token and layer as attention sees them; with latent attention the decompressed K and
        V's mean width, heads x (head_dim + v_head_dim) / 2 (what prefill's attention reads)."""
        if self.kv_lora_rank:
            return self.heads * (self.head_dim + self.value_head_dim) // 2
        return self.kv_heads * self.head_dim

    @property
    def value_head_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def kv_layer_elems(self) -> int:
        """Elements one token caches in one layer: K and V per KV head, or MLA's latent and RoPE key."""
        return self.kv_lora_rank + self.rope_dim if self.kv_lora_rank else 2 * self.kv_heads * self.head_dim

    def attn_flops_per_key(self, absorbed: bool = False) -> float:
        """FLOPs one query token spends per key in one layer: scores (2 x heads x score width) and the weighted sum
        (2 x heads x value width); 4 x heads x head_dim for ordinary attention. Latent attention absorbed (decode)
        scores the latent and RoPE key and sums latents: 2 x heads x (2 kv_lora_rank + rope_dim)."""
        return self._key_flops[absorbed]

    @cached_property
    def _key_flops(self) -> tuple[float, float]:
        """attn_flops_per_key (decompressed, absorbed), computed once: every step of the batch search asks."""
        plain = 2.0 * self.heads * (self.head_dim + self.value_head_dim)
        return plain, 2.0 * self.heads * (2 * self.kv_lora_rank + self.rope_dim) if self.kv_lora_rank else plain

    @cached_property
    def attn_layers(self) -> int:
        """Layers that attend (the rest run a state-space mixer)."""
        return self.layers - self.state_layers

    @cached_property
    def full_layers(self) -> int:
        """Attention layers attending over every earlier token (the rest over a sliding window)."""
        return self.attn_layers - self.window_layers

    @property
    def mamba1(self) -> bool:
        return self.ssm_dt_rank > 0

    @property
    def ssm_conv_channels(self) -> int:
        """Channels of the mixer's causal convolution: the inner width (Mamba-1), plus B and C per group (Mamba-2)."""
        return self.ssm_inner + (0 if self.mamba1 else 2 * self.ssm_groups * self.ssm_state)

    @property
    def ssm_in_width(self) -> int:
        """in_proj's output width: x and the gate z (Mamba-1); x, z, B and C per group and dt per head (Mamba-2)."""
        return 2 * self.ssm_inner + (0 if self.mamba1 else 2 * self.ssm_groups * self.ssm_state + self.ssm_heads)

    @cached_property
    def ssm_matmul_params(self) -> int:
        """Matrix weights of one state-space mixer: in_proj, out_proj (Mamba-1: x_proj and dt_proj too)."""
        if not self.state_layers:
            return 0
        h, di, r, n = self.hidden, self.ssm_inner, self.ssm_dt_rank, self.ssm_state
        extra = di * (r + 2 * n) + r * di if self.mamba1 else 0
        return h * self.ssm_in_width + extra + di * h

    @cached_property
    def ssm_other_params(self) -> int:
        """The mixer's other weights: the convolution (weights and bias), A and D (per channel and state, Mamba-1;
        per head, Mamba-2), dt_proj's bias or dt's per-head bias, Mamba-2's gated norm."""
        if not self.state_layers:
            return 0
        di, c = self.ssm_inner, self.ssm_conv_channels
        conv = c * self.ssm_conv + c
        if self.mamba1:
            return conv + di * self.ssm_state + di + di  # A_log, D, dt_proj bias
        return conv + 3 * self.ssm_heads + di  # dt_bias, A_log, D; the gated RMSNorm

    @property
    def state_elems(self) -> int:
        """State one sequence keeps in one state-space layer: inner x state, and the convolution's last inputs."""
        return self.ssm_inner * self.ssm_state + self.ssm_conv_channels * max(0, self.ssm_conv - 1)

    def scan_flops(self, tokens: float) -> float:
        """FLOPs of the state-space layers' convolutions and scans over `tokens` tokens (all sequences)."""
        scan = SCAN_FLOPS_PER_STATE * self.ssm_inner * self.ssm_state
        return tokens * self.state_layers * (scan + 2.0 * self.ssm_conv_channels * self.ssm_conv)

    def scan_groups(self, s: Setup, batch: int, tokens: int, passes: float = 1.0,
                    state_passes: float = 1.0) -> tuple[OpGroup, ...]:
        """The state-space layers' convolutions and scans over batch x tokens tokens (x `passes`: training's forward
        and backward), and their states written (x `state_passes`; a decode step reads them too: 2); () without."""
        if not self.state_layers:
            return ()
        state = batch * self.state_layers * self.state_elems * s.precision.act_bytes / s.tp
        return (OpGroup("state-space scan", self.scan_flops(batch * tokens) * passes / s.tp, state * state_passes,
                        s.attention_path, text.scan_text(self.state_layers, self.ssm_inner, self.ssm_state,
                                                         self.ssm_conv_channels, self.ssm_conv, state_passes)),)

    def keys_attended(self, tokens: int) -> float:
        """Sum over the layers and over `tokens` causal positions (1..tokens) of the keys each attends: t on a full
        layer, min(t, window) on a sliding-window one."""
        if not (self.window_layers or self.encoder):  # the common case first: the batch search asks often
            return self.attn_layers * (tokens * (tokens + 1) / 2)
        if self.encoder:  # every token attends to every token
            return float(self.attn_layers * tokens * tokens)
        full = tokens * (tokens + 1) / 2
        w = min(tokens, self.window)
        windowed = w * (w + 1) / 2 + (tokens - w) * self.window
        return self.full_layers * full + self.window_layers * windowed

    def kv_held_elems(self, tokens: int) -> float:
        """KV-cache elements a sequence of `tokens` tokens holds, all layers (window layers keep the last window)."""
        held = self.full_layers * tokens + self.window_layers * min(tokens, self.window or tokens)
        return held * self.kv_layer_elems

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
    def attn_params(self) -> int:
        """Weights of one layer's attention matrices: Q, K, V, O; with latent attention Q's down and up projections
        (or one Q projection), kv_a (hidden -> latent + RoPE key), kv_b (latent -> per-head K nope and V) and O."""
        h, q = self.hidden, self.q_dim
        if not self.kv_lora_rank:
            return h * q + 2 * h * self.kv_dim + q * h
        r, nope = self.kv_lora_rank, self.head_dim - self.rope_dim
        q_proj = h * self.q_lora_rank + self.q_lora_rank * q if self.q_lora_rank else h * q
        return (q_proj + h * (r + self.rope_dim) + r * self.heads * (nope + self.value_head_dim)
                + self.heads * self.value_head_dim * h)

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (0 for a dense model)."""
        return self.layers - self.dense_layers if self.experts > 1 else 0

    @cached_property
    def mlp_kinds(self) -> tuple[tuple[int, int, int, int, int], ...]:
        """The layers' MLPs: (layers, experts, experts per token, intermediate size, shared size) per kind."""
        if self.experts == 1:
            return ((self.layers, 1, 1, self.ffn, 0),)
        kinds = ((self.moe_layers, self.experts, self.experts_per_token, self.ffn, self.shared_ffn),
                 (self.dense_layers, 1, 1, self.dense_ffn, 0))
        return tuple(k for k in kinds if k[0])

    def _mlp_params(self, E: int, k: int, ffn: int, shared: int, routed: float) -> float:
        """Weights of one layer's MLP of `routed` of its E experts: router, those experts, shared MLP."""
        router = self.hidden * E if E > 1 else 0
        return router + routed * self.mlp_matrices * self.hidden * ffn + self.mlp_matrices * self.hidden * shared

    @cached_property
    def layer_matmul_params(self) -> int:
        """Weights of the matrices in the largest layer: Q, K, V, O, the router, every expert's MLP and the shared
        MLP (one layer's share of a block FSDP gathers, or of a 16-bit copy)."""
        mixer = max(self.attn_params if self.attn_layers else 0, self.ssm_matmul_params)
        return mixer + max(int(self._mlp_params(E, k, f, sh, E)) for _, E, k, f, sh in self.mlp_kinds)

    @cached_property
    def matmul_total(self) -> int:
        """Weights of every layer's matrices (the LM head apart)."""
        return self.attn_layers * self.attn_params + self.state_layers * self.ssm_matmul_params + sum(
            n * int(self._mlp_params(E, k, f, sh, E)) for n, E, k, f, sh in self.mlp_kinds)

    @cached_property
    def active_total(self) -> int:
        """Matrix weights one token multiplies by in all layers: attention, routers, shared MLPs, its top-k experts."""
        return self.attn_layers * self.attn_params + self.state_layers * self.ssm_matmul_params + sum(
            n * int(self._mlp_params(E, k, f, sh, k)) for n, E, k, f, sh in self.mlp_kinds)

    def experts_read(self, tokens: float) -> float:
        """Expected distinct experts a pass over `tokens` tokens reads in one layer, routing uniform and independent.

        A token's k experts are k distinct of E, so by symmetry it picks a given expert with probability k/E; the
        expert is missed by all N tokens with probability (1 - k/E)^N, and by linearity of expectation
        E * (1 - (1 - k/E)^N) experts are read (the occupancy problem, Feller, An Introduction to Probability Theory,
        vol. 1, ch. II.5): k at N = 1, approaching E as N grows. Real routers are skewed, so this is a typical case.
        """
        E, k = self.experts, self.experts_per_token
        return float(E) if k >= E else E * (1.0 - (1.0 - k / E) ** tokens)

    def read_total(self, tokens: float) -> float:
        """Matrix weights all layers read in a pass over `tokens` tokens: all but the experts no token was sent to."""
        if self.experts == 1:
            return self.matmul_total
        return self.matmul_total - self.moe_layers * (self.experts - self.experts_read(tokens)) * self.expert_params

    @cached_property
    def other_total(self) -> int:
        """Norm weights (and biases) plus linear biases of all layers (each MLP's own, the router has none); latent
        attention adds the norms of its Q and KV latents."""
        per_norm = self.hidden * (2 if self.norm == "layernorm" else 1)
        mlp_bias = self.mlp_bias_params
        attn_bias = self.attn_layers * (self.q_dim + 2 * self.kv_dim + self.hidden)  # Q, K, V, O
        biases = attn_bias + sum(n * (E * mlp_bias(f) + (mlp_bias(sh) if sh else 0))
                                 for n, E, _, f, sh in self.mlp_kinds) if self.bias else 0
        latent_norms = self.q_lora_rank + self.kv_lora_rank if self.kv_lora_rank else 0
        return (self.layers * 2 * per_norm + self.attn_layers * latent_norms + biases
                + self.state_layers * self.ssm_other_params)

    def mlp_bias_params(self, ffn: int) -> int:
        """Biases of one MLP of intermediate size `ffn` in a biased model: up [+ gate] and down."""
        return ffn * (self.mlp_matrices - 1) + self.hidden

    @cached_property
    def lm_head_params(self) -> int:
        """The LM head's weights (an encoder has none: its logits are not computed)."""
        return 0 if self.encoder else self.vocab * self.hidden

    @cached_property
    def logits_vocab(self) -> int:
        """Logits per token a forward pass computes: the vocabulary, or none for an encoder."""
        return 0 if self.encoder else self.vocab

    @property
    def encoder_extra_params(self) -> int:
        """An encoder's segment embeddings, pooler and classifier."""
        h = self.hidden
        return self.token_types * h + (h * h + h if self.pooler else 0) + self.head_outputs * (h + 1)

    @property
    def quantizable_params(self) -> int:
        """The layers' matrices: AWQ, GPTQ, FP8 and W8A8 checkpoints keep embeddings and the LM head in 16-bit."""
        return self.matmul_total

    def quantized_params(self, scope: str) -> int:
        """Weights a precision of `scope` quantizes: the experts' matrices ('experts': gpt-oss's MXFP4; none in a
        dense model), the MLPs' ('mlp': Meta's FP8, attention 16-bit), else the layers' matrices."""
        if scope == EXPERTS_SCOPE:
            return self.moe_layers * self.experts * self.expert_params
        return self.matmul_total - (self.mixer_params if scope == MLP_SCOPE else 0)

    @property
    def mixer_params(self) -> int:
        """Matrix weights of every layer's token mixer: attention's projections and state-space layers'."""
        return self.attn_layers * self.attn_params + self.state_layers * self.ssm_matmul_params

    def quantized_token_params(self, scope: str) -> float:
        """Of the layers' weights one token multiplies by (active_total), those in a precision of `scope`'s format:
        its top-k experts' matrices for an 'experts' scope (none in a dense model), its MLPs' for 'mlp', else all of
        them."""
        if scope == MLP_SCOPE:
            return float(self.active_total - self.mixer_params)
        if scope != EXPERTS_SCOPE:
            return float(self.active_total)
        return float(self.moe_layers * self.experts_per_token * self.expert_params) if self.experts > 1 else 0.0

    def quantized_read(self, scope: str, layer_read: float, tokens: float) -> float:
        """Of the `layer_read` matrix weights a pass over `tokens` tokens reads, those in the quantized format: the
        experts read (experts_read per layer) for an 'experts' scope, all but the mixers' for 'mlp', else all."""
        if scope == MLP_SCOPE:
            return layer_read - self.mixer_params
        if scope != EXPERTS_SCOPE:
            return layer_read
        return self.moe_layers * self.experts_read(tokens) * self.expert_params if self.experts > 1 else 0.0

    @cached_property
    def matmul_params(self) -> int:
        """Weights one token's forward pass multiplies by (layers with its top-k experts + LM head)."""
        return self.active_total + self.lm_head_params

    @cached_property
    def active_params(self) -> int:
        """Parameters one token uses: all but the experts it is not routed to (= params for a dense model)."""
        unused = self.expert_params + (self.mlp_bias_params(self.ffn) if self.bias else 0)  # an expert and its biases
        return self.params - self.moe_layers * (self.experts - self.experts_per_token) * unused

    @cached_property
    def token_ffn(self) -> int:
        """MLP intermediate elements one token passes through in the widest layer: its top-k experts' and the shared
        MLP's, or a dense layer's."""
        return max(k * f + sh for _, _, k, f, sh in self.mlp_kinds)

    @cached_property
    def params(self) -> int:
        embed = self.vocab * self.hidden + (self.context * self.hidden if self.learned_pos_emb else 0)
        head = 0 if self.tied_embeddings else self.lm_head_params
        final_norm = self.hidden * (2 if self.norm == "layernorm" else 1)  # BERT: its embeddings' LayerNorm
        return self.matmul_total + self.other_total + embed + head + final_norm + self.encoder_extra_params

    @cached_property
    def kv_elems(self) -> int:
        """K and V (or latent) elements each token writes to the cache, all layers."""
        return self.attn_layers * self.kv_layer_elems

    def kv_repeat_passes(self, s: Setup) -> float:
        """Extra passes over the cached K and V of a decode step whose runtime repeats the KV heads to the query
        heads first (Setup.kv_repeat): the copy written and read, KV_REPEAT_PASSES x heads / kv_heads cache sizes; 0
        without grouped-query heads (repeat_kv returns the cache itself) or with latent attention (no KV heads)."""
        if not s.kv_repeat or self.kv_lora_rank or self.kv_heads >= self.heads:
            return 0.0
        return KV_REPEAT_PASSES * self.heads / self.kv_heads

    def kv_split(self, tp: int) -> int:
        """GPUs a layer's cache is split over: tp (by KV head), or 1 for latent attention, whose latent every head
        reads (each tensor-parallel GPU holds all of it, as vLLM and SGLang run MLA)."""
        return 1 if self.kv_lora_rank else tp

    @cached_property
    def _layer_traffic(self) -> tuple[float, float, float, float]:
        """Per token, all layers, elements read+written: (matmul inputs/outputs, fused elementwise kernels, what eager
        PyTorch adds to the forward, eager backward's non-attention traffic), summed over the layers' MLP kinds. See
        act_traffic_elems and eager_backward_traffic_elems."""
        per_kind = [tuple(n * x for x in self._kind_traffic(E, k, f, sh)) for n, E, k, f, sh in self.mlp_kinds]
        totals = [sum(t[i] for t in per_kind) for i in range(4)]
        if self.state_layers:  # their mixer's traffic in place of attention's (_kind_traffic counts attention's)
            attn, ssm = self._mixer_traffic()
            totals = [t + self.state_layers * (b - a) for t, a, b in zip(totals, attn, ssm)]
        return tuple(totals)  # type: ignore[return-value]

    def _mixer_traffic(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """One layer's token-mixer traffic per token in _layer_traffic's four terms: (attention's, a state-space
        mixer's). Attention: QKV in h, out q + 2kv; O in q, out h; backward 2x and q, k, v's merge. State space:
        in_proj in h, out its width; out_proj in inner, out h (Mamba-1: x_proj in inner, out dt_rank + 2 state; dt_proj
        in dt_rank, out inner); the convolution reads and writes its channels, the scan reads x, dt and z and
        writes y (4 inner), the gate reads 2 and writes 1 inner; backward 2x."""
        h, q, kv, di = self.hidden, self.q_dim, self.kv_dim, self.ssm_inner
        attn_io = (h + q + 2 * kv) + (q + h)
        bias = (q + 2 * kv + h) if self.bias else 0
        attn = (attn_io, 0.0, 0.0, 2 * attn_io + 2 * (q + 2 * kv) + bias)
        r, n = self.ssm_dt_rank, self.ssm_state
        gemm = (h + self.ssm_in_width) + (di + h) + ((di + r + 2 * n) + (r + di) if self.mamba1 else 0)
        elem = 2 * self.ssm_conv_channels + 4 * di + 3 * di
        return attn, (gemm, elem, 0.0, 2 * gemm + 2 * elem)

    def _kind_traffic(self, E: int, k: int, ffn: int, shared: int) -> tuple[float, float, float, float]:
        """_layer_traffic's terms for one layer whose MLP has E experts, top k, of `ffn` and a shared MLP."""
        h, q, kv = self.hidden, self.q_dim, self.kv_dim
        token_ffn = k * ffn + shared
        up = self.mlp_matrices - 1  # the MLP's input projections (gate and up, or up)
        mlps = (k if E > 1 else 1, 1 if shared else 0)  # (routed or dense MLPs, shared MLP) per token
        widths = ((ffn, mlps[0]), (shared, mlps[1]))
        mlp_io = sum(n * (h + up * f + f + h) for f, n in widths)  # up [+ gate]: in h, out up x f; down: in f, out h
        router_io = h + E if E > 1 else 0  # the router's matmul: in h, out E logits
        gemm_io = (h + q + 2 * kv) + (q + h) + mlp_io + router_io  # QKV: in h, out q+2kv; O: in q, out h
        swiglu = self.ffn_kind == "swiglu"
        act = (3 if swiglu else 2) * token_ffn  # one kernel: silu(gate) x up reads 2f, writes f; gelu f, f
        routing = k * 2 * h + E if E > 1 else 0  # each expert's gather and weighted scatter-add; softmax/top-k reads E
        elementwise = 2 * 2 * h + 2 * 3 * h + act + routing  # two norms (read h, write h), two residual adds (2h, h)
        eager_extra = 2 * token_ffn if swiglu else 0  # eager: silu (f, f) and the product (2f, f) apart
        bias_io = (q + 2 * kv + h + sum(n * (up * f + h) for f, n in widths)) if self.bias else 0
        act_bwd = (9 if swiglu else 3) * token_ffn
        # backward, per eager op: each matmul's dX = dY W^T and dW = X^T dY read dY twice, X once and write dX (2x its
        # forward I/O); a norm's backward reads dY and x and writes dx (3h); each residual branch accumulates two
        # gradients (read 2h, write h); q, k and v's gradients merge into one (a fused projection's split concatenates
        # them, read and write q+2kv; separate projections add their input gradients, 2 x 3h); gelu_backward reads dY
        # and x, writes dx (3f); swiglu: the product's two gradients (2f read, f written each) and silu_backward (3f)
        # = 9f; each bias gradient sums dY over the tokens (reads it once more); the routing's gathers and
        # scatter-adds swap in backward (2x forward)
        qkv_merge = 2 * (q + 2 * kv)
        eager_bwd = 2 * gemm_io + 2 * 3 * h + 2 * 3 * h + qkv_merge + act_bwd + bias_io + 2 * routing
        return gemm_io, elementwise, eager_extra, eager_bwd

    @cached_property
    def act_traffic_elems(self) -> float:
        """Elements read+written per token by the layers' non-matmul kernels and matmul I/O, each elementwise chain
        one kernel (fused elementwise; eager_act_traffic_elems adds what eager PyTorch runs apart).

        Per layer: two norms (read+write h each), two residual adds (read 2h, write h),
        the activation function (swiglu: read 2f, write f; gelu: read f, write f) and the
        matmuls' inputs/outputs (QKV in h, out q+2kv; O in q, out h; MLP in h, out f or 2f; down in f, out h).
        Mixture of experts: that MLP traffic for each of the token's k experts plus its gather and weighted
        scatter-add (2h each), the shared MLP's, and the router (in h, out E logits, read E by softmax/top-k).
        """
        gemm_io, elementwise, _, _ = self._layer_traffic
        return gemm_io + elementwise

    @cached_property
    def eager_act_traffic_elems(self) -> float:
        """act_traffic_elems as eager PyTorch runs it, every op its own kernel: a SwiGLU MLP's silu(gate) and its
        product with up are two kernels (silu reads and writes f, the product reads 2f and writes f: 2f more)."""
        return self.act_traffic_elems + self._layer_traffic[2]

    @cached_property
    def eager_backward_traffic_elems(self) -> float:
        """Elements read+written per token by eager PyTorch's backward of the layers, attention kernels apart: each
        matmul's two backward GEMMs read dY twice and X once and write dX (2x its forward I/O), each norm's backward
        reads dY and x and writes dx (3h), each residual branch point adds two gradients (3h), q, k and v's gradients
        merge (2(q + 2kv)), gelu_backward reads dY and x and writes dx (3f; SwiGLU's product and silu backward 9f),
        each bias gradient reads dY once more, and a mixture's gathers and scatter-adds swap (2x forward)."""
        return self._layer_traffic[3]

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
        per_f = 4 if self.ffn_kind == "swiglu" else 2
        mlp = sum(n * (per_f * (k * f + sh) + (k * self.hidden + E if E > 1 else 0))
                  for n, E, k, f, sh in self.mlp_kinds)
        mixer = 2 * self.q_dim + 2 * self.kv_dim  # Q, K, V, the attention output
        ssm = self.ssm_in_width + self.ssm_conv_channels + 2 * self.ssm_inner  # in_proj out, conv out, scan out, gate
        return self.layers * 4 * self.hidden + self.attn_layers * mixer + self.state_layers * ssm + mlp

    def kernels_per_layer(self, E: int | None = None, k: int | None = None, shared: int | None = None) -> int:
        """Kernel launches per layer in eager PyTorch (norm, QKV, rotary/none, attention, O, add,
        norm, MLP matmuls, activation, add): counted for a LLaMA/GPT block. A mixture-of-experts layer replaces
        the MLP by the router and, at batch 1, its k experts (each an MLP plus a gather and a scatter-add) and the
        shared MLP; a larger batch runs more experts but there launches matter less than the weights read. Latent
        attention replaces the fused QKV by its projections and latent norms (MLA_KERNELS). E, k, shared: the
        layer's MLP (default: the model's)."""
        E = self.experts if E is None else E
        k = self.experts_per_token if k is None else k
        shared = self.shared_ffn if shared is None else shared
        dense = (12 if self.ffn_kind == "swiglu" else 11) + (
            MLA_KERNELS[bool(self.q_lora_rank)] - 1 if self.kv_lora_rank else 0)
        if E == 1:
            return dense
        mlp = self.mlp_matrices + 1  # its matmuls and the activation
        return (dense - mlp + ROUTER_KERNELS + k * (mlp + EXPERT_GATHER_SCATTER_KERNELS) + (mlp if shared else 0))

    def expert_loop_costs(self, s: Setup, passes: tuple[tuple[int, int], ...]) -> dict[str, float]:
        """OpGroup fields of a runtime's Python loop over every expert of each MoE layer (Setup.expert_loop), over
        `passes` ((tokens of a forward pass, how many such passes), ...): one device-to-host sync per expert and
        layer, and the idle-expert operators on the experts no token was routed to, E - experts_read(tokens) of
        them (experts_read: routing uniform and independent). A precision with its library's kernels (QuantKernel)
        runs its linear modules on the idle experts' empty inputs too: their host dispatches (the grid is empty, the
        Python launch is not) and, where each call synchronizes, one more round trip per call. {} for a dense model
        or another runtime."""
        if not (s.expert_loop and self.moe_layers):
            return {}
        syncs = sum(n for _, n in passes) * self.moe_layers * self.experts
        idle = sum(n * (self.experts - self.experts_read(rows)) for rows, n in passes if n) * self.moe_layers
        out = {"host_syncs": syncs, "idle_expert_ops": idle * s.idle_expert_ops}
        k = s.precision.kernel
        if k is None:
            return out
        calls = idle * self.mlp_matrices
        return out | {"host_kernels": calls * k.host_kernels_per_call,
                      "host_syncs": syncs + (calls if k.synchronizes else 0.0)}

    def rotary_sync_costs(self, s: Setup, layer_read: float, head_tp: int) -> dict[str, float]:
        """OpGroup fields of the per-layer device-to-host sync of transformers' FlashAttention-2 class in the
        releases that have it (Setup.rotary_sync_types; planner.inputs.rotary_sync): one round trip a layer each
        forward, after the q/k/v projections, so their GPU time hides none of the host's dispatch (synced_share:
        the q/k/v weights' share of the linear layers' weights read, bytes taken as weights at one precision).
        {} for another model type, release or attention."""
        if not self.model_type or self.model_type not in s.rotary_sync_types:
            return {}
        qkv = self.attn_layers * self.hidden * (self.q_dim + 2 * self.kv_dim) / s.tp
        return {"host_syncs": float(self.attn_layers),
                "synced_share": qkv / (layer_read / s.tp + self.lm_head_params / head_tp)}

    @cached_property
    def kernels_per_forward(self) -> float:
        ssm = self.state_layers * (SSM_KERNELS[self.mamba1] - 4) if self.state_layers else 0  # in place of 4
        return float(sum(n * self.kernels_per_layer(E, k, sh) for n, E, k, _, sh in self.mlp_kinds) + ssm
                     + FIXED_KERNELS)

    @cached_property
    def small_kernels_per_forward(self) -> float:
        """Kernels per forward pass that move only a hidden vector or two per token (SMALL_KERNELS_PER_LAYER per
        layer, SMALL_FIXED_KERNELS outside them), in fused-block units as kernels_per_forward."""
        return float(self.layers * SMALL_KERNELS_PER_LAYER + SMALL_FIXED_KERNELS)

    @lru_cache(maxsize=4096)  # noqa: B019 (profiles are immutable; the batch search asks for the same shapes often)
    def linear_gemms(self, rows: int, logits: int, tp: int, head_tp: int | None = None) -> tuple[Gemm, ...]:
        """The forward GEMMs of one pass over `rows` tokens (batch x new tokens) with `logits` LM-head rows: per layer
        the fused QKV (N = q + 2 kv), O, the MLP's up [+ gate] and down projections, the column-parallel N and the
        row-parallel K split over tp (Megatron-LM), and the LM head's vocabulary split over head_tp (default tp). A
        mixture of experts runs each of the experts_read(rows) experts a pass touches on its expected share of the
        routed rows, rows x k / experts read (at least 1). Dense first layers run their own MLP; latent attention runs
        its projections (attention_gemms)."""
        m, h = self, self.hidden

        def mlp(r: int, ffn: int, count: float) -> list[Gemm]:
            return [(r, max(1, (m.mlp_matrices - 1) * ffn // tp), h, count), (r, h, max(1, ffn // tp), count)]
        out = list(m.attention_gemms(rows, tp))
        for n, E, k, f, sh in m.mlp_kinds:
            if E == 1:
                out += mlp(rows, f, n)
            else:
                read = m.experts_read(rows)
                out += mlp(max(1, math.ceil(rows * k / read)), f, n * read)
                out += mlp(rows, sh, n) if sh else []
        return (*out, *m.lm_head_gemm(logits, tp if head_tp is None else head_tp))

    def attention_gemms(self, rows: int, tp: int) -> tuple[Gemm, ...]:
        """One pass's attention projections, every layer: the fused QKV and O; with latent attention Q (or its down
        and up projections), kv_a (hidden -> latent + RoPE key, not split: every GPU needs the whole latent), kv_b
        (latent -> each head's K nope and V, split by head) and O."""
        m, L, h = self, self.attn_layers, self.hidden
        ssm = m.ssm_gemms(rows, tp)
        if not m.kv_lora_rank:
            return ((rows, max(1, (m.q_dim + 2 * m.kv_dim) // tp), h, L), (rows, h, max(1, m.q_dim // tp), L), *ssm)
        r, nope, vd = m.kv_lora_rank, m.head_dim - m.rope_dim, m.value_head_dim
        q = (((rows, m.q_lora_rank, h, L), (rows, max(1, m.q_dim // tp), m.q_lora_rank, L)) if m.q_lora_rank
             else ((rows, max(1, m.q_dim // tp), h, L),))
        return (*q, (rows, r + m.rope_dim, h, L), (rows, max(1, m.heads * (nope + vd) // tp), r, L),
                (rows, h, max(1, m.heads * vd // tp), L), *ssm)

    def ssm_gemms(self, rows: int, tp: int) -> tuple[Gemm, ...]:
        """The state-space mixers' GEMMs of one pass, split over tp by channel: in_proj, out_proj (Mamba-1: x_proj,
        whose output every GPU needs whole, and dt_proj)."""
        m, S, h, di = self, self.state_layers, self.hidden, self.ssm_inner
        if not S:
            return ()
        out = [(rows, max(1, m.ssm_in_width // tp), h, S), (rows, h, max(1, di // tp), S)]
        if m.mamba1:
            r = m.ssm_dt_rank
            out += [(rows, r + 2 * m.ssm_state, max(1, di // tp), S), (rows, max(1, di // tp), r, S)]
        return tuple(out)

    def linear_calls(self, rows: int) -> float:
        """Calls of the layers' linear modules in one pass over `rows` tokens (the LM head not counted): per layer the
        attention's projections and the MLP's matrices, in a mixture of experts the router and each expert a pass
        reaches (experts_read) plus the shared MLP. A quantization library's kernels run once per call."""
        m = self
        attn = MLA_LINEAR_MODULES[bool(m.q_lora_rank)] if m.kv_lora_rank else ATTENTION_LINEAR_MODULES
        calls = 0.0
        for n, E, _, _, sh in m.mlp_kinds:
            if E == 1:
                calls += n * (attn + m.mlp_matrices)
            else:
                mlps = m.experts_read(rows) + (1 if sh else 0)
                calls += n * (attn + 1 + mlps * m.mlp_matrices)  # + 1: the router
        return calls + (m.state_layers * (SSM_LINEAR_MODULES[m.mamba1] - attn) if m.state_layers else 0)

    def lm_head_gemm(self, logits: int, tp: int) -> tuple[Gemm, ...]:
        """The LM head's GEMM over `logits` rows (vocab split over tp GPUs); () when no logits are computed."""
        return ((logits, max(1, self.vocab // tp), self.hidden, 1),) if logits else ()

    def eager_llama_code(self, s: Setup) -> bool:
        """Whether `s`'s runtime runs Hugging Face's LLaMA-family model code op by op (eager PyTorch and an RMSNorm
        decoder): its float32 norm, rotary and softmax chains then cost what planner.inputs.models.eager_chains
        counts."""
        return not s.fused_elementwise and self.norm == "rmsnorm" and not self.encoder

    def eager_chain_bytes(self, s: Setup, backward: bool = False) -> float:
        """Bytes per token of one forward pass (backward: of its backward, eager_chains' *_backward_* figures) that
        eager LLaMA-family code moves beyond fused chains (0 otherwise): 2 norms per layer and the final one over the
        hidden vector, rotary over Q and K (latent attention: its RoPE parts, rope_dim per head and the shared key)
        of the attention layers."""
        if not self.eager_llama_code(s):
            return 0.0
        a = s.precision.act_bytes
        norm, rotary = ((rmsnorm_backward_chain_bytes, rotary_backward_chain_bytes) if backward
                        else (rmsnorm_chain_bytes, rotary_chain_bytes))
        norms = (2 * self.layers + 1) * self.hidden * norm(a)
        if self.learned_pos_emb:
            return norms
        roped = self.rope_dim * (self.heads + 1) if self.kv_lora_rank else self.q_dim + self.kv_dim
        return norms + self.attn_layers * roped * rotary(a)

    def autocast_upcasts(self, s: Setup) -> bool:
        """Whether `s`'s runtime trains under torch.autocast over float32 weights, op by op, in a 16-bit precision:
        its loss then runs over float32 logits (autocast_chains.loss_bytes). Not under FSDP (s.shard > 1, or
        SHARD_GRAD_OP, the zero2 of PyTorch's layouts), whose mixed precision gathers 16-bit weights
        (MixedPrecision(param_dtype=...), pytorch.org/docs/stable/fsdp.html, read 2026-11-27)."""
        return (s.autocast_fp32_weights and not s.fused_elementwise and s.precision.act_bytes < FP32_BYTES
                and s.shard == 1 and s.zero_stage != 2)

    def autocast_stream_bytes(self, s: Setup) -> tuple[float, float]:
        """(forward, backward) bytes per token that autocast's float32 residual stream, LayerNorms and casts add to a
        training pass of the layers under autocast_upcasts with LayerNorm (an RMSNorm model's float32 chains are
        eager_chains'), and Hugging Face's GELU chain in eager PyTorch (autocast_chains)."""
        fwd = bwd = 0.0
        a = s.precision.act_bytes
        if self.autocast_upcasts(s) and self.norm == "layernorm":
            per = self.layers * self.hidden
            fwd, bwd = per * stream_forward_bytes(a), per * stream_backward_bytes(a)
        if self.gelu_tanh_chain and not s.fused_elementwise:  # its ops, in float32 under autocast
            gelu = gelu_tanh_chain_bytes(a, self.autocast_upcasts(s))
            per = self.layers * self.token_ffn
            fwd, bwd = fwd + per * gelu[0], bwd + per * gelu[1]
        return fwd, bwd

    def loss_bytes_per_logit(self, s: Setup) -> float:
        """Bytes per logit element a training step's loss moves, forward and backward."""
        return loss_bytes(s.precision.act_bytes) if self.autocast_upcasts(s) else fused_loss_bytes()

    def score_upcast_bytes(self, s: Setup) -> float:
        """Bytes per materialized score that eager LLaMA-family code's float32 softmax adds (0 otherwise)."""
        if not (self.eager_llama_code(s) and s.attention.scores_materialized):
            return 0.0
        return softmax_upcast_bytes(s.precision.act_bytes)

    # ------------------------------------------------------------ the model protocol: work per step
    def _forward(self, s: Setup, batch: int, tokens: int, keys_sum: float, keys_max: int,
                 logits_tokens: int, name: str) -> tuple[OpGroup, ...]:
        """One forward pass of `batch` sequences of `tokens` new tokens each (p-independent part).

        keys_sum: sum over the new tokens of the keys each attends to (causal prefill: t(t+1)/2; 0 in decode, whose
        keys are counted per position); a sliding-window layer attends min(t, window) of them (keys_attended).
        """
        m, p, tp = self, s.precision, s.tp
        bt = batch * tokens
        layer_mp = m.active_total  # per token: its top-k experts only
        layer_read, note = layer_mp, ""
        if m.experts > 1:  # per pass: every expert some token was routed to
            layer_read, note = m.read_total(bt), m._experts_note(bt)
        head_tp = s.lm_head_tp  # tp, or 1 when the runtime keeps the whole LM head on every GPU
        lin_flops = 2.0 * (bt * layer_mp / tp + batch * logits_tokens * m.lm_head_params / head_tp)
        buffered = s.buffered(bt)  # the GEMM then reads the 16-bit copy, not the stored format
        stored = m.quantized_read(p.quantized_weights, layer_read, bt)  # the rest at outside_weight_bytes
        # a precision over every weight copies the head too when it buffers (its dequant group counts the head)
        head_bytes = p.act_bytes if buffered and p.quantized_weights == "all" else p.outside_weight_bytes
        lin_bytes = ((stored * (p.act_bytes if buffered else p.weight_bytes)
                      + (layer_read - stored) * p.outside_weight_bytes) / tp
                     + m.lm_head_params * head_bytes / head_tp)
        # the runtime's prompt GEMM (llama.cpp by build and GPU; None: the generic model), chosen by a pass's rows: a
        # prompt prefilled in chunks of the runtime's micro-batch (prefill_work) runs passes of that many tokens
        pass_rows = batch * min(tokens, s.prefill_chunk or tokens)
        path = s.prompt_gemm(pass_rows)
        # the runtime's own FlashAttention kernel for such a pass (llama.cpp's wmma / mma by build and GPU), if any
        fa = s.prompt_attention_kernel(pass_rows)
        copied = (m._path_weights(s, layer_read, stored)
                  if path is not None and path.copies(bool(p.dequant_ops_per_weight), p.weight_bytes) else 0.0)
        lin_bytes += copied * ((path.buffer_bytes - p.weight_bytes) if copied else 0.0)  # the GEMM reads the copy
        if s.attention.scores_materialized:  # softmax(QK^T)V computes every score; the causal mask only hides some
            layer_keys = m.attn_layers * tokens * keys_max
        else:
            layer_keys = m.keys_attended(tokens) if keys_sum else 0.0
        attn_flops = m.attn_flops_per_key() * batch * layer_keys / tp
        qkvo = bt * m.attn_layers * (2 * m.q_dim + 2 * m.kv_dim) * p.act_bytes / tp
        kv_write = 0.0 if m.encoder else bt * m.kv_elems * s.kv_dtype.bytes / m.kv_split(tp)
        per_score = score_passes(s)[0] * p.act_bytes + m.score_upcast_bytes(s)
        scores = (per_score * batch * m.heads * m.attn_layers * tokens * keys_max / tp
                  if s.attention.scores_materialized else 0.0)
        if scores and not s.fused_elementwise:
            scores += bt * m.attn_layers * HEAD_LAYOUT_COPY_FWD * m.q_dim * p.act_bytes / tp
        traffic = m.act_traffic_elems if s.fused_elementwise else m.eager_act_traffic_elems  # _forward_traffic
        chains = m.eager_chain_bytes(s)
        elem_bytes = (bt * (traffic * p.act_bytes + chains) / tp
                      + 2 * batch * logits_tokens * m.logits_vocab * float(FP32_BYTES))
        converted = (sum(r * k * c for r, _, k, c in m.linear_gemms(bt, 0, tp))
                     if path is not None and path.act_convert_bytes else 0.0)
        elem_bytes += converted * (path.act_convert_bytes if converted else 0.0)  # GEMM inputs to q8_1 or fp16
        lin_text, attn_text, elem_text = text.forward_formulas(
            s, name, note, text.score_text(s, score_passes(s), True) if scores else "", m.ffn_kind == "swiglu",
            m._forward_traffic(s))
        chain_words, upcast_words = text.eager_chain_text(chains, m.score_upcast_bytes(s))
        elem_text, attn_text = elem_text + chain_words, attn_text + upcast_words
        if converted:
            elem_text += text.converted_inputs_text(converted, path)
        # a runtime's CUDA-core GEMV multiplies quantized weights without tensor-core tiles (its dot products are the
        # GEMV group's instructions); with the LM head when the format quantizes it too (GGUF)
        gemv = s.quantized_gemv(bt)
        # a fused MLP that keeps its gate and up projections on the library's GEMV (AutoAWQ's) unpacks them there
        gate_up = m._gate_up_weights(tp) if s.mlp_gemv and not gemv else 0.0
        rate, rate_note = (s.linear_rate(bt), "") if p.kernel else m._mma_path_rate(p, bt, tp, lin_flops)
        rotary = m.rotary_sync_costs(s, layer_read, head_tp)
        return (
            OpGroup("linear layers", lin_flops, lin_bytes, path.compute_path if path else p.compute_path,
                    lin_text + text.linear_extras(gemv, buffered, p.act_bytes)
                    + (text.prompt_path_text(path, copied) if path else
                       s.linear_note(bt) if p.kernel or s.fp16_accumulate else "") + rate_note
                    + (text.rotary_sync_text(m.model_type, m.attn_layers, rotary["synced_share"]) if rotary else ""),
                    gemms=() if gemv else m.linear_gemms(bt, batch * logits_tokens, tp, head_tp),
                    # a library GEMM's own MMA rate, fp16 accumulation: only with a library kernel or the runtime's;
                    # a runtime kernel's older MMA instruction (Precision.mma_fraction) on its quantized weights' share
                    rate_factor=path.flops_per_op if path else rate,
                    accumulate16=(path.accumulate16 if path else
                                  s.accumulate16(bt) if p.kernel or s.fp16_accumulate else False),
                    ceiling_fraction=path.fraction if path else 0.0,
                    **merge_costs(call_costs(s, m.linear_calls(bt) / tp, bt) if p.kernel else {},
                                  m.expert_loop_costs(s, ((bt, 1),)), rotary)),
            *((prompt_scale_group(path, lin_flops),) if path is not None and path.scale_flops and not gemv else ()),
            *(mlp_gemv_groups(gate_up, s, bt) if gate_up else ()),
            *(dequant_groups(m._path_weights(s, layer_read, stored) - gate_up, s, bt)
              if p.dequant_ops_per_weight or copied else ()),
            *(split_k_groups(sum(r * n * c for r, n, _, c in m.linear_gemms(bt, 0, tp)), s, bt)
              if p.kernel is not None else ()),
            *(m.scan_groups(s, batch, tokens, state_passes=2.0 if keys_sum == 0 else 1.0) if m.state_layers else ()),
            OpGroup(ATTENTION_GROUP, attn_flops, qkvo + kv_write + scores, s.attention_path,
                    attn_text + (text.prompt_attention_text(fa) if fa is not None else ""),
                    rate_factor=1.0 if fa is not None else s.attention.speed_vs_fa2,
                    peak_fractions=(((s.prompt_attention_major, fa.fraction),) if fa is not None
                                    else s.attention.peak_fractions),
                    accumulate16=fa is not None),
            OpGroup("elementwise & norms", 0.0, elem_bytes, s.attention_path,
                    elem_text + text.small_kernel_text(m.small_kernels_per_forward),
                    small_kernels=m.small_kernels_per_forward),
        )

    def _mma_path_rate(self, p, bt: int, tp: int, lin_flops: float) -> tuple[float, str]:
        """(The linear layers' rate factor, its words) when the runtime multiplies the precision's quantized weights
        at p.mma_fraction of the matmul ceiling (Precision.on_mma_path): their share of the pass's linear FLOPs at
        that rate, the rest at the ceiling (Precision.quantized_rate); (1, '') otherwise."""
        if p.mma_fraction == 1.0 or not lin_flops:
            return 1.0, ""
        share = 2.0 * bt * self.quantized_token_params(p.quantized_weights) / tp / lin_flops
        rate = p.quantized_rate(share)
        return rate, (f"; {share:.0%} of these FLOPs (the {p.quantized_weights}') at {p.mma_fraction:g} of the matmul "
                      f"ceiling, the runtime's kernel for {p.id}: x{rate:.3f} in all")

    def _gate_up_weights(self, tp: int) -> float:
        """Weights per GPU of the dense MLPs' gate and up projections (SwiGLU; 0 for a GELU MLP or a mixture's
        experts), split over tp."""
        if self.ffn_kind != "swiglu":
            return 0.0
        return sum(n * 2 * self.hidden * f for n, E, _, f, _ in self.mlp_kinds if E == 1) / tp

    def _path_weights(self, s: Setup, layer_read: float, stored: float) -> float:
        """Weights per GPU a pass unpacks or converts: the quantized ones (_quantized_read), or every weight it reads
        when the runtime's prompt GEMM converts 16-bit weights too (an F16 matrix into an fp32 copy)."""
        if s.precision.dequant_ops_per_weight:
            return self._quantized_read(s, stored)
        return layer_read / s.tp + self.lm_head_params / s.lm_head_tp

    def _quantized_read(self, s: Setup, layer_read: float) -> float:
        """Quantized weights a pass unpacks per GPU: the layers' quantized matrices it reads (quantized_read), and the
        LM head when the format quantizes it too (GGUF files, gpt-fast)."""
        p = s.precision
        head = self.lm_head_params if p.outside_weight_bytes == p.weight_bytes else 0
        return layer_read / s.tp + head / s.lm_head_tp

    def _chunked_dequant(self, s: Setup, batch: int, c: int, full: int, rest: int) -> list[OpGroup]:
        """The quantized-weight work of a prompt prefilled in `full` chunks of c tokens and one of `rest`: the weights
        are unpacked once per chunk, in the runtime's GEMV for a chunk of at most its GEMV tokens."""
        m = self
        tokens = batch * (full * c + rest)
        layer_read = m.read_total(tokens)
        q = m._path_weights(s, layer_read, m.quantized_read(s.precision.quantized_weights, layer_read, tokens))
        parts = [g._replace(flops=g.flops * full, bytes=g.bytes * full) for g in dequant_groups(q, s, batch * c)
                 ] if full else []
        for g in dequant_groups(q, s, batch * rest) if rest else ():
            same = next((i for i, x in enumerate(parts) if x.name == g.name), None)
            if same is None:
                parts.append(g)
            else:
                parts[same] = parts[same]._replace(flops=parts[same].flops + g.flops, bytes=parts[same].bytes + g.bytes)
        return [g._replace(formula=g.formula + text.chunked_dequant_text(full + bool(rest), c))
                for g in parts]

    def _forward_traffic(self, s: Setup) -> float:
        """Elementwise and matmul-I/O elements per token of one forward pass under `s`'s runtime (fused or eager)."""
        return self.act_traffic_elems if s.fused_elementwise else self.eager_act_traffic_elems

    def _experts_note(self, tokens: int) -> str:
        """How much of a mixture of experts a pass over `tokens` tokens computes and reads ('' when dense)."""
        if self.experts == 1:
            return ""
        return text.experts_note(self.experts, self.experts_per_token, self.experts_read(tokens), tokens)

    def forward_work(self, s: Setup, batch: int, size: int) -> tuple[OpGroup, ...]:
        """A causal forward pass over `size` tokens per sequence, logits for every token."""
        return self._forward(s, batch, size, size * (size + 1) / 2, size, 0 if self.encoder else size, "input")

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
            if g.name in (DEQUANT_GROUP, GEMV_GROUP):  # timed per chunk below, right after the matmuls
                continue
            if g.name == "linear layers":
                tiles = lambda rows: () if s.quantized_gemv(rows) else m.linear_gemms(rows, 0, s.tp)  # noqa: E731
                per_chunk = scaled_gemms(tiles(batch * c), full) if full else ()
                last = tiles(batch * rest) if rest else ()
                # the library's calls of the full chunks and of the last one (its kernels may differ: buffered)
                parts = [call_costs(s, n * m.linear_calls(rows) / s.tp, rows)
                         for rows, n in ((batch * c, full), (batch * rest, 1)) if n and rows]
                costs = {k: sum(x.get(k, 0.0) for x in parts) for k in ("launches", "host_kernels")
                         } if s.precision.kernel else {}
                loop = m.expert_loop_costs(s, ((batch * c, full), (batch * rest, 1 if rest else 0)))
                costs = merge_costs(costs, loop)
                g = g._replace(bytes=g.bytes * chunks,
                               formula=g.formula + text.chunked_weights_text(chunks, c, batch * c),
                            gemms=per_chunk + last + (() if s.quantized_gemv(batch)
                                                      else m.lm_head_gemm(batch, s.lm_head_tp)),
                            **costs)
                # the weights' unpacking (or copy) per chunk, after the matmul group whose stream may hide it
                out += [g, *m._chunked_dequant(s, batch, c, full, rest)]
                continue
            elif g.name == ATTENTION_GROUP:
                manual = s.attention.scores_materialized
                flops = m.attn_flops_per_key() * m.attn_layers * batch * scored / s.tp if manual else g.flops
                kv_read = batch * earlier * m.kv_elems * s.kv_dtype.bytes / m.kv_split(s.tp)
                per_score = score_passes(s)[0] * s.precision.act_bytes + m.score_upcast_bytes(s)
                scores = per_score * batch * m.heads * m.attn_layers * scored / s.tp if manual else 0.0
                unscored = g.bytes - (per_score * batch * m.heads * m.attn_layers * prompt * c / s.tp
                                      if manual else 0.0)
                g = g._replace(flops=flops, bytes=unscored + kv_read + scores,
                            formula=g.formula + text.chunked_kv_text(chunks, c))
            elif g.small_kernels:  # every pass launches the small kernels again
                g = g._replace(small_kernels=g.small_kernels * chunks)
            out.append(g)
        return tuple(out)

    def decode_work(self, s: Setup, batch: int) -> tuple[OpGroup, ...]:
        """One decode step for `batch` sequences: one new token each, attending p keys (affine in p) on the full
        layers. A sliding-window layer attends min(p, window) keys: its own group, capped at the window
        (OpGroup.cap_pos). Latent attention runs absorbed (attn_flops_per_key) and reads each cached latent once for
        all heads."""
        m = self
        *head, attn, elem = self._forward(s, batch, 1, 0.0, 0, 1, "1 x batch")
        kv_tp = m.kv_split(s.tp)
        key_flops = m.attn_flops_per_key(absorbed=True) * batch / s.tp
        # appending by concatenation copies the cache: it is read once more and written once (KV_CONCAT_PASSES)
        kv_passes = 1.0 + (KV_CONCAT_PASSES if s.kv_concat else 0.0) + m.kv_repeat_passes(s)
        kv_per_key = batch * m.kv_layer_elems * s.kv_dtype.bytes / kv_tp  # one layer, one key position
        # materialized scores, one layer, one key position (a window layer scores min(p, window) of them too)
        score_per_key = ((score_passes(s)[0] * s.precision.act_bytes + m.score_upcast_bytes(s)) * batch * m.heads / s.tp
                         if s.attention.scores_materialized else 0.0)
        latency_us = s.attention.decode_latency_us
        fraction = s.kv_read_fraction
        # batched score GEMMs (Setup.kv_read_fraction) read the cache they attend (the repeated copy where the heads
        # are repeated) at `fraction` of the stream rate; the copies and the scores stream: the group's bytes move at
        # the blend of the two rates
        kv_passes_read = m.kv_repeat_passes(s) / KV_REPEAT_PASSES or 1.0
        per_key = kv_per_key * kv_passes + score_per_key
        read = kv_per_key * kv_passes_read
        bw_factor = per_key / (per_key - read + read / fraction) if fraction < 1.0 and per_key else 1.0
        # a kernel without a split along the keys reads on batch x heads / tp blocks (OpGroup.grid_blocks)
        blocks = batch * m.heads / s.tp if s.heads_grid and per_key else 0.0
        attn = OpGroup(ATTENTION_GROUP, 0.0, attn.bytes, attn.compute_path,
                       text.decode_attention_text(s.kv_concat, m.attn_layers, latency_us, m.kv_repeat_passes(s))
                       + (text.decode_layer_kinds_text(m.kv_lora_rank, m.window, m.window_layers)
                          if m.kv_lora_rank or m.window_layers else "")
                       + (text.decode_kv_read_text(fraction, bw_factor) if bw_factor < 1.0 else "")
                       + (text.heads_grid_text(blocks) if blocks else ""),
                       flops_per_pos=key_flops * m.full_layers,
                       bytes_per_pos=m.full_layers * (kv_per_key * kv_passes + score_per_key),
                       rate_factor=attn.rate_factor,
                       peak_fractions=attn.peak_fractions, latency_s=m.attn_layers * latency_us * 1e-6,
                       bw_factor=bw_factor, grid_blocks=blocks,
                       grid_read=read / per_key / fraction if blocks else 0.0)
        if not m.window_layers:
            return (*head, attn, elem)
        window = attn._replace(name=WINDOW_GROUP, bytes=0.0, formula=text.window_decode_text(m.window_layers, m.window),
                               flops_per_pos=key_flops * m.window_layers,
                               bytes_per_pos=m.window_layers * (kv_per_key * kv_passes + score_per_key), latency_s=0.0,
                               cap_pos=m.window)
        return (*head, attn, window, elem)

    def train_work(self, s: Setup, batch: int, size: int, checkpointing: bool) -> tuple[OpGroup, ...]:
        """One micro-step: forward + backward (2x forward) [+ recomputed forward] over `size` tokens.

        Elementwise traffic: a runtime that fuses elementwise chains moves 3x the forward's (4x with checkpointing);
        eager PyTorch runs every op as its own kernel, so its backward is counted op by op
        (eager_backward_traffic_elems), manual attention's scores take the eager passes (score_passes) and a model with
        dropout pays each dropout kernel (two hidden sites per layer, and the attention probabilities of manual
        attention), forward and backward; a fused runtime folds dropout into the kernels beside it.

        FLOPs and bytes are the whole model's (planner.engine.train_layout.split_groups gives each GPU its share); the
        GEMM shapes (OpGroup.gemms) are one GPU's under s's layout, so their tile and wave quantization counts: M =
        its 1/cp of the tokens, column-parallel N and row-parallel K / tp, the LM head's vocabulary / tp (Megatron-LM:
        Shoeybi et al. 2019, https://arxiv.org/abs/1909.08053, sec. 3)."""
        m, p = self, s.precision
        b = p.act_bytes
        ckpt = 1.0 if checkpointing else 0.0  # one recomputed forward
        fb = forward_equivalents(checkpointing)
        forwards = 1.0 + ckpt
        S = size
        T = batch * S
        manual = s.attention.scores_materialized
        eager = not s.fused_elementwise
        dropout = m.dropout and eager
        keys = S * S if manual else S * (S + 1) / 2  # manual attention computes every score, fused kernels skip
        layer_keys = m.attn_layers * keys if manual else m.keys_attended(S)
        attn_fwd = m.attn_flops_per_key() * batch * layer_keys
        # FlashAttention's backward recomputes QK^T (5 matmuls vs 2 forward); a manual backward is the usual 2x
        bwd = FLASH_BWD_FLOP_RATIO if not manual else BACKWARD_FORWARD_RATIO
        qkvo = T * m.attn_layers * (2 * m.q_dim + 2 * m.kv_dim) * b
        copy = T * m.attn_layers * m.q_dim * b if manual and eager else 0.0  # the head-layout copy's elements
        score_elems = batch * m.heads * m.attn_layers * S * S if manual else 0.0
        fwd_passes, bwd_passes = score_passes(s)
        # forward (and its recomputation) and backward apart: each runs at its own kernel rate (peak_fractions)
        fwd_bytes = forwards * (qkvo + copy * HEAD_LAYOUT_COPY_FWD + score_elems * (
            fwd_passes * b + (dropout_bytes_per_elem(b) if dropout else 0.0)))
        bwd_bytes = BACKWARD_FORWARD_RATIO * qkvo + copy * HEAD_LAYOUT_COPY_BWD + score_elems * bwd_passes * b
        elem = (T * (m.eager_act_traffic_elems * forwards + m.eager_backward_traffic_elems) * b if eager
                else fb * T * m.act_traffic_elems * b)
        # eager LLaMA-family code's float32 norms and rotary, forward (and recomputed) and their autograd backward
        chains = (m.eager_chain_bytes(s), m.eager_chain_bytes(s, backward=True))
        elem += T * (chains[0] * forwards + chains[1])
        # autocast over float32 weights: the float32 residual stream, norms and casts, forward (and recomputed) and back
        stream = m.autocast_stream_bytes(s)
        elem += T * (stream[0] * forwards + stream[1])
        elem_text = text.train_elementwise_text(eager, checkpointing, fb, b, m.act_traffic_elems,
                                                m.eager_act_traffic_elems, m.eager_backward_traffic_elems,
                                                DROPOUT_HIDDEN_SITES if dropout else None) \
            + text.train_chain_text(chains, checkpointing) + text.autocast_text(stream, m.loss_bytes_per_logit(s),
                                                                              checkpointing, bool(m.logits_vocab))
        hidden_drop = T * m.layers * DROPOUT_HIDDEN_SITES * m.hidden * dropout_bytes_per_elem(b) * forwards \
            if dropout else 0.0
        read = m.read_total(T) + m.lm_head_params  # the experts some token was routed to
        rows = max(1, T // s.cp)  # one GPU's GEMM rows: its 1/cp of the tokens (sequence parallel gathers tp's)
        linear = ((OpGroup("linear layers (fwd+bwd)", 2.0 * fb * T * m.matmul_params,
                           read * (b * fb + float(GRAD_ACCUMULATE_BYTES)), p.compute_path,
                           text.train_linear_text(fb, checkpointing, T, m._experts_note(T)),
                           gemms=training_gemms(m.linear_gemms(rows, rows, s.tp), checkpointing)),)
                  if p.fp8_training is None else  # Transformer Engine: the layers' GEMMs in FP8, the LM head not
                  fp8_linear_groups(p.fp8_training, m.linear_gemms(T, 0, 1), m.lm_head_gemm(T, 1), T, m.active_total,
                                    m.read_total(T), m.lm_head_params, b, p.compute_path, s.attention_path,
                                    checkpointing, float(GRAD_ACCUMULATE_BYTES), m._experts_note(T),
                                    (m.linear_gemms(rows, 0, s.tp), m.lm_head_gemm(rows, s.tp))))
        return (
            *linear,
            *m.scan_groups(s, batch, S, passes=fb, state_passes=0.0),
            OpGroup(ATTENTION_FORWARD_GROUP, attn_fwd * forwards, fwd_bytes, s.attention_path,
                    text.train_attention_text(s, manual, forwards, None, text.score_text(s, score_passes(s), False),
                                              dropout),
                    rate_factor=s.attention.speed_vs_fa2, peak_fractions=s.attention.peak_fractions),
            OpGroup(ATTENTION_BACKWARD_GROUP, attn_fwd * bwd, bwd_bytes, s.attention_path,
                    text.train_attention_text(s, manual, bwd, bwd, text.score_text(s, score_passes(s), False),
                                              False),
                    rate_factor=s.attention.speed_vs_fa2, peak_fractions=s.attention.backward_peak_fractions),
            OpGroup("elementwise & norms (fwd+bwd)", 0.0,
                    elem + hidden_drop + T * m.logits_vocab * m.loss_bytes_per_logit(s), s.attention_path,
                    elem_text),
        )

    def tensor_parallel_comm(self, s: Setup, tokens: int, logits_rows: int,
                             rounds: int = 1) -> tuple[Collective, ...]:
        """The collectives of one step over `tokens` rows (batch x new tokens) run in `rounds` passes (prefill
        chunks), with `logits_rows` rows of logits: per pass, two all-reduces per layer of its hidden states (after
        the attention's and the MLP's row-parallel matmul, Megatron-LM), and one all-gather of the logits when the
        LM head splits the vocabulary over the GPUs (every GPU then samples from all of them); a runtime that keeps
        the whole LM head on every GPU (Setup.lm_head_split False) computes all the logits itself instead."""
        if s.tp == 1:
            return ()
        act = s.precision.act_bytes
        layers = Collective(ALL_REDUCE, tokens * self.hidden * act / rounds, 2 * self.layers * rounds)
        gather = logits_rows and s.lm_head_split and not self.encoder
        return (layers, Collective(ALL_GATHER, logits_rows * self.vocab * act, 1)) if gather else (layers,)

    def context_parallel_comm(self, s: Setup, tokens: int) -> tuple[Collective, ...]:
        """Ring attention's exchange in one forward over `tokens` rows (a micro-batch's whole sequences): every
        attention layer gathers the other context-parallel ranks' K and V (or latent) of those tokens, passed around
        the ring (Liu et al., 'Ring Attention with Blockwise Transformers', 2023, https://arxiv.org/abs/2310.01889;
        Megatron-Core's context parallel, read 2026-11-27). Sliding windows are not exploited (the ring passes every
        chunk); state-space layers exchange nothing."""
        if not self.attn_layers:
            return ()
        return (Collective(ALL_GATHER, tokens * self.kv_layer_elems * s.precision.act_bytes, self.attn_layers),)

    # ------------------------------------------------------------ the model protocol: memory
    def _activation_peak(self, s: Setup, batch: int, tokens: int, keys: int, logits_tokens: int) -> float:
        """Live bytes at the peak of one forward layer (no grad): hidden state, Q/K/V, MLP hidden, logits."""
        m = self
        mlp = (3 if m.ffn_kind == "swiglu" else 2) * m.token_ffn  # a mixture: its k experts' and the shared MLP's
        per_token = (2 * m.hidden + m.q_dim + 2 * m.kv_dim + mlp) * s.precision.act_bytes / s.tp
        scores = (2.0 * batch * m.heads * tokens * keys * s.precision.act_bytes / s.tp
                  if s.attention.scores_materialized else 0.0)
        return batch * tokens * per_token + scores + batch * logits_tokens * m.logits_vocab * float(FP32_BYTES)

    def _whole_lm_head(self, s: Setup) -> tuple[MemoryItem, ...]:
        """What a runtime that keeps the whole LM head on every tensor-parallel GPU holds beyond its 1/tp share of
        the weights (the weights item splits every parameter over tp): (1 - 1/tp) of the head."""
        if s.tp == 1 or s.lm_head_split:
            return ()
        gb = self.lm_head_params * s.precision.outside_weight_bytes * (1 - 1 / s.tp) / BYTES_PER_GB
        return (MemoryItem("whole LM head on each GPU", gb,
                           text.WHOLE_LM_HEAD,
                           (self.lm_head_params, s.precision.outside_weight_bytes, s.tp)),)

    def inference_memory(self, s: Setup, batch: int, size: int) -> tuple[MemoryItem, ...]:
        act = self._activation_peak(s, batch, size, size, size)
        return (MemoryItem("activations", act / BYTES_PER_GB,
                           text.INFERENCE_ACTIVATIONS), *self._whole_lm_head(s))

    def generate_memory(self, s: Setup, batch: int, prompt: int, gen: int) -> tuple[MemoryItem, ...]:
        m = self
        total = prompt + gen
        kv = batch * m.kv_held_elems(total) * s.kv_dtype.bytes / m.kv_split(s.tp)
        chunk = min(prompt, s.prefill_chunk) if s.prefill_chunk else prompt  # live tokens of one prefill pass
        act = max(self._activation_peak(s, batch, chunk, prompt, 1), self._activation_peak(s, batch, 1, total, 1))
        kv_item = (MemoryItem("kv_cache", kv / BYTES_PER_GB, text.KV_CACHE_KINDS,
                              (batch, text.held_words(total, m.full_layers, m.window, m.window_layers),
                               m.kv_layer_elems, text.kv_layer_words(m.kv_lora_rank, m.rope_dim, m.kv_heads,
                                                                     m.head_dim),
                               s.kv_dtype.bytes, s.kv_dtype.id, m.kv_split(s.tp)))
                   if m.kv_lora_rank or m.window_layers else
                   MemoryItem("kv_cache", kv / BYTES_PER_GB, text.KV_CACHE,
                              (batch, total, m.attn_layers, m.kv_dim, s.kv_dtype.bytes, s.kv_dtype.id, s.tp)))
        state_gb = batch * m.state_layers * m.state_elems * s.precision.act_bytes / s.tp / BYTES_PER_GB
        state = (MemoryItem("state-space state", state_gb, text.STATE_MEMORY,
                            (batch, m.state_layers, m.state_elems, s.precision.act_bytes, s.tp)),
                 ) if m.state_layers else ()
        return (kv_item, *state,
                MemoryItem("activations", act / BYTES_PER_GB,
                           text.generate_activations_text(chunk, prompt)),
                *self._whole_lm_head(s))

    @cached_property
    def ffn_down_input_elems(self) -> float:
        """Elements per token, all layers, of the MLP down projections' inputs (swiglu: silu(gate) x up; gelu: the
        activation's output): f for each of a token's k experts and the shared MLP."""
        return float(sum(n * (k * f + sh) for n, _, k, f, sh in self.mlp_kinds))

    def saved_act_bytes(self, s: Setup) -> float:
        """Bytes saved for backward per token, all layers (saved_act_elems at the activation dtype), as the runtime
        and the precision change them:
        - fused elementwise (Megatron Core's bias_swiglu_impl, megatron/core/fusions/fused_bias_swiglu.py:
          SwiGLUFunction saves only its input, the gate and up projections' 2f outputs, and recomputes silu in
          backward): a gated MLP keeps 3f, not eager PyTorch's 4f (silu(gate) is not saved; the product is the down
          projection's input).
        - dropout (a model trained with it): each hidden dropout site keeps its 1-byte mask (Korthikanti et al.
          sec. 4.1: sbh per site, 2 a layer).
        - FP8 training (Transformer Engine, transformer_engine/pytorch/module/linear.py _Linear.forward, 1.x: with FP8
          the saved input for the weight gradient is the FP8 cast, `inputmat_t` or `inputmat`, 1 B an element; the
          fused LayerNormLinear saves its FP8 norm output the same way): the inputs only a linear layer keeps (both
          norms' outputs, 2h, and the down projection's input) drop to FP8_BYTES; the attention output, which the
          fused attention kernel keeps in the activation dtype for its own backward, is saved once more in FP8 by the
          output projection (+ q x 1 B)."""
        p = s.precision.act_bytes
        elems = self.saved_act_elems - (self.ffn_down_input_elems if s.fused_elementwise and self.ffn_kind == "swiglu"
                                        else 0.0)
        saved = elems * p + (self.layers * DROPOUT_HIDDEN_SITES * self.hidden * DROPOUT_MASK_BYTES if self.dropout
                             else 0.0)
        if s.precision.fp8_training is not None:
            linear_only = self.layers * 2 * self.hidden + self.ffn_down_input_elems
            saved += linear_only * (FP8_BYTES - p) + self.attn_layers * self.q_dim * FP8_BYTES
        return saved

    def train_logits_bytes(self, batch: int, size: int) -> float:
        """The fp32 logits of `batch` x `size` tokens and their gradient, 8 B each (none for an encoder)."""
        return 2 * batch * size * self.logits_vocab * float(FP32_BYTES)

    def train_activation_memory(self, s: Setup, batch: int, size: int, checkpointing: bool) -> MemoryItem:
        m, p = self, s.precision
        S = size
        T = batch * S
        per_layer_scores = (2.0 * batch * m.heads * S * S * p.act_bytes if s.attention.scores_materialized else 0.0)
        per_token = m.saved_act_bytes(s)
        saved_layer = T * per_token / m.layers + per_layer_scores
        act = (T * m.hidden * m.layers * p.act_bytes + saved_layer if checkpointing else saved_layer * m.layers)
        act += m.train_logits_bytes(batch, size)
        formula = text.train_activations_text(checkpointing, per_token, bool(per_layer_scores))
        return MemoryItem("activations", act / BYTES_PER_GB, formula)


def parse_decoder(rec: Record) -> DecoderProfile:
    """The profile a models.yaml or bench-result record describes (its fields checked by read_decoder)."""
    return DecoderProfile(**read_decoder(rec))


def prompt_scale_group(path, lin_flops: float) -> OpGroup:
    """The CUDA-core work a prompt GEMM path does after each of its MMAs (PromptPath.scale_flops per matmul FLOP:
    MMQ's per-block scales and minimums on the int32 results), timed at the GPU's fp32 ceiling in series with the
    MMAs (a group of its own: the step adds its time); no bytes of its own (registers and shared memory)."""
    return OpGroup(PROMPT_SCALE_GROUP, path.scale_flops * lin_flops, 0.0, SGEMM_FAMILY,
                   text.prompt_scale_text(path, lin_flops), ceiling_fraction=1.0)
