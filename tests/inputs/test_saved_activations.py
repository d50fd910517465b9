"""What a decoder layer saves for backward under Megatron Core + Transformer Engine, bytes per token counted by hand
tensor by tensor (Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198, sec. 4.1's inventory, for a Llama block
with flash attention, no dropout): norm 1 input, QKV input (the norm's output), Q, K, V and the attention output
(fused attention keeps them), norm 2 input, FC1 input, FC1's output (the SwiGLU's input) and the FC2 input."""

from dataclasses import replace

import pytest

from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup
from planner.validation.measured import validation_models

LLAMA3 = load_models().get("llama-3-8b")  # 32 layers, hidden 4096, q 4096, kv 8 x 128 = 1024, ffn 14336, swiglu
GPT2 = load_models().get("gpt2-124m")  # 12 layers, hidden 768, ffn 3072, gelu (not gated), dropout on
H, Q, KV, F = 4096, 4096, 1024, 14336


def _setup(precision: str, fused: bool) -> Setup:
    r = load_rules()
    p = r.precision(precision)
    return replace(Setup(p, r.default_kv_dtype(p), r.attention("sdpa")), fused_elementwise=fused)


def test_a_fused_swiglu_saves_its_input_not_silu_of_the_gate():
    # BF16, 2 B each: norm inputs 2 x h, norm outputs 2 x h, Q + K + V + O = 2q + 2kv, FC1 output 2f (all the fused
    # SwiGLU keeps) and its product f (FC2's input): 4h + 2q + 2kv + 3f elements per layer
    per_layer = 2 * (4 * H + 2 * Q + 2 * KV + 3 * F)
    assert per_layer == 139_264
    assert LLAMA3.saved_act_bytes(_setup("bf16", True)) == pytest.approx(32 * per_layer)
    # eager PyTorch keeps silu(gate) too: 4f
    assert LLAMA3.saved_act_bytes(_setup("bf16", False)) == pytest.approx(32 * 2 * (4 * H + 2 * Q + 2 * KV + 4 * F))


def test_fp8_training_saves_the_linear_layers_inputs_in_one_byte():
    # norm inputs 2h x 2 B; the two norm outputs as FP8 (QKV's and FC1's saved input) 2h x 1 B; Q, K, V, O in BF16
    # (2q + 2kv) x 2 B and O again as the output projection's FP8 input q x 1 B; FC1 output 2f x 2 B; FC2's FP8
    # input f x 1 B: 6h + 5q + 4kv + 5f bytes
    per_layer = 4 * H + 2 * H + 4 * Q + 4 * KV + Q + 4 * F + F
    assert per_layer == 120_832
    assert LLAMA3.saved_act_bytes(_setup("fp8-te", True)) == pytest.approx(32 * per_layer)
    # with the logits (fp32 and their gradient, 8 B each of the 128,256) over 8,192 tokens: 40.1 GB, not 52.4
    gb = LLAMA3.train_activation_memory(_setup("fp8-te", True), 1, 8192, False).gb
    assert gb == pytest.approx(8192 * (32 * 120_832 + 8 * 128_256) / 1e9)


def test_a_gelu_mlp_drops_only_its_fc2_input_to_fp8():
    # gpt2: h = q = kv = 768, f = 3072; the activation keeps its input (FC1's output) f x 2 B and FC2 its FP8 input
    # f x 1 B; norm inputs 2h x 2 B, norm outputs 2h x 1 B, Q, K, V, O 4h x 2 B + O in FP8 h x 1 B, and GPT-2's two
    # hidden dropout masks 2h x 1 B: 17h + 3f
    h, f = 768, 3072
    per_layer = 2 * h * 2 + 2 * h + 4 * h * 2 + h + f * 2 + f + 2 * h
    assert per_layer == 17 * h + 3 * f
    assert GPT2.saved_act_bytes(_setup("fp8-te", True)) == pytest.approx(12 * per_layer)
    assert GPT2.saved_act_bytes(_setup("bf16", True)) == GPT2.saved_act_bytes(_setup("bf16", False))


def test_a_gpt_layer_saves_korthikantis_34_sbh_with_flash_attention():
    # Korthikanti et al. 2022 sec. 4.1, 16-bit, per layer and token: 34h bytes + 5 a s (the score matrix, softmax
    # and its dropout, which a fused attention kernel does not keep); a 4h GELU MLP with its 2 dropout masks.
    # megatron-gpt-32b: hidden 7,168, ffn 4 x 7,168, 56 heads (no GQA), dropout on, 48 layers
    m = validation_models().get("megatron-gpt-32b")
    assert (m.hidden, m.ffn, m.q_dim, m.kv_dim, m.dropout) == (7168, 4 * 7168, 7168, 7168, True)
    assert m.saved_act_bytes(_setup("bf16", True)) == pytest.approx(48 * 34 * 7168)
