"""SEA's aggregator (seed 000/001's axial transformer), for `python -m planner profile`.

Written from the published architecture: Wu et al. 2024, "Sample, estimate, aggregate: A recipe for causal discovery
foundation models" (arXiv 2402.01929) and the layout of rmwu/sea-reproduce (src/model/axial.py, aggregator.py;
config/aggregator_tf_gies.yaml): d=64, 4 layers, 8 heads, FFN 8, 1000 variables, 5 edge types, 500 trials of
k=5-variable subsets. An AxialTransformer carries two streams:
  graph estimates x [T trials, K edges, d]: edge-type tokens + an edge embedding (both node embeddings -> Linear(2d,d),
      GELU, LayerNorm, Linear) + a trial embedding; each block runs row attention over the K edges with the attention
      weights tied (summed) over the T rows and scaled by 1/sqrt(T) (MSA-Transformer style), column attention over the
      T trials tied over K (unscaled, as coded), and a d->ffn->d GELU FFN, each pre-LN and residual;
  features f [N, N, d]: the N x N statistic through Linear(1, d) + row and column node embeddings; per block the trial
      mean of x is scattered into an (N+1)^2 grid filled with a learned pad, concatenated with f and projected
      Linear(2d, d), then tied row and column attention over N and the FFN; f is gathered back at the K edges into x.
The N(N-1)/2 node pairs (forward and backward features concatenated, 2d) go through TopLayer (Linear, GELU, LayerNorm,
Linear -> 3 classes: no edge, i->j, j->i).

What differs from the repository, so a trace without data can follow it: the tokens arrive already scattered to
[T, K] (scatter_tokens runs on index.max(), a data-dependent size), K is the expected number of distinct ordered
pairs (the planner's generic profile uses the same formula), the graph stream's padding mask is always applied (it
is present in practice: ~99.8 % of the T x K grid is padding at N = 1000), the feature stream has none (the statistic
is dense), and the output pairs are taken with triu_indices instead of a boolean mask over triu() (same pairs, same
TopLayer FLOPs, a few elementwise kernels fewer). Parameter count: 501,959 at the defaults, as seed 000 reports.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def expected_edges(num_vars: int, trials: int, k: int) -> int:
    """Distinct ordered pairs among T random k-subsets of N variables: M (1 - e^-x), x = T k(k-1) / M, M = N(N-1);
    e^x truncated after x^3/6 as in data/models_generic.yaml (within 3 % of a simulation of the sampler)."""
    m = num_vars * (num_vars - 1)
    x = trials * k * (k - 1) / m
    return max(1, round(m * (1 - 1 / (1 + x + x * x / 2 + x ** 3 / 6))))


class AxialAttention(nn.Module):
    """Self-attention along one axis of an [R, C, B, d] grid with the weights tied (summed) over the other axis."""

    def __init__(self, d: int, heads: int, axis: int, scale_rows: bool, dropout: float):
        super().__init__()
        self.heads, self.axis, self.scale_rows, self.dropout = heads, axis, scale_rows, dropout
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor, pad: torch.Tensor | None) -> torch.Tensor:
        if self.axis == 1:
            x = x.permute(1, 0, 2, 3)
            pad = pad.transpose(1, 2) if pad is not None else None
        r, c, b, d = x.shape
        h = self.heads
        scaling = (d // h) ** -0.5 / math.sqrt(r) if self.scale_rows else 1.0
        q = self.q(x).view(r, c, b, h, d // h)
        k = self.k(x).view(r, c, b, h, d // h)
        q *= scaling  # in place, as the original
        if pad is not None:  # padded positions are zeroed before the sum over rows
            q *= 1 - pad.permute(1, 2, 0)[..., None, None].to(q)
        w = torch.einsum("rinhd,rjnhd->hnij", q, k)
        if pad is not None:
            w = w.masked_fill(pad[:, 0][None, :, None], -10000)
        p = F.dropout(w.softmax(-1), self.dropout, self.training)
        v = self.v(x).view(r, c, b, h, d // h)
        out = self.out(torch.einsum("hnij,rjnhd->rinhd", p, v).contiguous().view(r, c, b, d))
        return out.permute(1, 0, 2, 3) if self.axis == 1 else out


class Residual(nn.Module):
    """Pre-LayerNorm, the layer, dropout, residual add."""

    def __init__(self, layer: nn.Module, d: int, dropout: float):
        super().__init__()
        self.layer, self.norm, self.dropout = layer, nn.LayerNorm(d), dropout

    def forward(self, x: torch.Tensor, *args) -> torch.Tensor:
        return x + F.dropout(self.layer(self.norm(x), *args), self.dropout, self.training)


class FFN(nn.Module):
    def __init__(self, d: int, ffn: int, dropout: float):
        super().__init__()
        self.fc1, self.fc2, self.dropout = nn.Linear(d, ffn), nn.Linear(ffn, d), dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.dropout(F.gelu(self.fc1(x)), self.dropout, self.training))


class AxialLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float, scale_rows: bool):
        super().__init__()
        self.rows = Residual(AxialAttention(d, heads, 0, scale_rows, dropout), d, dropout)
        self.cols = Residual(AxialAttention(d, heads, 1, False, dropout), d, dropout)
        self.ffn = Residual(FFN(d, ffn, dropout), d, dropout)

    def forward(self, x: torch.Tensor, pad: torch.Tensor | None) -> torch.Tensor:
        return self.ffn(self.cols(self.rows(x, pad), pad))


class AxialBlock(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float):
        super().__init__()
        self.feat_layer = AxialLayer(d, heads, ffn, dropout, scale_rows=False)
        self.graph_layer = AxialLayer(d, heads, ffn, dropout, scale_rows=True)
        self.pad = nn.Parameter(torch.randn(1))
        self.linear = nn.Linear(2 * d, d)

    def forward(self, x, feats, nodes, pad):
        x = self.graph_layer(x, pad)
        n, _, b, d = feats.shape
        grid = torch.ones(n + 1, n + 1, b, d, device=feats.device) * self.pad
        batch = torch.arange(b, device=feats.device).view(1, 1, b)
        grid[nodes[:, :, 0:1], nodes[:, :, 1:2], batch] = x.mean(0, keepdim=True)
        feats = self.feat_layer(self.linear(torch.cat([feats, grid[1:, 1:]], dim=-1)), None)
        nodes0 = (nodes - 1).clamp(min=0)
        return x + feats[nodes0[:, :, 0:1].permute(2, 1, 0), nodes0[:, :, 1:2].permute(2, 1, 0), batch], feats


def _positions(mask_source: torch.Tensor, table: nn.Embedding, shuffle: bool) -> torch.Tensor:
    """ESM-style learned positions (cumsum over non-padding), randomly permuted for permutation invariance."""
    mask = mask_source.ne(0).int()
    positions = (torch.cumsum(mask, dim=1) * mask).long()
    if shuffle:
        positions = torch.randperm(table.num_embeddings, device=positions.device)[positions]
    return table(positions)


class SEA(nn.Module):
    def __init__(self, d=64, layers=4, heads=8, ffn=8, num_vars=1000, edge_types=5, max_time=500, dropout=0.1):
        super().__init__()
        self.embed_tokens = nn.Embedding(edge_types, d, padding_idx=0)
        self.embed_feats = nn.Linear(1, d)
        self.embed_nodes = nn.Embedding(num_vars + 1, d, padding_idx=0)
        self.embed_edges = nn.Embedding(num_vars + 1, d, padding_idx=0)
        self.edge_mlp = nn.ModuleDict({"linear": nn.Linear(2 * d, d), "norm": nn.LayerNorm(d),
                                       "linear2": nn.Linear(d, d)})
        self.embed_time = nn.Embedding(max_time + 1, d, padding_idx=0)
        self.layers = nn.ModuleList(AxialBlock(d, heads, ffn, dropout) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(4))  # x before/after, feats before/after
        self.top = nn.Sequential(nn.Linear(2 * d, 2 * d), nn.GELU(), nn.LayerNorm(2 * d), nn.Linear(2 * d, 3))
        self.dropout = dropout

    def encode(self, tokens, feats, nodes):
        """tokens [B, T, K] edge types, feats [B, N, N] statistic, nodes [B, K, 2] 1-indexed pairs -> [B, N, N, d]."""
        b, k = nodes.shape[0], nodes.shape[1]
        pad = tokens.eq(0)
        e = self.embed_edges(nodes).reshape(b, k, -1)
        e = self.edge_mlp["linear2"](self.edge_mlp["norm"](F.gelu(self.edge_mlp["linear"](e))))
        x = self.embed_tokens(tokens) + e[:, None] + _positions(tokens[:, :, 0], self.embed_time, False)[:, :, None]
        rows = _positions(feats[:, 0], self.embed_nodes, True)[:, :, None]
        cols = _positions(feats[:, :, 0], self.embed_nodes, True)[:, None]
        f = self.embed_feats(feats[..., None]) + rows + cols
        x = F.dropout(self.norms[0](x), self.dropout, self.training) * (1 - pad.unsqueeze(-1).type_as(x))
        f = F.dropout(self.norms[2](f), self.dropout, self.training)
        x, f = x.permute(1, 2, 0, 3), f.permute(1, 2, 0, 3)
        for block in self.layers:
            x, f = block(x, f, nodes, pad)
        self.norms[1](x)  # computed by the original and never used
        return self.norms[3](f).permute(2, 0, 1, 3)

    def forward(self, tokens, feats, nodes, pairs):
        """Edge logits [B, P, 3] for the P = N(N-1)/2 node pairs in `pairs` [2, P] (upper triangle)."""
        f = self.encode(tokens, feats, nodes)
        forward_edge, backward_edge = f[:, pairs[0], pairs[1]], f[:, pairs[1], pairs[0]]
        return self.top(torch.cat([forward_edge, backward_edge], dim=-1))


def build(size: int, trials: int = 500, k: int = 5, d: int = 64, layers: int = 4, heads: int = 8, ffn: int = 8,
          num_vars: int = 1000, edge_types: int = 5, dropout: float = 0.1):
    """The planner's factory: SEA over `size` variables (one graph), T = `trials` estimates of k-subsets."""
    if size > num_vars:
        raise ValueError(f"SEA's node tables hold num_vars={num_vars} variables; {size} needs --arg num_vars={size}")
    edges = expected_edges(size, trials, k)
    model = SEA(d, layers, heads, ffn, num_vars, edge_types, 500, dropout)
    tokens = torch.randint(0, edge_types, (1, trials, edges))
    feats = torch.randn(1, size, size)
    nodes = torch.randint(1, size + 1, (1, edges, 2))
    pairs = torch.triu_indices(size, size, 1)
    labels = torch.randint(0, 3, (1, pairs.shape[1]))

    def loss(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, 3), labels.reshape(-1))
    return model, (tokens, feats, nodes, pairs), loss
