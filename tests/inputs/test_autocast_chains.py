"""An eager training step under torch.autocast over float32 weights (planner/inputs/models/autocast_chains.py and
jobs.FOREACH_TRAFFIC): the float32 residual stream and LayerNorms with their casts, the loss over float32 logits,
Hugging Face's Python GELU, and torch.optim's foreach AdamW, each by its bytes derived by hand; the GELU chain also
counted from torch's own dispatcher."""

import json
import math
from dataclasses import replace

import pytest
import torch

from planner.bench.model import MLP, gelu_tanh_chain
from planner.engine.plan import Plan, resolve_setup
from planner.inputs.jobs import Train, optimizer_traffic
from planner.inputs.models import load_models, parse_model_text
from planner.inputs.models.autocast_chains import (gelu_tanh_chain_bytes, loss_bytes, stream_backward_bytes,
                                                   stream_forward_bytes)
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes
from tests.fixtures.dispatch import dispatched_bytes

ELEMENTWISE = "elementwise & norms (fwd+bwd)"
# a 2-layer GPT-2 of width 64 (MLP 256) and a 128-token vocabulary, no dropout; 1 x 32 tokens a micro-step
TINY_GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 2, "n_embd": 64, "n_head": 2,
             "vocab_size": 128, "n_positions": 64, "activation_function": "gelu_new", "resid_pdrop": 0.0,
             "attn_pdrop": 0.0, "embd_pdrop": 0.0}
TOKENS = 32


def _model(activation: str = "gelu_new"):
    return parse_model_text(json.dumps({**TINY_GPT2, "activation_function": activation}), "config.json", "test")


def _elementwise(m, runtime: str = "pytorch-eager", precision: str = "bf16", **setup) -> float:
    s = resolve_setup(Plan(m, Train(1, TOKENS, 1), precision, None, "sdpa-flash", runtime), load_rules(),
                      load_runtimes())
    s = replace(s, **setup)
    return {g.name: g for g in m.train_work(s, 1, TOKENS, False)}[ELEMENTWISE].bytes


def test_each_mechanisms_bytes_by_hand():
    """bf16 (a 2, f 4). Stream forward: 2 norms x 2 elements x 2 B wider + 2 adds x 2 float32 elements x 2 + 2 casts
    x 6 = 28; backward: 2 x 3 x 2 + 2 x 3 x 2 + 2 casts back x 6 + 2 branch casts x 6 = 48. Loss: upcast 6, log_softmax
    16, the zeroed gradient 4, its backward 16, the upcast's backward 6 = 48. GELU (w 4, c 6): 14 x 4 + 4 x 2 + 2 x 6
    = 76 less the one kernel's 4; 19 x 4 + 9 x 2 + 4 x 6 = 118 less 6. Without autocast (w = a = 2, no casts): 36 - 4
    and 56 - 6. In float32 nothing is wider and nothing is cast."""
    assert (stream_forward_bytes(2.0), stream_backward_bytes(2.0)) == (28.0, 48.0)
    assert (stream_forward_bytes(4.0), stream_backward_bytes(4.0)) == (0.0, 0.0)
    assert loss_bytes(2.0) == 48.0
    assert gelu_tanh_chain_bytes(2.0, True) == (72.0, 112.0)
    assert gelu_tanh_chain_bytes(2.0, False) == (32.0, 50.0)


def test_torchs_dispatcher_runs_the_gelu_chain_counted_by_hand():
    """transformers' NewGELUActivation on a bf16 MLP activation as CUDA autocast runs it (pow on the float32 list: its
    input cast to float32; the product cast back to bf16 for the next linear module), on the CPU: 76 B an element
    forward and 118 backward (the seed gradient excluded), to within the 0-dim scalars."""
    x = torch.randn(256, 512, dtype=torch.bfloat16, requires_grad=True)

    def gelu():
        cubed = torch.pow(x.float(), 3.0)
        y = 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * cubed)))
        return y.to(torch.bfloat16)

    fwd, bwd = dispatched_bytes(gelu)
    assert fwd / x.numel() == pytest.approx(76.0, abs=0.01)
    assert bwd / x.numel() == pytest.approx(118.0, abs=0.01)


def test_an_autocast_step_pays_the_stream_the_loss_and_the_gelu():
    """Tiny GPT-2 in bf16, 32 tokens: autocast over float32 weights against the same runtime without it adds per token
    the stream 2 layers x 64 x (28 + 48) = 9,728 B, the loss 128 logits x (48 - 12) = 4,608 B and the GELU's float32
    share 2 x 256 x ((72 - 32) + (112 - 50)) = 52,224 B: 2,129,920 B in all. The Python GELU against one GELU kernel
    (same autocast): 2 x 256 x (72 + 112) x 32 = 3,014,656 B. Under FSDP (weights gathered in 16 bits) autocast
    adds nothing. torch.compile fuses every chain: no difference."""
    m = _model()
    assert _elementwise(m) - _elementwise(m, autocast_fp32_weights=False) == pytest.approx(2_129_920)
    assert _elementwise(m, shard=2) == pytest.approx(_elementwise(m, autocast_fp32_weights=False))
    assert _elementwise(m, zero_stage=2) == pytest.approx(_elementwise(m, autocast_fp32_weights=False))
    assert _elementwise(m) - _elementwise(_model("gelu")) == pytest.approx(3_014_656)
    assert _elementwise(m, "torch-compile") == pytest.approx(_elementwise(_model("gelu"), "torch-compile"))


def test_only_eager_pytorch_runs_autocast_over_float32_weights_and_foreach_adamw():
    """pytorch-eager declares both; every training stack that holds 16-bit weights (FSDP/DeepSpeed mixed precision,
    apex AMP O2) or fuses its kernels declares neither."""
    runtimes = load_runtimes()
    eager = runtimes.get("pytorch-eager").training
    assert eager.autocast_fp32_weights and eager.optimizer_kernels == "foreach"
    for rid in ("apex-amp-o2", "torch-compile", "llm.c", "llm-foundry", "megatron-lm", "torchtitan", "deepspeed",
                "hf-accelerate-fsdp", "maxtext"):
        t = runtimes.get(rid).training
        assert t is None or (not t.autocast_fp32_weights and t.optimizer_kernels == "fused"), rid


def test_foreach_adamw_moves_twenty_float32_tensors_a_parameter():
    """AdamW's foreach steps: decay 2, lerp 3, x beta2 2, addcmul 3, sqrt 2, / bias correction 2, + eps 2,
    addcdiv 4 = 20 tensors x 4 B = 80 B; Adam skips the decay (72); fused AdamW 28; SGD as before (20)."""
    assert optimizer_traffic("adamw", True) == 80.0
    assert optimizer_traffic("adam", True) == 72.0
    assert optimizer_traffic("adamw", False) == 28.0
    assert optimizer_traffic("sgd", True) == optimizer_traffic("sgd", False) == 20.0


def test_the_bench_runs_the_profiles_gelu_chain_as_the_tanh_gelu():
    """The bench's model (planner/bench/model.py) follows gelu_tanh_chain with NewGELUActivation's formula, which is
    the tanh approximation torch's own GELU computes with approximate='tanh' (Hendrycks and Gimpel 2016, eq. 2)."""
    x = torch.linspace(-6.0, 6.0, 1001, dtype=torch.float64)
    assert torch.allclose(gelu_tanh_chain(x), torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-12)
    gpt2 = load_models().get("gpt2-124m")
    assert gpt2.gelu_tanh_chain and MLP(gpt2, 8).gelu is gelu_tanh_chain
