"""Precision rules data: loading, lookups, validation errors."""

import pytest

from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes
from planner.base.schema import DataFileError, UnknownNameError


def test_weight_bytes_follow_the_formats():
    r = load_rules()
    assert [r.precision(p).weight_bytes for p in ("fp32", "fp16", "bf16", "fp8", "int8")] == [4, 2, 2, 1, 1]
    assert r.precision("int4").weight_bytes == pytest.approx((4 + 16 / 128) / 8)  # 4 bits + one fp16 scale per 128


def test_library_formats_weigh_their_blocks_and_scales():
    r = load_rules()
    # bitsandbytes NF4: blocks of 64 with an fp32 absmax; double quantization stores the absmax in 8 bits with an fp32
    # scale per 256 of them (QLoRA: 8/64 + 32/(64 x 256) = 0.127 bits); GPTQ g128: an fp16 scale and a 4-bit zero
    assert r.precision("bnb-nf4").weight_bytes == pytest.approx((4 + 32 / 64) / 8)
    assert r.precision("bnb-nf4-dq").weight_bytes == pytest.approx((4 + 8 / 64 + 32 / (64 * 256)) / 8, rel=1e-4)
    assert r.precision("gptq-exllama").weight_bytes == pytest.approx((4 + 16 / 128 + 4 / 128) / 8)
    assert r.precision("bnb-int8").weight_bytes == 1 and r.precision("bnb-int8").compute_path == "int8"
    for name in ("bnb-nf4", "bnb-nf4-dq", "bnb-int8", "gptq-exllama"):  # lm_head and embeddings stay 16-bit
        p = r.precision(name)
        assert p.quantized_weights == "layers" and p.outside_weight_bytes == 2 and p.runtimes == ("pytorch-eager",)


def test_exllama_gemv_cost_is_its_instruction_count_at_the_guides_throughputs():
    """dot_product_8 per 8 weights: 7 shifts, 7 masks, 8 subtracts (64/clk/SM), 8 int-to-half conversions (16/clk/SM:
    4 integer slots each), 4 packs, 5 half2 multiply-adds (128/clk/SM: half a slot); rows below
    matmul_recons_thd = 8."""
    k = load_rules().precision("gptq-exllama").kernel
    assert k.gemv_ops_per_weight_token == pytest.approx((7 + 7 + 8 + 8 * 4 + 4 + 5 / 2) / 8, rel=0.01)
    assert k.gemv_max_tokens == 8 - 1 and k.unpack == "buffer"


def test_bitsandbytes_host_costs_follow_the_cited_timings():
    r = load_rules()
    # Optimum README @87fcf9f0, Llama-2-13B on an A100, batch 1: fp16 36.958 ms and bnb 4-bit 52.00 ms per token,
    # prefills of 96.38 and 139.17 ms spread over 512 tokens; 280 linear calls per token; 1,212.5 eager kernels
    fp16, bnb = 36.958 - 96.38 / 512, 52.00 - 139.17 / 512
    per_kernel = fp16 / (40 * 12 * 2.5 + 5 * 2.5)
    nf4 = r.precision("bnb-nf4").kernel.host_kernels_per_call
    assert nf4 == pytest.approx((bnb - fp16) / 280 / per_kernel, rel=0.01)
    # double quantization: two more dispatches from Python (dequantize_blockwise, the offset add)
    dq = r.precision("bnb-nf4-dq").kernel
    assert dq.launches_per_call == 2 and dq.host_kernels_per_call == pytest.approx(nf4 + 2)
    # bitsandbytes issue #605 (RTX 4090): Linear8bitLt 37.63 us, Linear4bit 27.66 us, nn.Linear 14.30 us per call
    int8 = r.precision("bnb-int8").kernel
    assert int8.host_kernels_per_call == pytest.approx((37.63 - 14.30) / (27.66 - 14.30) * (nf4 + 2), rel=0.01)


@pytest.mark.parametrize("block, field", [
    ("{gemv_max_tokens: 1, unpack: buffer, launches_per_call: 0, host_kernels_per_call: 0, source: s}",
     "gemv_ops_per_weight_token"),
    ("{gemv_max_tokens: 0, unpack: fused-ish, launches_per_call: 0, host_kernels_per_call: 0, source: s}", "unpack"),
    ("{gemv_max_tokens: 0, unpack: fused, launches_per_call: 0, host_kernels_per_call: 0}", "source"),
    ("{gemv_max_tokens: 0, unpack: fused, launches_per_call: -1, host_kernels_per_call: 0, source: s}",
     "launches_per_call"),
    ("{gemv_max_tokens: 1, gemv_ops_per_weight_token: 4, gemv_pipelined: yes-ish, unpack: fused, "
     "launches_per_call: 0, host_kernels_per_call: 0, source: s}", "gemv_pipelined"),
    *((f"{{gemv_max_tokens: 0, unpack: fused, launches_per_call: 0, host_kernels_per_call: 0, {bad}, source: s}}",
       bad.split(":")[0]) for bad in ("m_tile: -16", "m_tile: 4096", "mma_fraction: 0", "mma_fraction: 1.5",
                                      "split_k: 0", "split_k: 2.5", "accumulate: fp8", "mlp_gemv_on: autoawq")),
])
def test_a_bad_kernel_block_names_its_field(tmp_path, block, field):
    path = _one_precision_file(tmp_path, "{id: q, compute_path: fp16, weight_bytes: 0.5, act_bytes: 2, "
                                         f"dequant_ops_per_weight: 3, kernel: {block}, note: n, source: s}}")
    with pytest.raises(DataFileError) as exc:
        load_rules(path)
    assert exc.value.field == field and "kernel" in exc.value.record


def _one_precision_file(tmp_path, record: str):
    """A precisions file of one precision `record` (flow YAML) beside the least the loader needs."""
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nprecisions:\n"
                    f"  - {record}\n"
                    "kv_dtypes: [{id: fp16, bytes: 2, source: s}]\n"
                    "attention_backends: [{id: manual, name: n, min_sm: null, max_sm: null, max_head_dim: null, "
                    "dtypes: [fp32], scores_materialized: true, speed_vs_fa2: 1, speed_source: s, amd: true, "
                    "source: s}]\n")
    return path


def test_default_kv_dtype_is_the_activation_dtype():
    r = load_rules()
    assert r.default_kv_dtype(r.precision("fp32")).id == "fp32"
    assert r.default_kv_dtype(r.precision("bf16")).id == "bf16"
    assert r.default_kv_dtype(r.precision("int4")).id == "fp16"


def test_unknown_precision_suggests():
    with pytest.raises(UnknownNameError, match="did you mean bf16"):
        load_rules().precision("bf61")


def test_a_missing_section_is_named(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nprecisions:\n"
                    "  - {id: fp32, compute_path: fp32, weight_bytes: 4, act_bytes: 4,"
                    " note: n, source: s}\nkv_dtypes: []\n")
    with pytest.raises(DataFileError, match="kv_dtypes"):
        load_rules(path)


def test_a_bad_compute_path_is_named(tmp_path):
    path = _one_precision_file(tmp_path, "{id: fp5, compute_path: fp5, weight_bytes: 1, act_bytes: 2, note: n, "
                                         "source: s}")
    with pytest.raises(DataFileError, match="'fp5'.*compute_path"):
        load_rules(path)


# ---------------------------------------------------------------- attention backends


def test_sdpa_picks_flash_then_memory_efficient_then_math_and_auto_is_sdpa():
    r = load_rules()
    sdpa = r.attention("sdpa")
    # PyTorch docs, scaled_dot_product_attention: FlashAttention-2, Memory-Efficient Attention, the C++ math version
    assert [k.id for k in sdpa.picks] == ["sdpa-flash", "sdpa-efficient", "sdpa-math"]
    assert r.attention("auto") is sdpa and r.attention("AUTO") is sdpa
    assert sdpa.min_pytorch == (2, 0)  # SDPA arrived in PyTorch 2.0


def test_old_share_link_ids_still_name_backends():
    r = load_rules()
    assert {r.attention(i).id for i in ("sdpa", "flash-attn-2", "manual")} == {"sdpa", "flash-attn-2", "manual"}


def test_kernel_ranges_follow_their_sources():
    r = load_rules()
    # FlashAttention-2 README: Ampere, Ada or Hopper, fp16/bf16, head dims up to 256; 2.7.3+ also on SM 10.0 (B200,
    # GB200: TE's version_required_blackwell, flash-attention issue #1589)
    fa2 = r.attention("flash-attn-2")
    assert (fa2.min_sm, fa2.max_sm, fa2.max_head_dim, fa2.dtypes) == ((8, 0), (10, 0), 256, ("fp16", "bf16"))
    # FlashAttention 1.x README: Turing to Hopper, head dims up to 128
    fa1 = r.attention("flash-attn")
    assert (fa1.min_sm, fa1.max_sm, fa1.max_head_dim) == ((7, 5), (9, 0), 128)
    # FlashAttention-3: H100/H800 only, fp8 forward too, no ROCm build
    fa3 = r.attention("flash-attn-3")
    assert fa3.min_sm == fa3.max_sm == (9, 0) and "fp8" in fa3.dtypes and not fa3.amd
    # sdp_utils.cpp: flash [sm80, sm121] fp16/bf16, head dim <= 256; memory-efficient from sm50, fp32 too
    flash, eff = r.attention("sdpa-flash"), r.attention("sdpa-efficient")
    assert (flash.min_sm, flash.max_sm, flash.max_head_dim) == ((8, 0), (12, 1), 256) and "fp32" not in flash.dtypes
    assert eff.min_sm == (5, 0) and "fp32" in eff.dtypes and eff.max_head_dim is None


def test_speed_factors_are_the_geometric_means_of_the_cited_ranges():
    r = load_rules()
    # FA2 paper: FA2 is 1.7-3.0x faster than FlashAttention, 1.3-2.5x faster than FlashAttention in Triton
    assert r.attention("flash-attn").speed_vs_fa2 == pytest.approx(1 / (1.7 * 3.0) ** 0.5, abs=0.005)
    assert r.attention("triton").speed_vs_fa2 == pytest.approx(1 / (1.3 * 2.5) ** 0.5, abs=0.006)
    # FA3 paper: 1.5-2.0x faster than FA2 on H100 (fp16)
    assert r.attention("flash-attn-3").speed_vs_fa2 == pytest.approx((1.5 * 2.0) ** 0.5, abs=0.005)
    # xformers#1074: the CUTLASS op is ~2x slower than the flash op
    assert r.attention("xformers-cutlass").speed_vs_fa2 == r.attention("sdpa-efficient").speed_vs_fa2 == 0.5


def test_only_unfused_backends_write_the_score_matrix():
    r = load_rules()
    kernels = [b for b in r.attention_backends if not b.is_selector]
    assert {b.id for b in kernels if b.scores_materialized} == {"sdpa-math", "manual"}


def test_an_unresolved_selector_stands_for_its_first_pick():
    r = load_rules()
    xf = r.attention("xformers")  # unpinned: its newest release (0.0.35), whose flash op is PyTorch's kernel
    assert xf.picks[0].id == "sdpa-flash" and not xf.scores_materialized and xf.speed_vs_fa2 == 1.0


def test_a_selector_picks_by_the_release_built_for_the_pinned_pytorch():
    xf = load_rules().attention("xformers")
    assert xf.min_pytorch == (1, 13)  # its oldest release, 0.0.16
    assert xf.release_for((2, 7, 0)).version == "0.0.29.post2"  # 0.0.31 needs 2.7.1
    assert xf.release_for((2, 7, 1)).version == "0.0.31"
    assert xf.release_for(None).version == xf.releases[-1].version
    cutlass = {r.version: next(k for k in r.picks if k.id == "xformers-cutlass") for r in xf.releases}
    assert (cutlass["0.0.21"].min_sm, cutlass["0.0.21"].max_sm) == ((6, 0), None)
    assert (cutlass["0.0.33"].min_sm, cutlass["0.0.33"].max_sm) == ((7, 5), (9, 0))


@pytest.mark.parametrize("release, problem", [
    ("{version: a, pytorch: '2.6', picks: [k], sm_ranges: {other: {max_sm: '9.0'}}, source: s}", "sm_ranges"),
    ("{version: a, pytorch: 'two', picks: [k], source: s}", "pytorch"),
    ("{version: a, pytorch: '2.6', picks: [nope], source: s}", "picks"),
])
def test_a_selector_release_is_checked_by_field(tmp_path, release, problem):
    path = _backends_file(tmp_path, ["{id: k, name: k, source: s, dtypes: [fp16], scores_materialized: false, "
                                     "speed_vs_fa2: 1, speed_source: s, amd: true}",
                                     "{id: x, name: x, source: s, releases: [" + release + "]}"])
    with pytest.raises(DataFileError) as err:
        load_rules(path)
    assert err.value.field == problem


def test_selector_releases_go_oldest_first(tmp_path):
    newer, older = ("{version: " + v + ", pytorch: '" + pt + "', picks: [k], source: s}"
                    for v, pt in (("b", "2.6"), ("a", "2.5")))
    path = _backends_file(tmp_path, ["{id: k, name: k, source: s, dtypes: [fp16], scores_materialized: false, "
                                     "speed_vs_fa2: 1, speed_source: s, amd: true}",
                                     f"{{id: x, name: x, source: s, releases: [{newer}, {older}]}}"])
    with pytest.raises(DataFileError, match="oldest first"):
        load_rules(path)


def _backends_file(tmp_path, backends):
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nprecisions:\n  - {id: fp16, compute_path: fp16, "
                    "weight_bytes: 2, act_bytes: 2, note: n, source: s}\nkv_dtypes: [{id: fp16, bytes: 2, source: s}]\n"
                    "attention_backends:\n" + "".join(f"  - {b}\n" for b in backends))
    return path


KERNEL = ("{id: k, name: n, min_sm: '8.0', max_sm: '9.0', max_head_dim: 256, dtypes: [fp16], "
          "scores_materialized: false, speed_vs_fa2: 1, speed_source: s, amd: false, source: s}")


@pytest.mark.parametrize("bad, field", [
    ("{id: sel, name: n, picks: [nope], source: s}", "picks"),
    (KERNEL.replace("max_sm: '9.0'", "max_sm: '7.0'"), "max_sm"),
    (KERNEL.replace("dtypes: [fp16]", "dtypes: [fp4]"), "dtypes"),
    (KERNEL.replace("speed_vs_fa2: 1,", "speed_vs_fa2: 0,"), "speed_vs_fa2"),
    (KERNEL.replace("source: s}", "source: s, min_pytorch: two}"), "min_pytorch"),
])
def test_bad_attention_records_are_named(tmp_path, bad, field):
    with pytest.raises(DataFileError) as err:
        load_rules(_backends_file(tmp_path, [KERNEL.replace("id: k", "id: ok"), bad]))
    assert err.value.field == field


def test_an_alias_may_not_shadow_another_backend(tmp_path):
    with pytest.raises(DataFileError, match="duplicate"):
        load_rules(_backends_file(tmp_path, [KERNEL, "{id: sel, name: n, aliases: [k], picks: [k], source: s}"]))


# ---------------------------------------------------------------- GGUF formats (llama.cpp)

@pytest.mark.parametrize("pid, block_bytes, block_weights", [
    ("q4_0", 2 + 32 // 2, 32),                     # block_q4_0: fp16 d + 16 bytes of nibbles
    ("q8_0", 2 + 32, 32),                          # block_q8_0: fp16 d + 32 int8
    ("q5_0", 2 + 4 + 32 // 2, 32),                 # block_q5_0: fp16 d + 4 bytes of fifth bits + 16 of nibbles
    ("q6_k", 256 // 2 + 256 // 4 + 256 // 16 + 2, 256),  # block_q6_K: ql, qh, int8 scales, fp16 d = 210 bytes
    ("q5_1", 2 + 2 + 4 + 32 // 2, 32),             # block_q5_1: fp16 d and m + 4 bytes of fifth bits + 16 of nibbles
    ("iq4_nl", 2 + 32 // 2, 32),                   # block_iq4_nl: fp16 d + 16 bytes of code-book nibbles
    ("iq4_xs", 2 + 2 + 256 // 64 + 256 // 2, 256),  # block_iq4_xs: d, scales_h, scales_l[4], qs[128] = 136 bytes
    ("iq3_xxs", 2 + 3 * 256 // 8, 256),            # block_iq3_xxs: d + qs[96] = 98 bytes (3.0625 bpw)
    ("iq3_s", 2 + 256 // 4 + 256 // 32 + 256 // 8 + 256 // 64, 256),  # d, qs, qh, signs, scales = 110 bytes
    ("iq2_xxs", 2 + 2 * 256 // 8, 256),            # block_iq2_xxs: d + uint16 qs[32] = 66 bytes (2.0625 bpw)
    ("iq2_xs", 2 + 2 * 256 // 8 + 256 // 32, 256),  # block_iq2_xs: d + uint16 qs[32] + scales[8] = 74 bytes
    ("iq2_s", 2 + 256 // 4 + 256 // 32 + 256 // 32, 256),  # block_iq2_s: d, qs[64], qh[8], scales[8] = 82 bytes
    ("iq1_s", 2 + 256 // 8 + 2 * 256 // 32, 256),  # block_iq1_s: d + qs[32] + uint16 qh[8] = 50 bytes (1.5625 bpw)
])
def test_gguf_bytes_per_weight_are_their_block_layouts(pid, block_bytes, block_weights):
    assert load_rules().precision(pid).weight_bytes == pytest.approx(block_bytes / block_weights)


def test_q4_k_m_is_the_whole_file_average_and_only_llama_cpp_reads_gguf():
    q = load_rules().precision("Q4_K_M")  # as users write it
    # llama-bench: Meta-Llama-3-8B Q4_K_M is 4.58 GiB for 8.03e9 parameters
    assert q.weight_bytes == pytest.approx(4.58 * 2**30 / 8.03e9, rel=0.005)
    assert q.quantized_weights == "all" and q.outside_weight_bytes == q.weight_bytes  # embeddings quantized too
    for pid in ("q4_0", "q4_k_m", "q5_0", "q5_k_m", "q6_k", "q8_0", "q5_1", "q5_k_s", "q3_k_s", "q3_k_m", "q3_k_l",
                "q2_k", "iq4_nl", "iq4_xs", "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s"):
        assert load_rules().precision(pid).runtimes == ("llama.cpp",)
    assert load_rules().precision("int4").runtimes == ()


def test_q5_k_m_is_its_mix_of_q5_k_and_q6_k_blocks_over_a_whole_llama_3_8b_file():
    """By hand, the k-quant mix rule (Q6_K for half of the layers' wv and w2 and the output, Q5_K elsewhere): first
    checked on Q4_K_M, whose whole file llama-bench reports at 4.58 GiB, then applied to Q5_K (176-byte blocks of
    256)."""
    layers, wv, w2 = 32, 4096 * 1024, 14336 * 4096
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    six = 16 * (wv + w2)  # use_more_bits: layers 0-3, 28-31 and every third between: 16 of 32
    rest, head, embed, norms = layers * per_layer - six, 128256 * 4096, 128256 * 4096, (2 * layers + 1) * 4096
    q6, q5, q4 = 210 * 8 / 256, 176 * 8 / 256, 144 * 8 / 256  # block_q6_K, block_q5_K, block_q4_K bits per weight
    params = layers * per_layer + head + embed + norms
    bits = lambda base: six * q6 + rest * base + head * q6 + embed * base + norms * 32  # noqa: E731
    assert bits(q4) / 8 / 2**30 == pytest.approx(4.58, rel=0.005)  # the rule reproduces the measured Q4_K_M file
    assert load_rules().precision("q5_k_m").weight_bytes == pytest.approx(bits(q5) / 8 / params, rel=0.005)


# Meta-Llama-3-8B's tensors (config.json: 32 layers, hidden 4096, 8 KV heads of 128, MLP 14336, vocabulary 128256)
L3_LAYERS, L3_D, L3_KV, L3_FF, L3_VOCAB = 32, 4096, 1024, 14336, 128256
K_BLOCK_BITS = {"q2_K": 84 * 8 / 256, "q3_K": 110 * 8 / 256, "q4_K": 144 * 8 / 256, "q5_K": 176 * 8 / 256,
                "q6_K": 210 * 8 / 256}  # block_q2_K 16+64+4, q3_K 32+64+12+2, q4_K 4+12+128, q5_K 4+12+32+128 bytes


def _llama3_8b_file_bits(base: str, attn_v, ffn_down, attn_output: str) -> tuple[float, float]:
    """(bits, parameters) of a Meta-Llama-3-8B GGUF file whose tensors take `base` except attn_v and ffn_down (by
    layer: functions of the layer index) and attn_output; the output in Q6_K, norms in fp32 (llama-quant.cpp)."""
    b = K_BLOCK_BITS
    bits = 0.0
    for i in range(L3_LAYERS):
        bits += (L3_D * L3_D + L3_D * L3_KV + 2 * L3_D * L3_FF) * b[base]  # wq, wk, gate, up
        bits += L3_D * L3_KV * b[attn_v(i)] + L3_FF * L3_D * b[ffn_down(i)] + L3_D * L3_D * b[attn_output]
    norms = (2 * L3_LAYERS + 1) * L3_D
    bits += L3_VOCAB * L3_D * (b["q6_K"] + b[base]) + norms * 32  # output in Q6_K, token embedding in the base type
    params = L3_LAYERS * (2 * L3_D * L3_D + 2 * L3_D * L3_KV + 3 * L3_D * L3_FF) + 2 * L3_VOCAB * L3_D + norms
    return bits, params


@pytest.mark.parametrize("pid, base, attn_v, ffn_down, attn_output", [
    ("q5_k_s", "q5_K", lambda i: "q5_K", lambda i: "q5_K", "q5_K"),  # no per-tensor rule: all Q5_K but the output
    ("q3_k_s", "q3_K", lambda i: "q3_K", lambda i: "q3_K", "q3_K"),
    # Q3_K_M: attn_v Q5_K in its first 2 layers, Q4_K after; ffn_down Q5_K below n_layer/16 = 2, Q4_K after; wo Q4_K
    ("q3_k_m", "q3_K", lambda i: "q5_K" if i < 2 else "q4_K", lambda i: "q5_K" if i < 2 else "q4_K", "q4_K"),
    ("q3_k_l", "q3_K", lambda i: "q5_K", lambda i: "q5_K", "q5_K"),  # Q3_K_L: attn_v, ffn_down, wo in Q5_K
    ("q2_k", "q2_K", lambda i: "q4_K", lambda i: "q3_K", "q3_K"),  # Q2_K: attn_v Q4_K (GQA 32/8 = 4), down/wo Q3_K
])
def test_k_quant_file_types_are_their_mixes_over_a_whole_llama_3_8b_file(pid, base, attn_v, ffn_down, attn_output):
    """The llama.cpp file types' per-tensor rules (src/llama-quant.cpp), by hand over Llama-3-8B's tensors, checked
    first on Q4_K_M (Q6_K for attn_v and ffn_down in 16 of 32 layers) against its measured 4.58 GiB file."""
    more = lambda i: i < 4 or i >= 28 or (i - 4) % 3 == 2  # noqa: E731 - use_more_bits at 32 layers
    q4_bits, _ = _llama3_8b_file_bits("q4_K", lambda i: "q6_K" if more(i) else "q4_K",
                                      lambda i: "q6_K" if more(i) else "q4_K", "q4_K")
    assert q4_bits / 8 / 2**30 == pytest.approx(4.58, rel=0.005)
    bits, params = _llama3_8b_file_bits(base, attn_v, ffn_down, attn_output)
    assert load_rules().precision(pid).weight_bytes == pytest.approx(bits / 8 / params, rel=0.001)


def test_file_type_mixes_order_as_their_names_say():
    """S < M < L within Q3_K; Q2_K's mix sits above its own 2.625-bit block; Q5_K_S below Q5_K_M."""
    r = load_rules()
    w = lambda pid: r.precision(pid).weight_bytes  # noqa: E731
    assert w("q3_k_s") < w("q3_k_m") < w("q3_k_l") < w("q4_k_m")
    assert 84 / 256 < w("q2_k") < w("q3_k_s")
    assert w("q5_k_s") < w("q5_k_m")


def test_flashattention_2s_fraction_of_peak_makes_every_fused_kernel_absolute():
    """FlashAttention-2 reaches 0.60 of peak on SM 8.x (50-73 %, Dao 2023) and 0.35 on SM 9.x (FlashAttention-3
    paper); a fused kernel runs at that times its speed relative to it, where the fraction is published. Kernels that
    materialize the scores run their matmuls at the GEMM ceiling: no fraction."""
    r = load_rules()
    fa2, efficient, manual = r.attention("flash-attn-2"), r.attention("sdpa-efficient"), r.attention("manual")
    assert dict(fa2.reference_fraction) == {8: 0.60, 9: 0.35} and "2307.08691" in fa2.reference_source
    assert fa2.peak_fraction_on((9, 0)) == 0.35 and fa2.peak_fraction_on((8, 6)) == 0.60
    assert efficient.peak_fraction_on((8, 0)) == pytest.approx(0.60 * 0.5)  # half FlashAttention-2's speed
    assert fa2.peak_fraction_on((7, 0)) == 0 and fa2.peak_fraction_on(None) == 0  # Volta, AMD: nothing published
    assert manual.peak_fractions == ()


def test_only_the_reference_kernel_gives_a_fraction_of_peak(tmp_path):
    good = KERNEL.replace("source: s}", "fraction_of_peak: {sm8: 0.6}, fraction_source: s, source: s}")
    other = KERNEL.replace("id: k", "id: half").replace("speed_vs_fa2: 1,", "speed_vs_fa2: 0.5,")
    assert load_rules(_backends_file(tmp_path, [good, other])).attention("half").peak_fraction_on((8, 0)) == 0.3
    bad = other.replace("source: s}", "fraction_of_peak: {sm8: 0.6}, fraction_source: s, source: s}")
    for name, backends, field in (("two", [good, bad], "fraction_of_peak"),
                                  ("key", [good.replace("sm8:", "ampere:")], "ampere")):
        (tmp_path / name).mkdir()  # a file of its own: load_rules caches by path
        with pytest.raises(DataFileError) as err:
            load_rules(_backends_file(tmp_path / name, backends))
        assert err.value.field == field


def test_the_decode_attention_latency_is_the_intercept_of_the_cited_kernel_timings():
    """FlashAttention-2's paged decode on an H100 (microsoft/onnxruntime pull request #21414, nvbench GPU time):
    21.135, 22.958, 28.780 and 43.563 us for 10, 18, 34 and 66 MiB moved. A least-squares line time = a + bytes / b
    meets zero bytes at a; b is a rate below the 3.35 TB/s datasheet."""
    moved = [m * 2**20 for m in (10, 18, 34, 66)]
    us = [21.135, 22.958, 28.780, 43.563]
    mx, my = sum(moved) / 4, sum(us) / 4
    slope = sum((x - mx) * (y - my) for x, y in zip(moved, us)) / sum((x - mx) ** 2 for x in moved)
    fa2 = load_rules().attention("flash-attn-2")
    assert fa2.decode_latency_us == pytest.approx(my - slope * mx, abs=0.05)
    assert 0.5 < 1e6 / slope / 3.35e12 < 1.0  # the rate it implies: a fraction of the datasheet, not above it
    assert "21414" in fa2.decode_latency_source


def test_every_attention_backend_carries_the_references_decode_latency():
    r = load_rules()
    latency = r.attention("flash-attn-2").decode_latency_us
    for backend in ("sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-math", "manual", "xformers", "flash-attn"):
        assert r.attention(backend).decode_latency_us == latency > 0, backend


def test_only_the_reference_kernel_gives_the_decode_latency(tmp_path):
    ref = KERNEL.replace("source: s}", "fraction_of_peak: {sm8: 0.6}, fraction_source: s, decode_latency_us: 16, "
                                       "decode_latency_source: s, source: s}")
    other = KERNEL.replace("id: k", "id: half").replace("speed_vs_fa2: 1,", "speed_vs_fa2: 0.5,")
    assert load_rules(_backends_file(tmp_path, [ref, other])).attention("half").decode_latency_us == 16
    (tmp_path / "bad").mkdir()  # a file of its own: load_rules caches by path
    with pytest.raises(DataFileError) as err:
        load_rules(_backends_file(tmp_path / "bad", [ref, other.replace("source: s}", "decode_latency_us: 9, "
                                                                                     "decode_latency_source: s, "
                                                                                     "source: s}")]))
    assert err.value.field == "decode_latency_us"


def test_which_quantized_kernels_pipeline_follows_their_sources():
    """Marlin (vLLM's int4/int8 kernel) keeps its weight loads in flight while it unpacks (IST-DASLab/marlin README,
    gptq_marlin.cu's async fetch stages); bitsandbytes 0.45's naive GEMV does not (issue #1842, 49 % of the
    bandwidth); exllama v1 has no source either way and keeps the sum; every named runtime exists."""
    r = load_rules()
    assert r.precision("int4").pipelined_on == ("vllm",) == r.precision("int8").pipelined_on
    assert not any(r.precision(p).kernel.gemv_pipelined for p in ("bnb-nf4", "bnb-nf4-dq", "gptq-exllama"))
    ids = {rt.id for rt in load_runtimes().runtimes}
    assert all(set(p.pipelined_on) <= ids for p in r.precisions)
    assert load_runtimes().get("llama.cpp").gemv.pipelined


# ---------------------------------------------------------------- FP8 weight-only (vLLM's FP8-Marlin on Ampere)

def test_fp8_runs_weight_only_under_vllm_on_ampere_only():
    """vLLM docs 'FP8 W8A8' (0.5.5): Ampere runs FP8 checkpoints as weight-only W8A16 with FP8 Marlin; SM89+ has
    FP8 tensor cores (the native record), other runtimes have no such path."""
    fp8 = load_rules().precision("fp8")
    on_a100 = fp8.weight_only_on((8, 0), "vllm")
    assert (on_a100.compute_path, on_a100.weight_bytes, on_a100.pipelined_on) == ("fp16", 1.0, ("vllm",))
    assert on_a100.dequant_ops_per_weight == load_rules().precision("int8").dequant_ops_per_weight  # Marlin's 3 / 2
    assert "FP8-Marlin" in on_a100.runs_as and on_a100.min_sm == (8, 0)
    assert fp8.weight_only_on((8, 6), "vllm").compute_path == "fp16"  # A10, RTX 3090
    for cc, runtime in (((8, 9), "vllm"), ((9, 0), "vllm"), ((7, 5), "vllm"), ((8, 0), "pytorch-eager"),
                        ((8, 0), "llama.cpp"), (None, "vllm")):
        assert fp8.weight_only_on(cc, runtime) is fp8
    ids = {rt.id for rt in load_runtimes().runtimes}
    assert all(set(p.weight_only.runtimes) <= ids for p in load_rules().precisions if p.weight_only)


@pytest.mark.parametrize("block, field", [
    ("{runtimes: [vllm], min_sm: '8.6', max_sm: '8.0', compute_path: fp16, dequant_ops_per_weight: 1, "
     "kernel_name: k, source: s}", "max_sm"),
    ("{runtimes: [vllm], min_sm: '8.0', max_sm: '8.6', compute_path: fp9, dequant_ops_per_weight: 1, "
     "kernel_name: k, source: s}", "compute_path"),
    ("{runtimes: [vllm], min_sm: '8.0', max_sm: '8.6', compute_path: fp16, dequant_ops_per_weight: 1, "
     "kernel_name: k}", "source"),
])
def test_a_bad_weight_only_block_names_its_field(tmp_path, block, field):
    path = _one_precision_file(tmp_path, "{id: q, compute_path: fp8, weight_bytes: 1, min_sm: '8.9', act_bytes: 2, "
                                         f"weight_only: {block}, note: n, source: s}}")
    with pytest.raises(DataFileError) as exc:
        load_rules(path)
    assert exc.value.field == field and "weight_only" in exc.value.record


# Llama-3-8B's GEMV weights (the runtime's quantized_gemv source: 32 x 218.1e6 layers + 525.3e6 output) and the
# tensors Q3_K_M and Q3_K_L keep in Q3_K (attn_q, attn_k, ffn_gate, ffn_up; llama_tensor_get_type_impl)
_L3_LAYER = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
_L3_GEMV = 32 * _L3_LAYER + 128256 * 4096
_L3_Q3K_M = 32 * (4096 * 4096 + 4096 * 1024 + 2 * 4096 * 14336)


@pytest.mark.parametrize("pid, q3k_weights", [
    ("q3_k_s", 32 * _L3_LAYER), ("q3_k_m", _L3_Q3K_M), ("q3_k_l", _L3_Q3K_M)])
def test_q3_k_files_cost_the_gemv_their_q3_k_share_of_its_longer_dot_product(pid, q3k_weights):
    """vec_dot_q3_K_q8_1 per 16 weights: 4 x (16 scale rebuild + 5 bit extraction + 8 __vsubss4 + dp4a, int-to-float,
    integer and fp32 multiply) + 31 loads and indexing = 163 instructions, against Q4_0's 25; the file's other
    tensors at Q4_0's count."""
    share = q3k_weights / _L3_GEMV
    assert load_rules().precision(pid).gemv_ops_factor == pytest.approx(
        share * (4 * (16 + 5 + 8 + 4) + 31) / 25 + (1 - share), abs=0.01)
    assert load_rules().precision("q4_k_m").gemv_ops_factor == 1.0  # the measured format's count, as before


def test_the_gemv_runs_a_q3_k_file_at_its_factor_and_a_library_kernel_at_its_own_count():
    from dataclasses import replace
    from planner.inputs.work import Setup
    r = load_rules()
    s = Setup(r.precision("q3_k_m"), r.kv_dtype("fp16"), r.attention("manual"), gemv_max_tokens=8,
              gemv_ops_per_weight_token=2.07)
    assert s.gemv_ops == pytest.approx(2.07 * r.precision("q3_k_m").gemv_ops_factor)
    exllama = replace(s, precision=replace(r.precision("gptq-exllama"), gemv_ops_factor=3.0))
    assert exllama.gemv_ops == r.precision("gptq-exllama").kernel.gemv_ops_per_weight_token


@pytest.mark.parametrize("extra, field", [
    ("gemv_ops_factor: 0", "gemv_ops_factor"), ("gemv_ops_factor: 40", "gemv_ops_factor"),
    ("gemv_ops_factor: 2", "gemv_ops_factor_source"), ("gemv_ops_factor_source: s", "gemv_ops_factor_source")])
def test_a_bad_gemv_ops_factor_names_its_field(tmp_path, extra, field):
    path = _one_precision_file(tmp_path, "{id: q, compute_path: fp16, weight_bytes: 0.5, act_bytes: 2, "
                                         f"dequant_ops_per_weight: 3, {extra}, note: n, source: s}}")
    with pytest.raises(DataFileError) as exc:
        load_rules(path)
    assert exc.value.field == field
