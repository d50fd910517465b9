"""Feasibility reasons: precision vs compute capability, memory with numbers, PyTorch builds, attention."""

import pytest

from planner.inputs.catalog import load_catalog
from planner.engine.plan import Plan
from planner.engine.estimate import estimate_gpu
from planner.inputs.models import load_models
from planner.inputs.jobs import Generate, Infer
from planner.inputs.facts import load_facts

FACTS = load_facts()


def _est(model, gpu, precision="bf16", workload=None, **kw):
    plan = Plan(load_models().get(model), workload or Generate(1, 128, 128), precision, **kw)
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
    usable_gb = 0.90 * capacity_gb  # the default target: 90 % of what the card reports (no ECC reserve on GeForce)
    assert f"usable {usable_gb:.1f} GB (90% of the {capacity_gb:.1f} GB it reports (24 GiB)" in oom.text
    assert f"weights {weights_gb:.2f}" in oom.text
    short = float(oom.text.split(" GB short")[0].rsplit("; ", 1)[1])
    assert short >= weights_gb - usable_gb


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


def test_tf32_on_a_gpu_without_tf32_tensor_cores_runs_in_fp32_with_a_note():
    """PyTorch applies allow_tf32 / float32_matmul_precision('medium') only on Ampere and later (PyTorch docs, CUDA
    semantics): SEA's setting speeds up the A5000's matmuls and leaves the V100's in fp32."""
    v100_tf32 = _est("sea", "v100-sxm2-32gb", "tf32", workload=Infer(10, 100))
    v100_fp32 = _est("sea", "v100-sxm2-32gb", "fp32", workload=Infer(10, 100))
    assert v100_tf32.feasible and v100_tf32.seconds == pytest.approx(v100_fp32.seconds)
    note = next(r for r in v100_tf32.reasons if r.code == "precision")
    assert not note.blocking and "runs them in fp32" in note.text
    a5000 = _est("sea", "rtx-a5000", "tf32", workload=Infer(10, 100))
    matmuls = next(g for ph in a5000.phases for g in ph.groups if g.name.startswith("matmuls"))
    assert matmuls.peak_tflops == 55.6  # the A5000's dense TF32 rate (data/gpus.yaml), not its 27.8 fp32
    assert not any(r.code == "precision" for r in a5000.reasons)
