"""How much of the GPUs a training estimate uses, as training papers report it: model FLOPs utilization (MFU), tokens
per second per GPU, and the cost of a billion training tokens.

MFU is the model's own FLOPs over what the GPUs' dense datasheet peak could do in the same time (Chowdhery et al.,
'PaLM', 2022, appendix B; Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', 2022,
sec. 6): a training step's model FLOPs are 3 x its forward's (the backward computes gradients with respect to both
activations and weights, 2 x the forward). Recomputation under activation checkpointing is work the GPUs do but not
model FLOPs (counting it gives hardware FLOPs utilization, HFU), so MFU falls when checkpointing is on.

FP8 training (Transformer Engine, precision fp8-te) is reported against the BF16 dense peak, as training stacks
report it: TorchTitan's MFU divides by get_peak_flops, 'hardcoded BF16 type peak flops' per GPU, float8 runs
included (pytorch/torchtitan torchtitan/tools/utils.py, read 2026-11-27), and NVIDIA's Megatron-Bridge/NeMo
performance summaries give FP8 runs' 'Model TFLOP/sec/GPU' from the same model FLOPs (docs.nvidia.com/nemo/
megatron-bridge performance-summary, read 2026-11-27). The recipe's compute_path is bf16 (its FP8 GEMMs are a
separate path), so the peak below is the BF16 one; an FP8 run can thus exceed what BF16 could reach.

Pure: reads an Estimate, no I/O.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engine.estimate import Estimate
from planner.inputs.jobs import Train

TRAIN_FORWARD_MULTIPLE = 3  # forward + backward (2 x forward) model FLOPs per training step (PaLM appendix B)
TOKENS_PER_BILLION = 1e9


def forward_flops_per_sample(e: Estimate) -> float:
    """The model's forward FLOPs for one sample of the plan's input size (a batch of one; FLOPs are linear in it)."""
    w, s = e.plan.workload, e.setup
    whole = replace(s, tp=1) if s.tp > 1 else s  # the whole model's FLOPs, not one tensor-parallel GPU's share
    return sum(g.flops for g in e.plan.model.forward_work(whole, 1, w.input_size))


def model_flops(e: Estimate) -> float | None:
    """The model FLOPs of the whole training job: 3 x forward x samples (every epoch); None outside training."""
    w = e.plan.workload
    if not isinstance(w, Train):
        return None
    return TRAIN_FORWARD_MULTIPLE * forward_flops_per_sample(e) * w.items


def mfu(e: Estimate) -> float | None:
    """Model FLOPs utilization of a training estimate on its GPUs' dense datasheet peak for the path its matmuls run
    (0-1); None outside training, for a plan that can't run, or a device without that peak (a measured CPU)."""
    flops = model_flops(e)
    path = e.gpu.run_path(e.setup.precision.compute_path)
    peak = e.gpu.peak_tflops(path) if path else None
    if flops is None or not e.feasible or not e.seconds or not peak:
        return None
    return flops / (e.seconds * e.plan.gpus * peak * 1e12)


def tokens_per_s_per_gpu(e: Estimate) -> float | None:
    """Tokens per second each GPU processes (the job's tokens/s over its GPUs); None without token throughput."""
    return e.tokens_per_s / e.plan.gpus if e.tokens_per_s else None


def cost_per_billion_tokens(e: Estimate, tier: str | None = None) -> float | None:
    """Compute cost in USD of a billion tokens at the estimate's rate in `tier` (default: the plan's): cost / tokens x
    1e9; None without a cost or token throughput."""
    cost = e.cost(tier)
    if cost is None or not e.tokens_per_s or not e.seconds:
        return None
    return cost / (e.tokens_per_s * e.seconds) * TOKENS_PER_BILLION
