"""Tensor parallel's sequence-parallel collectives per layer when a stack gathers each projection's input apart
(KempnerForge's plan), counted by hand against what torch 2.13 traces (validation/count_tp_collectives.py)."""

from dataclasses import replace

import pytest

from planner.engine.train_layout import tp_collectives
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup

LLAMA = load_models().get("llama-2-7b")  # SwiGLU: Q, K, V after the attention norm, gate and up after the MLP norm
TOKENS = 4096


def _setup(**kw) -> Setup:
    r = load_rules()
    p = r.precision("bf16")
    return replace(Setup(p, r.default_kv_dtype(p), r.attention("sdpa")), tp=2, **kw)


def _calls_per_layer(checkpointing: bool = True, **kw) -> float:
    (c,) = tp_collectives(LLAMA, _setup(**kw), TOKENS, checkpointing)
    assert c.message_bytes == pytest.approx(TOKENS * LLAMA.hidden * 2)  # every call moves the hidden states
    return c.count / LLAMA.layers


def test_per_module_gathers_are_four_a_pass():
    # forward 2 gathers + 2 reduce-scatters; the backward the same; the recompute once more: 12 a layer
    assert _calls_per_layer() == pytest.approx(12)
    assert _calls_per_layer(checkpointing=False) == pytest.approx(8)


def test_per_projection_compiled_merges_the_forward_gathers_only():
    # Inductor's forward graph: 2 gathers + 2 reduce-scatters (recompute the same); its backward: 2 gathers and one
    # reduce-scatter per projection, 5 (Q, K, V, gate, up): 4 + 4 + 7 = 15 a layer
    assert _calls_per_layer(fused_elementwise=True, tp_gather_per_projection=True) == pytest.approx(15)


def test_per_projection_eager_gathers_for_each_projection_too():
    # eager DTensor: 5 gathers + 2 reduce-scatters forward, recomputed, and 2 + 5 backward: 21 a layer
    assert _calls_per_layer(tp_gather_per_projection=True) == pytest.approx(21)


def test_a_gelu_mlp_has_one_projection_after_its_norm():
    gpt2 = load_models().get("gpt2-124m")
    assert gpt2.tp_projections_per_gather == pytest.approx((3 + 1) / 2)
