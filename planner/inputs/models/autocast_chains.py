"""What an eager training step under torch.autocast over float32 weights moves beyond the activation dtype: the float32
activations autocast keeps along a LayerNorm transformer's residual stream, and the float32 loss over the logits.

Sources (read 2026-11-27):
- PyTorch's autocast op lists (docs, "Automatic Mixed Precision package - torch.amp", section "CUDA Ops that can
  autocast to float32": layer_norm, softmax, log_softmax, cross_entropy, nll_loss, pow, ...; "CUDA Ops that can
  autocast to float16/bfloat16": linear, addmm, matmul, ...; other ops run in their inputs' widest type). So with
  float32 weights the embeddings' output is float32, every LayerNorm writes float32 (layer_norm runs in float32 and
  its weight is float32), and a residual add of a 16-bit branch to the float32 stream is promoted to float32.
- torch/csrc/autocast_mode.cpp `cached_cast`: a float32 argument is cast to 16 bits for each lower-precision op, and
  only leaf tensors that require grad (the weights) are cached for the rest of the forward: an activation is cast
  again by every linear module that reads it (a cast kernel: read 4 B, write a).
- Autograd: a tensor's gradient has the tensor's dtype, so the stream's and the norms' gradients are float32 and
  each cast's backward is the reverse cast (read a, write 4 B); an add of a 16-bit and a float32 input hands the
  16-bit input a gradient cast back to 16 bits (read 4 B, write a).
- Hugging Face transformers NewGELUActivation (activations.py; ACT2FN 'gelu_new', GPT-2's activation_function):
  `0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))`, eight
  elementwise ops in Python; pow is on autocast's float32 list, so under autocast its input is cast to float32 and
  every op after it that touches its result runs in float32 (type promotion), and the product is cast back for the
  next linear module.
- Hugging Face transformers ForCausalLMLoss (loss/loss_utils.py): `logits = logits.float()` before
  `F.cross_entropy` (which autocast would run in float32 anyway); torch's cross_entropy is log_softmax then
  nll_loss. aten/src/ATen/native/cuda/SoftMax.cu `cunn_SoftMaxForward` (a row too long to hold in registers) reads
  the row for its max, again for the sum of exponentials and again to write the output; `cunn_SoftMaxBackward` reads
  the gradient for its sum and the gradient and the output to write the input's gradient; nll_loss's backward
  writes a zeroed float32 gradient of the logits' size and scatters one value per row.

Counted per element, each kernel's reads plus writes; a the activation dtype's bytes, f float32's 4. The checks
against an H100's profile (validation/measured/2026-11-27_nvidia-h100_b_probe-train.log) are in validation/REPORT.md.
Not counted: the embeddings' sums and norm and the final norm (outside the layers), Q, K and V cast three times when
they are three modules (BERT): counted once, as a fused QKV (GPT-2's c_attn); the LayerNorms' weight gradients.
"""

from __future__ import annotations

from planner.base.units import FP32_BYTES

# Per layer: two LayerNorms, two residual adds, and two float32 norm outputs cast for the linear modules that read
# them (the QKV projection and the MLP's first matrix, in pre-norm GPT-2 and ViT; in post-norm BERT the layer's input
# norm feeds QKV and the attention block's norm feeds the MLP)
NORMS_PER_LAYER = 2
ADDS_PER_LAYER = 2
CASTS_PER_LAYER = 2
# A LayerNorm's forward reads x and writes y (2 elements) and its backward reads dy and x and writes dx (3); a residual
# add reads 2 and writes 1, of which the stream's input and the output are float32 (2), and its backward's gradient
# sum at the branch point reads 2 and writes 1, all float32 (3)
NORM_FWD_ELEMS, NORM_BWD_ELEMS = 2, 3
ADD_FWD_FP32_ELEMS, ADD_BWD_ELEMS = 2, 3
# Logits' passes in float32 (per element): log_softmax forward 3 reads + 1 write; nll_loss backward's zeroed gradient
# 1 write; log_softmax backward 3 reads (the gradient twice, the output) + 1 write
LOG_SOFTMAX_FWD_PASSES = 4
NLL_BACKWARD_PASSES = 1
LOG_SOFTMAX_BWD_PASSES = 4
# What the planner charges the logits elsewhere (3 float32 passes: the loss's write, read and gradient write)
FUSED_LOSS_PASSES = 3


def _wider(act_bytes: float) -> float:
    """Bytes float32 adds over the activation dtype per element read or written (0 when activations are float32)."""
    return max(0.0, FP32_BYTES - act_bytes)


def _cast(act_bytes: float) -> float:
    """A cast kernel between float32 and the activation dtype: read one, write the other (0 in float32)."""
    return FP32_BYTES + act_bytes if act_bytes < FP32_BYTES else 0.0


def stream_forward_bytes(act_bytes: float) -> float:
    """Bytes per hidden element per layer that one forward moves beyond an all-16-bit layer: the norms' input and
    output in float32, the residual adds' stream input and output in float32, and the casts of the norms' outputs for
    the linear modules. In bf16: 2 x 2 x 2 + 2 x 2 x 2 + 2 x 6 = 28 B."""
    w = _wider(act_bytes)
    return (NORMS_PER_LAYER * NORM_FWD_ELEMS * w + ADDS_PER_LAYER * ADD_FWD_FP32_ELEMS * w
            + CASTS_PER_LAYER * _cast(act_bytes))


def stream_backward_bytes(act_bytes: float) -> float:
    """Bytes per hidden element per layer that autograd's backward moves beyond an all-16-bit layer: the norms'
    backward and the branch points' gradient sums in float32, the casts' backward (16-bit gradient to float32) and
    each residual add's gradient cast to its 16-bit branch. In bf16: 2 x 3 x 2 + 2 x 3 x 2 + 2 x 6 + 2 x 6 = 48 B."""
    w = _wider(act_bytes)
    return (NORMS_PER_LAYER * NORM_BWD_ELEMS * w + ADDS_PER_LAYER * ADD_BWD_ELEMS * w
            + CASTS_PER_LAYER * _cast(act_bytes) + ADDS_PER_LAYER * _cast(act_bytes))


def loss_bytes(act_bytes: float) -> float:
    """Bytes per logit element of the float32 loss, forward and backward: the upcast (read a, write 4 B), log_softmax
    forward, nll_loss backward's zeroed gradient, log_softmax backward, and the upcast's backward (read 4 B, write
    a). In bf16 6 + 16 + 4 + 16 + 6 = 48 B."""
    f = float(FP32_BYTES)
    passes = LOG_SOFTMAX_FWD_PASSES + NLL_BACKWARD_PASSES + LOG_SOFTMAX_BWD_PASSES
    return 2 * _cast(act_bytes) + passes * f


def gelu_tanh_chain_bytes(act_bytes: float, autocast: bool) -> tuple[float, float]:
    """(forward, backward) bytes per MLP hidden element that NewGELUActivation's ops move in eager PyTorch beyond one
    GELU kernel (forward: read and write, 2a; backward: gelu_backward's read dy and x, write dx, 3a). w is the width
    of the chain's float32 part (4 B under autocast, else a) and c a cast (a + 4 under autocast, else none).
    Forward: the cast of pow's input (c), pow, x 0.044715, x sqrt(2/pi), tanh and + 1 (2w each), + input (read a and
    w, write w), 0.5 x input (2a), the product (read a and w, write w), the product's cast for the next linear (c):
    14w + 4a + 2c. Backward: that cast's (c); the product's two gradients (read 2w write w, cast to input's dtype c;
    read w and a, write w); tanh_backward (3w); the two constant products (2w each); + input's gradient cast to the
    input's dtype (c); pow's backward, x.pow(2), x 3 and x grad (2w + 2w + 3w); pow's input cast (c); 0.5 x grad (2a);
    the three gradients of the input summed (two adds, 3a each): 19w + 9a + 4c. In bf16 under autocast 76 - 4 and
    118 - 6 B; without autocast 18a - 2a and 28a - 3a."""
    a = act_bytes
    w = float(FP32_BYTES) if autocast else a
    c = _cast(a) if autocast else 0.0
    return 14 * w + 4 * a + 2 * c - 2 * a, 19 * w + 9 * a + 4 * c - 3 * a


def fused_loss_bytes() -> float:
    """Bytes per logit element the planner charges a runtime that does not run the float32 loss op by op."""
    return FUSED_LOSS_PASSES * float(FP32_BYTES)
