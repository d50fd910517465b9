"""Jobs (generate / infer / train) and the work they do: FLOPs and bytes per step, by phase and op group.

A step's work is split into op groups (linear layers, attention, elementwise, optimizer), each with
FLOPs and bytes that are affine in the KV position `p` of a decode step: work(p) = a + b * p.
The roofline module times each group as max(compute, memory) and sums over the positions exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from planner.inputs.models import DecoderProfile, GenericProfile, ModelProfile
from planner.inputs.precisions import AttentionBackend, KVDtype, Precision
from planner.base.schema import CachedHash

OPTIMIZERS = {"adam": 8.0, "adamw": 8.0, "sgd": 4.0}  # optimizer-state bytes per parameter (fp32 m, v / momentum)
OPTIMIZER_TRAFFIC = {"adam": 28.0, "adamw": 28.0, "sgd": 20.0}  # bytes moved per parameter per step (fused update)
SHARDINGS = ("ddp", "fsdp")  # multi-GPU training: full copies per GPU, or ZeRO-3 sharded states
FLASH_BWD_FLOP_RATIO = 2.5  # FlashAttention-2 backward = 5 matmuls vs 2 forward (Dao 2023)


@dataclass(frozen=True)
class Generate:
    """Generate n sequences: prefill `prompt_tokens` (>= 1, e.g. a BOS token), then decode until
    `gen_tokens` new tokens exist; the first new token comes out of the prefill."""

    n_sequences: int
    prompt_tokens: int
    gen_tokens: int
    kind: str = "generate"

    @property
    def items(self) -> int:
        return self.n_sequences


@dataclass(frozen=True)
class Infer:
    """Forward passes over n samples of `input_size` tokens (decoder) or size L (generic profile)."""

    n_samples: int
    input_size: int
    kind: str = "infer"

    @property
    def items(self) -> int:
        return self.n_samples


@dataclass(frozen=True)
class Train:
    """Training: `samples_per_epoch` samples of `input_size` for `epochs` epochs; `batch` in the plan is the
    micro-batch per GPU; one optimizer step every `grad_accum` micro-batches."""

    samples_per_epoch: int
    input_size: int
    epochs: float
    optimizer: str = "adamw"
    checkpointing: bool = False
    grad_accum: int = 1
    sharding: str = "ddp"  # 'ddp': every GPU holds all states; 'fsdp': weights, grads, optimizer sharded (ZeRO-3)
    kind: str = "train"

    @property
    def items(self) -> int:
        return math.ceil(self.samples_per_epoch * self.epochs)


Workload = Generate | Infer | Train


@dataclass(frozen=True)
class OpGroup:
    """Work of one kind in one step: FLOPs and bytes as a + b * p (p = KV position; b = 0 outside decode)."""

    name: str
    flops: float
    bytes: float
    compute_path: str
    formula: str
    flops_per_pos: float = 0.0
    bytes_per_pos: float = 0.0


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


@dataclass(frozen=True, eq=True)
class Setup(CachedHash):

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it
    precision: Precision
    kv_dtype: KVDtype
    attention: AttentionBackend
    tp: int = 1  # tensor-parallel degree: weights, heads and FLOPs split over tp GPUs
    shard: int = 1  # FSDP/ZeRO-3 degree: training states sharded over `shard` GPUs


def attention_path(precision: Precision) -> str:
    """Attention runs in the activation dtype; quantized weights don't change it."""
    return precision.compute_path if precision.compute_path in ("fp32", "tf32", "fp16", "bf16") else "fp16"


def _kernels(model: ModelProfile) -> float:
    if isinstance(model, GenericProfile):
        return float(model.kernels_per_forward)
    return model.layers * model.kernels_per_layer() + 5  # embedding, final norm, LM head, sampling


def decoder_forward(m: DecoderProfile, s: Setup, batch: int, tokens: int, keys_sum: float, keys_max: int,
                    logits_tokens: int, name: str) -> tuple[OpGroup, ...]:
    """One forward pass of `batch` sequences of `tokens` new tokens each (p-independent part).

    keys_sum: sum over the new tokens of the keys each attends to (causal prefill: t(t+1)/2).
    """
    p, tp = s.precision, s.tp
    bt = batch * tokens
    layer_mp = m.layers * m.layer_matmul_params
    lin_flops = 2.0 * (bt * layer_mp + batch * logits_tokens * m.lm_head_params) / tp
    lin_bytes = m.matmul_params * p.weight_bytes / tp
    attn_flops = 4.0 * m.layers * m.q_dim * batch * keys_sum / tp
    qkvo = bt * m.layers * (2 * m.q_dim + 2 * m.kv_dim) * p.act_bytes / tp
    kv_write = bt * m.kv_elems * s.kv_dtype.bytes / tp
    scores = (4.0 * batch * m.heads * m.layers * tokens * keys_max * p.act_bytes / tp
              if s.attention.scores_materialized else 0.0)
    elem_bytes = (bt * m.act_traffic_elems * p.act_bytes / tp
                  + 2 * batch * logits_tokens * m.vocab * 4.0)
    return (
        OpGroup("linear layers", lin_flops, lin_bytes, p.compute_path,
                f"FLOPs = 2 x {name} tokens x matmul params; bytes = matmul params x {p.weight_bytes:g} B/weight"),
        OpGroup("attention", attn_flops, qkvo + kv_write + scores, attention_path(p),
                "FLOPs = 4 x layers x heads x head_dim x keys attended; bytes = Q,K,V,O + KV-cache write"
                + (" + 4 x score matrices (manual attention)" if scores else "")),
        OpGroup("elementwise & norms", 0.0, elem_bytes, attention_path(p),
                f"bytes = tokens x {m.act_traffic_elems:,.0f} elements x {p.act_bytes:g} B + logits"),
    )


def decode_groups(m: DecoderProfile, s: Setup, batch: int) -> tuple[OpGroup, ...]:
    """One decode step for `batch` sequences: one new token each, attending p keys (affine in p)."""
    lin, attn, elem = decoder_forward(m, s, batch, 1, 0.0, 0, 1, "1 x batch")
    kv_read_per_pos = batch * m.kv_elems * s.kv_dtype.bytes / s.tp
    score_per_pos = (4.0 * batch * m.heads * m.layers * s.precision.act_bytes / s.tp
                     if s.attention.scores_materialized else 0.0)
    attn = OpGroup("attention", 0.0, attn.bytes, attn.compute_path,
                   "FLOPs = 4 x layers x heads x head_dim x p per sequence; bytes = KV cache read (p tokens) + write",
                   flops_per_pos=4.0 * m.layers * m.q_dim * batch / s.tp,
                   bytes_per_pos=kv_read_per_pos + score_per_pos)
    return lin, attn, elem


def _tp_comm(m: DecoderProfile, s: Setup, batch_tokens: int) -> tuple[float, float]:
    """Tensor parallel: two all-reduces per layer of the hidden state (ring: 2(n-1)/n of the message)."""
    if s.tp == 1:
        return 0.0, 0.0
    msg = batch_tokens * m.hidden * s.precision.act_bytes
    return 2 * m.layers * 2 * (s.tp - 1) / s.tp * msg, 2 * m.layers


@lru_cache(maxsize=4096)
def generate_phases(m: DecoderProfile, w: Generate, s: Setup, batch: int, passes: float) -> tuple[Phase, ...]:
    P, G = w.prompt_tokens, w.gen_tokens
    pre = decoder_forward(m, s, batch, P, P * (P + 1) / 2, P, 1, "prompt")
    kern = _kernels(m)
    comm, calls = _tp_comm(m, s, batch * P)
    phases = [Phase("prefill", pre, kern, 1, 0, passes, comm, calls)]
    if G > 1:
        comm, calls = _tp_comm(m, s, batch)
        phases.append(Phase("decode", decode_groups(m, s, batch), kern, G - 1, P + 1, passes, comm, calls))
    return tuple(phases)


@lru_cache(maxsize=4096)
def infer_phases(m: ModelProfile, w: Infer, s: Setup, batch: int, passes: float) -> tuple[Phase, ...]:
    if isinstance(m, GenericProfile):
        return (Phase("forward", _generic_groups(m, s, batch, w.input_size, 1.0), _kernels(m), 1, 0, passes),)
    S = w.input_size
    groups = decoder_forward(m, s, batch, S, S * (S + 1) / 2, S, S, "input")
    comm, calls = _tp_comm(m, s, batch * S)
    return (Phase("forward", groups, _kernels(m), 1, 0, passes, comm, calls),)


def _generic_groups(m: GenericProfile, s: Setup, batch: int, size: int, fwd_factor: float) -> tuple[OpGroup, ...]:
    p = s.precision
    flops = fwd_factor * batch * m.fwd_flops(size)
    w_bytes = m.params * p.weight_bytes * (1 if fwd_factor == 1 else 3)
    act = fwd_factor * batch * m.activation_traffic_elems(size) * p.act_bytes
    scores = (2 * fwd_factor * batch * m.attention_score_elems(size) * p.act_bytes
              if s.attention.scores_materialized else 0.0)
    return (
        OpGroup("matmuls (all layers)", flops, w_bytes, p.compute_path,
                f"FLOPs = {fwd_factor:g} x batch x fwd_flops(L) [{m.fwd_flops_expr}]; bytes = params x {p.weight_bytes:g} B"),
        OpGroup("elementwise & attention traffic", 0.0, act + scores, attention_path(p),
                f"bytes = {fwd_factor:g} x batch x traffic(L) [{m.activation_traffic_elems_expr}] x {p.act_bytes:g} B"
                + (" + score matrices (manual attention)" if scores else "")),
    )


@lru_cache(maxsize=4096)
def train_phases(m: ModelProfile, w: Train, s: Setup, batch: int, micro_steps: float, n_gpus: int) -> tuple[Phase, ...]:
    """Micro-steps (forward + backward [+ recompute]) and optimizer steps, per GPU; with s.shard > 1 the
    collectives of FSDP (ZeRO-3), else a DDP gradient all-reduce per optimizer step."""
    ckpt = 1.0 if w.checkpointing else 0.0
    fb = 3.0 + ckpt  # forward + backward (2x forward) + recomputed forward
    p = s.precision
    if isinstance(m, GenericProfile):
        groups = _generic_groups(m, s, batch, w.input_size, fb)
        kernels = m.kernels_per_forward * fb
        params = m.params
    else:
        S = w.input_size
        T = batch * S
        attn_fwd = 4.0 * m.layers * m.q_dim * batch * S * (S + 1) / 2
        attn_mult = 1 + FLASH_BWD_FLOP_RATIO + ckpt
        qkvo = T * m.layers * (2 * m.q_dim + 2 * m.kv_dim) * p.act_bytes
        scores = (4.0 * batch * m.heads * m.layers * S * S * p.act_bytes if s.attention.scores_materialized else 0.0)
        groups = (
            OpGroup("linear layers (fwd+bwd)", 2.0 * fb * T * m.matmul_params,
                    m.matmul_params * (p.act_bytes * fb + 8.0), p.compute_path,
                    f"FLOPs = {2 * fb:g} x tokens x matmul params (fwd 2, bwd 4{', recompute 2' if ckpt else ''}); "
                    f"bytes = weights read {fb:g}x + fp32 grad accumulate"),
            OpGroup("attention (fwd+bwd)", attn_fwd * attn_mult, (qkvo + scores) * fb, attention_path(p),
                    f"FLOPs = 4 x layers x heads x head_dim x S(S+1)/2 x batch x {attn_mult:g} (bwd = 2.5x fwd)"),
            OpGroup("elementwise & norms (fwd+bwd)", 0.0,
                    fb * T * m.act_traffic_elems * p.act_bytes + 3 * T * m.vocab * 4.0,
                    attention_path(p), "bytes = 3 x forward traffic (+1 with checkpointing) + fp32 logits, softmax, grad"),
        )
        kernels = _kernels(m) * fb
        params = m.params
    k = s.shard
    # FSDP: all-gather the weights for forward and again for backward, reduce-scatter the gradients, per
    # micro-step, in the compute dtype, one collective per layer each (ring: (k-1)/k of the full size)
    fsdp_bytes = 3 * (k - 1) / k * params * p.act_bytes if k > 1 else 0.0
    fsdp_calls = 3 * getattr(m, "layers", 1) if k > 1 else 0.0
    phases = [Phase("train micro-step", groups, kernels, 1, 0, micro_steps, fsdp_bytes, fsdp_calls)]
    opt_steps = micro_steps / w.grad_accum
    opt = OpGroup("optimizer update", 10.0 * params / k, OPTIMIZER_TRAFFIC[w.optimizer] * params / k, "fp32",
                  f"bytes = {OPTIMIZER_TRAFFIC[w.optimizer]:g} B/param ({w.optimizer}: read weights, grads, states; "
                  f"write weights, states)" + (f" on this GPU's 1/{k} shard" if k > 1 else ""))
    ddp = n_gpus > 1 and k == 1  # DDP: one all-reduce of the fp32 gradients per optimizer step
    dp_bytes = 2 * (n_gpus - 1) / n_gpus * 4.0 * params if ddp else 0.0
    phases.append(Phase("optimizer step", (opt,), 10, 1, 0, opt_steps, dp_bytes, 1.0 if ddp else 0.0))
    return tuple(phases)
