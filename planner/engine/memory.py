"""GPU memory per job: weights, KV cache, activations, gradients, optimizer states, CUDA context.

Units: decimal GB (1e9 bytes); the catalog's capacity is GiB (GPU.vram_gib) and GPU.vram_gb converts it.
Memory is affine in the batch, so the largest batch that fits follows from two evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from planner.base.units import BYTES_PER_GB, FP32_BYTES
from planner.engine.train_layout import scale_memory
from planner.inputs.catalog import GPU
from planner.inputs.jobs import OPTIMIZERS, Generate, Train, Workload
from planner.inputs.models import ModelProfile
from planner.inputs.models.fp8_training import FP8_BYTES
from planner.inputs.precisions import Precision
from planner.inputs.work import MemoryItem, Setup, weights_item

# FSDP prefetches the next block while one computes: two blocks' weights are gathered at a time
# (PyTorch FSDP's default backward_prefetch=BACKWARD_PRE; forward_prefetch adds the same ahead of forward).
FSDP_GATHERED_UNITS = 2


def usable_gb(gpu: GPU, target: float) -> float:
    """Memory a plan may fill on `gpu`, decimal GB: `target` (a fraction) of what the driver reports."""
    return gpu.reported_vram_gb * target


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


@lru_cache(maxsize=8192)
def breakdown(m: ModelProfile, w: Workload, s: Setup, batch: int, context_gb: float) -> MemoryBreakdown:
    """Memory on each GPU for `batch` sequences/samples in flight."""
    items: list[MemoryItem] = []
    if isinstance(w, Train):
        items += scale_memory(_train_items(m, w, s, batch), s, m.train_logits_bytes(batch, w.input_size) / BYTES_PER_GB)
    else:
        items.append(weights_item(m.params, m.quantized_params(s.precision.quantized_weights), s))
        if isinstance(w, Generate):
            items += m.generate_memory(s, batch, w.prompt_tokens, w.gen_tokens)
        else:
            items += m.inference_memory(s, batch, w.input_size)
    items.append(MemoryItem("cuda_context", context_gb, "CUDA context, cuBLAS/cuDNN workspace (runtime profile)"))
    return MemoryBreakdown(tuple(items))


def _train_items(m: ModelProfile, w: Train, s: Setup, batch: int) -> list[MemoryItem]:
    p = s.precision
    params = m.params
    mixed = p.act_bytes < FP32_BYTES
    copy = p.act_bytes if mixed else 0
    k = s.shard
    if s.zero_stage:
        return _zero_items(m, w, s, batch)
    # FP8 primary weights as Megatron holds them (DDP, distributed optimizer); FSDP gathers its 16-bit weights
    fp8_weights = s.fp8_weights and k == 1
    if k > 1:  # FSDP: fp32 states sharded; the compute-dtype weights of the blocks in flight gathered
        unit = m.shard_unit_params
        # a pipeline stage's two gathered layers are whole layers, not 1/pp of them: x pp here, as
        # train_layout.scale_memory divides the item by tp x pp
        pp_note = " x PP {}" if s.pp > 1 else ""
        items = [MemoryItem("weights",
                            (params * FP32_BYTES / k + FSDP_GATHERED_UNITS * unit * p.act_bytes * s.pp) / BYTES_PER_GB,
                            "{:,} params x fp32 master 4 B / {} GPUs + 2 gathered layers x {:g} B" + pp_note,
                            (params, k, p.act_bytes, s.pp) if s.pp > 1 else (params, k, p.act_bytes))]
    elif fp8_weights:
        items = [_fp8_primary_weights(m, params, FP32_BYTES + copy, FP32_BYTES,
                                      "{:,} params x {:g} B (fp32 master + 16-bit copy), but {:,} layer weights "
                                      "{:g} B (fp32 master + FP8 weight)")]
    else:
        items = [MemoryItem("weights", params * (FP32_BYTES + copy) / BYTES_PER_GB,
                            "{:,} params x (fp32 master 4 B + autocast copy {:g} B)", (params, copy))]
    if p.fp8_training is not None:
        items.append(_fp8_copies(m, _copy_bytes(s, fp8_weights), k, s.pp, fp8_weights))
    items += [MemoryItem("gradients", params * FP32_BYTES / k / BYTES_PER_GB,
                         "{:,} params x fp32 gradient (4 B) / {} GPU(s)", (params, k)),
              MemoryItem("optimizer", params * OPTIMIZERS[w.optimizer] / k / BYTES_PER_GB,
                         "{:,} params x {:g} B ({} states in fp32) / {} GPU(s)",
                         (params, OPTIMIZERS[w.optimizer], w.optimizer, k))]
    items.append(m.train_activation_memory(s, batch, w.input_size, w.checkpointing))
    return items


def zero_state_bytes(p: Precision) -> tuple[float, float, float]:
    """(weight, gradient, master-weight) bytes per parameter under ZeRO stage 1 or 2 as DeepSpeed holds them (ZeRO
    paper sec. 3.1 and 5.1, https://arxiv.org/abs/1910.02054): mixed precision keeps 16-bit weights and gradients
    and, among the partitioned optimizer states, an fp32 master copy of the weights; fp32 training keeps fp32 weights
    and gradients and no master copy. The stage changes only what is partitioned, not the bytes."""
    mixed = p.act_bytes < FP32_BYTES
    return (p.act_bytes, p.act_bytes, FP32_BYTES) if mixed else (FP32_BYTES, FP32_BYTES, 0.0)


def _zero_items(m: ModelProfile, w: Train, s: Setup, batch: int) -> list[MemoryItem]:
    """ZeRO stage 1/2 (DeepSpeed) per GPU, the paper's Figure 1: (2 + 2 + K) x params / N partitioned as 2 + 2 + K/N
    (stage 1: optimizer states, with the fp32 master weights among them) or 2 + (2 + K)/N (stage 2: gradients too),
    K = master 4 B + the optimizer's states (Adam 8 B: K = 12). Reduction buckets (DeepSpeed's reduce_bucket_size,
    5e8 elements by default) are not counted."""
    params, n, stage = m.params, s.zero_gpus, s.zero_stage
    weight_b, grad_b, master_b = zero_state_bytes(s.precision)
    grad_n = n if stage >= 2 else 1
    opt_b = OPTIMIZERS[w.optimizer]
    whole = (_fp8_primary_weights(m, params, weight_b, 0.0, "{:,} params x {:g} B, but {:,} layer weights {:g} B "
                                  f"(FP8 primary weights) (every GPU's whole copy, ZeRO-{stage})") if s.fp8_weights else
             MemoryItem("weights", params * weight_b / BYTES_PER_GB,
                        "{:,} params x {:g} B (every GPU's whole copy, ZeRO-{})", (params, weight_b, stage)))
    items = [whole,
             MemoryItem("gradients", params * grad_b / grad_n / BYTES_PER_GB,
                        "{:,} params x {:g} B gradient / {} GPU(s) (ZeRO-{})", (params, grad_b, grad_n, stage)),
             MemoryItem("optimizer", params * (opt_b + master_b) / n / BYTES_PER_GB,
                        "{:,} params x ({:g} B {} states + {:g} B fp32 master) / {} GPUs (ZeRO-{} partition)",
                        (params, opt_b, w.optimizer, master_b, n, stage))]
    if s.precision.fp8_training is not None:
        items.append(_fp8_copies(m, _copy_bytes(s, s.fp8_weights), 1, fp8_weights=s.fp8_weights))
    items.append(m.train_activation_memory(s, batch, w.input_size, w.checkpointing))
    return items


def _fp8_primary_weights(m: ModelProfile, params: int, per_param: float, master: float, template: str) -> MemoryItem:
    """The weights of a run with FP8 primary weights (Setup.fp8_weights: NeMo fp8_params, Megatron-LM
    --fp8-param-gather): `per_param` bytes for every parameter, except the layers' matrices (quantizable_params),
    held as Transformer Engine FP8 tensors (1 B) beside `master` bytes (a master copy outside the optimizer's
    partition; 0 when the optimizer states hold it)."""
    fp8 = m.quantizable_params
    held = master + FP8_BYTES
    return MemoryItem("weights", (params * per_param - fp8 * (per_param - held)) / BYTES_PER_GB, template,
                      (params, per_param, fp8, held))


def _copy_bytes(s: Setup, fp8_weights: bool) -> float:
    """Bytes per layer weight of the FP8 copies a step holds: the recipe's (the FP8 weight and its transpose), or
    with FP8 primary weights only the transpose, which Transformer Engine caches across micro-batches
    (transformer_engine/pytorch/module/linear.py, _Linear.backward: weight.transpose(cache=is_first_microbatch is not
    None), NVIDIA/TransformerEngine @0004dbd0)."""
    copy = s.precision.fp8_training.weight_copy_bytes
    return copy - FP8_BYTES if fp8_weights else copy


def _fp8_copies(m: ModelProfile, copy_bytes: float, k: int, pp: int = 1, fp8_weights: bool = False) -> MemoryItem:
    """The FP8 copies (weight and transpose) an FP8 training recipe holds of the layers' matrices (quantizable_params):
    every layer's on one GPU; under FSDP (k > 1) those of the blocks gathered at a time (x pp: whole layers on a
    pipeline stage, whose items train_layout.scale_memory divides by tp x pp)."""
    if k > 1:
        unit = min(m.shard_unit_params, m.quantizable_params)
        return MemoryItem("FP8 weight copies", FSDP_GATHERED_UNITS * unit * copy_bytes * pp / BYTES_PER_GB,
                          "2 gathered layers x {:,} params x {:g} B (FP8 weight + transpose)" + (
                              " x PP {}" if pp > 1 else ""), (unit, copy_bytes, pp) if pp > 1 else (unit, copy_bytes))
    what = ("the FP8 weights' transpose, cached across micro-batches" if fp8_weights else
            "FP8 weight + transpose, held from forward to backward")
    return MemoryItem("FP8 weight copies", m.quantizable_params * copy_bytes / BYTES_PER_GB,
                      "{:,} layer weights x {:g} B (" + what + ")", (m.quantizable_params, copy_bytes))


@lru_cache(maxsize=8192)
def max_batch(m: ModelProfile, w: Workload, s: Setup, vram_gb: float, context_gb: float, limit: int) -> int:
    """Largest batch (<= limit) whose memory fits in vram_gb (decimal GB, the usable memory); 0 if batch 1 does not fit.
    Memory is affine in the batch, so batch 1 and 2 determine it."""
    m1 = breakdown(m, w, s, 1, context_gb).total_gb
    if m1 > vram_gb:
        return 0
    slope = breakdown(m, w, s, 2, context_gb).total_gb - m1
    if slope <= 0:
        return limit
    return int(max(1, min(limit, 1 + (vram_gb - m1) // slope)))
