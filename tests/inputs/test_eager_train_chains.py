"""Hugging Face's LLaMA-family code in a training step run op by op: the float32 RMSNorm and the rotary embedding
forward (and recomputed under checkpointing) and autograd's backward of each of their ops
(planner/inputs/models/eager_chains.py). The backward's kernels are derived by hand below and counted from torch's
own dispatcher on a CPU copy of transformers' LlamaRMSNorm and rotate_half."""

import json
from dataclasses import replace

import pytest
import torch

from planner.engine.plan import Plan, resolve_setup
from planner.inputs.jobs import Train
from planner.inputs.models import parse_model_text
from planner.inputs.models.eager_chains import rmsnorm_backward_chain_bytes, rotary_backward_chain_bytes
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes
from tests.fixtures.dispatch import dispatched_bytes

# 2 layers, hidden 256, 8 query heads and 2 KV heads of 32: Q 256 and K 64 elements a token and layer
GQA = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
       "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
       "max_position_embeddings": 4096, "tie_word_embeddings": False}
TOKENS = 100
ELEMENTWISE = "elementwise & norms (fwd+bwd)"


def _elementwise(m, precision: str, runtime: str = "pytorch-eager", checkpointing: bool = False) -> float:
    s = resolve_setup(Plan(m, Train(1, TOKENS, 1), precision, None, "sdpa-flash", runtime), load_rules(),
                      load_runtimes())
    return {g.name: g for g in m.train_work(s, 1, TOKENS, checkpointing)}[ELEMENTWISE].bytes


def test_the_backward_chains_by_their_kernels():
    """bf16 (a = 2, f = 4): the weight's product's backward dY x w 4, dY x y 6 and its sum 2; the downcast's backward
    6; the rsqrt product's g x r 8, g x x 12 and its sum 4; mean's division 8; pow's x^1 8, x 2 8, the product 12;
    the two gradients' sum 12; the upcast's backward 6: 96 B, 90 beyond a fused norm's 6. float32 has no casts: 84
    beyond 12. Rotary: 14 kernel passes of a, 28 B (bf16), 56 B (fp32)."""
    assert rmsnorm_backward_chain_bytes(2.0) == 90.0
    assert rmsnorm_backward_chain_bytes(4.0) == 84.0
    assert rotary_backward_chain_bytes(2.0) == 28.0
    assert rotary_backward_chain_bytes(4.0) == 56.0


def test_an_eager_training_step_pays_the_chains_forward_and_backward():
    """By hand, bf16, 100 tokens: forward 5 norms (2 a layer + the final) x 256 x 32 B + rotary over Q and K, 2 layers
    x (256 + 64) x 20 B = 53,760 B a token; backward 5 x 256 x 90 + 2 x 320 x 28 = 133,120 B a token; 18,688,000 B
    for the step, 24,064,000 with checkpointing (the forward twice). The same model as a LayerNorm model pays none
    of them but autocast's float32 stream instead (autocast_chains: 28 B forward and 48 backward a hidden element
    and layer, 2 x 256 x 76 x 100 = 3,891,200 B; 2 x 256 x 104 x 100 = 5,324,800 with checkpointing);
    torch.compile fuses them away."""
    m = _model()
    plain = replace(m, norm="layernorm")
    assert _elementwise(m, "bf16") - _elementwise(plain, "bf16") == pytest.approx(18_688_000 - 3_891_200)
    assert (_elementwise(m, "bf16", checkpointing=True) - _elementwise(plain, "bf16", checkpointing=True)
            == pytest.approx(24_064_000 - 5_324_800))
    assert _elementwise(m, "bf16", "torch-compile") == pytest.approx(_elementwise(plain, "bf16", "torch-compile"))


def test_float32_training_pays_the_kernels_but_no_casts():
    """fp32: forward 5 x 256 x 20 + 2 x 320 x 40 = 51,200 B a token, backward 5 x 256 x 84 + 2 x 320 x 56 =
    143,360: 19,456,000 B for 100 tokens."""
    m = _model()
    assert _elementwise(m, "fp32") - _elementwise(replace(m, norm="layernorm"), "fp32") == pytest.approx(19_456_000)


def _model():
    return parse_model_text(json.dumps(GQA), "config.json", "test")


def test_torchs_dispatcher_runs_the_kernels_counted_by_hand():
    """transformers 4.35.0's LlamaRMSNorm.forward and rotate_half/apply_rotary_pos_emb, in bf16 on the CPU: the
    forward moves 36 B a hidden element (32 + the fused 4), the backward 96 (90 + the fused 6); rotary's backward
    28 B an element of Q plus the cos and sin rows it reads (1/16 of the elements here, 2 B each, twice)."""
    tokens, hidden = 1024, 2048
    x = torch.randn(tokens, hidden, dtype=torch.bfloat16, requires_grad=True)
    weight = torch.ones(hidden, dtype=torch.bfloat16, requires_grad=True)

    def rmsnorm():
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        return weight * (h * torch.rsqrt(variance + 1e-6)).to(torch.bfloat16)

    fwd, bwd = dispatched_bytes(rmsnorm)
    elems = tokens * hidden
    # per-token (rsqrt, sums: / hidden) and per-weight (/ tokens) bytes add under 0.05 B an element at this size
    assert fwd / elems == pytest.approx(36.0, abs=0.05)
    assert bwd / elems == pytest.approx(90.0 + 6.0, abs=0.05)

    heads, head_dim = 16, 64
    q = torch.randn(1, heads, tokens, head_dim, dtype=torch.bfloat16, requires_grad=True)
    cos, sin = (torch.randn(tokens, head_dim, dtype=torch.bfloat16) for _ in range(2))

    def rotary():
        half = head_dim // 2
        rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
        return q * cos + rotated * sin

    _, bwd = dispatched_bytes(rotary)
    assert bwd / q.numel() == pytest.approx(28.0 + 2 * 2.0 / heads, abs=0.01)
