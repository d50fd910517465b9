"""Runtime efficiency profiles: every profile is a fraction of peak, with a source."""

import pytest

from planner.inputs.runtimes import MEMORY_CLASSES, load_runtimes
from planner.base.schema import DataFileError


def test_every_profile_is_a_fraction_of_peak_with_a_source():
    for r in load_runtimes().runtimes:
        for cls in MEMORY_CLASSES:
            eff = r.efficiency(cls)
            assert 0 < eff.mem_bw_efficiency <= 1 and 0 < eff.compute_efficiency <= 1
        assert r.source.strip()


def test_compile_launches_cheaper_than_eager():
    rts = load_runtimes()
    eager, compiled = rts.get("pytorch-eager").efficiency("hbm"), rts.get("torch-compile").efficiency("hbm")
    assert compiled.launch_overhead_us * compiled.kernels_per_layer_factor < \
        eager.launch_overhead_us * eager.kernels_per_layer_factor


def test_efficiency_above_one_is_rejected(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
                    "    mem_bw_efficiency: {hbm: 1.2, gddr: 0.8}\n"
                    "    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n    launch_overhead_us: 1\n"
                    "    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n    source: s\n"
        "    fuses_elementwise: false\n    fuses_elementwise_source: s\n")
    with pytest.raises(DataFileError, match="'x'.mem_bw_efficiency.*'hbm'"):
        load_runtimes(path)


# ---------------------------------------------------------------- on a CPU device

def test_runtimes_that_run_on_a_cpu_have_cpu_fractions_with_a_source():
    rts = load_runtimes()
    for rid in ("pytorch-eager", "torch-compile", "llama.cpp"):
        eff = rts.get(rid).efficiency("cpu")
        assert not eff.unsupported and 0 < eff.mem_bw_efficiency <= 1 and 0 < eff.compute_efficiency <= 1
        assert rts.get(rid).cpu.source.strip() and "CPUs" in eff.source


@pytest.mark.parametrize("rid", ["vllm", "tensorrt-llm", "mlc-llm", "llm.c", "llm-foundry"])
def test_gpu_only_runtimes_say_why_they_cannot_run_on_a_cpu(rid):
    eff = load_runtimes().get(rid).efficiency("cpu")
    assert eff.unsupported.startswith(load_runtimes().get(rid).name) and "does not run on a CPU" in eff.unsupported


BASE = ("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
        "    mem_bw_efficiency: {hbm: 0.8, gddr: 0.8}\n    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n"
        "    launch_overhead_us: 1\n    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n    source: s\n"
        "    fuses_elementwise: false\n    fuses_elementwise_source: s\n")


def test_a_runtime_without_a_cpu_block_is_unsupported_on_a_cpu(tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text(BASE)
    assert "no CPU profile" in load_runtimes(path).get("x").efficiency("cpu").unsupported


@pytest.mark.parametrize("block, field, record", [
    ("    cpu: {unsupported: why, mem_bw_efficiency: 0.5}\n", "mem_bw_efficiency", "'x'.cpu"),
    ("    cpu: {mem_bw_efficiency: 0.5, compute_efficiency: 0.5, launch_overhead_us: 5, source: s}\n",
     "host_memory_gb", "'x'.cpu"),
    ("    cpu: {mem_bw_efficiency: 1.5, compute_efficiency: 0.5, launch_overhead_us: 5, host_memory_gb: 0.3, "
     "source: s}\n", "mem_bw_efficiency", "'x'.cpu"),
    ("    quantized_gemv: {max_tokens: 8, source: s}\n", "ops_per_weight_token", "quantized_gemv"),
    ("    quantized_gemv: {max_tokens: 0, ops_per_weight_token: 1, source: s}\n", "max_tokens", "quantized_gemv"),
    ("    quantized_gemv: {max_tokens: 8, ops_per_weight_token: 1}\n", "source", "quantized_gemv"),
])
def test_a_bad_sub_block_names_its_record_and_field(tmp_path, block, field, record):
    """A runtime's cpu or quantized_gemv block with a missing or out-of-range field is refused by name."""
    path = tmp_path / f"bad-{field}-{len(block)}.yaml"
    path.write_text(BASE + block)
    with pytest.raises(DataFileError) as exc:
        load_runtimes(path)
    assert exc.value.field == field and record in exc.value.record
def test_the_eager_kernel_ratio_is_one_fact():
    """Generic and traced profiles count eager ops and divide by EAGER_KERNELS_PER_FUSED; the pytorch-eager profile
    multiplies fused units by its kernels_per_layer_factor: the two must be the same number."""
    from planner.inputs.work import EAGER_KERNELS_PER_FUSED
    assert load_runtimes().get("pytorch-eager").kernels_per_layer_factor == EAGER_KERNELS_PER_FUSED


def test_data_parallel_overlap_needs_its_source_and_stays_a_fraction(tmp_path):
    path = tmp_path / "r.yaml"
    base = ("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
            "    mem_bw_efficiency: {hbm: 0.8, gddr: 0.8}\n    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n"
            "    launch_overhead_us: 1\n    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n    source: s\n"
        "    fuses_elementwise: false\n    fuses_elementwise_source: s\n")
    path.write_text(base + "    dp_comm_overlap: 0.5\n")
    with pytest.raises(DataFileError, match="'x'.*'dp_comm_overlap_source'"):
        load_runtimes(path)
    path.write_text(base + "    dp_comm_overlap: 1.5\n    dp_comm_overlap_source: s\n")
    with pytest.raises(DataFileError, match="'x'.*'dp_comm_overlap'"):
        load_runtimes(path)
    path.write_text(base)
    assert load_runtimes(path).get("x").efficiency("hbm").dp_comm_overlap == 0.0  # absent: no overlap


def test_llama_cpp_multiplies_up_to_eight_quantized_tokens_in_its_gemv_kernel():
    """ggml-cuda.cu: MMVQ_MAX_BATCH_SIZE = 8 (mul_mat_vec_q up to 8 src1 columns, MMQ above)."""
    gemv = load_runtimes().get("llama.cpp").gemv
    assert gemv.max_tokens == 8 and "PR #15802" in gemv.source
    # ggml-org/llama.cpp PR #15802, RTX 3090, llama 8B Q4_0, pp512 at -ub 1 and 8: 156.56 and 583.77 t/s, over
    # Llama-3-8B's 32 x 218.1e6 + 525.3e6 GEMV weights. The kernel is pipelined (its instructions run under its weight
    # stream): at ub 1 the pass is the stream (Q4_0's 0.5625 B per weight at 936 GB/s x 0.80, the RTX 3090's datasheet
    # bandwidth and llama.cpp's gddr fraction) plus the host's work; at ub 8 the 8 tokens' instructions plus that work
    weights = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096
    stream_s = weights * 0.5625 / (936e9 * 0.80)
    host_s = 1 / 156.56 - stream_s
    per_token_s = (8 / 583.77 - host_s) / 8
    from planner.inputs.catalog import ALU_PATH, load_catalog
    rate = load_catalog().get("rtx-3090").ceiling_tflops(ALU_PATH) * 1e12 / 2  # instructions per second
    assert gemv.pipelined and gemv.ops_per_weight_token == pytest.approx(per_token_s * rate / weights, rel=0.01)
    assert all(r.gemv is None for r in load_runtimes().runtimes if r.id != "llama.cpp")


def _sourced(tmp_path, lines: str, source: str):
    """Runtime 'x' of BASE plus `lines`: refused, naming `source`, until `source` is given beside them."""
    bare = tmp_path / f"bare-{source}.yaml"
    bare.write_text(BASE + lines)
    with pytest.raises(DataFileError, match=f"'x'.*'{source}'"):
        load_runtimes(bare)
    sourced = tmp_path / f"sourced-{source}.yaml"
    sourced.write_text(BASE + lines + f"    {source}: s\n")
    return load_runtimes(sourced).get("x")


def test_a_per_step_host_time_needs_its_source(tmp_path):
    assert _sourced(tmp_path, "    step_host_us: 500\n", "step_host_source").efficiency("gddr").step_host_us == 500
    plain = tmp_path / "plain-step.yaml"
    plain.write_text(BASE)
    assert load_runtimes(plain).get("x").efficiency("hbm").step_host_us == 0.0  # absent: the GPU never waits


def test_every_runtime_says_whether_it_fuses_elementwise_ops(tmp_path):
    """Eager stacks run each op as its own kernel, compilers and hand-written kernels fuse them: a fact per runtime,
    with its source; a file that leaves it out is refused, naming the field."""
    fused = {r.id: r.fuses_elementwise for r in load_runtimes().runtimes}
    assert not fused["pytorch-eager"] and not fused["llm-foundry"]
    assert fused["torch-compile"] and fused["llm.c"] and fused["tensorrt-llm"] and fused["llama.cpp"]
    assert all(r.fuses_elementwise_source for r in load_runtimes().runtimes)
    path = tmp_path / "r.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
                    "    mem_bw_efficiency: {hbm: 0.8, gddr: 0.8}\n    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n"
                    "    launch_overhead_us: 1\n    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n"
                    "    source: s\n")
    with pytest.raises(DataFileError, match="'x'.*'fuses_elementwise'"):
        load_runtimes(path)


def test_a_tensor_parallel_block_says_what_happens_to_the_lm_head_with_its_source(tmp_path):
    plain = tmp_path / "plain-tp.yaml"
    plain.write_text(BASE)
    assert load_runtimes(plain).get("x").tp_lm_head_split  # absent: split, as Megatron-LM does
    kept = tmp_path / "kept.yaml"
    kept.write_text(BASE + "    tensor_parallel: {lm_head: replicated, source: s}\n")
    assert not load_runtimes(kept).get("x").tp_lm_head_split and load_runtimes(kept).get("x").tp_source == "s"
    for i, block in enumerate(("{lm_head: sharded, source: s}", "{lm_head: split}", "{lm_head: split, src: s}")):
        bad = tmp_path / f"bad-tp-{i}.yaml"
        bad.write_text(BASE + f"    tensor_parallel: {block}\n")
        with pytest.raises(DataFileError, match="tensor_parallel"):
            load_runtimes(bad)


# ---------------------------------------------------------------- engines that launch kernels one by one

GPT_GELU_LAYER_KERNELS = 11  # planner/inputs/models/decoder.py kernels_per_layer for a GELU block


def test_fastertransformer_launches_nine_kernels_a_gpt_layer_from_cpp_and_splits_the_lm_head():
    """FasterTransformer v5.0's decode layer (ParallelGptDecoder.cc, DecoderSelfAttentionLayer.cc, FfnLayer.cc at
    a44c3813): LayerNorm, QKV GEMM, masked attention, output GEMM, bias+residual+LayerNorm, FC1, bias+GELU, FC2,
    bias+residual = 9 kernels; ParallelGpt.cc splits the vocabulary and all-gathers the logits."""
    ft = load_runtimes().get("fastertransformer")
    assert ft.kernels_per_layer_factor * GPT_GELU_LAYER_KERNELS == pytest.approx(9, abs=0.01)
    assert ft.tp_lm_head_split and "a44c3813" in ft.tp_source
    assert ft.fuses_elementwise and "fusedQKV_masked_attention_dispatch" in ft.fuses_elementwise_source
    assert ft.efficiency("cpu").unsupported


def test_deepspeed_inference_runs_twenty_kernels_a_bloom_layer_from_python_and_keeps_the_lm_head_whole():
    """DeepSpeed v0.7.3 BLOOM decode layer: QKV call 3 + backup_attention 11 + output GEMM 1 + MLP call 3 + down GEMM
    1 + residual add 1 = 20 kernels; kernel injection replaces only the blocks, so the LM head stays whole. Host time
    per launched op from PyTorch's gpt-fast post: eager Llama-2-7B at 25.5 tokens/s over ~1,620 ops per token."""
    ds = load_runtimes().get("deepspeed-inference")
    assert ds.kernels_per_layer_factor * GPT_GELU_LAYER_KERNELS == pytest.approx(3 + 11 + 1 + 3 + 1 + 1, abs=0.05)
    assert not ds.tp_lm_head_split and "replace_module" in ds.tp_source
    assert ds.host_us_per_kernel == pytest.approx(1e6 / 25.5 / 1620, rel=0.02)  # 24.2 us


def test_engines_without_cuda_graphs_leave_longer_gaps_than_those_that_replay_one():
    """A kernel launched on a stream leaves the GPU idle longer than one replayed in a CUDA graph (H100: 2.1 vs 1.3 us,
    Hazy Research 2025; V100: 0.9 vs 0.5 us beyond a 2.9 us kernel, NVIDIA's CUDA Graphs post 2019)."""
    rts = load_runtimes()
    graphed = max(rts.get(r).launch_overhead_us for r in ("tensorrt-llm", "torch-compile", "vllm", "mlc-llm"))
    for rid in ("fastertransformer", "deepspeed-inference"):
        assert rts.get(rid).launch_overhead_us > graphed


# ---------------------------------------------------------------- tuned values over the priors

RUNTIME_X = ("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
             "    mem_bw_efficiency: {hbm: 0.80, gddr: 0.85}\n    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n"
             "    launch_overhead_us: 1.5\n    host_us_per_kernel: 36\n    kernels_per_layer_factor: 1\n"
             "    cuda_context_gb: 0.5\n    source: s\n    fuses_elementwise: false\n    fuses_elementwise_source: s\n")


def _tuned(tmp_path, record: str):
    (tmp_path / "r.yaml").write_text(RUNTIME_X, encoding="utf-8")
    (tmp_path / "t.yaml").write_text(f"schema_version: 1\nread_on: 2026-11-24\ntuned:\n{record}", encoding="utf-8")
    return load_runtimes(tmp_path / "r.yaml", tmp_path / "t.yaml")


def test_tuned_values_replace_the_priors_they_name_and_say_so(tmp_path):
    x = _tuned(tmp_path, "  - id: x\n    day: 2026-11-24\n    rows: 12\n    sources: [lab-a/bench, lab-b/notes]\n"
                         "    values: {mem_bw_efficiency.hbm: 0.63, launch_overhead_us: 2.0}\n").get("x")
    hbm, gddr = x.efficiency("hbm"), x.efficiency("gddr")
    assert (hbm.mem_bw_efficiency, hbm.launch_overhead_us, hbm.host_us_per_kernel) == (0.63, 2.0, 36.0)
    assert (gddr.mem_bw_efficiency, gddr.launch_overhead_us) == (0.85, 2.0)  # the GDDR fraction stays the prior
    assert "tuned on 12 published rows from 2 sources" in hbm.source and "(prior 0.8)" in hbm.source
    assert x.priors() == {"mem_bw_efficiency.hbm": 0.80, "mem_bw_efficiency.gddr": 0.85, "launch_overhead_us": 1.5,
                          "host_us_per_kernel": 36.0}


@pytest.mark.parametrize("record, field", [
    ("  - id: y\n    day: 2026-11-24\n    rows: 1\n    sources: [a]\n    values: {launch_overhead_us: 2}\n", "id"),
    ("  - id: x\n    day: 2026-11-24\n    rows: 1\n    sources: [a]\n    values: {compute_efficiency.hbm: 0.5}\n",
     "compute_efficiency.hbm"),
    ("  - id: x\n    day: 2026-11-24\n    rows: 1\n    sources: [a]\n    values: {mem_bw_efficiency.gddr: 1.4}\n",
     "mem_bw_efficiency.gddr"),
    ("  - id: x\n    rows: 1\n    sources: [a]\n    values: {launch_overhead_us: 2}\n", "day"),
    # outside the physical bounds (runtimes.TUNABLE_PARAMS): 2.1 us is a stream's measured gap, 40 us the slowest host
    ("  - id: x\n    day: 2026-11-24\n    rows: 1\n    sources: [a]\n    values: {launch_overhead_us: 12.0}\n",
     "field 'launch_overhead_us': must be <= 2.1"),
    ("  - id: x\n    day: 2026-11-24\n    rows: 1\n    sources: [a]\n    values: {host_us_per_kernel: 2.0}\n",
     "field 'host_us_per_kernel': must be >= 3.8"),
])
def test_a_bad_tuned_record_names_the_file_record_and_field(tmp_path, record, field):
    with pytest.raises(DataFileError) as err:
        _tuned(tmp_path, record)
    assert "t.yaml" in str(err.value) and field in str(err.value)


def test_a_held_parameter_must_be_a_tunable_one(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text(RUNTIME_X + "    held: [compute_efficiency.hbm]\n", encoding="utf-8")
    with pytest.raises(DataFileError, match="'x'.*held"):
        load_runtimes(path)


def test_estimates_use_the_committed_tuned_values():
    """Every value of data/runtimes_tuned.yaml is what the runtime's efficiency gives; the rest is the prior."""
    for r in load_runtimes().runtimes:
        if r.tuned is None:
            continue
        for cls in MEMORY_CLASSES:
            eff, want = r.efficiency(cls), r.priors() | dict(r.tuned.values)
            assert eff.mem_bw_efficiency == want[f"mem_bw_efficiency.{cls}"]
            assert (eff.launch_overhead_us, eff.host_us_per_kernel) == (want["launch_overhead_us"],
                                                                       want["host_us_per_kernel"])


def test_deepspeed_inference_takes_its_launch_costs_from_eager_pytorch_and_keeps_its_own_bandwidth():
    rts = load_runtimes()
    ds, eager = rts.get("deepspeed-inference"), rts.get("pytorch-eager")
    assert ds.launch_family == "pytorch-eager" and "Python" in ds.launch_family_source
    for cls in MEMORY_CLASSES:
        mine, theirs = ds.efficiency(cls), eager.efficiency(cls)
        assert (mine.launch_overhead_us, mine.host_us_per_kernel) == (theirs.launch_overhead_us,
                                                                       theirs.host_us_per_kernel)
        assert mine.mem_bw_efficiency == dict(ds.mem_bw_efficiency)[cls]  # its own kernels' prior, not eager's
    assert "pytorch-eager (whose launch path it shares)" in ds.efficiency("hbm").source


@pytest.mark.parametrize("family", ["nope", "x", "y"])
def test_a_launch_family_names_another_runtime_without_one(tmp_path, family):
    """Unknown, itself, or a runtime that has a family of its own (y -> x): each names the record and field."""
    second = RUNTIME_X.split("runtimes:\n")[1].replace("id: x", "id: y").replace("name: X", "name: Y")
    text = RUNTIME_X + f"    launch_family: {family}\n    launch_family_source: s\n" + second + \
        ("    launch_family: x\n    launch_family_source: s\n" if family == "y" else "")
    (tmp_path / "r.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError, match="'x'.*launch_family"):
        load_runtimes(tmp_path / "r.yaml")


def test_a_runtimes_own_precisions_and_fp16_accumulation_need_their_sources(tmp_path):
    for extra, field in (("    precisions: [awq-gemm]\n", "precisions_source"),
                         ("    fp16_accumulate: true\n", "fp16_accumulate_source"),
                         ("    fp16_accumulate: maybe\n    fp16_accumulate_source: s\n", "fp16_accumulate"),
                         ("    precisions: awq-gemm\n    precisions_source: s\n", "precisions")):
        path = tmp_path / f"{field}.yaml"
        path.write_text(BASE + extra)
        with pytest.raises(DataFileError, match=f"'x'.*'{field}'"):
            load_runtimes(path)
    sourced = tmp_path / "sourced.yaml"
    sourced.write_text(BASE + "    precisions: [awq-gemm]\n    precisions_source: s\n"
                       "    fp16_accumulate: true\n    fp16_accumulate_source: s\n")
    x = load_runtimes(sourced).get("x")
    assert x.precisions == ("awq-gemm",) and x.fp16_accumulate
    assert x.efficiency("gddr").precisions == ("awq-gemm",)


def test_a_decode_kernel_without_a_key_split_needs_its_source(tmp_path):
    x = _sourced(tmp_path, "    decode_heads_grid_on: [sdpa]\n", "decode_heads_grid_source")
    assert x.decode_heads_grid_on == ("sdpa",)
