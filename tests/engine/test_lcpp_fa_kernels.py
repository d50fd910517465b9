"""llama.cpp's own FlashAttention kernels for a prompt pass, by build and compute capability (data/runtimes.yaml
llama.cpp prompt_gemm `attention_kernels` and each era's `attention`). Expected rates are derived here by hand from
the two llama-bench tables the data file cites (RTX 3090, gemma 2B F16, n_ubatch 512), not read from the code."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError, Record
from planner.engine.estimate import estimate_gpu
from planner.engine.feasibility import precision_on
from planner.engine.plan import Plan, resolve_setup
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.prompt_gemm import parse_prompt_gemm
from planner.inputs.runtimes import with_build

FACTS = load_facts()
LLAMA_CPP = FACTS.runtimes.get("llama.cpp")
GEMMA_2B_FLOPS_PER_KEY = 4 * 18 * 8 * 256  # QK^T and PV, 2 FLOPs a multiply-add: 147,456 per query token and key
RTX_3090_FULL_RATE_TFLOPS = 142.0  # GA102 whitepaper: FP16 tensor with FP16 accumulate, dense


def _hand_rates() -> tuple[float, float]:
    """(wmma, mma) TFLOPS: us/token at pp4096 (PR #6646) and pp16384 (PR #11583, master = wmma, PR = mma); a prompt
    of N tokens in 512-token ubatches averages N/2 + 256 keys a query (2,304 and 8,448)."""
    t4096, t16384_wmma, t16384_mma = 1e6 / 13097.30, 1e6 / 8378.34, 1e6 / 11162.57
    us_per_key_wmma = (t16384_wmma - t4096) / (8448 - 2304)  # 0.00700 us
    gemms_us = t4096 - 2304 * us_per_key_wmma  # 60.23 us a token for everything else
    us_per_key_mma = (t16384_mma - gemms_us) / 8448  # 0.00348 us
    return GEMMA_2B_FLOPS_PER_KEY / us_per_key_wmma / 1e6, GEMMA_2B_FLOPS_PER_KEY / us_per_key_mma / 1e6


def test_the_kernels_fractions_follow_from_the_cited_tables():
    wmma_tflops, mma_tflops = _hand_rates()
    assert wmma_tflops == pytest.approx(21.07, abs=0.01) and mma_tflops == pytest.approx(42.43, abs=0.01)
    kernels = {k.id: k for _, k in LLAMA_CPP.at_build(4753).prompt_era.attention}
    assert kernels["wmma"].fraction == pytest.approx(wmma_tflops / RTX_3090_FULL_RATE_TFLOPS, abs=0.001)
    assert kernels["mma"].fraction == pytest.approx(mma_tflops / RTX_3090_FULL_RATE_TFLOPS, abs=0.001)
    assert "#11583" in kernels["mma"].source and "#6646" in kernels["wmma"].source


@pytest.mark.parametrize("build, cc, kernel", [
    (4753, (7, 0), "wmma"),  # Volta keeps wmma after PR #11583 (ggml_cuda_should_use_wmma_fattn)
    (4753, (7, 5), "mma"),  # Turing on: mma.sync from build 4617
    (4753, (8, 9), "mma"),
    (4753, (9, 0), "mma-hopper"),  # the same mma.sync kernel at its Hopper rate (test_lcpp_hopper_mma.py)
    (4616, (8, 0), "wmma"),  # the build before PR #11583: wmma from Volta on
    (4400, (7, 5), "wmma"),
    (2843, (8, 0), None),  # an era that names no kernel: the attention backend's own rate
])
def test_the_kernel_a_build_runs_on_a_gpu(build, cc, kernel):
    k = LLAMA_CPP.at_build(build).prompt_era.attention_on(cc)
    assert (k.id if k else None) == kernel


def _attention(gpu_id: str, prompt: int, build: int | None = 4753):
    """The attention group of Llama-2-7B's F16 prefill of `prompt` tokens under llama.cpp -fa 1 at `build`."""
    runtimes = with_build(FACTS.runtimes, "llama.cpp", build) if build is not None else FACTS.runtimes
    plan = Plan(load_models().get("llama-2-7b"), Generate(1, prompt, 1), "fp16", attention="llama.cpp-fa",
                runtime="llama.cpp", batch=1)
    e = estimate_gpu(plan, FACTS.catalog.get(gpu_id), replace(FACTS, runtimes=runtimes),
                     setup=resolve_setup(plan, FACTS.rules, runtimes))
    phase = next(p for p in e.phases if p.name == "prefill")
    return next(g for g in phase.groups if g.name == "attention")


@pytest.mark.parametrize("gpu_id, peak, fraction", [
    ("v100-sxm2-32gb", 125.0, 0.148),  # Volta: wmma, of its 125 TFLOPS FP16 tensor peak
    ("l4", 121.0, 0.299),  # Ada: mma
    ("a100-sxm-80gb", 312.0, 0.299),
    ("rtx-3090", 2 * 71.0, 0.299),  # GeForce: the full-rate (fp16-accumulate) peak, twice the catalog's 71
])
def test_a_long_prompts_attention_runs_at_the_kernels_rate(gpu_id, peak, fraction):
    g = _attention(gpu_id, 2048)
    assert g.achieved_tflops == pytest.approx(peak * fraction, rel=1e-3)
    assert "FlashAttention kernel" in g.formula


def test_the_rate_holds_for_a_build_and_not_before_the_kernels():
    """Volta at build 2843 (an era naming no kernel) keeps the backend's rate: the matmul path, not 0.148 x 125."""
    assert _attention("v100-sxm2-32gb", 2048, build=2843).achieved_tflops != pytest.approx(0.148 * 125, rel=0.01)


def test_a_one_token_pass_takes_no_prompt_kernel():
    plan = Plan(load_models().get("llama-2-7b"), Generate(1, 512, 1), "fp16", attention="llama.cpp-fa",
                runtime="llama.cpp", batch=1)
    s = precision_on(FACTS.catalog.get("a100-sxm-80gb"), resolve_setup(plan, FACTS.rules, FACTS.runtimes), "llama.cpp")
    assert s.prompt_attention.id == "mma" and s.prompt_attention_major == 8
    assert s.prompt_attention_kernel(512) is not None
    assert s.prompt_attention_kernel(1) is None  # the vector kernel's pass (at most the GEMV's 8 tokens)


def _block(era: dict, kernels: list) -> Record:
    path = {"id": "p", "compute_path": "fp16", "source": "s"}
    eras = [{"from_build": 0, "quantized": {"7.0": "p"}, "f16": {"7.0": "p"}, "source": "s", **era}]
    return Record.of("runtimes.yaml", 0, {"id": "x", "prompt_gemm": {"paths": [path], "attention_kernels": kernels,
                                                                     "eras": eras}})


@pytest.mark.parametrize("era, kernels, words", [
    ({"attention": {"7.0": "nope"}}, [{"id": "k", "fraction": 0.3, "source": "s"}], "no kernel 'nope'"),
    ({"attention": {"7.0": "k"}}, [{"id": "k", "fraction": 1.5, "source": "s"}], "fraction"),
    ({"attention": {"7.0": "k"}}, [{"id": "k", "fraction": 0.3}], "source"),
])
def test_a_broken_attention_kernel_table_names_its_field(era, kernels, words):
    with pytest.raises(DataFileError, match=words):
        parse_prompt_gemm(_block(era, kernels))
