"""llama.cpp's mma.sync kernels on Hopper (data/runtimes.yaml llama.cpp prompt_gemm: mmq-int8-hopper, mma-hopper).
ggml's CUDA backend multiplies through warp-level mma.sync on every NVIDIA GPU from Turing; Hopper's datasheet peak
is its warpgroup wgmma's, which mma.sync reaches about 65 % of against wgmma's 96 % (Luo et al., arXiv:2501.12084).
Expected rates are derived here from those two figures and the kernels' own fractions elsewhere."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan, resolve_setup
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import with_build

FACTS = load_facts()
LLAMA_CPP = FACTS.runtimes.get("llama.cpp")
MMA_SYNC_ON_HOPPER = 0.65 / 0.96  # 0.677: mma.sync's share of the tensor peak over wgmma's, H800 microbenchmarks
MMQ_ADA, FA_MMA_AMPERE = 0.457, 0.299  # MMQ (RTX 4090, PR #7676) and fattn-mma-f16 (RTX 3090, PR #11583) fractions


def test_the_hopper_fractions_are_the_kernels_own_times_mma_sync_over_wgmma():
    era = LLAMA_CPP.at_build(4753).prompt_era
    assert era.path_on((9, 0), "quantized").fraction == pytest.approx(MMQ_ADA * MMA_SYNC_ON_HOPPER, abs=0.002)
    assert era.attention_on((9, 0)).fraction == pytest.approx(FA_MMA_AMPERE * MMA_SYNC_ON_HOPPER, abs=0.002)
    # one fact: Marlin's mma.sync on Hopper (precisions.yaml mxfp4 mma_path) takes the same ratio
    marlin = FACTS.rules.precision("mxfp4").on_mma_path((9, 0), "vllm").mma_fraction
    assert era.path_on((9, 0), "quantized").fraction / era.path_on((8, 9), "quantized").fraction == pytest.approx(
        marlin, abs=0.005)
    assert era.attention_on((9, 0)).fraction / era.attention_on((8, 0)).fraction == pytest.approx(marlin, abs=0.005)


@pytest.mark.parametrize("build, cc, path, kernel", [
    (4753, (9, 0), "mmq-int8-hopper", "mma-hopper"),  # H100 / H200
    (4753, (8, 9), "mmq-int8", "mma"),  # Ada: its peak is mma.sync's
    (4753, (8, 0), "mmq-int8", "mma"),
    (4753, (10, 0), "mmq-int8", "mma"),  # Blackwell: no source sizes its mma.sync rate, left as elsewhere
    (4753, (12, 0), "mmq-int8", "mma"),
    (4400, (9, 0), "mmq-int8-hopper", "wmma"),  # MMQ's era before PR #11583: the GEMM path changes, wmma stays
    (3006, (9, 0), "cublas-fp16", None),  # before MMQ's int8 MMA was the default: cuBLAS runs wgmma, untouched
])
def test_the_path_and_kernel_a_hopper_pass_takes(build, cc, path, kernel):
    era = LLAMA_CPP.at_build(build).prompt_era
    assert era.path_on(cc, "quantized").id == path
    k = era.attention_on(cc)
    assert (k.id if k else None) == kernel


def _prefill(gpu_id: str, precision: str, attention: str):
    runtimes = with_build(FACTS.runtimes, "llama.cpp", 4753)
    plan = Plan(load_models().get("llama-2-7b"), Generate(1, 2048, 1), precision, attention=attention,
                runtime="llama.cpp", batch=1)
    e = estimate_gpu(plan, FACTS.catalog.get(gpu_id), replace(FACTS, runtimes=runtimes),
                     setup=resolve_setup(plan, FACTS.rules, runtimes))
    return next(p for p in e.phases if p.name == "prefill")


def test_an_h100_prompt_runs_mmq_and_flash_attention_at_two_thirds_of_their_rate():
    """H100 PCIe, Llama-2-7B Q4_K_M, 2,048 tokens, -fa 1: the weights' MMAs at 0.311 of the card's int8 matmul
    ceiling (its catalog figure, the datasheet's 1,513 TOPS at the card's measured matmul ratio) before the tile
    shape, where an Ada card takes 0.457; attention at 756 TFLOPS (dense FP16, datasheet; the kernel's base is the
    full-rate peak) x 0.203 = 153.5 TFLOPS. MMQ's per-block scaling on the CUDA cores is no MMA and keeps its FLOPs
    (0.125 of them)."""
    phase = _prefill("h100-pcie", "q4_k_m", "llama.cpp-fa")
    lin = next(g for g in phase.groups if g.name == "linear layers")
    att = next(g for g in phase.groups if g.name == "attention")
    scale = next(g for g in phase.groups if g.name == "prompt GEMM scaling")
    assert lin.compute_path == "int8"
    ceiling = FACTS.catalog.get("h100-pcie").ceiling_tflops("int8")
    assert lin.achieved_tflops == pytest.approx(ceiling * 0.311 * lin.shape_efficiency, rel=1e-6)
    assert att.achieved_tflops == pytest.approx(756 * 0.203, rel=0.01)
    assert scale.flops == pytest.approx(0.125 * lin.flops)
