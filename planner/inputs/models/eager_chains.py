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


def rotary_chain_bytes(act_bytes: float) -> float:
    """Bytes per element of Q or K that transformers' rotary embedding moves in eager PyTorch (ROTARY_PASSES x a); a
    fused runtime moves none beyond the QKV output it counts already."""
    return ROTARY_PASSES * act_bytes


def softmax_upcast_bytes(act_bytes: float) -> float:
    """Bytes per attention score that the float32 softmax adds over a softmax in the activation dtype (which reads a
    and writes a): softmax writes 4 B instead of a, and the cast back reads 4 B and writes a; none in float32."""
    f = float(FP32_BYTES)
    return (f - act_bytes) + (f + act_bytes) if act_bytes < f else 0.0
