"""A GPT-2-style decoder with swappable attention, for `python -m planner profile` (seed 004).

Written from the GPT-2 architecture (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners";
the layout of OpenAI's gpt-2 src/model.py and of nanoGPT's model.py): token and learned position embeddings, pre-LN
blocks of causal multi-head self-attention (one fused QKV projection, an output projection) and a 4x GELU MLP, a final
LayerNorm, an LM head tied to the token embedding, biases everywhere. `attention` picks how attention is computed:
  manual: softmax(Q K^T / sqrt(d) + causal mask) V with the score matrix materialised (O(S^2) memory), as seed 004's
          "manual" backend; the masked half of the scores is computed and then discarded.
  sdpa:   torch.nn.functional.scaled_dot_product_attention(is_causal=True) (FlashAttention / memory-efficient kernels on
          a GPU, the flash kernel on a CPU): no score matrix is kept.

    python -m planner profile examples/models/gpt2.py:build --input tokens=128,256,512,1024 --arg attention=sdpa
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

GPT2_SMALL = {"layers": 12, "hidden": 768, "heads": 12, "vocab": 50257, "context": 1024}
SEED_004 = {"layers": 12, "hidden": 384, "heads": 6, "vocab": 50304, "context": 1024}  # 384-dim, 12 layers, 1024 ctx


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, context: int, kind: str, dropout: float):
        super().__init__()
        if kind not in ("manual", "sdpa"):
            raise ValueError(f"attention must be 'manual' or 'sdpa', got {kind!r}")
        self.heads, self.kind, self.dropout = heads, kind, dropout
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        if kind == "manual":  # GPT-2's lower-triangular mask buffer (not a parameter)
            self.register_buffer("mask", torch.ones(context, context, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (z.view(b, t, self.heads, h // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.kind == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                               is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
            att = F.dropout(att, self.dropout, self.training)
            y = att @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, h))


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, context: int, attention: str, dropout: float):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads, context, attention, dropout)
        self.fc, self.out = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + F.dropout(self.attn(self.ln1(x)), self.dropout, self.training)
        return x + F.dropout(self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh")), self.dropout, self.training)


class GPT2(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, vocab: int, context: int, attention: str = "sdpa",
                 dropout: float = 0.0):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(context, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, context, attention, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied, as GPT-2

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def build(size: int, attention: str = "sdpa", config: str = "gpt2-small", layers: int | None = None,
          hidden: int | None = None, heads: int | None = None, vocab: int | None = None, context: int | None = None):
    """The planner's factory: a GPT-2 for `size` tokens, one sequence of token ids, and the next-token loss.

    config: 'gpt2-small' (124M) or 'seed-004' (384 wide, 12 layers); any field can be overridden (small test models).
    """
    base = dict(GPT2_SMALL if config == "gpt2-small" else SEED_004)
    base.update({k: v for k, v in dict(layers=layers, hidden=hidden, heads=heads, vocab=vocab,
                                       context=context).items() if v is not None})
    base["context"] = max(base["context"], size)
    model = GPT2(attention=attention, **base)
    idx = torch.randint(0, base["vocab"], (1, size))
    targets = torch.randint(0, base["vocab"], (1, size))

    def loss(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
    return model, (idx,), loss
