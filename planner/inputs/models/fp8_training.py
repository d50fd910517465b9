"""FP8 training as NVIDIA Transformer Engine runs it: the work of a transformer's linear layers under an FP8 recipe
(planner.inputs.precisions.Fp8Training, data/precisions.yaml `fp8-te`).

The layers' linear GEMMs (QKV, output projection, MLP) run forward and backward at the recipe's FP8 path, reading
FP8 weights (1 B); the LM head stays a BF16 GEMM. Each GEMM input is cast to FP8 by a memory-bound kernel: the
activations X (M x K) and the weights W (N x K) forward, the output gradients dY (M x N) backward, each element read
in BF16 and written as FP8 and its transpose (cast_bytes). A recomputed forward (checkpointing) casts X again; the
weights' cast is counted once per micro-step (Transformer Engine caches it across the micro-batches of gradient
accumulation, so with accumulation this over-counts by a few ms a step).
"""

from __future__ import annotations

from planner.inputs.precisions import Fp8Training
from planner.inputs.work import Gemm, OpGroup, forward_equivalents, training_gemms

FP8_BYTES = 1.0  # E4M3 and E5M2 are one byte (Micikevicius et al. 2022, FP8 Formats for Deep Learning)
CAST_GROUP = "FP8 casts & amax (fwd+bwd)"
FP8_LINEAR_GROUP = "linear layers, FP8 GEMMs (fwd+bwd)"
HEAD_GROUP = "LM head, BF16 GEMM (fwd+bwd)"


def cast_elements(layer_gemms: tuple[Gemm, ...], forwards: float) -> tuple[float, float, float]:
    """(activation, weight, gradient) elements cast to FP8 in one micro-step from the layers' forward GEMMs
    (M, N, K, count): X = M x K per forward pass (`forwards`: 2 with checkpointing), W = N x K once, dY = M x N once."""
    x = sum(m * k * c for m, _, k, c in layer_gemms) * forwards
    w = sum(n * k * c for _, n, k, c in layer_gemms)
    dy = sum(m * n * c for m, n, _, c in layer_gemms)
    return x, w, dy


def fp8_linear_groups(recipe: Fp8Training, layer_gemms: tuple[Gemm, ...], head_gemms: tuple[Gemm, ...],
                      tokens: int, layer_params: int, layer_read: float, head_params: int, act_bytes: float,
                      head_path: str, cast_path: str, checkpointing: bool, grad_bytes: float,
                      note: str, shaped: tuple[tuple[Gemm, ...], tuple[Gemm, ...]] | None = None
                      ) -> tuple[OpGroup, ...]:
    """The linear work of one training micro-step over `tokens` tokens under `recipe`: the layers' FP8 GEMMs
    (layer_params weights per token, layer_read weights read), the LM head in `head_path` (head_params) and the
    casts; grad_bytes: what each weight's fp32 gradient costs per micro-step (its read and write). `shaped`: the
    layers' and LM head's GEMMs at the shapes one GPU of a training layout runs them (tensor parallel's split), for
    their tile and wave quantization; None: layer_gemms and head_gemms as they are."""
    layer_shapes, head_shapes = shaped if shaped is not None else (layer_gemms, head_gemms)
    fb = forward_equivalents(checkpointing)
    forwards = 2.0 if checkpointing else 1.0
    ckpt = " + recomputed forward" if checkpointing else ""
    x, w, dy = cast_elements(layer_gemms, forwards)
    cast_bytes = (x + w + dy) * recipe.cast_bytes
    per_forward = x / forwards
    return (
        OpGroup(FP8_LINEAR_GROUP, 2.0 * fb * tokens * layer_params, layer_read * (FP8_BYTES * fb + grad_bytes),
                recipe.gemm_path,
                f"FLOPs = 2 x {fb:g} passes (fwd + 2x bwd{ckpt}) x {tokens:,} tokens x {layer_params:,} layer "
                f"weights at the {recipe.gemm_path} rate (QKV, output projection, MLP: Transformer Engine); bytes = "
                f"{layer_read:,.0f} weights x ({FP8_BYTES:g} B FP8 x {fb:g} passes + {grad_bytes:g} B fp32 gradient "
                f"read+write){note}",
                gemms=training_gemms(layer_shapes, checkpointing)),
        *((OpGroup(HEAD_GROUP, 2.0 * fb * tokens * head_params, head_params * (act_bytes * fb + grad_bytes), head_path,
                   f"FLOPs = 2 x {fb:g} passes x {tokens:,} tokens x {head_params:,} LM-head weights in {head_path} "
                   f"(Transformer Engine leaves the LM head to the model's dtype); bytes = {head_params:,} x "
                   f"({act_bytes:g} B x {fb:g} + {grad_bytes:g} B)",
                   gemms=training_gemms(head_shapes, checkpointing)),) if head_params else ()),
        OpGroup(CAST_GROUP, 0.0, cast_bytes, cast_path,
                f"bytes = (activations {per_forward:,.0f} x {forwards:g} forward(s) + weights {w:,.0f} + output "
                f"gradients {dy:,.0f}) elements x {recipe.cast_bytes:g} B (read {recipe.cast_read_bytes:g} B BF16, "
                f"write {recipe.cast_write_bytes:g} B: FP8 and its transpose; amax in the same kernel)"),
    )
