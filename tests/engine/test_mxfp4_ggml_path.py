"""GGUF MXFP4 under llama.cpp: ggml's own kernels (dp4a mmvq, MMQ, dequantize + cuBLAS fp16), SM61+ at fp16, where
vLLM's and transformers' MXFP4 paths compute in bf16 and need SM80 (data/precisions.yaml mxfp4 runtime_path,
Precision.on_runtime)."""

import pytest

from planner.engine.estimate import estimate_gpu, setup_on
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from tests.fixtures.rules_file import load_error_for

FACTS = load_facts()
V100 = "v100-pcie-32gb"  # SM70: no bf16, has dp4a (SM61+) and fp16 tensor cores


def _plan(runtime: str, precision: str = "mxfp4", prompt: int = 512) -> Plan:
    return Plan(load_models().get("gpt-oss-20b"), Generate(1, prompt, 16), precision, runtime=runtime, batch=1)


def test_a_v100_runs_gguf_mxfp4_under_llama_cpp():
    """ggml's floor is MIN_CC_DP4A = 610 (ggml-cuda/common.cuh), and 7.0 >= 6.1: nothing blocks the precision."""
    e = estimate_gpu(_plan("llama.cpp"), FACTS.catalog.get(V100), FACTS)
    assert not [r.text for r in e.reasons if r.code == "precision" and r.blocking]
    assert e.feasible
    notes = [r.text for r in e.reasons if r.code == "precision" and not r.blocking]
    assert any("ggml's MXFP4 kernels" in t and "fp16" in t and "SM61+" in t for t in notes)


def test_vllm_still_refuses_a_v100_with_the_same_message():
    """vLLM's Marlin MXFP4 dequantizes into bf16 matmuls, which need SM80; the message names the floor and the GPU."""
    e = estimate_gpu(_plan("vllm"), FACTS.catalog.get(V100), FACTS)
    blocking = [r.text for r in e.reasons if r.code == "precision" and r.blocking]
    assert blocking == ["mxfp4 needs SM80+; NVIDIA Tesla V100 PCIe 32GB is SM70 (Volta)"]
    assert not e.feasible


def test_llama_cpp_computes_mxfp4_in_fp16_and_others_in_bf16():
    """ggml casts activations to fp16 / q8_1; nothing in its MXFP4 path is bf16. vLLM keeps the precision's own."""
    assert setup_on(_plan("llama.cpp"), FACTS.catalog.get(V100), FACTS).precision.compute_path == "fp16"
    assert setup_on(_plan("llama.cpp"), FACTS.catalog.get("a100-sxm-80gb"), FACTS).precision.compute_path == "fp16"
    assert setup_on(_plan("vllm"), FACTS.catalog.get("a100-sxm-80gb"), FACTS).precision.compute_path == "bf16"
    mxfp4 = load_rules().precision("mxfp4")
    assert mxfp4.on_runtime("llama.cpp").min_sm == (6, 1) and mxfp4.min_sm == (8, 0)
    assert mxfp4.on_runtime("vllm") is mxfp4 and mxfp4.on_runtime("transformers") is mxfp4
    assert load_rules().precision("q4_0").on_runtime("llama.cpp") is load_rules().precision("q4_0")


@pytest.mark.parametrize("gpu", [V100, "a100-sxm-80gb"])
@pytest.mark.parametrize("prompt", [16, 512, 4096])
def test_prompts_take_the_path_other_gguf_types_take(gpu, prompt):
    """ggml_cuda_should_use_mmq lists GGML_TYPE_MXFP4 with Q4_0 and the k-quants: the same MMQ / dequantize +
    cuBLAS choice by compute capability and tokens as q4_k_m on the same GPU and prompt."""
    g = FACTS.catalog.get(gpu)
    mx = setup_on(_plan("llama.cpp", "mxfp4", prompt), g, FACTS)
    q4 = setup_on(_plan("llama.cpp", "q4_k_m", prompt), g, FACTS)
    assert mx.prompt_path is not None and mx.prompt_path == q4.prompt_path


@pytest.mark.parametrize("block, field", [
    ("{runtimes: [llama.cpp], min_sm: '6.1', compute_path: fp5, kernel_name: k, source: s}", "compute_path"),
    ("{runtimes: [llama.cpp], compute_path: fp16, kernel_name: k, source: s}", "min_sm"),
    ("{runtimes: [llama.cpp], min_sm: '6.1', compute_path: fp16, kernel_name: k}", "source"),
])
def test_a_bad_runtime_path_block_names_its_field(tmp_path, block, field):
    err = load_error_for(tmp_path, "runtime_path", block)
    assert err.field == field and "runtime_path" in err.record and "p.yaml" in str(err)
