"""A precision that quantizes the MLPs only (data/precisions.yaml fp8-mlp: Meta's FP8 Llama 3.1 checkpoints keep every
attention projection in bf16, arXiv:2407.21783 section 6.2). Expected numbers are hand arithmetic over Llama 3 8B's
config.json (meta-llama/Meta-Llama-3-8B: hidden 4096, 32 layers, 32 heads of 128, 8 KV heads, intermediate 14336,
vocabulary 128256, untied embeddings)."""

from __future__ import annotations

import pytest

from planner.base.units import BYTES_PER_GB
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup, weights_item

ATTN_PER_LAYER = 4096 * 4096 * 2 + 2 * 4096 * 1024  # Q and O, K and V (8 heads of 128): 41,943,040
MLP_PER_LAYER = 3 * 4096 * 14336  # SwiGLU gate, up, down: 176,160,768


def _setup(precision: str, tp: int = 1) -> Setup:
    r = load_rules()
    p = r.precision(precision)
    return Setup(p, r.default_kv_dtype(p), r.attention("flash-attn-2"), tp=tp)


def test_the_mlp_scope_counts_the_mlps_matrices_only():
    m = load_models().get("llama-3-8b")
    assert m.quantized_params("mlp") == 32 * MLP_PER_LAYER
    assert m.quantized_params("layers") == 32 * (MLP_PER_LAYER + ATTN_PER_LAYER)
    assert m.quantized_token_params("mlp") == 32 * MLP_PER_LAYER  # a dense model: every token passes every MLP
    assert m.quantized_read("mlp", m.read_total(1), 1) == 32 * MLP_PER_LAYER


def test_fp8_mlp_stores_attention_embeddings_and_head_in_bf16():
    """8B at fp8-mlp on 2 GPUs: 5,637,144,576 MLP weights x 1 B + the other 2,393,116,672 (attention 1,342,177,280,
    embeddings and LM head 2 x 525,336,576, norms 266,240) x 2 B, over 2 GPUs = 5.2117 GB each, against fp8's 4.5406
    GB (every layer matrix at 1 B)."""
    m = load_models().get("llama-3-8b")
    mlp, other = 32 * MLP_PER_LAYER, 32 * ATTN_PER_LAYER + 2 * 128256 * 4096 + (2 * 32 + 1) * 4096
    assert m.params == mlp + other
    s = _setup("fp8-mlp", tp=2)
    assert s.precision.outside_weight_bytes == 2
    item = weights_item(m.params, m.quantized_params(s.precision.quantized_weights), s)
    assert item.gb == pytest.approx((mlp * 1 + other * 2) / 2 / BYTES_PER_GB)
    assert item.gb == pytest.approx(5.2117, abs=1e-4)
    fp8 = _setup("fp8", tp=2)
    assert weights_item(m.params, m.quantized_params("layers"), fp8).gb == pytest.approx(4.5406, abs=1e-4)
