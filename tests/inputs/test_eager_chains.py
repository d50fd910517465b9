"""Hugging Face's LLaMA-family code run op by op: the float32 RMSNorm, the rotary embedding and the softmax upcast
(planner/inputs/models/eager_chains.py), each by hand from transformers 4.35.0's modeling_llama.py."""

import json
from dataclasses import replace

import pytest

from planner.engine.plan import Plan, resolve_setup
from planner.inputs.jobs import Generate
from planner.inputs.models import parse_model_text
from planner.inputs.models.eager_chains import rmsnorm_chain_bytes, rotary_chain_bytes, softmax_upcast_bytes
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes

# 2 layers, hidden 256, 8 query heads and 2 KV heads of 32: Q 256 and K 64 elements a token and layer
GQA = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
       "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
       "max_position_embeddings": 4096, "tie_word_embeddings": False}
PROMPT = 100


def _model():
    return parse_model_text(json.dumps(GQA), "config.json", "test")


def _prefill(m, precision: str, attention: str, runtime: str) -> dict:
    plan = Plan(m, Generate(1, PROMPT, 1), precision, None, attention, runtime)
    s = resolve_setup(plan, load_rules(), load_runtimes())
    return {g.name: g for g in m.prefill_work(s, 1, PROMPT)}


def test_each_chain_by_its_kernels():
    """16-bit: the norm's upcast (2 + 4), pow (4 + 4), mean (4), rsqrt product (4 + 4), downcast (4 + 2) and weight
    product (2 + 2) = 36 B, 32 beyond a fused norm's 4; float32 has no casts: 8 + 4 + 8 + 8 = 28, 20 beyond 8.
    Rotary: q*cos 4, -x2 on half 2, cat 4, *sin 4, the sum 6 = 20 B (16-bit). Softmax in float32: writes 4 B instead
    of 2 and the cast reads 4 and writes 2: 8 B more; nothing in float32."""
    assert rmsnorm_chain_bytes(2.0) == 32.0
    assert rmsnorm_chain_bytes(4.0) == 20.0
    assert rotary_chain_bytes(2.0) == 20.0
    assert softmax_upcast_bytes(2.0) == 8.0
    assert softmax_upcast_bytes(4.0) == 0.0


def test_an_eager_prefill_pays_the_chains_a_fused_runtime_does_not():
    """By hand, bf16, 100 tokens: 5 norms (2 a layer + the final) x 256 x 32 B = 40,960 B and rotary over Q and K,
    2 layers x (256 + 64) x 20 B = 12,800 B: 53,760 B a token, 5,376,000 B for the prompt. Manual attention's 8 heads
    x 2 layers x 100 x 100 scores x 8 B = 1,280,000 B more. The same model as a LayerNorm model (no LLaMA code) pays
    neither; torch.compile fuses both away."""
    m = _model()
    eager = _prefill(m, "bf16", "manual", "pytorch-eager")
    plain = _prefill(replace(m, norm="layernorm"), "bf16", "manual", "pytorch-eager")
    assert eager["elementwise & norms"].bytes - plain["elementwise & norms"].bytes == pytest.approx(5_376_000)
    assert eager["attention"].bytes - plain["attention"].bytes == pytest.approx(1_280_000)
    compiled = m.eager_chain_bytes(resolve_setup(Plan(m, Generate(1, PROMPT, 1), "bf16", None, "manual",
                                                      "torch-compile"), load_rules(), load_runtimes()))
    assert compiled == 0.0


def test_float32_pays_the_norm_and_rotary_kernels_but_no_casts():
    """fp32: 5 x 256 x 20 B = 25,600 B and 2 x 320 x 40 B = 25,600 B a token: 5,120,000 B for 100 tokens; the
    softmax is already float32 (no score bytes added)."""
    m = _model()
    eager = _prefill(m, "fp32", "manual", "pytorch-eager")
    plain = _prefill(replace(m, norm="layernorm"), "fp32", "manual", "pytorch-eager")
    assert eager["elementwise & norms"].bytes - plain["elementwise & norms"].bytes == pytest.approx(5_120_000)
    assert eager["attention"].bytes == pytest.approx(plain["attention"].bytes)


def test_a_fused_attention_kernel_has_no_scores_to_upcast():
    """SDPA's flash kernel keeps its scores on chip: only the norm and rotary chains are added."""
    m = _model()
    eager = _prefill(m, "bf16", "sdpa-flash", "pytorch-eager")
    plain = _prefill(replace(m, norm="layernorm"), "bf16", "sdpa-flash", "pytorch-eager")
    assert eager["attention"].bytes == pytest.approx(plain["attention"].bytes)
    assert eager["elementwise & norms"].bytes - plain["elementwise & norms"].bytes == pytest.approx(5_376_000)
