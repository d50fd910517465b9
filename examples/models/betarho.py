"""BetaRho (seed 001): BetaBend embeddings and transformer blocks feeding RhoFold's invariant point attention.

Written from the published architectures, for `python -m planner profile`:
  seanmichaelmcgee/BeatRho_v1.0 (rhofold_ipa_module.py: RhoFoldIPAModel, RhoFoldIPAModule, RigidFrameInitializer;
      hardware_adaptation.md is seed 001) and the same author's BetaBend src/models/embeddings.py and
      transformer_block.py: residue features (sequence embedding 32 + dihedrals 4 + entropy, accessibility,
      conservation) -> Linear(39, cs) + sinusoidal positions (max_len 500); pair features (pairing probabilities,
      couplings, a 65-way clipped relative-position embedding of 32) -> Linear(34, cz). Each TransformerBlock updates
      the residues with pre-LN nn.MultiheadAttention (4 heads, dropout 0.1, need_weights=False) and a ReLU FFN
      cs->4cs->cs, then the pairs with an MLP on concat[h_i, h_j, LN(z_ij)] (2cs+cz -> 2cz -> cz, ReLU, dropout) added
      residually.
  RhoFold / OpenFold (AlphaFold 2 supplementary, Algorithms 20-23): adapters to S=384 and Z=128, LayerNorms, a frame
      initializer, then ONE InvariantPointAttention (shared weights) applied num_ipa_blocks times: s += IPA(s, z, T);
      LN; BackboneUpdate (Linear(S, 6): quaternion vector + translation); AngleResnet(s, s_initial) (3 blocks, 7
      angles); rotations detached between iterations; a confidence head Linear(S,128)-ReLU-Linear(128,1).
The two configurations of seed 001 are `config=reduced` (RTX 4070 Ti Super: cs 96, cz 48, 3 blocks, 3 IPA
iterations, 2 heads, 3 query points, 6 value points) and `config=full` (A100: 128, 64, 4, 4, 4, 4, 8).

Stand-ins, so the trace has no data-dependent step: frames are rotation matrices composed with the normalised
quaternion update directly (OpenFold converts matrices to quaternions with an eigendecomposition), and the loss is a
mean squared error on coordinates and angles (the repository's FAPE/TM-score loops run per sample on the CPU). The
parameter count equals the formula in data/models_generic.yaml (1,067,338 reduced, 1,880,038 full).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

CONFIGS = {
    "reduced": {"cs": 96, "cz": 48, "blocks": 3, "ipa_blocks": 3, "heads": 2, "qk_points": 3, "v_points": 6},
    "full": {"cs": 128, "cz": 64, "blocks": 4, "ipa_blocks": 4, "heads": 4, "qk_points": 4, "v_points": 8},
}
S, Z, C_IPA, C_RESNET, ANGLES = 384, 128, 16, 128, 7  # RhoFold's fixed widths and the defaults the seed keeps
INF = 1e5  # OpenFold's mask value


class Embedding(nn.Module):
    def __init__(self, cs: int, cz: int, max_len: int):
        super().__init__()
        self.seq = nn.Embedding(5, 32, padding_idx=4)
        self.rel = nn.Embedding(65, 32)
        self.residue_projection = nn.Linear(32 + 4 + 1 + 1 + 1, cs)
        self.pair_projection = nn.Linear(1 + 1 + 32, cz)
        position = torch.arange(max_len).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, cs, 2).float() * (-math.log(10000.0) / cs))
        pe = torch.zeros(max_len, cs)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, batch):
        n = batch["sequence_int"].shape[1]
        residue = torch.cat([self.seq(batch["sequence_int"]), batch["dihedral_features"],
                             batch["positional_entropy"].unsqueeze(-1), batch["accessibility"].unsqueeze(-1),
                             batch["conservation"].unsqueeze(-1)], dim=-1)
        residue = self.residue_projection(residue) + self.pe[:, :n]
        positions = torch.arange(n, device=residue.device)
        rel = self.rel(torch.clamp(positions.unsqueeze(0) - positions.unsqueeze(1) + 32, 0, 64))
        pair = torch.cat([batch["pairing_probs"].unsqueeze(-1), batch["coupling_matrix"].unsqueeze(-1),
                          rel.unsqueeze(0).expand(residue.shape[0], -1, -1, -1)], dim=-1)
        pair = self.pair_projection(pair)
        mask = batch["mask"]
        residue = residue * mask.unsqueeze(-1).float()
        pair = pair * (mask.unsqueeze(1) & mask.unsqueeze(2)).unsqueeze(-1).float()
        return residue, pair, mask


class TransformerBlock(nn.Module):
    def __init__(self, cs: int, cz: int, heads: int = 4, dropout: float = 0.1):
        super().__init__()
        self.attn_norm, self.ffn_norm, self.pair_norm = nn.LayerNorm(cs), nn.LayerNorm(cs), nn.LayerNorm(cz)
        self.attention = nn.MultiheadAttention(cs, heads, dropout=dropout, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(cs, 4 * cs), nn.ReLU(), nn.Dropout(dropout), nn.Linear(4 * cs, cs))
        self.pair_mlp = nn.Sequential(nn.Linear(2 * cs + cz, 2 * cz), nn.ReLU(), nn.Dropout(dropout),
                                      nn.Linear(2 * cz, cz))
        self.dropout = dropout

    def forward(self, residue, pair, mask):
        h = self.attn_norm(residue)
        attended, _ = self.attention(h, h, h, key_padding_mask=~mask, need_weights=False)
        residue = residue + F.dropout(attended, self.dropout, self.training)
        residue = residue + F.dropout(self.ffn(self.ffn_norm(residue)), self.dropout, self.training)
        residue = residue * mask.unsqueeze(-1).float()
        n = residue.shape[1]
        pair_norm = self.pair_norm(pair)  # a named local in the original: it lives until the update is done
        pair_in = torch.cat([residue.unsqueeze(2).expand(-1, -1, n, -1), residue.unsqueeze(1).expand(-1, n, -1, -1),
                             pair_norm], dim=-1)
        pair = pair + F.dropout(self.pair_mlp(pair_in), self.dropout, self.training)
        return residue, pair * (mask.unsqueeze(1) & mask.unsqueeze(2)).unsqueeze(-1).float()


def _apply(rot, trans, points):
    """Frames (rot [*, L, 3, 3], trans [*, L, 3]) applied to points [*, L, P, 3]."""
    return torch.einsum("blij,blpj->blpi", rot, points) + trans[:, :, None]


def _invert_apply(rot, trans, points):
    return torch.einsum("blji,blpj->blpi", rot, points - trans[:, :, None])


class InvariantPointAttention(nn.Module):
    """AlphaFold 2 Algorithm 22 (OpenFold's layout): scalar, point and pair-bias attention over residues."""

    def __init__(self, heads: int, qk_points: int, v_points: int):
        super().__init__()
        h, c, pq, pv = heads, C_IPA, qk_points, v_points
        self.h, self.c, self.pq, self.pv = h, c, pq, pv
        self.linear_q, self.linear_kv = nn.Linear(S, h * c), nn.Linear(S, 2 * h * c)
        self.linear_q_points, self.linear_kv_points = nn.Linear(S, h * pq * 3), nn.Linear(S, h * (pq + pv) * 3)
        self.linear_b = nn.Linear(Z, h)
        self.head_weights = nn.Parameter(torch.zeros(h))
        self.linear_out = nn.Linear(h * (Z + c + 4 * pv), S)

    def _points(self, linear, s, rot, trans, count):
        b, n, _ = s.shape
        p = linear(s)
        p = torch.stack(torch.split(p, p.shape[-1] // 3, dim=-1), dim=-1)  # [b, n, h*count, 3]
        return _apply(rot, trans, p).view(b, n, self.h, count, 3)

    def forward(self, s, z, rot, trans, mask):
        b, n, _ = s.shape
        h, c = self.h, self.c
        q = self.linear_q(s).view(b, n, h, c)
        k, v = self.linear_kv(s).view(b, n, h, 2 * c).split(c, dim=-1)
        q_pts = self._points(self.linear_q_points, s, rot, trans, self.pq)
        k_pts, v_pts = self._points(self.linear_kv_points, s, rot, trans, self.pq + self.pv).split(
            [self.pq, self.pv], dim=-2)
        bias = self.linear_b(z)  # [b, n, n, h]
        a = torch.matmul(q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1)) * math.sqrt(1.0 / (3 * c))
        a = a + math.sqrt(1.0 / 3) * bias.permute(0, 3, 1, 2)
        pt = ((q_pts.unsqueeze(2) - k_pts.unsqueeze(1)) ** 2).sum(-1)  # [b, n, n, h, pq]
        weights = F.softplus(self.head_weights).view(1, 1, 1, h, 1) * math.sqrt(1.0 / (3 * (self.pq * 9.0 / 2)))
        pt = (pt * weights).sum(-1) * -0.5
        square = INF * ((mask.unsqueeze(-1) * mask.unsqueeze(-2)).float() - 1)
        a = (a + pt.permute(0, 3, 1, 2) + square.unsqueeze(1)).softmax(-1)  # [b, h, n, n]
        o = torch.matmul(a, v.transpose(1, 2)).transpose(1, 2).reshape(b, n, h * c)
        o_pt = (a[:, :, None, :, :, None] * v_pts.permute(0, 2, 4, 1, 3)[:, :, :, None]).sum(-2)  # [b,h,3,n,pv]
        o_pt = _invert_apply(rot, trans, o_pt.permute(0, 3, 1, 4, 2).reshape(b, n, h * self.pv, 3))
        o_pt_norm = torch.sqrt((o_pt ** 2).sum(-1) + 1e-8)
        o_pair = torch.matmul(a.transpose(1, 2), z).reshape(b, n, h * Z)
        return self.linear_out(torch.cat([o, *o_pt.unbind(-1), o_pt_norm, o_pair], dim=-1))


class AngleResnet(nn.Module):
    def __init__(self, blocks: int = 3):
        super().__init__()
        self.linear_in, self.linear_initial = nn.Linear(S, C_RESNET), nn.Linear(S, C_RESNET)
        self.layers = nn.ModuleList(nn.Sequential(nn.ReLU(), nn.Linear(C_RESNET, C_RESNET), nn.ReLU(),
                                                  nn.Linear(C_RESNET, C_RESNET)) for _ in range(blocks))
        self.linear_out = nn.Linear(C_RESNET, 2 * ANGLES)

    def forward(self, s, s_initial):
        a = self.linear_in(F.relu(s)) + self.linear_initial(F.relu(s_initial))
        for layer in self.layers:
            a = a + layer(a)
        raw = self.linear_out(F.relu(a)).view(*a.shape[:-1], ANGLES, 2)
        return raw, raw / torch.sqrt(torch.clamp((raw ** 2).sum(-1, keepdim=True), min=1e-8))


def _quat_update(rot, trans, update):
    """OpenFold's compose_q_update_vec: rotate by the normalised quaternion (1, u) and move by R t_update."""
    w = torch.ones_like(update[..., :1])
    a, b, c, d = torch.cat([w, update[..., :3]], dim=-1).div(
        torch.sqrt(1 + (update[..., :3] ** 2).sum(-1, keepdim=True))).unbind(-1)
    r = torch.stack([a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c),
                     2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b),
                     2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d], dim=-1)
    r = r.view(*r.shape[:-1], 3, 3)
    return rot @ r, trans + torch.einsum("blij,blj->bli", rot, update[..., 3:])


class IPAModule(nn.Module):
    def __init__(self, cs: int, cz: int, ipa_blocks: int, heads: int, qk_points: int, v_points: int):
        super().__init__()
        self.residue_adapter, self.pair_adapter = nn.Linear(cs, S), nn.Linear(cz, Z)
        self.layer_norm_s, self.layer_norm_z, self.layer_norm_ipa = nn.LayerNorm(S), nn.LayerNorm(Z), nn.LayerNorm(S)
        self.coord_init = nn.Sequential(nn.Linear(S, S // 2), nn.ReLU(), nn.Linear(S // 2, 3))
        self.orient_init = nn.Sequential(nn.Linear(S, S // 2), nn.ReLU(), nn.Linear(S // 2, 6))
        self.ipa = InvariantPointAttention(heads, qk_points, v_points)
        self.bb_update = nn.Linear(S, 6)
        self.angle_resnet = AngleResnet()
        self.confidence = nn.Sequential(nn.Linear(S, 128), nn.ReLU(), nn.Linear(128, 1))
        self.blocks = ipa_blocks

    def _frames(self, s, mask):
        m = mask.unsqueeze(-1).float()
        trans = self.coord_init(s) * m
        r6 = self.orient_init(s) * m
        x = F.normalize(r6[..., :3], dim=-1)
        y = F.normalize(r6[..., 3:] - (r6[..., 3:] * x).sum(-1, keepdim=True) * x, dim=-1)
        return torch.stack([x, y, torch.cross(x, y, dim=-1)], dim=-2), trans

    def forward(self, residue, pair, mask):
        s = self.layer_norm_s(self.residue_adapter(residue))
        z = self.layer_norm_z(self.pair_adapter(pair))
        s_initial = s
        rot, trans = self._frames(s, mask)
        angles = []
        for i in range(self.blocks):
            s = self.layer_norm_ipa(s + self.ipa(s, z, rot, trans, mask))
            rot, trans = _quat_update(rot, trans, self.bb_update(s))
            angles.append(self.angle_resnet(s, s_initial)[1])
            if i != self.blocks - 1:
                rot = rot.detach()
        m = mask.float()
        coords = trans * 10.0 * m.unsqueeze(-1)
        confidence = torch.sigmoid(self.confidence(s).squeeze(-1)) * m
        return coords, angles[-1], confidence


class BetaRho(nn.Module):
    def __init__(self, cs, cz, blocks, ipa_blocks, heads, qk_points, v_points, max_len=500):
        super().__init__()
        self.embedding = Embedding(cs, cz, max_len)
        self.transformer_blocks = nn.ModuleList(TransformerBlock(cs, cz) for _ in range(blocks))
        self.ipa_module = IPAModule(cs, cz, ipa_blocks, heads, qk_points, v_points)

    def forward(self, batch):
        residue, pair, mask = self.embedding(batch)
        for block in self.transformer_blocks:
            residue, pair = block(residue, pair, mask)
        return self.ipa_module(residue, pair, mask)


def build(size: int, config: str = "reduced", max_len: int = 500, **overrides):
    """The planner's factory: BetaRho for one RNA of `size` residues. config: 'reduced' or 'full' (seed 001);
    any field of CONFIGS can be overridden (blocks=1 for a quick test). Sizes above max_len (500, the positional
    table of the original) need --arg max_len=..."""
    if config not in CONFIGS:
        raise ValueError(f"config must be one of {', '.join(CONFIGS)}, got {config!r}")
    if size > max_len:
        raise ValueError(f"the positional encoding holds max_len={max_len} residues; {size} needs --arg max_len={size}")
    model = BetaRho(**dict(CONFIGS[config], **overrides), max_len=max_len)
    batch = {"sequence_int": torch.randint(0, 4, (1, size)), "dihedral_features": torch.randn(1, size, 4),
             "pairing_probs": torch.rand(1, size, size), "positional_entropy": torch.rand(1, size),
             "coupling_matrix": torch.randn(1, size, size), "accessibility": torch.rand(1, size),
             "conservation": torch.rand(1, size), "mask": torch.ones(1, size, dtype=torch.bool)}
    coords, angles = torch.randn(1, size, 3), torch.randn(1, size, ANGLES, 2)

    def loss(out):
        return F.mse_loss(out[0], coords) + F.mse_loss(out[1], angles)
    # checkpoint the transformer blocks and each IPA iteration (the shared IPA module is called ipa_blocks times)
    return {"model": model, "inputs": (batch,), "loss": loss,
            "checkpoint": [*model.transformer_blocks, model.ipa_module.ipa]}
