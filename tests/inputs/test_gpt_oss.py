"""OpenAI's gpt-oss (openai/gpt-oss-20b, openai/gpt-oss-120b) read from its config.json, and the MXFP4 precision its
experts ship in. Every expected number is hand arithmetic over the config's fields (transformers' GptOssAttention,
GptOssTopKRouter and GptOssExperts shapes) or a figure of OpenAI's model card (2025-08-05), cited where used."""

from __future__ import annotations

import pytest

from planner.base.units import BYTES_PER_GB
from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import from_hf_config, load_models
from planner.inputs.models.decoder import WINDOW_GROUP
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup, weights_item

# openai/gpt-oss-20b config.json (huggingface.co/openai/gpt-oss-20b/blob/main/config.json, read 2026-11-27), the
# fields that matter; gpt-oss-120b's differs in num_hidden_layers 36, num_local_experts 128 and its layer_types' length
GPT_OSS_20B = {
    "architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0, "experts_per_token": 4,
    "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880, "initial_context_length": 4096,
    "intermediate_size": 2880, "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64, "num_experts_per_tok": 4,
    "num_hidden_layers": 24, "num_key_value_heads": 8, "num_local_experts": 32,
    "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                       "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"},
    "rms_norm_eps": 1e-05, "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                            "original_max_position_embeddings": 4096, "rope_type": "yarn",
                                            "truncate": False},
    "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
    "tie_word_embeddings": False, "vocab_size": 201088}
GPT_OSS_120B = GPT_OSS_20B | {"num_hidden_layers": 36, "num_local_experts": 128,
                              "layer_types": ["sliding_attention", "full_attention"] * 18}

H, VOCAB = 2880, 201088
# one layer's attention: q_proj 2880 -> 64 x 64, k_proj and v_proj 2880 -> 8 x 64, o_proj 4096 -> 2880, each biased
ATTENTION = (H * 4096 + 4096) + 2 * (H * 512 + 512) + (4096 * H + H)
EXPERT = H * 2 * 2880 + 2 * 2880 + 2880 * H + H  # gate_up_proj (2880 x 5760) + its bias, down_proj + its bias
EXPERT_MATRICES = 3 * H * 2880
NORMS = 2 * H  # input and post-attention RMSNorm
EMBED = VOCAB * H  # embed_tokens; lm_head the same again (untied)


def _layers_total(layers: int, experts: int, top_k: int | None = None) -> int:
    """Per layer: attention, the router's matrix (hidden x experts), `top_k` (all when None) experts, the norms."""
    return layers * (ATTENTION + H * experts + (top_k or experts) * EXPERT + NORMS)


@pytest.mark.parametrize("config, layers, experts, card_total, card_active", [
    (GPT_OSS_20B, 24, 32, 20.91e9, 3.61e9), (GPT_OSS_120B, 36, 128, 116.83e9, 5.13e9)])
def test_parameters_match_the_model_card(config, layers, experts, card_total, card_active):
    m = from_hf_config(config, "t", "test config")
    total = _layers_total(layers, experts) + 2 * EMBED + H  # + the final norm
    assert m.params == total
    # the sinks (64 per layer) and the router's bias (one per expert) are not counted: with them the model card's
    # total, 116.83B / 20.91B (OpenAI, gpt-oss model card, 2025-08-05, table 1)
    assert round((total + layers * (64 + experts)) / 1e7) == round(card_total / 1e7)
    # active: a token's 4 experts with their biases; the model card's 5.13B / 3.61B leave out the embedding table
    active = _layers_total(layers, experts, 4) + 2 * EMBED + H
    assert m.active_params == active
    assert round((active - EMBED + layers * (64 + experts)) / 1e7) == round(card_active / 1e7)


def test_gpt_oss_attention_layers_alternate_a_128_token_window_with_full_attention():
    m = from_hf_config(GPT_OSS_120B, "t", "test config")
    assert (m.window, m.window_layers, m.full_layers) == (128, 18, 18)
    assert (m.heads, m.kv_heads, m.head_dim, m.tied_embeddings, m.bias) == (64, 8, 64, False, True)
    per_layer = 2 * 8 * 64  # K and V of 8 KV heads of 64
    assert m.kv_held_elems(4096) == (18 * 4096 + 18 * 128) * per_layer
    assert "sinks" in m.cross_check and "6,912" in m.cross_check  # 36 x (64 + 128) weights not counted


def test_the_presets_are_the_configs():
    for config, preset in ((GPT_OSS_20B, "gpt-oss-20b"), (GPT_OSS_120B, "gpt-oss-120b")):
        read, stored = from_hf_config(config, "t", "test config"), load_models().get(preset)
        assert (read.params, read.active_params, read.kv_elems, read.window_layers) == \
            (stored.params, stored.active_params, stored.kv_elems, stored.window_layers)


def _setup(precision: str) -> Setup:
    r = load_rules()
    p = r.precision(precision)
    return Setup(p, r.default_kv_dtype(p), r.attention("flash-attn-2"))


@pytest.mark.parametrize("preset, layers, experts, card_gib", [
    ("gpt-oss-20b", 24, 32, 12.8), ("gpt-oss-120b", 36, 128, 60.8)])
def test_mxfp4_stores_the_experts_at_4_25_bits_and_the_rest_in_bf16(preset, layers, experts, card_gib):
    m, s = load_models().get(preset), _setup("mxfp4")
    assert s.precision.weight_bytes == (32 * 4 + 8) / 32 / 8  # 32 E2M1 values + one E8M0 scale per block
    quantized = layers * experts * EXPERT_MATRICES
    assert m.quantized_params(s.precision.quantized_weights) == quantized
    gb = (quantized * 4.25 / 8 + (m.params - quantized) * 2) / BYTES_PER_GB
    item = weights_item(m.params, m.quantized_params("experts"), s)
    assert item.gb == pytest.approx(gb)
    # the model card's checkpoint sizes, 60.8 GiB and 12.8 GiB (OpenAI, gpt-oss model card, table 1)
    assert item.gb * BYTES_PER_GB / 2**30 == pytest.approx(card_gib, abs=0.05)


def test_a_decode_step_reads_the_routed_experts_in_mxfp4_and_attention_in_bf16():
    m, s = load_models().get("gpt-oss-20b"), _setup("mxfp4")
    linear = {g.name: g for g in m.decode_work(s, 1)}["linear layers"]
    # one token: its 4 experts per layer at 4.25 bits, attention and the router (2880 x 32) at 2 B, LM head at 2 B
    experts = 24 * 4 * EXPERT_MATRICES * 4.25 / 8
    others = 24 * (H * 4096 + 2 * H * 512 + 4096 * H + H * 32) * 2
    assert linear.bytes == pytest.approx(experts + others + EMBED * 2)
    dense = load_models().get("llama-3-8b")  # no experts: nothing in MXFP4, stored as bf16
    assert dense.quantized_params("experts") == 0
    assert weights_item(dense.params, 0, s).gb == pytest.approx(dense.params * 2 / BYTES_PER_GB)


def test_a_gpt_oss_decode_step_below_the_window_reads_only_the_keys_it_has():
    """At KV position 100 (under the 128 window) a window layer reads 100 keys, as a full layer does."""
    m, s = load_models().get("gpt-oss-20b"), _setup("bf16")
    window = {g.name: g for g in m.decode_work(s, 1)}[WINDOW_GROUP]
    per_key = 12 * 2 * 8 * 64 * 2  # 12 window layers, K and V of 8 heads of 64, 2 bytes each
    assert (window.bytes_per_pos, window.cap_pos) == (pytest.approx(per_key), 128)


def test_mxfp4_on_a_model_without_experts_says_its_weights_stay_16_bit():
    facts = load_facts()
    gpu = facts.catalog.get("h100-sxm")
    words = "has none, so all its weights are counted at 2 B"
    dense = estimate_gpu(Plan(load_models().get("llama-3-8b"), Generate(1, 64, 64), "mxfp4", batch=1), gpu, facts)
    assert any(words in r.text and not r.blocking for r in dense.reasons)
    moe = estimate_gpu(Plan(load_models().get("gpt-oss-20b"), Generate(1, 64, 64), "mxfp4", batch=1), gpu, facts)
    assert moe.feasible and not any(words in r.text for r in moe.reasons)
