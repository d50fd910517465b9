"""Feasibility reasons: precision vs compute capability, memory with numbers, PyTorch builds, attention."""

import pytest

from planner.inputs.catalog import load_catalog
from planner.engine.plan import Plan
from planner.engine.estimate import estimate_gpu
from planner.inputs.models import load_models
from planner.inputs.jobs import Generate
from planner.inputs.facts import load_facts

FACTS = load_facts()


def _est(model, gpu, precision="bf16", **kw):
    plan = Plan(load_models().get(model), Generate(1, 128, 128), precision, **kw)
    return estimate_gpu(plan, load_catalog().get(gpu), FACTS)


@pytest.mark.parametrize("gpu, sm", [("v100-sxm2-16gb", "SM70"), ("t4", "SM75")])
def test_bf16_is_refused_on_volta_and_turing(gpu, sm):
    e = _est("cfdna-gen", gpu, "bf16")
    assert not e.feasible
    text = " ".join(r.text for r in e.reasons if r.code == "precision")
    assert "bf16 needs SM80+" in text and sm in text


def test_fp16_is_fine_on_v100():
    assert _est("cfdna-gen", "v100-sxm2-16gb", "fp16").feasible


def test_fp8_needs_ada_or_hopper():
    assert not _est("cfdna-gen", "a100-sxm-80gb", "fp8").feasible
    assert _est("cfdna-gen", "h100-sxm", "fp8").feasible


def test_llama3_70b_fp16_does_not_fit_24gb_and_says_by_how_much():
    e = _est("llama-3-70b", "rtx-4090", "fp16")
    assert not e.feasible
    oom = next(r for r in e.reasons if r.code == "oom")
    weights_gb = 70_553_706_496 * 2 / 1e9  # 141.1 GB of fp16 weights alone
    capacity_gb = 24 * 2**30 / 1e9  # "24 GB" of GDDR6X is 24 GiB = 25.8 GB
    assert f"has {capacity_gb:.1f} GB (24 GiB" in oom.text and f"weights {weights_gb:.2f}" in oom.text
    short = float(oom.text.split("GiB; ")[1].split(" GB short")[0])
    assert short >= weights_gb - capacity_gb


def test_rtx_5090_carries_its_pytorch_requirement():
    e = _est("llm-7b-seed002", "rtx-5090", "fp16")
    assert e.feasible
    build = [r for r in e.reasons if r.code == "pytorch_build"]
    assert build and "2.7" in build[0].text and "12.8" in build[0].text and not build[0].blocking


def test_flash_attention_2_needs_ampere():
    assert not _est("cfdna-gen", "v100-sxm2-32gb", "fp16", attention="flash-attn-2").feasible
    assert _est("cfdna-gen", "rtx-a5000", "fp16", attention="flash-attn-2").feasible


def test_volta_notes_the_cuda_13_build_drop():
    e = _est("cfdna-gen", "v100-sxm2-16gb", "fp16")
    assert any(r.code == "pytorch_build" and "CUDA 13" in r.text for r in e.reasons)


# ---------------------------------------------------------------- on a CPU device (data/cpus.yaml)

def _codes(e, blocking=None):
    return {r.code for r in e.reasons if blocking is None or r.blocking == blocking}


def test_a_cpu_estimate_says_it_runs_on_the_cpu():
    e = _est("llama-2-7b", "amd-epyc-9654", "bf16")
    assert e.feasible
    note = next(r for r in e.reasons if r.code == "device")
    assert not note.blocking and "runs on the CPU" in note.text and "96 cores" in note.text


def test_cpu_precision_follows_its_instruction_set_not_a_compute_capability():
    assert _codes(_est("cfdna-gen", "amd-epyc-9654", "bf16"), True) == set()  # AVX512-BF16
    slow = _est("cfdna-gen", "amd-epyc-9654", "fp16")  # no AVX512-FP16: runs, slowly, and says so
    assert slow.feasible and any(r.code == "precision" and "AVX512-FP16" in r.text for r in slow.reasons)
    assert _codes(_est("cfdna-gen", "intel-xeon-8480-plus", "fp16")) == {"device", "price"}  # AVX512-FP16: native
    no_int8 = _est("cfdna-gen", "amd-epyc-7763", "int8")  # Zen 3: no VNNI, no AMX
    assert not no_int8.feasible and any("VNNI" in r.text for r in no_int8.reasons if r.code == "precision")
    for precision in ("tf32", "fp8"):  # tensor-core formats: no CPU runs them
        assert "precision" in _codes(_est("cfdna-gen", "amd-ryzen-9-7950x", precision), True)
    assert all("SM" not in r.text for r in no_int8.reasons)


def test_gpu_only_attention_kernels_are_refused_on_a_cpu():
    e = _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", attention="flash-attn-2")
    assert not e.feasible and "sdpa" in next(r.text for r in e.reasons if r.code == "attention")
    for backend in ("sdpa", "manual"):
        assert "attention" not in _codes(_est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", attention=backend))


def test_kv_cache_dtype_needs_the_cpu_arithmetic():
    assert "kv_dtype" in _codes(_est("cfdna-gen", "amd-epyc-9654", "bf16", kv_dtype="fp8"), True)
    assert "kv_dtype" not in _codes(_est("cfdna-gen", "amd-epyc-7763", "fp32", kv_dtype="bf16"))  # slow, not absent


def test_gpu_build_rules_and_gpu_only_runtimes_on_a_cpu():
    e = _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16")
    assert "pytorch_build" not in _codes(e)  # the sm_120 rule is about the RTX 5090, not its host CPU
    vllm = _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", runtime="vllm")
    why = next(r.text for r in vllm.reasons if r.code == "runtime")
    assert not vllm.feasible and "vLLM does not run on a CPU" in why
    assert _est("cfdna-gen", "amd-ryzen-9-7950x", "bf16", runtime="llama.cpp").feasible


def test_a_cpu_device_is_one_host():
    e = _est("cfdna-gen", "amd-epyc-9654", "bf16", gpus=2)
    assert not e.feasible and "parallelism" in _codes(e, True)
