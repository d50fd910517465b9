"""A real torch decoder built from a planner DecoderProfile (random weights), with a preallocated KV cache.

The architecture follows the profile field by field: RMSNorm or LayerNorm, biases or none, RoPE or learned
positions, SwiGLU or GELU MLP (transformers' Python tanh GELU where the profile's gelu_tanh_chain says so; or a
mixture of such experts with a top-k router and a shared MLP, as Mixtral and
Qwen-MoE), grouped-query attention through scaled_dot_product_attention, tied or separate LM head. Parameter count
equals `DecoderProfile.params` (checked in tests/bench/test_bench.py).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from planner.inputs.models import DecoderProfile

ROPE_BASE = 10000.0


def _norm(p: DecoderProfile) -> nn.Module:
    return nn.RMSNorm(p.hidden, eps=1e-5) if p.norm == "rmsnorm" else nn.LayerNorm(p.hidden)


def rope_tables(p: DecoderProfile, length: int, device, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of shape (length, head_dim) for rotate-half RoPE."""
    inv = 1.0 / ROPE_BASE ** (torch.arange(0, p.head_dim, 2, device=device, dtype=torch.float32) / p.head_dim)
    ang = torch.outer(torch.arange(length, device=device, dtype=torch.float32), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def gelu_tanh_chain(x: torch.Tensor) -> torch.Tensor:
    """transformers' NewGELUActivation (activation_function gelu_new), its eight ops as the model code runs them."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class MLP(nn.Module):
    """SwiGLU (gate, up, down) or GELU (up, down) of intermediate size `ffn`: the dense MLP or one expert."""

    def __init__(self, p: DecoderProfile, ffn: int):
        super().__init__()
        self.up = nn.Linear(p.hidden, ffn, bias=p.bias)
        self.gate = nn.Linear(p.hidden, ffn, bias=p.bias) if p.ffn_kind == "swiglu" else None
        self.down = nn.Linear(ffn, p.hidden, bias=p.bias)
        self.gelu = gelu_tanh_chain if p.gelu_tanh_chain else F.gelu

    def forward(self, h):
        # separate gate and up matrices as in LLaMA (a fused matrix split by chunk() makes strided, slow SiLU on CPU)
        return self.down(F.silu(self.gate(h)) * self.up(h) if self.gate is not None else self.gelu(self.up(h)))


class MoE(nn.Module):
    """Mixtral's sparse block: softmax router, top-k experts renormalised, each expert run on its tokens and
    scatter-added back (HF MixtralSparseMoeBlock's loop); plus the shared MLP every token sees (Qwen-MoE)."""

    def __init__(self, p: DecoderProfile):
        super().__init__()
        self.k = p.experts_per_token
        self.router = nn.Linear(p.hidden, p.experts, bias=False)
        self.experts = nn.ModuleList(MLP(p, p.ffn) for _ in range(p.experts))
        self.shared = MLP(p, p.shared_ffn) if p.shared_ffn else None

    def forward(self, h):
        x = h.reshape(-1, h.shape[-1])
        weights, chosen = torch.topk(torch.softmax(self.router(x), dim=-1, dtype=torch.float32), self.k, dim=-1)
        weights = (weights / weights.sum(dim=-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == e)
            if rows.numel():
                out.index_add_(0, rows, expert(x[rows]) * weights[rows, slot, None])
        if self.shared is not None:
            out = out + self.shared(x)
        return out.view_as(h)


class Block(nn.Module):
    def __init__(self, p: DecoderProfile):
        super().__init__()
        self.p = p
        self.norm1, self.norm2 = _norm(p), _norm(p)
        self.qkv = nn.Linear(p.hidden, p.q_dim + 2 * p.kv_dim, bias=p.bias)
        self.out = nn.Linear(p.q_dim, p.hidden, bias=p.bias)
        self.mlp = MLP(p, p.ffn) if p.experts == 1 else MoE(p)

    def forward(self, x, rope, cache, pos: int):
        p = self.p
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split([p.q_dim, p.kv_dim, p.kv_dim], dim=-1)
        q = q.view(b, t, p.heads, p.head_dim).transpose(1, 2)
        k = k.view(b, t, p.kv_heads, p.head_dim).transpose(1, 2)
        v = v.view(b, t, p.kv_heads, p.head_dim).transpose(1, 2)
        if rope is not None:
            cos, sin = rope[0][pos:pos + t], rope[1][pos:pos + t]
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if cache is not None:  # write this step's keys and values, attend over everything so far
            ck, cv = cache
            ck[:, :, pos:pos + t] = k
            cv[:, :, pos:pos + t] = v
            k, v = ck[:, :, :pos + t], cv[:, :, :pos + t]
        gqa = p.kv_heads != p.heads
        # causal inside the new tokens; with a cache, prefill starts at 0 so the mask is square
        a = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1, enable_gqa=gqa)
        x = x + self.out(a.transpose(1, 2).reshape(b, t, p.q_dim))
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    """Decoder-only transformer for `profile`; forward(tokens, caches, pos) -> logits (batch, tokens, vocab)."""

    def __init__(self, p: DecoderProfile):
        super().__init__()
        self.p = p
        self.embed = nn.Embedding(p.vocab, p.hidden)
        self.pos_embed = nn.Embedding(p.context, p.hidden) if p.learned_pos_emb else None
        self.blocks = nn.ModuleList(Block(p) for _ in range(p.layers))
        self.norm = _norm(p)
        self.head = nn.Linear(p.hidden, p.vocab, bias=False)
        if p.tied_embeddings:
            self.head.weight = self.embed.weight
        self.rope = None

    def setup_rope(self, device, dtype) -> None:
        if self.pos_embed is None:
            self.rope = rope_tables(self.p, self.p.context, device, dtype)

    def forward(self, tokens, caches=None, pos: int = 0):
        t = tokens.shape[1]
        x = self.embed(tokens)
        if self.pos_embed is not None:
            x = x + self.pos_embed.weight[pos:pos + t]
        for i, blk in enumerate(self.blocks):
            x = blk(x, self.rope, caches[i] if caches is not None else None, pos)
        return self.head(self.norm(x))


def new_caches(p: DecoderProfile, batch: int, length: int, device, dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One (K, V) pair per layer, each (batch, kv_heads, length, head_dim)."""
    shape = (batch, p.kv_heads, length, p.head_dim)
    return [(torch.zeros(shape, device=device, dtype=dtype), torch.zeros(shape, device=device, dtype=dtype))
            for _ in range(p.layers)]


def build(p: DecoderProfile, device, dtype, seed: int = 0) -> Decoder:
    """The model with random weights (normal, std 0.02) on `device` in `dtype`."""
    torch.manual_seed(seed)
    with torch.device(device):  # built in place: no host copy of a large model, and 'meta' for shapes only
        model = Decoder(p)
    for w in model.parameters():
        if w.dim() > 1:
            nn.init.normal_(w, std=0.02)
    model = model.to(dtype=dtype)
    model.setup_rope(device, dtype)
    return model
