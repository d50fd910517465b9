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


def test_volta_notes_that_only_the_cuda_12_6_build_of_the_latest_pytorch_runs_it():
    e = _est("cfdna-gen", "v100-sxm2-16gb", "fp16")
    # PyTorch 2.14 ships cu126 (5.0 ... 9.0), cu130 and cu132 (7.5 ... 12.0): only cu126 has sm_70 (pytorch#190355)
    note = next(r.text for r in e.reasons if r.code == "pytorch_build")
    assert note.endswith("the latest, 2.14.0, as +cu126")
