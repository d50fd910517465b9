"""Model profiles: parameter counts by hand and from published figures, HF config import, validation."""

import json

import pytest

from planner.inputs.models import load_model_file, load_models, parse_model_text
from planner.base.schema import DataFileError


def test_cfdna_gen_parameter_count_by_hand():
    # Seed 003: 14 layers, hidden 768, 12 heads, SwiGLU 3072, vocab 64, tied embeddings, RMSNorm, no biases.
    attn = 4 * 768 * 768  # Q, K, V, O
    mlp = 3 * 768 * 3072  # gate, up, down
    norms = 2 * 768
    expected = 14 * (attn + mlp + norms) + 64 * 768 + 768  # + tied embedding + final norm
    assert expected == 132_192_000
    assert load_models().get("cfdna-gen").params == expected


@pytest.mark.parametrize("model_id, published", [
    ("gpt2-124m", 124_439_808),  # Hugging Face gpt2 model card / num_parameters()
    ("llama-2-7b", 6_738_415_616),  # Hugging Face meta-llama/Llama-2-7b-hf num_parameters()
    ("llama-3-8b", 8_030_261_248),  # Hugging Face meta-llama/Meta-Llama-3-8B safetensors total
    ("mistral-7b", 7_241_732_096),  # Hugging Face mistralai/Mistral-7B-v0.1 safetensors total
])
def test_parameter_counts_match_published_totals(model_id, published):
    assert load_models().get(model_id).params == published


def test_cfdna_gen_kv_cache_bytes_by_hand():
    m = load_models().get("cfdna-gen")
    # K and V per token: 2 x layers x kv_heads x head_dim = 2 x 14 x 12 x 64 elements
    assert m.kv_elems == 21_504
    # Seed 003 says "KV cache (batch=128, full seq=256) ~1.4 GB" in FP32; by hand it is twice that:
    fp32_bytes = 128 * 256 * 21_504 * 4
    assert fp32_bytes == pytest.approx(2.818e9, rel=1e-3)


def test_hf_config_json_loads_as_a_decoder(tmp_path):
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
           "max_position_embeddings": 8192, "tie_word_embeddings": False, "hidden_act": "silu"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    m = load_model_file(path)
    assert m.params == 8_030_261_248 and m.kv_heads == 8 and m.ffn_kind == "swiglu"


def test_gpt2_style_config_json():
    cfg = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "vocab_size": 50257}
    m = parse_model_text(json.dumps(cfg), "gpt2.json", "upload")
    assert m.params == 124_439_808


@pytest.mark.parametrize("text, filename, needle", [
    ("{not json", "config.json", "not valid JSON"),
    ("[1, 2]", "config.json", "JSON object"),
    ('{"hidden_size": 64}', "config.json", "missing"),
    ("id: x\nkind: decoder\nname: x\nlayers: 2\nhidden: 64\nheads: 5\nffn: 1\nffn_kind: swiglu\nvocab: 1\n"
     "context: 1\ntied_embeddings: true\nnorm: rmsnorm\nsource: s\n", "m.yaml", "not divisible"),
    ("kind: transformer\nid: x\n", "m.yaml", "kind"),
    (": : :", "m.yaml", "YAML"),
])
def test_bad_model_uploads_get_clear_errors(text, filename, needle):
    with pytest.raises(DataFileError, match=needle):
        parse_model_text(text, filename, "upload")


def test_generic_profile_formula_errors_name_the_field():
    text = """
id: g
kind: generic
name: G
input_size_name: L
default_input_size: 10
constants: {d: 4}
params: "d*d"
fwd_flops_per_sample: "2*d*L + __import__('os')"
activation_elems_per_sample: "L*d"
peak_inference_elems_per_sample: "L*d"
activation_traffic_elems_per_sample: "L*d"
kernels_per_forward: 10
derivation: test
source: test
"""
    with pytest.raises(DataFileError, match="fwd_flops_per_sample"):
        parse_model_text(text, "g.yaml", "upload")


def test_every_preset_loads_and_is_positive():
    for m in load_models().models:
        assert m.params > 0 and m.source


GENERIC = """
id: g
kind: generic
name: G
input_size_name: L
default_input_size: 10
params: "100"
fwd_flops_per_sample: "2*L"
activation_elems_per_sample: "{act}"
peak_inference_elems_per_sample: "L"
activation_traffic_elems_per_sample: "L"
kernels_per_forward: 10
derivation: test
source: test
"""


def test_a_formula_negative_at_the_size_used_is_refused_by_name():
    m = parse_model_text(GENERIC.format(act="1000 - L"), "g.yaml", "upload")  # 990 at the default L = 10: loads
    # at L = 2000: 1000 - 2000 = -1000 elements
    with pytest.raises(ValueError, match="activation_elems_per_sample is negative at L=2,000"):
        m.check_size(2000)
    parse_model_text(GENERIC.format(act="L"), "g.yaml", "upload").check_size(2000)  # growing memory: fine


def test_memory_that_shrinks_as_the_input_grows_is_refused():
    m = parse_model_text(GENERIC.format(act="100 + 50 / L"), "g.yaml", "upload")  # positive everywhere, falling
    with pytest.raises(ValueError, match="shrinks from L=10 to 40"):
        m.check_size(40)


def test_a_plan_at_a_bad_size_fails_before_any_estimate():
    from planner.engine.plan import Plan, check_plan
    from planner.inputs.jobs import Infer
    m = parse_model_text(GENERIC.format(act="1000 - L"), "g.yaml", "upload")
    with pytest.raises(ValueError, match="negative"):
        check_plan(Plan(m, Infer(10, 5000), "fp32"))


def test_a_model_file_must_be_a_regular_file_of_bounded_size(tmp_path):
    with pytest.raises(DataFileError, match="not a regular file"):
        load_model_file("/dev/zero")
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * 1_000_001)
    with pytest.raises(DataFileError, match="larger than 1,000,000 bytes"):
        load_model_file(big)


def test_a_yaml_alias_bomb_is_refused_before_it_expands():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b]\n"
    with pytest.raises(DataFileError, match="alias"):
        parse_model_text(bomb, "m.yaml", "upload")


def test_deep_json_and_huge_integers_are_refused_with_a_message():
    with pytest.raises(DataFileError, match="could not be read safely"):
        parse_model_text("[" * 50_000 + "]" * 50_000, "config.json", "upload")
    with pytest.raises(DataFileError, match="could not be read safely|numbers that large"):
        parse_model_text('{"hidden_size": ' + "9" * 5000 + "}", "config.json", "upload")


def test_model_family_names_resolve_when_unique_and_list_otherwise():
    from planner.base.schema import AmbiguousNameError
    assert load_models().get("gpt2").id == "gpt2-124m" and load_models().get("Llama 3 8B").id == "llama-3-8b"
    with pytest.raises(AmbiguousNameError, match="llama-3-8b, llama-3-70b"):
        load_models().get("llama 3")


def _train_setup(precision):
    from planner.inputs.precisions import load_rules
    from planner.inputs.work import Setup
    r = load_rules()
    p = r.precision(precision)
    return Setup(p, r.default_kv_dtype(p), r.attention("sdpa"))


def test_betarho_checkpointing_keeps_every_block_input_not_a_segment_share():
    m = load_models().get("betarho-full")
    L = 500
    # With checkpointing per transformer block and IPA iteration (data/models_generic.yaml derivation), kept per pair:
    # embedding 35 + the 4 blocks' pair inputs 4 x 64 + IPA entry 64 + 128 + 2 = 485; per residue 4 x 128 + 4 x 9.5 x 384
    # + 1800 = 16,904; plus one transformer block re-materialized: per pair 2 x 128 + 9 x 64 + 3 = 835, per residue
    # 24 x 128 = 3,072.
    kept = L**2 * 485 + L * 16_904
    segment = L**2 * 835 + L * 3_072
    fp32 = m.train_activation_memory(_train_setup("fp32"), 1, L, True).gb
    assert fp32 == pytest.approx((kept + segment) * 4 / 1e9)
    # the traced reference (examples/profiles/betarho-full.yaml, fp32, checkpointed, L=500) saw 1.342e9 B
    assert fp32 == pytest.approx(1.342e9 / 1e9, rel=0.03)
    plain = m.train_activation_memory(_train_setup("fp32"), 1, L, False).gb
    assert 0.25 < fp32 / plain < 0.35  # a checkpointed step keeps ~30 %, not 1/8 (the 8 segments)


def test_betarho_mixed_precision_saves_2_25_bytes_per_element():
    m = load_models().get("betarho-full")
    L = 500
    elems = L**2 * 4913 + L * 28_680  # the profile's activation_elems at L=500, term by term (see test_presets)
    bf16 = m.train_activation_memory(_train_setup("bf16"), 16, L, False)
    assert bf16.gb == pytest.approx(16 * elems * 2.25 / 1e9)  # 44.7 GB: the seed's batch 16 does not fit 40 GB
    assert m.train_activation_memory(_train_setup("fp32"), 1, L, False).gb == pytest.approx(elems * 4 / 1e9)


def test_a_profile_with_only_half_of_the_checkpoint_pair_is_refused():
    text = """\
id: toy
name: Toy
kind: generic
input_size_name: L
default_input_size: 10
params: "100"
fwd_flops_per_sample: "L"
activation_elems_per_sample: "L"
peak_inference_elems_per_sample: "L"
activation_traffic_elems_per_sample: "L"
kernels_per_forward: 10
checkpoint_kept_elems_per_sample: "L"
derivation: test
source: test
"""
    with pytest.raises(DataFileError, match="checkpoint_kept_elems_per_sample.*give both"):
        parse_model_text(text, "toy.yaml", "upload")


def _setup(precision, attention="sdpa"):
    from planner.inputs.precisions import load_rules
    from planner.inputs.work import Setup
    r = load_rules()
    p = r.precision(precision)
    return Setup(p, r.default_kv_dtype(p), r.attention(attention))


def _group(groups, name):
    return next(g for g in groups if g.name.startswith(name))


def test_manual_attention_computes_every_score_and_its_backward_is_twice_the_forward():
    m = load_models().get("gpt2-124m")  # 12 layers, 12 heads x 64 = 768
    S, B = 1024, 2
    fused = _group(m.forward_work(_setup("fp16"), B, S), "attention").flops
    manual = _group(m.forward_work(_setup("fp16", "manual"), B, S), "attention").flops
    assert fused == 4 * 12 * 768 * B * S * (S + 1) / 2  # causal: query t attends t keys
    assert manual == 4 * 12 * 768 * B * S * S  # softmax(QK^T)V fills the whole S x S matrix, then masks it
    train_manual = _group(m.train_work(_setup("fp16", "manual"), B, S, False), "attention").flops
    train_fused = _group(m.train_work(_setup("fp16"), B, S, False), "attention").flops
    assert train_manual == manual * (1 + 2)  # dQ, dK, dP, dV: 4 matmuls for the forward's 2
    assert train_fused == fused * (1 + 2.5)  # FlashAttention-2 recomputes QK^T: 5 matmuls (Dao 2023)


def test_swiglu_saves_four_ffn_widths_per_token_in_eager_pytorch():
    m = load_models().get("llama-2-7b")  # hidden 4096, 32 heads, kv 32 x 128, ffn 11008, 32 layers
    h, f, q, kv = 4096, 11008, 4096, 4096
    # norm in/out 4h, Q, K, V and attention output (2q + 2kv), MLP: gate, up, silu(gate), gate*up = 4f
    assert m.saved_act_elems == 32 * (4 * h + 2 * q + 2 * kv + 4 * f)


def test_int4_keeps_embeddings_and_lm_head_in_fp16():
    from planner.engine.memory import breakdown
    from planner.inputs.jobs import Generate
    m = load_models().get("llama-3-8b")  # 32 layers, hidden 4096, kv 8 x 128, ffn 14336, vocab 128256, untied
    layers = 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # Q, O, K, V and the SwiGLU MLP
    others = m.params - layers  # embeddings 525M + LM head 525M + norms
    assert others == 2 * 128256 * 4096 + 65 * 4096
    weights = breakdown(m, Generate(1, 1, 1), _setup("int4"), 1, 0.0).get("weights")
    assert weights == pytest.approx((layers * 0.515625 + others * 2) / 1e9)
    assert 5.6 < weights < 5.8  # ~5.7 GB, as AWQ checkpoints of Llama-3-8B are (the old 4.14 quantized everything)
    lin = _group(m.decode_work(_setup("int4"), 1), "linear layers")
    assert lin.bytes == layers * 0.515625 + 128256 * 4096 * 2  # the LM head is read in fp16 every token


def test_weight_only_int8_and_int4_pay_for_dequantization_and_w8a8_does_not():
    m = load_models().get("llama-2-7b")
    layers = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008)
    # 3 instructions per pair of weights (bit op, zero/scale, multiply-accumulate: vLLM Marlin 'fast dequantization')
    for precision, ops in (("int8", 1.5), ("int4", 1.5)):
        g = _group(m.decode_work(_setup(precision), 1), "dequantize weights")
        assert g.compute_path == "fp32" and g.flops == 2 * ops * layers and g.bytes == 0
        assert _group(m.decode_work(_setup(precision), 1), "linear layers").compute_path == "fp16"
    for precision in ("fp16", "int8-w8a8", "fp8"):
        assert not any(g.name == "dequantize weights" for g in m.decode_work(_setup(precision), 1))
    assert _group(m.decode_work(_setup("int8-w8a8"), 1), "linear layers").compute_path == "int8"
