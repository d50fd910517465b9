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


def test_betarho_checkpointed_peak_prices_each_tensor_at_its_own_dtype():
    """examples/models/betarho.py read by hand (reduced: cs 96, cz 48, nb 3, H 2, Pq 3, Z 128), per residue pair.
    The peak of a checkpointed step is the backward of the last transformer block, just recomputed. Live then:
    the two fp32 input maps (8 B); the 34 pair features pair_projection saved as its 16-bit autocast copy (34 x 2);
    the embedding's fp32 pair mask (4); each block's fp32 pair input, kept by checkpoint (3 x 48 x 4 = 576). The
    recomputed block: the fp32 gradient at its output (48 x 4), LN(z) and 2 statistics (50 x 4), the fp32 concat
    [h_i, h_j, LN(z)] (240 x 4) and the Linear's 16-bit copy (240 x 2), ReLU and dropout outputs (2 x 96 x 2), the
    MLP's dropout output (48 x 2), the dropout masks as bool (3 x 48 x 1) and the fp32 residual sum (48 x 4).
    bf16: 656 + 2648 = 3,304 B (the old kept + segment elements x 2.25 B: (357 + 627) x 2.25 = 2,214 B).
    fp32 training: the 16-bit copies vanish and 'compute' tensors are 4 B: 724 + 2648 = 3,372 B. Per residue the
    trace's 13,480 B (fp32)."""
    m = load_models().get("betarho-reduced")
    L = 200
    bf16 = 8 + 34 * 2 + 4 + 576 + 48 * 4 + 50 * 4 + 240 * 4 + 240 * 2 + (2 * 96 + 48) * 2 + 3 * 48 + 48 * 4
    fp32 = 8 + 34 * 4 + 4 + 576 + 48 * 4 + 50 * 4 + 240 * 4 + (2 * 96 + 48) * 4 + 3 * 48 + 48 * 4
    assert (bf16, fp32) == (3304, 3372)
    got = m.train_activation_memory(_train_setup("bf16"), 10, L, True).gb
    assert got == pytest.approx(10 * (L**2 * bf16 + L * 13_480) / 1e9)
    assert m.train_activation_memory(_train_setup("fp32"), 1, L, True).gb == pytest.approx(
        (L**2 * fp32 + L * 13_480) / 1e9)
    # the other candidate, an IPA iteration's backward, holds less here (the derivation: 3,176 B per pair in bf16)
    _, peak = m.checkpoint_peak_bytes(L, 2.0)
    assert "transformer block" in peak.at
    plain = m.train_activation_memory(_train_setup("bf16"), 1, L, False).gb
    assert 0.25 < got / 10 / plain < 0.5  # checkpointing keeps a third of the step's activations, not 1/6


def test_betarho_mixed_precision_saves_2_25_bytes_per_element():
    m = load_models().get("betarho-full")
    L = 500
    elems = L**2 * 4913 + L * 28_680  # the profile's activation_elems at L=500, term by term (see test_presets)
    bf16 = m.train_activation_memory(_train_setup("bf16"), 16, L, False)
    assert bf16.gb == pytest.approx(16 * elems * 2.25 / 1e9)  # 44.7 GB: the seed's batch 16 does not fit 40 GB
    assert m.train_activation_memory(_train_setup("fp32"), 1, L, False).gb == pytest.approx(elems * 4 / 1e9)


# a generic profile's required fields, each L: the start of the toy profiles below
TOY_HEAD = """\
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
"""


def test_a_profile_with_only_half_of_the_checkpoint_pair_is_refused():
    text = TOY_HEAD + """\
checkpoint_kept_elems_per_sample: "L"
derivation: test
source: test
"""
    with pytest.raises(DataFileError, match="checkpoint_kept_elems_per_sample.*give both"):
        parse_model_text(text, "toy.yaml", "upload")


TOY_PEAKS = TOY_HEAD + """\
checkpoint_peaks:
- at: the block's backward
  tensors:
  - {tensor: kept input, elems: "2*L", dtype: fp32}
  - {tensor: its copy, elems: "L", dtype: autocast_copy}
  - {tensor: recomputed, elems: "L", dtype: compute}
  - {tensor: mask, elems: "L", dtype: bool}
- at: the head's backward
  tensors:
  - {tensor: everything, elems: "5*L", dtype: compute}
derivation: test
source: test
"""


def test_checkpoint_peaks_take_the_largest_moment_at_each_precision():
    m = parse_model_text(TOY_PEAKS, "toy.yaml", "upload")
    # per element of L: bf16 moment 1 = 2x4 + 2 + 2 + 1 = 13 B, moment 2 = 5 x 2 = 10 B: the block wins;
    # fp32 moment 1 = 8 + 0 (no copy) + 4 + 1 = 13 B, moment 2 = 20 B: the head wins
    assert m.train_activation_memory(_train_setup("bf16"), 3, 100, True).gb == pytest.approx(3 * 1300 / 1e9)
    assert m.train_activation_memory(_train_setup("fp32"), 3, 100, True).gb == pytest.approx(3 * 2000 / 1e9)
    assert "the head's backward" in m.train_activation_memory(_train_setup("fp32"), 3, 100, True).formula


@pytest.mark.parametrize("old, new, where", [
    ("dtype: bool", "dtype: boolean", "checkpoint_peaks[0].tensors[3], field 'dtype.*expected one of"),
    ('elems: "L", dtype: compute', 'elems: "L*w", dtype: compute',
     "checkpoint_peaks[0].tensors[2], field 'elems.*unknown name"),
    ("  - {tensor: mask", "  - {tensr: mask", "checkpoint_peaks[0].tensors[3], field 'tensr.*unknown field"),
    ("kernels_per_forward: 10\n", 'kernels_per_forward: 10\ncheckpoint_kept_elems_per_sample: "L"\n'
     'checkpoint_segment_elems_per_sample: "L"\n', "checkpoint_peaks.*not both"),
])
def test_a_malformed_checkpoint_peak_names_file_record_and_field(old, new, where):
    with pytest.raises(DataFileError, match=r"upload: record 'toy.*" + where.replace("[", r"\[").replace("]", r"\]")):
        parse_model_text(TOY_PEAKS.replace(old, new), "toy.yaml", "upload")


def _setup(precision, attention="sdpa"):
    from planner.inputs.precisions import load_rules
    from planner.inputs.work import Setup
    r = load_rules()
    p = r.precision(precision)
    return Setup(p, r.default_kv_dtype(p), r.attention(attention))


def _group(groups, name):
    return next(g for g in groups if g.name.startswith(name))


def _attention(groups):
    """A training step's attention, forward and backward groups together (FLOPs and bytes summed)."""
    fwd, bwd = _group(groups, "attention forward"), _group(groups, "attention backward")
    return fwd._replace(flops=fwd.flops + bwd.flops, bytes=fwd.bytes + bwd.bytes)


def test_manual_attention_computes_every_score_and_its_backward_is_twice_the_forward():
    m = load_models().get("gpt2-124m")  # 12 layers, 12 heads x 64 = 768
    S, B = 1024, 2
    fused = _group(m.forward_work(_setup("fp16"), B, S), "attention").flops
    manual = _group(m.forward_work(_setup("fp16", "manual"), B, S), "attention").flops
    assert fused == 4 * 12 * 768 * B * S * (S + 1) / 2  # causal: query t attends t keys
    assert manual == 4 * 12 * 768 * B * S * S  # softmax(QK^T)V fills the whole S x S matrix, then masks it
    train_manual = _attention(m.train_work(_setup("fp16", "manual"), B, S, False)).flops
    train_fused = _attention(m.train_work(_setup("fp16"), B, S, False)).flops
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



def test_a_runtime_gemv_unpacks_quantized_weights_once_per_token_up_to_its_limit():
    """llama.cpp's mul_mat_vec_q (up to 8 tokens per pass) unpacks and multiplies every weight again for each token;
    above it the tensor-core kernel unpacks each weight once per pass."""
    from dataclasses import replace
    m = load_models().get("llama-2-7b")
    s = replace(_setup("q4_0"), gemv_max_tokens=8, gemv_ops_per_weight_token=1.04)
    gguf = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 32000 * 4096  # Q4_0 quantizes the output matrix too
    for batch in (1, 8):
        groups = m.decode_work(s, batch)
        g = _group(groups, "quantized GEMV")
        assert g.compute_path == "int32" and g.flops == pytest.approx(2 * 1.04 * batch * gguf) and g.bytes == 0
        assert _group(groups, "linear layers").gemms == ()  # CUDA cores: no tensor-core tile padding
        assert not any(x.name == "dequantize weights" for x in groups)
    groups = m.decode_work(s, 9)
    assert _group(groups, "dequantize weights").flops == pytest.approx(2 * 1.5 * gguf)
    assert _group(groups, "linear layers").gemms and not any(x.name.startswith("quantized GEMV") for x in groups)
    # 16-bit weights have nothing to unpack, whatever the runtime
    assert not any(x.name.startswith("quantized GEMV") for x in m.decode_work(replace(s, precision=_setup(
        "fp16").precision), 1))


def test_a_chunked_prefill_unpacks_the_weights_once_per_chunk():
    """llama.cpp -ub 4 on a 10-token prompt: chunks of 4, 4 and 2 tokens, all in the GEMV (<= 8 tokens): 10 token
    passes' worth of per-token instructions; at -ub 512 one tensor-core pass unpacks them once."""
    from dataclasses import replace
    m = load_models().get("llama-2-7b")
    gguf = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008) + 32000 * 4096
    s = replace(_setup("q4_0"), gemv_max_tokens=8, gemv_ops_per_weight_token=1.04, prefill_chunk=4)
    groups = m.prefill_work(s, 1, 10)
    assert _group(groups, "quantized GEMV").flops == pytest.approx(2 * 1.04 * (4 + 4 + 2) * gguf)
    assert _group(groups, "linear layers").gemms == ()
    s512 = replace(s, prefill_chunk=512)
    assert _group(m.prefill_work(s512, 1, 1000), "dequantize weights").flops == pytest.approx(2 * 2 * 1.5 * gguf)

LLAMA3_8B_LAYERS = 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # Q, O, K, V, SwiGLU: 6.98e9
LLAMA3_8B_HEAD = 128256 * 4096


def test_bitsandbytes_nf4_multiplies_one_token_in_its_gemv_and_more_through_a_16bit_copy():
    """bitsandbytes' matmul_4bit: a one-row input runs gemv_4bit (4 integer-slot instructions per weight, the stored
    4.5 bits read once); two rows or more dequantize every weight into a 16-bit tensor (read 0.5625 B, write 2 B per
    weight) that F.linear's GEMM then reads (2 B per weight)."""
    m, s = load_models().get("llama-3-8b"), _setup("bnb-nf4")
    q, head = LLAMA3_8B_LAYERS, LLAMA3_8B_HEAD
    one = m.decode_work(s, 1)
    assert _group(one, "quantized GEMV").flops == pytest.approx(2 * 4 * 1 * q)
    assert _group(one, "linear layers").bytes == pytest.approx(q * 0.5625 + head * 2)
    assert not any(g.name == "dequantize weights" for g in one)
    two = m.decode_work(s, 2)
    dq = _group(two, "dequantize weights")
    assert dq.bytes == pytest.approx(q * (0.5625 + 2)) and dq.flops == pytest.approx(2 * 11 * q)
    assert dq.compute_path == "int32"  # a kernel of its own, counted in integer-slot instructions
    assert _group(two, "linear layers").bytes == pytest.approx(q * 2 + head * 2)
    assert not any(g.name.startswith("quantized GEMV") for g in two)


def test_exllama_unpacks_the_weights_again_for_each_of_up_to_seven_rows_then_reconstructs_them():
    """AutoGPTQ's exllama q4_matmul: x_height < matmul_recons_thd = 8 rows run q4_matmul_kernel, one row per block
    (7.6 integer-slot instructions per weight per row); 8 rows or more reconstruct an fp16 copy (7.5 per weight,
    read 0.5195 B + write 2 B) for cublasHgemm."""
    m, s = load_models().get("llama-2-13b"), _setup("gptq-exllama")
    q = 40 * (4 * 5120 * 5120 + 3 * 5120 * 13824)
    seven = m.decode_work(s, 7)
    assert _group(seven, "quantized GEMV").flops == pytest.approx(2 * 7.6 * 7 * q)
    assert _group(seven, "linear layers").bytes == pytest.approx(q * (4 + 16 / 128 + 4 / 128) / 8 + 32000 * 5120 * 2)
    eight = m.decode_work(s, 8)
    assert _group(eight, "dequantize weights").bytes == pytest.approx(q * ((4 + 16 / 128 + 4 / 128) / 8 + 2))
    assert _group(eight, "linear layers").bytes == pytest.approx(q * 2 + 32000 * 5120 * 2)
    # the prompt (512 rows) goes through the copy once per pass, whatever its length
    assert _group(m.prefill_work(s, 1, 512), "dequantize weights").flops == pytest.approx(2 * 7.5 * q)


def test_each_linear_module_call_brings_its_librarys_launches_and_host_work():
    """Llama-3-8B: 32 layers x 7 linear modules (q, k, v, o, gate, up, down) = 224 calls per pass. bnb NF4 with
    double quantization launches 2 more kernels per call (the absmax's dequantize_blockwise and offset add) and one
    more above a single row (dequantize_4bit); LLM.int8 launches 2 more (row quantization, int32 dequantization);
    exllama's GEMV launches none. Host: 3.76, 6.57 and 0 eager kernel dispatches per call (data/precisions.yaml)."""
    m = load_models().get("llama-3-8b")
    calls = 32 * 7
    lin = lambda precision, batch: _group(m.decode_work(_setup(precision), batch), "linear layers")  # noqa: E731
    assert (lin("bnb-nf4-dq", 1).launches, lin("bnb-nf4-dq", 1).host_kernels) == pytest.approx((2 * calls,
                                                                                                3.76 * calls))
    assert lin("bnb-nf4-dq", 2).launches == pytest.approx(3 * calls)
    assert (lin("bnb-int8", 1).launches, lin("bnb-int8", 1).host_kernels) == pytest.approx((2 * calls, 6.57 * calls))
    assert (lin("gptq-exllama", 4).launches, lin("gptq-exllama", 4).host_kernels) == (0, 0)
    assert lin("gptq-exllama", 8).launches == pytest.approx(calls)  # reconstruct, from C++: no host work
    assert (lin("int4", 1).launches, lin("int4", 1).host_kernels) == (0, 0)  # the runtime's own kernels


def test_a_mixture_of_experts_calls_the_router_and_each_expert_a_pass_reaches():
    m = load_models().get("mixtral-8x7b")  # 32 layers, 8 experts, top 2, SwiGLU
    # one token: 4 attention projections + the router + its 2 experts x 3 matrices, per layer
    assert m.linear_calls(1) == 32 * (4 + 1 + 2 * 3)
    # a long prompt reaches all 8 experts: 4 + 1 + 8 x 3 per layer
    assert m.linear_calls(4096) == pytest.approx(32 * (4 + 1 + 8 * 3))


# ---------------------------------------------------------------- Hugging Face configs: mixtures of experts, refusals

# mistralai/Mixtral-8x7B-v0.1 config.json (huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json)
MIXTRAL = {"architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
           "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
           "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
           "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
           "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
           "router_aux_loss_coef": 0.02, "sliding_window": None, "tie_word_embeddings": False,
           "torch_dtype": "bfloat16", "transformers_version": "4.36.0.dev0", "use_cache": True, "vocab_size": 32000}
# Qwen/Qwen1.5-MoE-A2.7B-Chat config.json (huggingface.co/Qwen/Qwen1.5-MoE-A2.7B-Chat), the fields that matter
QWEN_MOE = {"architectures": ["Qwen2MoeForCausalLM"], "decoder_sparse_step": 1, "hidden_act": "silu",
            "hidden_size": 2048, "intermediate_size": 5632, "max_position_embeddings": 32768, "max_window_layers": 21,
            "mlp_only_layers": [], "model_type": "qwen2_moe", "moe_intermediate_size": 1408,
            "norm_topk_prob": False, "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
            "num_hidden_layers": 24, "num_key_value_heads": 16, "shared_expert_intermediate_size": 5632,
            "sliding_window": 32768, "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936}
# google-bert/bert-base-uncased config.json (huggingface.co/google-bert/bert-base-uncased)
BERT = {"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": False,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
        "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
        "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute",
        "type_vocab_size": 2, "use_cache": True, "vocab_size": 30522}
# FacebookAI/roberta-base config.json
ROBERTA = {"architectures": ["RobertaForMaskedLM"], "hidden_act": "gelu", "hidden_size": 768,
           "intermediate_size": 3072, "max_position_embeddings": 514, "model_type": "roberta",
           "num_attention_heads": 12, "num_hidden_layers": 12, "type_vocab_size": 1, "vocab_size": 50265}
# google-t5/t5-small config.json
T5 = {"architectures": ["T5ForConditionalGeneration"], "d_ff": 2048, "d_kv": 64, "d_model": 512,
      "is_encoder_decoder": True, "model_type": "t5", "num_decoder_layers": 6, "num_heads": 8, "num_layers": 6,
      "vocab_size": 32128}
# facebook/bart-base config.json (is_encoder_decoder is the class default there, not in the file)
BART = {"architectures": ["BartModel"], "d_model": 768, "decoder_layers": 6, "encoder_layers": 6,
        "max_position_embeddings": 1024, "model_type": "bart", "vocab_size": 50265}
# deepseek-ai/DeepSeek-V2-Lite config.json, the fields that matter
DEEPSEEK_V2_LITE = {"architectures": ["DeepseekV2ForCausalLM"], "first_k_dense_replace": 1, "hidden_size": 2048,
                    "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
                    "model_type": "deepseek_v2", "moe_intermediate_size": 1408, "n_routed_experts": 64,
                    "n_shared_experts": 2, "num_attention_heads": 16, "num_experts_per_tok": 6,
                    "num_hidden_layers": 27, "num_key_value_heads": 16, "q_lora_rank": None, "vocab_size": 102400}
# mistralai/Mistral-7B-v0.1 config.json
MISTRAL_V01 = {"architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
               "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
               "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
               "sliding_window": 4096, "tie_word_embeddings": False, "vocab_size": 32000}
# google/gemma-7b config.json (no tie_word_embeddings key: GemmaConfig ties them by default)
GEMMA_7B = {"architectures": ["GemmaForCausalLM"], "head_dim": 256, "hidden_act": "gelu", "hidden_size": 3072,
            "intermediate_size": 24576, "max_position_embeddings": 8192, "model_type": "gemma",
            "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 16, "vocab_size": 256000}


def _hf(config):
    return parse_model_text(json.dumps(config), "config.json", "upload")


def test_mixtral_config_counts_every_expert_in_memory_and_two_per_token():
    m = _hf(MIXTRAL)
    attn = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096  # Q, K and V (8 KV heads x 128), O
    expert = 3 * 4096 * 14336  # gate, up, down of one expert
    router, norms = 4096 * 8, 2 * 4096
    layer = attn + 8 * expert + router + norms
    total = 32 * layer + 2 * 32000 * 4096 + 4096  # + embedding, LM head (untied), final norm
    active = total - 32 * (8 - 2) * expert  # each token skips 6 of the 8 experts per layer
    assert (total, active) == (46_702_792_704, 12_879_925_248)
    assert (m.params, m.active_params) == (total, active)
    # Mistral AI, "Mixtral of experts" (2023-12-11): 46.7B total parameters, 12.9B used per token
    assert m.params == pytest.approx(46.7e9, rel=0.01) and m.active_params == pytest.approx(12.9e9, rel=0.01)
    preset = load_models().get("mixtral-8x7b")
    assert (preset.params, preset.active_params, preset.context) == (total, active, 32768)


def test_qwen_moe_config_with_a_shared_expert_by_hand():
    m = _hf(QWEN_MOE)
    attn = 4 * 2048 * 2048  # 16 heads x 128 = 2048 for Q, K, V, O
    expert, shared = 3 * 2048 * 1408, 3 * 2048 * 5632  # moe_intermediate_size, shared_expert_intermediate_size
    layer = attn + 60 * expert + shared + 2048 * 60 + 2 * 2048  # + router + two RMSNorms
    total = 24 * layer + 2 * 151936 * 2048 + 2048
    active = total - 24 * (60 - 4) * expert
    assert (m.params, m.active_params) == (total, active) == (14_315_587_584, 2_688_976_896)
    # model card: "14.3B parameters in total and 2.7B activated parameters during runtime"
    assert m.params == pytest.approx(14.3e9, rel=0.01) and m.active_params == pytest.approx(2.7e9, rel=0.01)
    assert load_models().get("qwen1.5-moe-a2.7b").params == total


def test_experts_read_per_pass_grow_from_k_to_all_with_the_tokens():
    m = load_models().get("mixtral-8x7b")
    assert m.experts_read(1) == pytest.approx(2)  # one token reads its own 2 experts
    # 8 tokens: an expert is missed by one token with probability 6/8, by all 8 with 0.75^8 = 0.1001129
    assert m.experts_read(8) == pytest.approx(8 * (1 - 0.75 ** 8)) == pytest.approx(7.19910, rel=1e-5)
    assert m.experts_read(4096) == pytest.approx(8)


def test_mixtral_decode_step_flops_use_top_k_and_bytes_read_the_experts_touched():
    m = load_models().get("mixtral-8x7b")
    lin = lambda batch: next(g for g in m.decode_work(_setup("bf16"), batch) if g.name == "linear layers")  # noqa: E731
    attn = 4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096
    expert, router, head = 3 * 4096 * 14336, 4096 * 8, 32000 * 4096
    fixed = 32 * (attn + router) + head  # weights every step reads whatever the routing
    # batch 1: FLOPs of 2 experts per layer; bytes of the same 2 experts: 2/8 of the expert weights (bf16: 2 B)
    assert lin(1).flops == 2 * (32 * (attn + router + 2 * expert) + head)
    assert lin(1).bytes == (fixed + 32 * 2 * expert) * 2
    # batch 8: 8 x the FLOPs, but 8 x (1 - 0.75^8) = 7.2 experts per layer read, not 8 x 2 = 16
    assert lin(8).flops == 8 * lin(1).flops
    assert lin(8).bytes == pytest.approx((fixed + 32 * 8 * (1 - 0.75 ** 8) * expert) * 2)
    # batch 256: every expert read; the step reads the whole model's matrices (46.7B - embeddings - norms)
    assert lin(256).bytes == pytest.approx((fixed + 32 * 8 * expert) * 2)
    # the expert share of the bytes read at batch 1 is k/E of the expert weights
    assert (lin(1).bytes - fixed * 2) / (lin(256).bytes - fixed * 2) == pytest.approx(2 / 8)


def test_moe_training_reads_every_expert_and_counts_top_k_flops():
    m = load_models().get("mixtral-8x7b")
    lin = next(g for g in m.train_work(_setup("bf16"), 1, 512, False) if g.name == "linear layers (fwd+bwd)")
    assert lin.flops == 6 * 512 * m.matmul_params  # fwd 2 + bwd 4 per token and active weight
    assert m.matmul_params == 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 4096 * 8 + 2 * 3 * 4096 * 14336) + 32000 * 4096
    # 512 tokens miss an expert with probability 0.75^512 ~ 1e-64: all 8 x 32 experts are read, with their gradients
    all_matrices = 32 * m.layer_matmul_params + 32000 * 4096
    assert lin.bytes == pytest.approx(all_matrices * (2 * 3 + 8))  # 3 reads of bf16 + fp32 gradient read and write


def test_moe_memory_and_sharding_hold_every_expert():
    m = load_models().get("mixtral-8x7b")
    assert m.shard_unit_params == m.layer_matmul_params  # FSDP gathers a whole layer, all 8 experts
    assert m.quantizable_params == 32 * m.layer_matmul_params
    assert m.params - m.quantizable_params == 2 * 32000 * 4096 + 65 * 4096  # embeddings, LM head, norms


def test_a_moe_config_and_its_decoder_fields_are_validated_by_name():
    base = ("id: x\nkind: decoder\nname: x\nlayers: 2\nhidden: 64\nheads: 4\nffn: 128\nffn_kind: swiglu\nvocab: 10\n"
            "context: 16\ntied_embeddings: true\nnorm: rmsnorm\nsource: s\n")
    with pytest.raises(DataFileError, match="experts_per_token.*more experts \\(3\\) than a layer has"):
        parse_model_text(base + "experts: 2\nexperts_per_token: 3\n", "m.yaml", "upload")
    with pytest.raises(DataFileError, match="'shared_ffn'.*mixture-of-experts"):
        parse_model_text(base + "shared_ffn: 64\n", "m.yaml", "upload")
    with pytest.raises(DataFileError, match="'experts'"):
        parse_model_text(base + "experts: 0\n", "m.yaml", "upload")
    moe = parse_model_text(base + "experts: 4\nexperts_per_token: 1\nshared_ffn: 32\n", "m.yaml", "upload")
    assert moe.layer_matmul_params == 4 * 64 * 64 + 64 * 4 + 4 * 3 * 64 * 128 + 3 * 64 * 32
    assert "4 experts, top 1 + shared 32" in moe.describe()


def test_mixtral_config_without_top_k_names_the_key():
    cfg = {k: v for k, v in MIXTRAL.items() if k != "num_experts_per_tok"}
    with pytest.raises(DataFileError, match="experts_per_token.*num_experts_per_tok"):
        _hf(cfg)


@pytest.mark.parametrize("config, field, needle", [
    ({**BERT, "model_type": "albert"}, "model_type", "model_type 'albert' \\(BertForMaskedLM\\): an "
                                                     "encoder-only model"),
    ({**BERT, "model_type": "my-encoder"}, "architectures", "encoder-only"),
    ({**T5, "model_type": "umt5"}, "is_encoder_decoder", "an encoder-decoder model"),
    (BART, "model_type", "model_type 'bart' \\(BartModel\\): an encoder-decoder model"),
    ({**DEEPSEEK_V2_LITE, "moe_layer_freq": 2}, "moe_layer_freq", "alternate with dense ones"),
    ({**MISTRAL_V01, "layer_types": ["linear_attention", "full_attention"] * 16}, "layer_types",
     "read for Qwen3-Next only"),
    ({**GEMMA_7B, "model_type": "gemma3", "text_config": {}}, "model_type", "vision-language model"),
    ({**MISTRAL_V01, "attn_layer_period": 8}, "attn_layer_period", "state-space"),
    ({**MISTRAL_V01, "model_type": "gpt_neox"}, "model_type", "parallel attention and MLP"),
    ({**MISTRAL_V01, "model_type": "starcoder2"}, "model_type", "not a family the planner reads"),
    ({**MISTRAL_V01, "architectures": ["MistralForSequenceClassification"]}, "architectures",
     "not a causal language model"),
    ({k: v for k, v in MISTRAL_V01.items() if k != "model_type"}, "model_type", "missing from config.json"),
])
def test_configs_the_decoder_cannot_model_are_refused_naming_why(config, field, needle):
    with pytest.raises(DataFileError, match=needle) as info:
        _hf(config)
    assert info.value.field == field
    if field != "model_type" or "missing" not in needle:  # a refusal says what to do instead
        assert "python3 -m planner profile" in info.value.problem


def test_a_sliding_window_every_layer_uses_puts_every_layer_on_the_window():
    m = _hf(MISTRAL_V01)
    assert (m.context, m.window, m.window_layers) == (32768, 4096, 32)
    assert m.params == 7_241_732_096  # the window changes nothing in the weights (the mistral-7b preset's count)
    q = _hf(QWEN_MOE)  # use_sliding_window false: full attention, no window
    assert (q.context, q.window_layers) == (32768, 0)


def test_gemma_gated_gelu_counts_three_matrices():
    m = _hf(GEMMA_7B)  # hidden_act 'gelu' but GemmaMLP has gate, up and down projections
    assert m.ffn_kind == "swiglu" and m.tied_embeddings
    # Gemma technical report (Gemma Team 2024, table 2): 7B has 7,751,248,896 non-embedding parameters
    assert m.params - 256000 * 3072 == 7_751_248_896


def _gemm_flops(gemms):
    return sum(2.0 * m * n * k * c for m, n, k, c in gemms)


def test_decoder_linear_gemms_are_the_shapes_it_runs():
    m, s = load_models().get("llama-2-7b"), _setup("bf16")
    # Llama-2-7B: hidden 4096, 32 heads of 128, MHA, SwiGLU ffn 11008, vocab 32000, 32 layers
    dec, pre = _group(m.decode_work(s, 8), "linear layers"), _group(m.prefill_work(s, 4, 512), "linear layers")
    assert sorted(dec.gemms) == sorted([(8, 3 * 4096, 4096, 32), (8, 4096, 4096, 32), (8, 2 * 11008, 4096, 32),
                                        (8, 4096, 11008, 32), (8, 32000, 4096, 1)])  # decode: M = batch
    assert {g[0] for g in pre.gemms} == {4 * 512, 4}  # prefill: M = batch x prompt; the LM head only the last token
    # the shapes carry exactly the group's FLOPs
    assert _gemm_flops(dec.gemms) == pytest.approx(dec.flops) and _gemm_flops(pre.gemms) == pytest.approx(pre.flops)


def test_training_gemms_add_both_backward_transposes():
    m, s = load_models().get("gpt2-124m"), _setup("bf16")
    for ckpt, fwd_equiv in ((False, 3), (True, 4)):
        g = _group(m.train_work(s, 8, 1024, ckpt), "linear layers (fwd+bwd)")
        assert _gemm_flops(g.gemms) == pytest.approx(g.flops)  # 2 + 4 (+ 2) x tokens x matmul params
        # GPT-2 QKV: M = 8 x 1024, N = 3 x 768, K = 768; dX: (8192, 768, 2304); dW: (768, 2304, 8192)
        assert {(8192, 2304, 768), (8192, 768, 2304), (768, 2304, 8192)} <= {x[:3] for x in g.gemms}
        assert _gemm_flops(g.gemms) == pytest.approx(fwd_equiv / 3 * _gemm_flops(
            _group(m.train_work(s, 8, 1024, False), "linear layers (fwd+bwd)").gemms))


def test_mixture_of_experts_gemms_split_the_rows_over_the_experts_read():
    m, s = load_models().get("mixtral-8x7b"), _setup("bf16")
    g = _group(m.prefill_work(s, 1, 4096), "linear layers")
    # 4096 tokens x top-2 of 8 experts: all 8 read, 4096 x 2 / 8 = 1024 rows each
    assert (1024, 2 * 14336, 4096, 32 * 8) in g.gemms
    assert _gemm_flops(g.gemms) == pytest.approx(g.flops, rel=1e-3)


def test_generic_and_traced_profiles_leave_their_shapes_unknown():
    m = next(x for x in load_models().models if x.kind == "generic")
    assert all(not g.gemms for g in m.forward_work(_setup("bf16"), 2, m.default_input_size))


def test_a_chunked_prefill_reads_each_earlier_key_and_value_once_per_chunk():
    """Llama-3-8B, a 4096-token prompt in 512-token chunks (llama.cpp's n_ubatch): chunk j reads the 512 j keys cached
    before it once, for all its tokens (one KQ GEMM per head), not once per token. Keys read: 512 x (0 + 1 + ... + 7)
    = 14,336; each holds K and V for 32 layers x 1024 (8 KV heads x 128) in fp16: 14,336 x 2 x 32 x 1024 x 2 B
    = 1.879 GB. With sdpa (no score matrices) that is all a chunked attention adds to one whole-prompt pass."""
    from dataclasses import replace
    m = load_models().get("llama-3-8b")
    s = _setup("fp16")
    chunked = _group(m.prefill_work(replace(s, prefill_chunk=512), 1, 4096), "attention")
    whole = _group(m.prefill_work(replace(s, prefill_chunk=4096), 1, 4096), "attention")
    assert (chunked.bytes - whole.bytes) / 1e9 == pytest.approx(14_336 * 2 * 32 * 1024 * 2 / 1e9, rel=1e-9)


def _bert_large():
    from planner.validation.measured import validation_models
    return validation_models().get("bert-large-squad")


def test_bert_large_eager_training_traffic_of_one_layer_by_hand():
    """One BERT-large layer (hidden 1024, 16 heads, GELU 4096, biases, LayerNorm, dropout 0.1) fine-tuned at seq 384
    in eager PyTorch, fp16, per token, as NVIDIA DeepLearningExamples' run_squad.py runs it (each op its own kernel;
    its separate Q, K, V projections aside, see tests/profiling/test_profiler_references.py for the traced check)."""
    from dataclasses import replace
    m = _bert_large()
    h, f, heads, S, b = 1024, 4096, 16, 384, 2
    # forward, elements read+written per token: QKV in h, out 3h; O in h, out h; up in h, out f; down in f, out h;
    # two LayerNorms (h in, h out), two residual adds (2h in, h out), GELU (f in, f out)
    gemm_io = (h + 3 * h) + (h + h) + (h + f) + (f + h)
    forward = gemm_io + 2 * 2 * h + 2 * 3 * h + 2 * f
    assert forward == 34_816 and m.eager_act_traffic_elems == 24 * forward
    # backward: the matmuls' dX and dW GEMMs (2x their forward I/O), LayerNorm backward (dY, x in, dx out) x 2,
    # the residual branches' gradient sums (2h in, h out) x 2, q/k/v gradients merged (3h in, 3h out),
    # gelu_backward (dY, x in, dx out), bias gradients reading dY (QKV 3h, O h, up f, down h)
    backward = 2 * gemm_io + 2 * 3 * h + 2 * 3 * h + 6 * h + 3 * f + (3 * h + h + f + h)
    assert backward == 72_704 and m.eager_backward_traffic_elems == 24 * backward
    # dropout after O and after down: forward reads x (2 B), writes y (2 B) and a 1-byte mask; backward reads the
    # gradient and the mask, writes the gradient: 10 bytes per element and site
    dropout = 2 * h * 10
    s = _setup("fp16", "manual")
    elem = _group(m.train_work(s, 1, S, False), "elementwise")
    logits = 3 * S * 2 * 4  # the span head's 2 logits per token, fp32: written, softmax, gradient
    assert elem.bytes == S * 24 * ((forward + backward) * b + dropout) + logits
    assert "dropout" in elem.formula and "eager" in elem.formula
    # attention, per layer and sequence: 16 x 384 x 384 scores; forward QK^T write, scale r/w, mask add r/w,
    # softmax r/w, AV read = 8 passes, backward 9; dropout on the probabilities 10 bytes per score;
    # Q, K, V, O read/written 3x (forward + 2x backward); the output's head-layout copy h forward, 2 copies backward
    scores = heads * S * S
    attn = _attention(m.train_work(s, 1, S, False))
    assert attn.bytes == 24 * (scores * ((8 + 9) * b + 10) + S * (3 * 4 * h * b + (2 + 4) * h * b))
    # a runtime that fuses elementwise chains: 3 x the fused forward, scores 4 + 7 passes, no dropout kernels
    fused = replace(s, fused_elementwise=True)
    assert _group(m.train_work(fused, 1, S, False), "elementwise").bytes == 3 * S * 24 * forward * b + logits
    assert _attention(m.train_work(fused, 1, S, False)).bytes == 24 * (scores * (4 + 7) * b
                                                                               + S * 3 * 4 * h * b)


def test_swiglu_runs_as_two_kernels_in_eager_pytorch():
    """HF LLaMA's MLP, act_fn(gate) * up, is a silu kernel (f in, f out) and a product (2f in, f out): 2f more per
    token and layer than one fused silu-and-mul kernel (3f)."""
    m = load_models().get("llama-2-7b")
    assert m.eager_act_traffic_elems - m.act_traffic_elems == 32 * 2 * 11008


def test_a_config_with_dropout_trains_with_dropout_kernels():
    """gpt2's config.json sets resid_pdrop, attn_pdrop and embd_pdrop to 0.1; LLaMA configs set attention_dropout 0.0
    (no kernel: PyTorch skips dropout at p = 0)."""
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
            "vocab_size": 50257, "resid_pdrop": 0.1, "attn_pdrop": 0.1, "embd_pdrop": 0.1}
    assert parse_model_text(json.dumps(gpt2), "gpt2.json", "upload").dropout
    llama = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": 4096, "attention_dropout": 0.0}
    assert not parse_model_text(json.dumps(llama), "config.json", "upload").dropout


def test_a_runtime_that_keeps_the_whole_lm_head_reads_it_all_on_every_tensor_parallel_gpu():
    """Llama-2-7B over 8 GPUs (32 layers of 4 x 4096^2 + 3 x 4096 x 11008 matmul weights, LM head 32000 x 4096),
    fp16: a split LM head puts 1/8 of it on each GPU; gpt-fast's tensor parallelism (tp.py) leaves it whole."""
    from dataclasses import replace
    from planner.engine.memory import breakdown
    from planner.inputs.jobs import Generate
    m = load_models().get("llama-2-7b")
    layers, head = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008), 32000 * 4096
    split, whole = replace(_setup("fp16"), tp=8), replace(_setup("fp16"), tp=8, lm_head_split=False)
    assert _group(m.decode_work(split, 1), "linear layers").bytes == pytest.approx((layers + head) * 2 / 8)
    lin = _group(m.decode_work(whole, 1), "linear layers")
    assert lin.bytes == pytest.approx(layers * 2 / 8 + head * 2)
    assert lin.flops == pytest.approx(2 * layers / 8 + 2 * head)
    assert (1, 32000, 4096, 1) in lin.gemms  # the head's GEMM keeps its whole vocabulary
    extra = breakdown(m, Generate(1, 1, 2), whole, 1, 0.0).get("whole LM head on each GPU")
    assert extra == pytest.approx(head * 2 * 7 / 8 / 1e9)
    assert breakdown(m, Generate(1, 1, 2), split, 1, 0.0).get("whole LM head on each GPU") == 0


def test_a_cache_appended_by_concatenation_is_copied_whole_every_decode_step():
    """Hugging Face's DynamicCache appends with torch.cat: each step reads the cached K and V once more and writes them
    once, on top of the attention's own read. Llama-2-7B, batch 4, fp16: per cached token 2 (K, V) x 32 layers x 4096
    x 2 B = 0.524 MB per sequence; the copy adds 2 x 4 x 0.524 MB = 4.19 MB per cached position per step."""
    from dataclasses import replace
    m = load_models().get("llama-2-7b")
    s = _setup("fp16")
    in_place = _group(m.decode_work(s, 4), "attention")
    concat = _group(m.decode_work(replace(s, kv_concat=True), 4), "attention")
    per_token = 2 * 32 * 4096 * 2
    assert in_place.bytes_per_pos == pytest.approx(4 * per_token)  # sdpa: the cache read alone
    assert concat.bytes_per_pos - in_place.bytes_per_pos == pytest.approx(2 * 4 * per_token)
    assert concat.bytes == in_place.bytes and "torch.cat" in concat.formula


def test_only_runtimes_that_append_by_torch_cat_copy_the_cache():
    from planner.inputs.runtimes import load_runtimes
    concat = {r.id for r in load_runtimes().runtimes if r.kv_cache_concat}
    assert concat == {"pytorch-eager", "deepspeed-inference"}
    assert all("torch.cat" in r.kv_cache_concat_source for r in load_runtimes().runtimes if r.kv_cache_concat)

def test_a_json_surrogate_in_a_config_is_refused_naming_the_field():
    config = ('{"model_type": "llama", "_name_or_path": "evil\\ud800", "hidden_size": 64, "num_hidden_layers": 2, '
              '"num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64}')
    with pytest.raises(DataFileError) as err:
        parse_model_text(config, "config.json", "uploaded config.json")
    assert err.value.field == "_name_or_path" and "U+D800" in err.value.problem
    str(err.value).encode("utf-8")


@pytest.mark.parametrize("escaped", ["\\e", "\\a", "\\0", "\\L"])
def test_a_yaml_profile_whose_name_holds_a_control_character_is_refused_naming_the_field(escaped):
    text = json.dumps({"id": "x", "kind": "decoder", "name": "n", "layers": 1}).replace('"n"', f'"a{escaped}b"')
    with pytest.raises(DataFileError) as err:
        parse_model_text(text, "model.yaml", "uploaded model.yaml")  # JSON is YAML: the escapes are YAML's here
    assert err.value.field == "name" and "U+" in err.value.problem
