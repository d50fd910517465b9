"""llama.cpp's own fused attention (llama.cpp-fa): runs from Volta to Blackwell under llama.cpp only, and llama.cpp
refuses FlashAttention-2 pointing to it (data/precisions.yaml, planner.engine.plan.attention_refusal)."""

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan, check_runtime
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models

FACTS = load_facts()


def _plan(attention: str, runtime: str) -> Plan:
    return Plan(load_models().get("llama-2-7b"), Generate(1, 512, 128), "fp16", attention=attention, runtime=runtime)


@pytest.mark.parametrize("gpu, sm", [("v100-sxm2-16gb", "SM70"), ("rtx-pro-6000-blackwell", "SM120")])
def test_llama_cpp_plan_with_its_own_fused_attention_runs_on_volta_and_blackwell(gpu, sm):
    # fattn.cu runs WMMA kernels on Volta and mma.sync kernels on SM 12.0: llama.cpp-fa spans SM 5.0 upward, while
    # FlashAttention-2 (SM80-SM90) runs on neither. 7B fp16 = 13.5 GB of weights fits 16 GB.
    plan = _plan("llama.cpp-fa", "llama.cpp")
    check_runtime(plan, FACTS.runtimes, FACTS.rules)
    e = estimate_gpu(plan, load_catalog().get(gpu), FACTS)
    assert e.feasible, [r.text for r in e.reasons if r.blocking]
    text = " ".join(r.text for r in e.reasons if r.code == "attention")
    assert "llama.cpp-fa" in text and sm in text


def test_pytorch_runtime_refuses_llama_cpp_attention_naming_the_field():
    with pytest.raises(ValueError, match=r"^attention: llama.cpp-fa is llama.cpp's own kernel and runtime "
                                         r"pytorch-eager does not run it"):
        check_runtime(_plan("llama.cpp-fa", "pytorch-eager"), FACTS.runtimes, FACTS.rules)


def test_llama_cpp_refuses_flash_attn_2_pointing_to_its_own_kernel():
    with pytest.raises(ValueError, match=r"runtime llama.cpp runs its own fused attention, not flash-attn-2: "
                                         r"choose llama.cpp-fa"):
        check_runtime(_plan("flash-attn-2", "llama.cpp"), FACTS.runtimes, FACTS.rules)


@pytest.mark.parametrize("attention", ["manual", "sdpa"])
def test_llama_cpp_keeps_unfused_and_default_choices(attention):
    check_runtime(_plan(attention, "llama.cpp"), FACTS.runtimes, FACTS.rules)  # no ValueError


def test_every_runtime_named_by_an_attention_backend_exists():
    known = {r.id for r in FACTS.runtimes.runtimes}
    named = {rt for b in FACTS.rules.attention_backends for rt in b.runtimes}
    assert named == {"llama.cpp"} and named <= known
    fa = FACTS.rules.attention("llama.cpp-fa")
    assert not fa.scores_materialized and fa.min_sm == (5, 0) and fa.max_sm is None
