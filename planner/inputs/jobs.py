"""Jobs a user plans (generate / infer / train) and the training choices they come with."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.base.units import FP32_BYTES
from planner.inputs.layouts import NO_LAYOUT, Layout

# Optimizer-state bytes per parameter, kept in fp32: Adam/AdamW hold two moments (m, v), SGD with momentum one.
# 'adamw' runs as the runtime runs it (Training.optimizer_kernels); 'adamw-fused' is AdamW asked for fused kernels
# whatever the runtime (torch.optim.AdamW(fused=True), apex FusedAdam: the bench's training points).
OPTIMIZERS = {"adam": 2.0 * FP32_BYTES, "adamw": 2.0 * FP32_BYTES, "adamw-fused": 2.0 * FP32_BYTES,
              "sgd": 1.0 * FP32_BYTES}
# DRAM bytes per parameter of one fused optimizer step, all fp32: Adam reads weight, grad, m, v (16 B) and writes
# weight, m, v (12 B) = 28 B; SGD with momentum reads weight, grad, momentum and writes weight, momentum = 20 B.
OPTIMIZER_TRAFFIC = {"adam": 7.0 * FP32_BYTES, "adamw": 7.0 * FP32_BYTES, "adamw-fused": 7.0 * FP32_BYTES,
                     "sgd": 5.0 * FP32_BYTES}
# torch.optim's foreach Adam/AdamW (the default on CUDA when neither foreach nor fused is given:
# torch.optim.optimizer._default_to_fused_or_foreach; adam.py _multi_tensor_adam, torch 2.13.0, read 2026-11-27) runs
# one multi-tensor kernel per step of the update, each reading and writing float32 tensors per parameter: AdamW's
# decoupled decay params *= 1 - lr wd (read 1, write 1), exp_avg.lerp_(grad) (read 2, write 1),
# exp_avg_sq *= beta2 (1, 1), exp_avg_sq.addcmul_(grad, grad) (2, 1: grad passed twice, read once),
# sqrt(exp_avg_sq) into a new tensor (1, 1), its division by the bias correction (1, 1), + eps (1, 1),
# params.addcdiv_(exp_avg, that) (3, 1) = 20 tensors of 4 B; Adam's default weight_decay 0 skips the decay (18).
# Fused AdamW (fused=True, apex/DeepSpeed FusedAdam) reads weights, grads and both moments and writes three: the 7 of
# OPTIMIZER_TRAFFIC. SGD and adamw-fused keep OPTIMIZER_TRAFFIC either way.
FOREACH_TRAFFIC = {"adam": 18.0 * FP32_BYTES, "adamw": 20.0 * FP32_BYTES}


def optimizer_traffic(optimizer: str, foreach: bool) -> float:
    """Bytes per parameter an optimizer step moves: torch.optim's foreach kernels (FOREACH_TRAFFIC) or one fused
    kernel (OPTIMIZER_TRAFFIC)."""
    return FOREACH_TRAFFIC.get(optimizer, OPTIMIZER_TRAFFIC[optimizer]) if foreach else OPTIMIZER_TRAFFIC[optimizer]
# Multi-GPU training layouts (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
# Parameter Models", sec. 5, https://arxiv.org/abs/1910.02054, read 2026-11-27): ddp keeps every state on every GPU;
# ZeRO stage 1 partitions the optimizer states over the GPUs, stage 2 the gradients too, stage 3 (fsdp: PyTorch FSDP
# FULL_SHARD) the parameters too; auto lets the planner pick the cheapest layout that fits. DeepSpeed's docs
# (https://deepspeed.readthedocs.io/en/stable/zero3.html, read 2026-11-27): stage 1 partitions the 32-bit weights and
# Adam's moments, stage 2 the 16-bit gradients too. PyTorch FSDP's SHARD_GRAD_OP is stage 2's analogue, keeping the
# gathered weights from forward to backward (torch.distributed.fsdp.ShardingStrategy,
# https://pytorch.org/docs/stable/fsdp.html, read 2026-11-27); the planner costs stages 1 and 2 as DeepSpeed runs them.
ZERO_STAGES = {"ddp": 0, "zero1": 1, "zero2": 2, "fsdp": 3}
AUTO_SHARDING = "auto"
SHARDINGS = (*ZERO_STAGES, AUTO_SHARDING)


@dataclass(frozen=True)
class Bound:
    """What a user may ask for, for one job input: the CLI, share links and the page's widgets all check it."""

    lo: float
    hi: float
    integer: bool = True


# A trillion sequences or samples is past any real job (1M cfDNA sequences is the largest seed); 10M tokens per
# sequence is past every model's context; 1,024 GPUs per job is past what a RunPod pod or cluster offers.
BOUNDS = {
    "sequences": Bound(1, 10**12), "prompt_tokens": Bound(1, 10**7), "gen_tokens": Bound(1, 10**7),
    "samples": Bound(1, 10**12), "input_size": Bound(1, 10**7), "epochs": Bound(0.001, 10**5, integer=False),
    "grad_accum": Bound(1, 10**5), "global_batch": Bound(0, 10**8), "gpus": Bound(1, 1024), "batch": Bound(1, 10**7),
    # training tokens asked for in place of samples x epochs (0 = not given): 10^15 is ~30x the largest published
    # pretraining run (Llama 4 Behemoth, ~3e13 tokens)
    "train_tokens": Bound(0, 10**15, integer=False),
    # percent of the memory the GPU reports that a plan may fill (planner.engine.plan.MEMORY_TARGET_DEFAULT)
    "memory_target_pct": Bound(50, 100, integer=False),
    # the user's cluster (planner.engine.cluster), each optional: GPUs per node from 1 to 72, the largest NVLink domain
    # of the catalog (GB200/GB300 NVL72); the network between nodes per node, Gb/s, from 10 (10 GbE) to 57,600 (72
    # GPUs x one 800 Gb/s ConnectX-8 each, GB300 NVL72: data/interconnects.yaml, fabric cx8-800)
    "node_gpus": Bound(1, 72), "fabric_gbits_per_node": Bound(10, 57_600, integer=False),
    # the host CPU's single-thread speed over the reference hosts' (planner.engine.host_speed): server CPUs' PassMark
    # single-thread ratings span well within 4x of one another
    "host_speed": Bound(0.25, 4, integer=False),
}


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

    @property
    def input_size(self) -> int:
        """Tokens a sequence holds at the end (prompt + generated)."""
        return self.prompt_tokens + self.gen_tokens


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
    sharding: str = "ddp"  # one of SHARDINGS: ddp, zero1, zero2, fsdp (ZeRO-3), or auto (the planner picks)
    # the tokens asked for when the job was given in tokens (for_tokens: samples_per_epoch their whole samples, one
    # epoch); 0 = given as samples x epochs
    train_tokens: float = 0.0
    # the model-parallel layout (tensor, pipeline, context parallel; planner.inputs.layouts); the data-parallel ranks
    # are the GPUs it leaves
    layout: Layout = NO_LAYOUT
    # samples per optimizer step over all data-parallel ranks (0 = micro-batch x grad_accum x data-parallel ranks);
    # given, it sets the gradient accumulation (accum_for)
    global_batch: int = 0
    kind: str = "train"

    @property
    def items(self) -> int:
        return math.ceil(self.samples_per_epoch * self.epochs)

    def accum_for(self, micro_batch: int, dp: int) -> int:
        """Micro-batches per optimizer step on each data-parallel rank (a pipeline's micro-batches): the global batch
        over micro-batch x data-parallel ranks when a global batch is given (at least 1), else grad_accum."""
        if not self.global_batch:
            return self.grad_accum
        return max(1, self.global_batch // (micro_batch * dp))

    @classmethod
    def for_tokens(cls, tokens: float, input_size: int, **choices) -> Train:
        """Training on `tokens` tokens of `input_size`-token samples: the whole samples that hold them (rounded up),
        one epoch."""
        return cls(max(1, math.ceil(tokens / input_size)), input_size, 1.0, train_tokens=float(tokens), **choices)


Workload = Generate | Infer | Train
JOBS = ("generate", "infer", "train")
