"""Decoders with layers of more than one kind, read from real Hugging Face config.json files: multi-head latent
attention (DeepSeek-V2/V3), dense first layers and shared experts (DeepSeekMoE, Qwen-MoE), sliding-window/global
mixes (Gemma 2, Gemma 3, Qwen2, Mistral). Every expected number is hand arithmetic over the config's fields or a
published total, cited where it is used."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner.base.schema import DataFileError, Record
from planner.inputs.precisions import load_rules
from planner.inputs.models import from_hf_config, parse_model_text
from planner.inputs.models.decoder import WINDOW_GROUP, parse_decoder
from planner.inputs.work import Setup

# deepseek-ai/DeepSeek-V3 config.json (huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json, read 2026-11-27),
# the fields that matter
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "first_k_dense_replace": 3, "hidden_act": "silu",
               "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
               "max_position_embeddings": 163840, "model_type": "deepseek_v3", "moe_intermediate_size": 2048,
               "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1,
               "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
               "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
               "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": False, "topk_group": 4,
               "v_head_dim": 128, "vocab_size": 129280}
# deepseek-ai/DeepSeek-V2-Lite config.json (read 2026-11-27)
DEEPSEEK_V2_LITE = {"architectures": ["DeepseekV2ForCausalLM"], "first_k_dense_replace": 1, "hidden_size": 2048,
                    "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
                    "model_type": "deepseek_v2", "moe_intermediate_size": 1408, "moe_layer_freq": 1,
                    "n_routed_experts": 64, "n_shared_experts": 2, "num_attention_heads": 16,
                    "num_experts_per_tok": 6, "num_hidden_layers": 27, "num_key_value_heads": 16,
                    "q_lora_rank": None, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                    "tie_word_embeddings": False, "v_head_dim": 128, "vocab_size": 102400}
# google/gemma-2-9b config.json (read 2026-11-27): no layer_types (older transformers), every other layer slides
GEMMA2_9B = {"architectures": ["Gemma2ForCausalLM"], "attn_logit_softcapping": 50.0, "cache_implementation": "hybrid",
             "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
             "hidden_size": 3584, "intermediate_size": 14336, "max_position_embeddings": 8192,
             "model_type": "gemma2", "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8,
             "query_pre_attn_scalar": 256, "sliding_window": 4096, "vocab_size": 256000}
# google/gemma-3-1b-pt config.json (read 2026-11-27): the text-only Gemma 3
GEMMA3_1B = {"architectures": ["Gemma3ForCausalLM"], "head_dim": 256, "hidden_size": 1152,
             "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
             "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "sliding_window": 512,
             "sliding_window_pattern": 6, "vocab_size": 262144}
# Qwen/Qwen1.5-MoE-A2.7B config.json, the fields that matter (as in test_models.py)
QWEN_MOE = {"architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 1, "hidden_size": 2048,
            "intermediate_size": 5632, "max_position_embeddings": 8192, "mlp_only_layers": [],
            "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "num_attention_heads": 16, "num_experts": 60,
            "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
            "shared_expert_intermediate_size": 5632, "tie_word_embeddings": False, "use_sliding_window": False,
            "vocab_size": 151936}


def _hf(config):
    return from_hf_config(config, "t", "test config")


def _setup(tp=1):
    r = load_rules()
    p = r.precision("bf16")
    return Setup(p, r.default_kv_dtype(p), r.attention("flash-attn-2"), tp)


# ---------------------------------------------------------------- multi-head latent attention


def test_deepseek_v3_counts_671b_parameters_by_hand():
    m = _hf(DEEPSEEK_V3)
    h = 7168
    attn = (h * 1536 + 1536 * 128 * 192  # q_a_proj, q_b_proj (128 heads x (128 nope + 64 rope))
            + h * (512 + 64)  # kv_a_proj_with_mqa: the latent and the RoPE key
            + 512 * 128 * (128 + 128)  # kv_b_proj: each head's K nope and V
            + 128 * 128 * h)  # o_proj
    assert attn == 187_105_280
    norms = 2 * h + 1536 + 512  # input, post-attention, q_a_layernorm, kv_a_layernorm
    dense = attn + 3 * h * 18432 + norms
    moe = attn + 256 * 3 * h * 2048 + 1 * 3 * h * 2048 + h * 256 + norms  # experts, the shared one, the router
    total = 3 * dense + 58 * moe + 2 * 129280 * h + h  # embeddings and the LM head untied, the final norm
    assert m.params == total == 671_026_404_352
    # DeepSeek-V3 technical report (arXiv 2412.19437, abstract): "671B total parameters with 37B activated"
    assert m.params == pytest.approx(671e9, rel=1e-3)
    assert m.active_params == pytest.approx(37e9, rel=0.02)
    assert "multi-token-prediction" in m.cross_check  # the checkpoint's 14B MTP module is not the model's


def test_deepseek_v2_lite_counts_15_7b_total_and_its_active_share():
    m = _hf(DEEPSEEK_V2_LITE)
    h = 2048
    attn = h * 16 * 192 + h * 576 + 512 * 16 * 256 + 16 * 128 * h  # no Q latent: one q_proj
    norms = 2 * h + 512
    expert = 3 * h * 1408
    dense = attn + 3 * h * 10944 + norms
    moe = attn + 64 * expert + 3 * h * 2 * 1408 + h * 64 + norms  # two shared experts as one MLP of 2 x 1408
    assert m.params == dense + 26 * moe + 2 * 102400 * h + h == 15_706_484_224
    # deepseek-ai/DeepSeek-V2-Lite model card (huggingface.co, read 2026-11-27): "15.7B parameters, 2.4B activated"
    assert m.params == pytest.approx(15.7e9, rel=3e-3)
    matmul_active = m.active_params - 102400 * h  # the card's 2.4B: what tokens multiply by (no embedding lookup)
    assert matmul_active == pytest.approx(2.4e9, rel=0.03)


def test_mla_caches_the_latent_and_rope_key_per_layer_whole_on_every_tensor_parallel_gpu():
    m = _hf(DEEPSEEK_V3)
    s = _setup()
    assert m.kv_elems == 61 * (512 + 64)
    kv = next(i for i in m.generate_memory(s, 2, 1000, 24) if i.name == "kv_cache")
    assert kv.gb == pytest.approx(2 * 1024 * 61 * 576 * 2 / 1e9)  # bf16: 70,272 B per token
    kv8 = next(i for i in m.generate_memory(_setup(tp=8), 2, 1000, 24) if i.name == "kv_cache")
    assert kv8.gb == pytest.approx(kv.gb)  # the latent is shared by all heads: not split by tensor parallel
    assert "latent 512 + RoPE key 64" in kv.formula


def test_mla_decode_runs_absorbed_and_prefill_decompressed():
    m = _hf(DEEPSEEK_V2_LITE)
    s = _setup()
    decode = {g.name: g for g in m.decode_work(s, 4)}["attention"]
    # absorbed: per head and key, scores over latent + RoPE (512 + 64) and a sum of latents (512), 2 FLOPs per MAC
    assert decode.flops_per_pos == pytest.approx(4 * 27 * 2 * 16 * (512 + 64 + 512))
    assert decode.bytes_per_pos == pytest.approx(4 * 27 * 576 * 2)  # the latent cache read once for every head
    prefill = {g.name: g for g in m.prefill_work(s, 1, 100)}["attention"]
    # decompressed: scores over 192 (nope 128 + rope 64), values of 128, causal keys 100 x 101 / 2 per layer
    assert prefill.flops == pytest.approx(27 * 2 * 16 * (192 + 128) * 100 * 101 / 2)


def test_mla_gemm_shapes_carry_the_linear_flops():
    m = _hf(DEEPSEEK_V2_LITE)
    rows = 64
    gemms = m.attention_gemms(rows, 1)
    assert sum(2 * M * N * K * c for M, N, K, c in gemms) == 2 * rows * 27 * m.attn_params


# ---------------------------------------------------------------- dense first layers, shared experts


def test_qwen_moe_dense_layers_follow_decoder_sparse_step_and_mlp_only_layers():
    assert _hf(QWEN_MOE).dense_layers == 0
    every_other = _hf({**QWEN_MOE, "decoder_sparse_step": 2})  # experts where (i + 1) % 2 == 0: 12 of 24 layers
    assert (every_other.dense_layers, every_other.dense_ffn) == (12, 5632)
    first = _hf({**QWEN_MOE, "mlp_only_layers": [0, 5]})
    assert first.dense_layers == 2
    base = _hf(QWEN_MOE)
    # two layers trade 60 experts, the router and the shared MLP for one dense MLP of 5632
    moe_mlp = 60 * 3 * 2048 * 1408 + 2048 * 60 + 3 * 2048 * 5632
    assert base.params - first.params == 2 * (moe_mlp - 3 * 2048 * 5632)


# ---------------------------------------------------------------- sliding windows


def test_gemma2_9b_counts_9_24b_and_half_its_layers_slide():
    m = _hf(GEMMA2_9B)
    assert (m.window, m.window_layers, m.context) == (4096, 21, 8192)  # layers 0, 2, .., 40
    # Gemma 2 report (arXiv 2408.00118, table 2): 9B = 8,324,201,984 non-embedding + 917,504,000 embedding
    # parameters; Gemma 2's two extra norms per layer (42 x 2 x 3584 weights, 0.003 %) are not counted here
    assert m.params + 42 * 2 * 3584 == 8_324_201_984 + 917_504_000


def test_gemma3_pattern_puts_one_layer_in_six_on_global_attention():
    m = _hf(GEMMA3_1B)
    assert (m.window, m.window_layers) == (512, 26 - 26 // 6)  # layers 5, 11, 17, 23 global
    typed = _hf({**GEMMA3_1B, "layer_types": ["sliding_attention"] * 5 + ["full_attention"] + ["sliding_attention"]
                 * 20})
    assert typed.window_layers == 25


def test_a_window_caps_the_cache_and_the_keys_of_its_layers():
    m = _hf(GEMMA2_9B)
    per_layer = 2 * 8 * 256  # K and V of 8 KV heads of 256
    assert m.kv_held_elems(8192) == (21 * 8192 + 21 * 4096) * per_layer
    assert m.kv_held_elems(100) == 42 * 100 * per_layer  # under the window, all layers hold every token
    # causal keys over 6 tokens: a full layer 1+2+..+6 = 21; a window of 4: 1+2+3+4+4+4 = 18
    small = parse_decoder(Record("t", "0", dict(id="w", name="w", kind="decoder", layers=2, hidden=64, heads=2, ffn=64,
                                                ffn_kind="swiglu", vocab=10, context=100, tied_embeddings=True,
                                                norm="rmsnorm", source="t", window=4, window_layers=1)))
    assert small.keys_attended(6) == 21 + 18


def test_a_window_layer_decode_reads_the_window_not_the_context():
    m = _hf(GEMMA2_9B)
    s = _setup()
    groups = {g.name: g for g in m.decode_work(s, 1)}
    attn, window = groups["attention"], groups[WINDOW_GROUP]
    per_layer_bytes = 2 * 8 * 256 * 2  # K and V of 8 KV heads of 256, 2 bytes each
    assert attn.bytes_per_pos == pytest.approx(21 * per_layer_bytes)  # only the global layers grow with p
    # the 21 window layers read min(p, 4096) positions: p per position below the window, capped at it
    assert (window.bytes, window.bytes_per_pos, window.cap_pos) == (0.0, pytest.approx(21 * per_layer_bytes), 4096)
    assert window.flops_per_pos == pytest.approx(21 * 4 * 16 * 256)  # 4 x heads x head_dim per key and layer
    full = _hf({**GEMMA2_9B, "sliding_window": 8192})  # a window as long as the context: no window layers
    full_groups = {g.name: g for g in full.decode_work(s, 1)}
    assert WINDOW_GROUP not in full_groups
    assert full_groups["attention"].bytes_per_pos == pytest.approx(42 * per_layer_bytes)
    assert attn.bytes == pytest.approx(full_groups["attention"].bytes)  # Q, K, V, O and the new token's K and V
    # manual attention writes and reads its scores (8 passes eager: score_passes) for the keys each layer has, and
    # eager LLaMA-family code's float32 softmax writes 4 B instead of 2 and casts back (read 4, write 2): 8 B more
    manual = replace(s, attention=load_rules().attention("manual"))
    groups = {g.name: g for g in m.decode_work(manual, 1)}
    scores = 8 * 16 * 2 + 16 * 8  # (passes x 2 bytes + the upcast's 8 bytes) x heads, per layer and key
    assert groups[WINDOW_GROUP].bytes_per_pos == pytest.approx(21 * (per_layer_bytes + scores))
    assert groups["attention"].bytes_per_pos == pytest.approx(21 * (per_layer_bytes + scores))


def test_state_independent_of_context_under_the_window():
    """A window layer's cache stops growing at the window: doubling a long context adds only the full layers'."""
    m = _hf(GEMMA3_1B)
    assert m.kv_held_elems(20000) - m.kv_held_elems(10000) == 4 * 10000 * 2 * 256


# ---------------------------------------------------------------- records, refusals


@pytest.mark.parametrize("config", [DEEPSEEK_V3, DEEPSEEK_V2_LITE, GEMMA2_9B, {**QWEN_MOE, "decoder_sparse_step": 2},
                                    "jamba"])
def test_a_profile_with_layer_kinds_round_trips_and_travels_as_its_config(config):
    config = JAMBA if config == "jamba" else config  # defined further down, with the state-space tests
    m = _hf(config)
    assert m.architecture() is None  # the page's form can't say it: it travels as its file's text
    assert parse_decoder(Record("t", "0", m.record())) == replace(m, cross_check="")  # the record: no page note
    again = parse_model_text(json.dumps(config), "model.yaml", "link")  # a config.json carried as text
    assert again.params == m.params and again.kv_elems == m.kv_elems


@pytest.mark.parametrize("extra, field", [
    ({"dense_layers": 2, "dense_ffn": 64}, "dense_layers"),  # a dense model
    ({"kv_lora_rank": 0, "rope_dim": 16}, "rope_dim"),
    ({"kv_lora_rank": 32, "rope_dim": 32}, "rope_dim"),  # as wide as head_dim
    ({"window": 16}, "window_layers"),
    ({"window": 16, "window_layers": 9}, "window_layers"),
])
def test_layer_kind_fields_that_disagree_are_refused_naming_the_field(extra, field):
    rec = dict(id="w", name="w", kind="decoder", layers=2, hidden=64, heads=2, ffn=64, ffn_kind="swiglu", vocab=10,
               context=100, tied_embeddings=True, norm="rmsnorm", source="t", **extra)
    with pytest.raises(DataFileError) as info:
        parse_decoder(Record("t", "0", rec))
    assert info.value.field == field


def test_a_latent_config_without_its_rope_width_names_the_key():
    cfg = {k: v for k, v in DEEPSEEK_V2_LITE.items() if k != "qk_rope_head_dim"}
    with pytest.raises(DataFileError, match="qk_rope_head_dim") as info:
        _hf(cfg)
    assert info.value.field == "rope_dim"


# ---------------------------------------------------------------- state-space (Mamba) layers

# ai21labs/Jamba-v0.1 config.json: JambaConfig's defaults are Jamba-v0.1's (transformers configuration_jamba.py:
# vocab_size 65536, hidden_size 4096, intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32,
# num_key_value_heads 8, num_experts 16, num_experts_per_tok 2, expert_layer_period 2, expert_layer_offset 1,
# attn_layer_period 8, attn_layer_offset 4, mamba_d_state 16, mamba_d_conv 4, mamba_expand 2, mamba_dt_rank "auto",
# mamba_conv_bias true, mamba_proj_bias false, max_position_embeddings 262144, tie_word_embeddings false)
JAMBA = {"architectures": ["JambaForCausalLM"], "attn_layer_offset": 4, "attn_layer_period": 8,
         "expert_layer_offset": 1, "expert_layer_period": 2, "hidden_size": 4096, "intermediate_size": 14336,
         "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_state": 16, "mamba_dt_rank": 256, "mamba_expand": 2,
         "mamba_proj_bias": False, "max_position_embeddings": 262144, "model_type": "jamba",
         "num_attention_heads": 32, "num_experts": 16, "num_experts_per_tok": 2, "num_hidden_layers": 32,
         "num_key_value_heads": 8, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 65536}


def test_jamba_counts_51_6b_with_28_mamba_and_16_expert_layers():
    m = _hf(JAMBA)
    assert (m.state_layers, m.attn_layers, m.dense_layers) == (28, 4, 16)  # attention at 4, 12, 20, 28
    h, di = 4096, 8192
    attn = 2 * h * h + 2 * h * 1024
    mamba = (h * 2 * di  # in_proj
             + di * 4 + di  # conv1d weights and bias
             + di * (256 + 2 * 16)  # x_proj
             + 256 * di + di  # dt_proj and its bias
             + di * 16 + di  # A_log, D
             + di * h)  # out_proj
    mlp = 3 * h * 14336
    total = 4 * attn + 28 * mamba + 16 * mlp + 16 * (16 * mlp + h * 16) + 32 * 2 * h + 2 * 65536 * h + h
    assert m.params == total
    # ai21labs/Jamba-v0.1 model card: "12B active parameters and an overall of 52B parameters across all experts";
    # the Hub's safetensors count is 51.6B; Jamba's three inner norms per Mamba layer (288 weights) are not counted
    assert m.params == pytest.approx(51.6e9, rel=1e-3)
    assert m.active_params == pytest.approx(12e9, rel=0.05)


def test_a_state_space_layer_keeps_a_fixed_state_and_only_attention_layers_grow():
    m = _hf(JAMBA)
    s = _setup()
    state = 8192 * 16 + 8192 * 3  # inner x state + the convolution's last 3 inputs
    assert m.state_elems == state
    short, long = (dict((i.name, i.gb) for i in m.generate_memory(s, 1, n, 1)) for n in (1023, 100_000 - 1))
    assert short["state-space state"] == long["state-space state"] == pytest.approx(28 * state * 2 / 1e9)
    # the KV cache: 4 attention layers x 2 x 8 KV heads x 128 x 2 B per token
    assert long["kv_cache"] - short["kv_cache"] == pytest.approx((100_000 - 1024) * 4 * 2 * 1024 * 2 / 1e9)


def test_a_decode_step_reads_and_writes_each_state_once():
    m = _hf(JAMBA)
    s = _setup()
    scan = {g.name: g for g in m.decode_work(s, 3)}["state-space scan"]
    assert scan.bytes == pytest.approx(2 * 3 * 28 * (8192 * 16 + 8192 * 3) * 2)
    assert scan.flops == pytest.approx(3 * 28 * (8 * 8192 * 16 + 2 * 8192 * 4))
    assert scan.bytes_per_pos == 0 and scan.flops_per_pos == 0  # no growth with the context


def test_mamba2_mixer_counts_by_hand():
    rec = dict(id="m2", name="m2", kind="decoder", layers=2, hidden=64, heads=2, ffn=64, ffn_kind="swiglu", vocab=10,
               context=100, tied_embeddings=True, norm="rmsnorm", source="t", state_layers=1, ssm_inner=128,
               ssm_state=16, ssm_conv=4, ssm_heads=4, ssm_groups=1)
    m = parse_decoder(Record("t", "0", rec))
    in_proj = 64 * (2 * 128 + 2 * 16 + 4)  # x, z, B, C (one group), dt per head
    conv = (128 + 32) * 4 + (128 + 32)
    assert m.ssm_matmul_params == in_proj + 128 * 64
    assert m.ssm_other_params == conv + 3 * 4 + 128  # dt_bias, A_log, D per head; the gated norm
    assert m.state_elems == 128 * 16 + 160 * 3


@pytest.mark.parametrize("extra, field", [
    ({"ssm_inner": 8}, "ssm_inner"),  # no state_layers
    ({"state_layers": 1, "ssm_inner": 8, "ssm_state": 4}, "ssm_conv"),
    ({"state_layers": 1, "ssm_inner": 8, "ssm_state": 4, "ssm_conv": 4}, "ssm_dt_rank"),  # neither form
    ({"state_layers": 1, "ssm_inner": 8, "ssm_state": 4, "ssm_conv": 4, "ssm_heads": 3, "ssm_groups": 1},
     "ssm_groups"),  # heads not dividing the inner width
    ({"state_layers": 3}, "state_layers"),
])
def test_state_space_fields_that_disagree_are_refused_naming_the_field(extra, field):
    rec = dict(id="w", name="w", kind="decoder", layers=2, hidden=64, heads=2, ffn=64, ffn_kind="swiglu", vocab=10,
               context=100, tied_embeddings=True, norm="rmsnorm", source="t", **extra)
    with pytest.raises(DataFileError) as info:
        parse_decoder(Record("t", "0", rec))
    assert info.value.field == field


# ---------------------------------------------------------------- encoders

# google-bert/bert-base-uncased config.json (as in test_models.py, with type_vocab_size)
BERT = {"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "hidden_size": 768, "intermediate_size": 3072, "max_position_embeddings": 512,
        "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 12, "type_vocab_size": 2,
        "vocab_size": 30522}
# FacebookAI/roberta-base config.json
ROBERTA = {**BERT, "architectures": ["RobertaForMaskedLM"], "model_type": "roberta", "max_position_embeddings": 514,
           "type_vocab_size": 1, "vocab_size": 50265}
# google/vit-base-patch16-224 config.json (ViTForImageClassification, 1,000 ImageNet labels)
VIT_B16 = {"architectures": ["ViTForImageClassification"], "hidden_size": 768, "image_size": 224,
           "intermediate_size": 3072, "model_type": "vit", "num_attention_heads": 12, "num_channels": 3,
           "num_hidden_layers": 12, "patch_size": 16, "qkv_bias": True,
           "id2label": {str(i): str(i) for i in range(1000)}}
BERT_LAYER = (4 * 768 * 768 + 4 * 768  # Q, K, V, O and their biases
              + 2 * 768 * 3072 + 3072 + 768  # the GELU MLP and its biases
              + 2 * 2 * 768)  # two LayerNorms (weight and bias)


def test_bert_base_counts_its_110m_and_cannot_generate():
    m = _hf(BERT)
    assert BERT_LAYER == 7_087_872
    embeddings = 30522 * 768 + 512 * 768 + 2 * 768 + 2 * 768  # words, positions, segments, their LayerNorm
    assert m.params == 12 * BERT_LAYER + embeddings + 768 * 768 + 768 == 109_482_240  # + the pooler
    # Devlin et al. 2018 (arXiv 1810.04805, section 3): BERT-BASE "Total Parameters=110M"
    assert m.params == pytest.approx(110e6, rel=0.01)
    assert (m.kind, m.can_generate, m.counts_tokens) == ("encoder", False, False)
    assert "encoder (bidirectional" in m.describe()


def test_roberta_base_counts_125m():
    m = _hf(ROBERTA)
    embeddings = 50265 * 768 + 514 * 768 + 768 + 2 * 768
    assert m.params == 12 * BERT_LAYER + embeddings + 768 * 768 + 768 == 124_645_632
    assert m.params == pytest.approx(125e6, rel=0.01)  # Liu et al. 2019 (arXiv 1907.11692), RoBERTa-base: 125M


def test_vit_b16_counts_86_6m_over_197_tokens():
    m = _hf(VIT_B16)
    assert (m.context, m.vocab) == (197, 768)  # 14 x 14 patches + [CLS]; the patch projection's 3 x 16 x 16 inputs
    patch, positions, final_norm, classifier = 768 * 768, 197 * 768, 2 * 768, 768 * 1000 + 1000
    assert m.params == 12 * BERT_LAYER + patch + positions + final_norm + classifier
    # timm vit_base_patch16_224: 86,567,656 (Dosovitskiy et al. 2020, table 1: ViT-Base 86M); the [CLS] token and
    # the patch projection's bias (2 x 768) are not counted
    assert m.params + 2 * 768 == 86_567_656


# distilbert/distilbert-base-uncased config.json (read 2026-11-27): DistilBertConfig's own key names
DISTILBERT = {"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1, "dim": 768,
              "dropout": 0.1, "hidden_dim": 3072, "max_position_embeddings": 512, "model_type": "distilbert",
              "n_heads": 12, "n_layers": 6, "sinusoidal_pos_embds": False, "tie_weights_": True, "vocab_size": 30522}


def test_distilbert_reads_its_own_key_names_and_counts_66m():
    m = _hf(DISTILBERT)
    assert (m.layers, m.hidden, m.heads, m.ffn, m.kind) == (6, 768, 12, 3072, "encoder")
    # DistilBertModel: BERT's layers; words, positions and their LayerNorm, no segment embeddings and no pooler
    embeddings = 30522 * 768 + 512 * 768 + 2 * 768
    assert m.params == 6 * BERT_LAYER + embeddings == 66_362_880
    # Sanh et al. 2019 (arXiv 1910.01108, table 3): DistilBERT, 66M parameters
    assert m.params == pytest.approx(66e6, rel=0.01)
    assert m.dropout  # dropout 0.1, attention_dropout 0.1


def test_an_encoder_attends_both_ways_and_caches_nothing():
    m = _hf(BERT)
    s = _setup()
    attn = {g.name: g for g in m.forward_work(s, 2, 128)}["attention"]
    assert attn.flops == pytest.approx(2 * 12 * 4 * 768 * 128 * 128)  # every token to all 128, no causal half
    qkvo = 2 * 128 * 12 * (2 * 768 + 2 * 768) * 2
    assert attn.bytes == pytest.approx(qkvo)  # no KV-cache write
    elem = {g.name: g for g in m.forward_work(s, 2, 128)}["elementwise & norms"]
    assert elem.bytes == pytest.approx(2 * 128 * m.act_traffic_elems * 2)  # no vocabulary logits


# ---------------------------------------------------------------- encoder-decoders

# google-t5/t5-base config.json, the fields that matter
T5_BASE = {"architectures": ["T5ForConditionalGeneration"], "d_ff": 3072, "d_kv": 64, "d_model": 768,
           "feed_forward_proj": "relu", "is_encoder_decoder": True, "model_type": "t5", "n_positions": 512,
           "num_decoder_layers": 12, "num_heads": 12, "num_layers": 12, "vocab_size": 32128}
# openai/whisper-large-v3 config.json, the fields that matter
WHISPER_L3 = {"architectures": ["WhisperForConditionalGeneration"], "d_model": 1280, "decoder_attention_heads": 20,
              "decoder_ffn_dim": 5120, "decoder_layers": 32, "encoder_attention_heads": 20, "encoder_ffn_dim": 5120,
              "encoder_layers": 32, "is_encoder_decoder": True, "max_source_positions": 1500,
              "max_target_positions": 448, "model_type": "whisper", "num_mel_bins": 128, "vocab_size": 51866}


def test_t5_base_counts_223m_with_one_shared_embedding():
    m = _hf(T5_BASE)
    attn, mlp, norm = 4 * 768 * 768, 2 * 768 * 3072, 768  # no biases; weight-only norms; a ReLU MLP
    encoder = 12 * (attn + mlp + 2 * norm) + norm
    decoder = 12 * (2 * attn + mlp + 3 * norm) + norm  # self- and cross-attention
    shared = 32128 * 768  # one table, tied to the LM head
    relative_bias = 2 * 32 * 12  # one per stack (buckets x heads), not counted
    assert m.params == encoder + decoder + shared == 222_902_784
    # Raffel et al. 2020 (JMLR 21, section 3.1.1): the Base model has "about 220 million parameters"
    assert m.params + relative_bias == pytest.approx(220e6, rel=0.015)
    assert (m.kind, m.can_generate) == ("encoder-decoder", True)


# google/mt5-small config.json (read 2026-11-27)
MT5_SMALL = {"architectures": ["MT5ForConditionalGeneration"], "d_ff": 1024, "d_kv": 64, "d_model": 512,
             "feed_forward_proj": "gated-gelu", "is_encoder_decoder": True, "model_type": "mt5",
             "num_decoder_layers": 8, "num_heads": 6, "num_layers": 8, "relative_attention_num_buckets": 32,
             "tie_word_embeddings": False, "vocab_size": 250112}


def test_mt5_small_counts_300m_with_a_gated_mlp_and_an_untied_head():
    m = _hf(MT5_SMALL)
    attn, mlp, norm = 4 * 512 * 384, 3 * 512 * 1024, 512  # 6 heads of 64; wi_0, wi_1, wo (gated-GELU); no biases
    encoder = 8 * (attn + mlp + 2 * norm) + norm
    decoder = 8 * (2 * attn + mlp + 3 * norm) + norm
    shared, head = 250112 * 512, 250112 * 512  # one table for both stacks, and its own LM head
    assert m.params == encoder + decoder + shared + head
    # with the two relative position biases (32 buckets x 6 heads each), not counted: 300,176,768; Xue et al. 2021
    # (mT5, arXiv 2010.11934) give mT5-Small as 300M parameters
    assert m.params + 2 * 32 * 6 == 300_176_768
    assert m.params == pytest.approx(300e6, rel=0.001)


def test_whisper_large_v3_counts_1_55b():
    m = _hf(WHISPER_L3)
    h = 1280
    attn = 4 * h * h + 4 * h  # biases on Q, K, V, O (Whisper's K has none: counted, 2 x 32 x 1280 over)
    mlp = 2 * h * 5120 + 5120 + h
    ln = 2 * h
    encoder = 32 * (attn + mlp + 2 * ln) + ln + 128 * 3 * h + 1500 * h  # + final norm, conv1, positions
    front = h * h * 3 + h + h  # conv2 with its bias, conv1's bias
    cross = 4 * h * h + 3 * h + ln  # Q, K, V, O, biases on Q, V, O, its norm
    decoder = 32 * (attn + mlp + 2 * ln + cross) + ln + 51866 * h + 448 * h  # tied LM head
    assert m.params == encoder + front + decoder
    # Radford et al. 2022 (arXiv 2212.04356, table 1): large, 1550M parameters
    assert m.params - 2 * 32 * h == pytest.approx(1550e6, rel=0.005)


def test_an_encoder_decoder_caches_cross_and_self_keys_per_decoder_layer():
    m = _hf(T5_BASE)
    s = _setup()
    kv = next(i for i in m.generate_memory(s, 4, 300, 100) if i.name == "kv_cache")
    # 12 decoder layers x (300 encoder tokens' cross K, V + 100 generated tokens' self K, V) x 768 x 2 B
    assert kv.gb == pytest.approx(4 * (300 + 100) * 12 * 2 * 768 * 2 / 1e9)
    decode = {g.name: g for g in m.decode_work(s, 4)}
    assert decode["attention"].bytes_per_pos == pytest.approx(4 * 12 * 2 * 768 * 2)  # p keys: self + cross
    assert decode["cross-attention"].flops == pytest.approx(2 * 12 * 4 * 2 * 768 * 768)  # Q and O only


def test_prefill_runs_the_encoder_both_ways_and_projects_the_cross_cache():
    m = _hf(T5_BASE)
    s = _setup()
    prefill = {g.name: g for g in m.prefill_work(s, 2, 300)}
    assert prefill["encoder attention"].flops == pytest.approx(2 * 12 * 4 * 768 * 300 * 300)
    cross = prefill["cross-attention"]
    k_v = 2 * 12 * 2 * 300 * 2 * 768 * 768  # K and V over 300 encoder tokens, 2 sequences
    q_o = 2 * 12 * 2 * 1 * 2 * 768 * 768  # Q and O over the first token
    assert cross.flops == pytest.approx(k_v + q_o + 2 * 12 * 4 * 768 * 300)


def test_an_encoder_decoder_yaml_record_and_its_refusal():
    stack = dict(hidden=64, heads=2, ffn=128, ffn_kind="gelu", vocab=100, context=64, tied_embeddings=True,
                 norm="rmsnorm", layers=2)
    doc = {"id": "tiny-s2s", "name": "tiny", "kind": "encoder-decoder", "source": "t", "shared_embeddings": True,
           "encoder": {**stack, "encoder": True}, "decoder": stack}
    m = parse_model_text(json.dumps(doc), "m.yaml", "upload")
    assert m.enc.encoder and not m.dec.encoder and m.architecture() is None
    bad = {**doc, "encoder": stack}  # the encoder stack without encoder: true
    with pytest.raises(DataFileError) as info:
        parse_model_text(json.dumps(bad), "m.yaml", "upload")
    assert info.value.field == "encoder"


# Qwen/Qwen3-Next-80B-A3B-Instruct config.json, the fields that matter
QWEN3_NEXT = {"architectures": ["Qwen3NextForCausalLM"], "decoder_sparse_step": 1, "full_attention_interval": 4,
              "head_dim": 256, "hidden_size": 2048, "intermediate_size": 5120, "linear_conv_kernel_dim": 4,
              "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
              "linear_value_head_dim": 128, "max_position_embeddings": 262144, "mlp_only_layers": [],
              "model_type": "qwen3_next", "moe_intermediate_size": 512, "num_attention_heads": 16,
              "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48, "num_key_value_heads": 2,
              "shared_expert_intermediate_size": 512, "tie_word_embeddings": False, "vocab_size": 151936}


def test_qwen3_next_linear_attention_layers_keep_a_fixed_state():
    m = _hf(QWEN3_NEXT)
    assert (m.state_layers, m.attn_layers) == (36, 12)  # full attention where (i + 1) % 4 == 0
    # a state of key width 128 per value channel (32 heads x 128), and the convolution's last 3 inputs over
    # q, k (16 heads x 128 each) and v (32 x 128)
    assert m.state_elems == 32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3
    gate = 12 * 2048 * 16 * 256  # the output gate, named in the cross-check, not counted
    assert "output gate" in m.cross_check
    # Qwen/Qwen3-Next-80B-A3B-Instruct model card: "80B in total and 3B activated"
    assert m.params + gate == pytest.approx(80e9, rel=0.01)
    assert m.active_params - 2 * 151936 * 2048 == pytest.approx(3e9, rel=0.06)  # without embeddings and head
    short, long = (dict((i.name, i.gb) for i in m.generate_memory(_setup(), 1, n, 1)) for n in (999, 99_999))
    assert short["state-space state"] == long["state-space state"]


def test_linear_attention_layers_outside_qwen3_next_are_refused_naming_the_field():
    cfg = {**GEMMA3_1B, "layer_types": ["linear_attention", "full_attention"] * 13}
    with pytest.raises(DataFileError) as info:
        _hf(cfg)
    assert info.value.field == "layer_types"
    with pytest.raises(DataFileError) as info:
        _hf({**GEMMA3_1B, "full_attention_interval": 4})
    assert info.value.field == "full_attention_interval"


JUNK = (None, "x", -1, 0, 10**30, [], [1, "a"], {}, True, 3.5)


@pytest.mark.parametrize("config", [DEEPSEEK_V3, GEMMA2_9B, GEMMA3_1B, QWEN_MOE, JAMBA, QWEN3_NEXT, BERT, VIT_B16,
                                    T5_BASE, WHISPER_L3, DISTILBERT, MT5_SMALL], ids=lambda c: c["model_type"])
def test_any_junk_in_any_field_is_a_message_naming_a_field_never_a_traceback(config):
    for key in config:
        for junk in JUNK:
            try:
                _hf({**config, key: junk})
            except DataFileError as exc:
                assert exc.field and exc.problem
