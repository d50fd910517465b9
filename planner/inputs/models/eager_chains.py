"""What Hugging Face's LLaMA-family model code moves beyond one fused kernel per elementwise chain, when eager PyTorch
runs it op by op: its RMSNorm in float32, its rotary embedding and its softmax upcast.

Read in the released wheel of transformers 4.35.0 (models/llama/modeling_llama.py, read 2026-11-27; the same code is
copied into Mistral, Qwen2 and the other LLaMA-family classes of 4.3x-4.4x):
- LlamaRMSNorm.forward (lines 102-107): `hidden_states.to(torch.float32)`, `.pow(2).mean(-1, keepdim=True)`,
  `hidden_states * torch.rsqrt(variance + eps)`, `.to(input_dtype)`, `self.weight * ...`: five kernels over the hidden
  vector (the rsqrt of one value per token is negligible), two norms per layer and a final one.
- rotate_half / apply_rotary_pos_emb (lines 194-225): `q * cos`, `torch.cat((-x2, x1))` (a negation of half and a
  concatenation), `* sin`, the sum: five kernels over Q and again over K (the cos/sin rows are broadcast over the heads
  and stay in L2).
- LlamaAttention (line 406): `softmax(attn_weights, dim=-1, dtype=torch.float32).to(query_states.dtype)`: softmax
  writes float32 scores and a cast reads them back to 16 bits before the AV product.

A fused runtime (a compiler, vLLM's and TensorRT-LLM's kernels) runs a norm as one kernel (read and write the vector:
what act_traffic_elems counts) and folds rotary into the QKV epilogue or the attention kernel. Bytes per element here
are what each kernel reads plus what it writes, DRAM traffic for tensors larger than the L2 (a 512-token prompt's
hidden states are 5 MiB per sequence for a 5,120-wide model).
"""

from __future__ import annotations

from planner.base.units import FP32_BYTES

# Kernels of the rotary embedding's backward per element of Q or K, as autograd runs them in eager PyTorch (each a
# read and a write in the activation dtype a): the sin branch's product (2a), the negation's backward on half (a), the
# cat's backward, two slice_backwards each writing a whole zeroed tensor and reading its half (1.5a each), their sum
# (read 2a, write a), the cos branch's product (2a), the two branches' sum (3a).
ROTARY_BACKWARD_PASSES = 14.0
# Kernels of transformers' rotary embedding per element of Q or K, each a read and a write of the tensor in the
# activation dtype a: q * cos (2a), -x2 on half the elements (a), cat (2a), * sin (2a), the sum (read 2a, write a).
ROTARY_PASSES = 10.0


def rmsnorm_chain_bytes(act_bytes: float) -> float:
    """Bytes per hidden element of LlamaRMSNorm in eager PyTorch beyond a fused norm's read and write (2 x act_bytes):
    the upcast (read a, write 4 B; none in float32), pow (read and write 4 B), mean (read 4 B), the rsqrt product (read
    and write 4 B), the downcast (read 4 B, write a; none in float32) and the weight's product (read and write a)."""
    a, f = act_bytes, float(FP32_BYTES)
    casts = (a + f) + (f + a) if a < f else 0.0
    return casts + 5 * f  # pow 2f, mean f, the rsqrt product 2f; the weight's product stands for the fused norm's 2a


def rmsnorm_backward_chain_bytes(act_bytes: float) -> float:
    """Bytes per hidden element that autograd's backward of LlamaRMSNorm moves op by op beyond a fused norm's backward
    (read dY and x, write dx: 3 x act_bytes), a the activation bytes, f float32's 4: the weight's product, dY x w
    (read a, write a), dY x y for the weight's gradient (read 2a, write a) and its sum over the tokens (read a); the
    downcast's backward (read a, write f); the rsqrt product's, g x r (read f, write f) and g x x (read 2f, write f)
    summed per token (read f); mean's backward dividing the expanded gradient (read f, write f); pow's, x^1, x 2 and
    the product with the gradient (2f + 2f + 3f); the two paths' gradients of x added (read 2f, write f); the upcast's
    backward (read f, write a). In bf16 96 B against the fused 6: 90 more (the ops as torch 2.13's autograd
    dispatches them, counted in tests/inputs/test_eager_train_chains.py)."""
    a, f = act_bytes, float(FP32_BYTES)
    casts = (a + f) + (f + a) if a < f else 0.0
    weight = 2 * a + 3 * a + a
    product = 2 * f + 3 * f + f
    mean_pow = 2 * f + (2 * f + 2 * f + 3 * f)
    return casts + weight + product + mean_pow + 3 * f - 3 * a


def rotary_backward_chain_bytes(act_bytes: float) -> float:
    """Bytes per element of Q or K that autograd's backward of transformers' rotary embedding moves in eager PyTorch
    (ROTARY_BACKWARD_PASSES x a); a fused runtime folds it into the kernels beside it."""
    return ROTARY_BACKWARD_PASSES * act_bytes


def rotary_chain_bytes(act_bytes: float) -> float:
    """Bytes per element of Q or K that transformers' rotary embedding moves in eager PyTorch (ROTARY_PASSES x a); a
    fused runtime moves none beyond the QKV output it counts already."""
    return ROTARY_PASSES * act_bytes


def softmax_upcast_bytes(act_bytes: float) -> float:
    """Bytes per attention score that the float32 softmax adds over a softmax in the activation dtype (which reads a
    and writes a): softmax writes 4 B instead of a, and the cast back reads 4 B and writes a; none in float32."""
    f = float(FP32_BYTES)
    return (f - act_bytes) + (f + act_bytes) if act_bytes < f else 0.0
