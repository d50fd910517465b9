"""llama.cpp's prompt GEMM by build and GPU (data/runtimes.yaml llama.cpp prompt_gemm, planner/inputs/prompt_gemm.py):
which path a pass of more than 8 tokens takes, and what each costs, derived by hand."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError, Record
from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan, resolve_setup
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.prompt_gemm import era_at, parse_prompt_gemm
from planner.inputs.runtimes import with_build

FACTS = load_facts()
LLAMA_CPP = FACTS.runtimes.get("llama.cpp")
V100, RTX_4090 = FACTS.catalog.get("v100-pcie-16gb"), FACTS.catalog.get("rtx-4090")
# Llama-2-7B's weights one pass reads and a GGUF file quantizes (its output matrix too): 32 layers x (4 x 4096^2 +
# 3 x 4096 x 11008) + 32000 x 4096
LLAMA2_7B_WEIGHTS = 32 * (4 * 4096 ** 2 + 3 * 4096 * 11008) + 32000 * 4096  # 6,607,077,376
# Llama-3-8B's GEMM inputs per token: per layer the fused QKV's, O's and the fused gate/up's 4096 and down's 14336
LLAMA3_8B_GEMM_INPUTS = 32 * (4096 + 4096 + 4096 + 14336)  # 851,968


def _prefill(model: str, precision: str, gpu, build: int | None = None, era: bool = True):
    """The prefill phase of one 512-token prompt (one llama.cpp micro-batch) under llama.cpp at `build` (None: the
    newest), or with no prompt path at all (era False)."""
    runtimes = with_build(FACTS.runtimes, "llama.cpp", build) if build is not None else FACTS.runtimes
    plan = Plan(load_models().get(model), Generate(1, 512, 1), precision, attention="manual", runtime="llama.cpp",
                batch=1)
    s = resolve_setup(plan, FACTS.rules, runtimes)
    s = s if era else replace(s, prompt_era=None)
    e = estimate_gpu(plan, gpu, replace(FACTS, runtimes=runtimes), setup=s)
    return next(p for p in e.phases if p.name == "prefill")


def _group(phase, name: str):
    return next(g for g in phase.groups if g.name == name)


@pytest.mark.parametrize("build, cc, kind, path", [
    (989, (7, 0), "quantized", "cublas-fp32"),  # ggml CI of 2023-08-16: before MMQ became the default (PR #2683)
    (989, (7, 0), "f16", "cublas-fp32"),  # before PR #3370's fp16 cublasGemmEx
    (1786, (8, 6), "quantized", "cublas-fp16"),  # PR #3776: FP16 cuBLAS instead of MMQ on Volta+
    (1786, (6, 1), "quantized", "mmq-dp4a"),  # Pascal keeps MMQ (PR #4682)
    (4400, (8, 6), "quantized", "mmq-int8"),  # PR #8075: MMQ on int8 tensor cores
    (4400, (7, 0), "quantized", "cublas-fp16-mmq-small"),  # V100 has no int8 MMA: FP16 cuBLAS (MMQ below 64)
    (4400, (8, 9), "f16", "cublas-fp16"),
])
def test_the_path_a_build_takes_on_a_gpu(build, cc, kind, path):
    assert era_at(LLAMA_CPP.prompt_eras, build).path_on(cc, kind).id == path


def test_estimates_take_the_newest_era_and_a_row_its_own_build():
    assert LLAMA_CPP.prompt_era.from_build == max(e.from_build for e in LLAMA_CPP.prompt_eras)
    assert LLAMA_CPP.at_build(989).prompt_era.from_build == 0
    assert LLAMA_CPP.at_build(10 ** 5).prompt_era == LLAMA_CPP.prompt_era


def test_a_v100_prompt_of_build_989_runs_fp32_sgemm_over_an_fp32_copy():
    """By hand, Llama-2-7B Q8_0 on a V100 PCIe at build 989 (2023-08-16), one 512-token pass: every weight,
    6,607,077,376 of them (the output matrix too: GGUF quantizes it), is dequantized into an fp32 copy (reads its
    1.0625 B, writes 4 B: 33.48 GB; 1 instruction a weight, 2 FLOP-equivalents at the integer rate) that cublasSgemm
    reads (4 B a weight instead of 1.0625), at the V100's fp32 SGEMM ceiling (14.0 TFLOPS x the V100 SXM2's measured
    SGEMM ratio 14.06 / 15.7 = 12.54, not its fp16 tensor cores' 85) and not at llama.cpp's fitted factor (cuBLAS's
    own SGEMM); the activations are fp32 already
    (no conversion). The same pass today (newest era) runs FP16 cuBLAS over an fp16 copy (V100: no int8 MMA)."""
    old = _prefill("llama-2-7b", "q8_0", V100, build=989)
    lin, copy = _group(old, "linear layers"), _group(old, "dequantize weights")
    assert lin.compute_path == "fp32"
    assert lin.achieved_tflops == pytest.approx(V100.ceiling_tflops("fp32") * lin.shape_efficiency, rel=1e-9)
    assert copy.bytes == pytest.approx(LLAMA2_7B_WEIGHTS * (1.0625 + 4.0))
    assert copy.flops == pytest.approx(2 * 1.0 * LLAMA2_7B_WEIGHTS)
    bare = _group(_prefill("llama-2-7b", "q8_0", V100, era=False), "linear layers")
    assert lin.bytes - bare.bytes == pytest.approx(LLAMA2_7B_WEIGHTS * (4.0 - 1.0625))
    # 2 x 512 x 6.476e9 layer weights + the last token's 2 x 131.1e6 at 12.54 TFLOPS x shape: ~0.5 s of SGEMM
    flops = 2 * 512 * (LLAMA2_7B_WEIGHTS - 32000 * 4096) + 2 * 32000 * 4096
    assert lin.flops == pytest.approx(flops)
    assert lin.compute_s == pytest.approx(flops / (V100.ceiling_tflops("fp32") * 1e12 * lin.shape_efficiency))
    now = _group(_prefill("llama-2-7b", "q8_0", V100), "linear layers")
    # today: fp16 tensor cores (84.98 TFLOPS ceiling) at llama.cpp's HBM factor 0.56, 3.8x the SGEMM's rate
    assert now.compute_path == "fp16"
    assert lin.compute_s / now.compute_s == pytest.approx(84.98 * 0.56 / (14.0 * 14.06 / 15.7), rel=0.01)


def test_an_rtx_4090_prompt_runs_mmq_on_int8_tensor_cores():
    """By hand, Llama-3-8B Q4_0 on an RTX 4090 (newest era), one 512-token pass: the weights' MMAs run in int8 at MMQ's
    0.457 of the 4090's int8 ceiling (660.6 TOPS dense, 4x the 165.2 fp16/fp32-accumulate figure), i.e. ~302 TFLOPS
    before the tile shape, with no copy of the weights (MMQ reads the stored blocks); each GEMM input is quantized to
    q8_1 first, reading 4 B and writing 1.125 B an element: 512 x 851,968 x 5.125 = 2.236 GB more than with no path."""
    now = _prefill("llama-3-8b", "q4_0", RTX_4090)
    lin = _group(now, "linear layers")
    assert lin.compute_path == "int8"
    assert lin.achieved_tflops == pytest.approx(RTX_4090.ceiling_tflops("int8") * 0.457 * lin.shape_efficiency,
                                                rel=1e-9)
    assert not any(g.name == "dequantize weights" for g in now.groups)
    bare = _prefill("llama-3-8b", "q4_0", RTX_4090, era=False)
    added = _group(now, "elementwise & norms").bytes - _group(bare, "elementwise & norms").bytes
    assert added == pytest.approx(512 * LLAMA3_8B_GEMM_INPUTS * 5.125)
    # against the generic model's fp16 tensor-core rate at llama.cpp's factor (gddr 0.68): int8 MMQ's MMAs are 2.7x
    # faster (its CUDA-core scaling is a group of its own, test_mmq_scales_its_int32_results_on_the_cuda_cores)
    ratio = _group(bare, "linear layers").compute_s / lin.compute_s
    assert ratio == pytest.approx(660.8 * 0.457 / (165.3 * 0.68), rel=0.01)


@pytest.mark.parametrize("gpu_id, int8_per_fp32", [("rtx-4090", 8.0), ("a100-sxm-80gb", 32.0)])
def test_mmq_scales_its_int32_results_on_the_cuda_cores(gpu_id, int8_per_fp32):
    """By hand from vec_dot_q8_1_q8_1_mma (ggml-cuda/mmq.cuh): each m16n8k32 int8 MMA gives every output element the
    int32 dot product of one 32-value block (32 multiply-adds, 64 FLOPs); the CUDA cores then convert it to float and
    apply the blocks' scales and minimums, sum += dmA.x*dsB.x*C + dmA.y*dsB.y: 1 I2F + 1 FMUL + 2 FFMA = 4
    instructions, 8 FLOP-equivalents at the fp32 rate (2 a lane-instruction): 8 / 64 = 0.125 per MMA FLOP, in series
    with the MMAs. Their time against the MMAs' (0.457 of the int8 ceiling, tile shape aside) is then 0.125 x 0.457 x
    the GPU's int8:fp32 ratio: ~0.46 on an RTX 4090 (660.8 : 82.6 = 8, Ada whitepaper) and ~1.8 on an A100 (624 : 19.5
    = 32, A100 datasheet), where the scaling takes longer than the MMAs themselves."""
    now = _prefill("llama-3-8b", "q4_0", FACTS.catalog.get(gpu_id))
    lin, scale = _group(now, "linear layers"), _group(now, "prompt GEMM scaling")
    assert scale.flops == pytest.approx(0.125 * lin.flops)
    assert scale.compute_path == "fp32" and scale.bytes == 0
    assert scale.compute_s / (lin.compute_s * lin.shape_efficiency) == pytest.approx(
        0.125 * 0.457 * int8_per_fp32, rel=0.01)
    # build 3006: FP16 cuBLAS (PR #3776's era), no MMQ, no scaling
    old = _prefill("llama-3-8b", "q4_0", FACTS.catalog.get(gpu_id), build=3006)
    assert not any(g.name == "prompt GEMM scaling" for g in old.groups)


def test_a_pass_the_gemv_takes_has_no_prompt_path():
    """Micro-batches of at most 8 tokens stay on llama.cpp's GEMV whatever the era (mul_mat_vec_q)."""
    s = resolve_setup(Plan(load_models().get("llama-3-8b"), Generate(1, 512, 1), "q4_0", runtime="llama.cpp"),
                      FACTS.rules, FACTS.runtimes)
    s = replace(s, prompt_path=LLAMA_CPP.prompt_era.path_on((8, 9), "quantized"))
    assert s.prompt_gemm(8) is None and s.prompt_gemm(9).id == "mmq-int8"


def _block(**era) -> Record:
    path = {"id": "p", "compute_path": "fp16", "source": "s"}
    return Record.of("runtimes.yaml", 0, {"id": "x", "prompt_gemm": {"paths": [path], "eras": [
        {"from_build": 0, "quantized": {"7.0": "p"}, "f16": {"7.0": "p"}, "source": "s", **era}]}})


@pytest.mark.parametrize("era, words", [
    ({"quantized": {"7.0": "nope"}}, "no path 'nope'"),
    ({"f16": {"seven": "p"}}, "compute capability"),
    ({"from_build": -1}, "from_build"),
])
def test_a_broken_prompt_gemm_block_names_its_field(era, words):
    with pytest.raises(DataFileError, match=words):
        parse_prompt_gemm(_block(**era))


def test_mmq_micro_batches_ramp_as_published():
    """PR #7676's final table (RTX 4090, llama 8B Q4_0, pp512, MMQ column) at micro-batches 16-256: 1937.21, 3427.61,
    5420.06, 7443.66 and 9601.53 t/s. Only its -ub 512 figure (10358.75) set MMQ's fraction; the smaller passes are
    the independent check of the tile and wave shape, the weights read once per pass and the host's work per pass:
    within 20 % each (the engine is 9-18 % fast from 16 to 128 tokens a pass)."""
    published = {16: 1937.21, 32: 3427.61, 64: 5420.06, 128: 7443.66, 256: 9601.53}
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 1), "q4_0", attention="manual", runtime="llama.cpp",
                batch=1)
    for ub, rate in published.items():
        s = replace(resolve_setup(plan, FACTS.rules, FACTS.runtimes), prefill_chunk=ub)
        prefill = next(p for p in estimate_gpu(plan, RTX_4090, FACTS, setup=s).phases if p.name == "prefill")
        assert 512 / prefill.total_s == pytest.approx(rate, rel=0.20), ub


def test_every_gpu_with_int8_mma_has_an_int8_rate():
    """The MMQ path runs in the catalog's int8 figure: every NVIDIA GPU from Turing on must carry one."""
    for g in FACTS.catalog.gpus:
        if g.vendor == "NVIDIA" and g.compute_capability and g.compute_capability >= (7, 5):
            assert g.int8_tops, g.id
