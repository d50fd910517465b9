"""Megatron-LM as of 2021 (data/runtimes.yaml megatron-lm-2021, NVIDIA/Megatron-LM @50a4b5fa02): the gradient
all-reduce runs after the whole backward (training.py train_step: allreduce_gradients after forward_backward_func)
and the tensor-parallel all-reduces block (mpu/mappings.py _reduce), so the same bytes as Megatron Core's profile
are sent and none hides under compute; made-up plans, the expected figures derived by hand."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.layouts import Layout
from planner.inputs.models import load_models

FACTS = load_facts()
MODEL = load_models().get("llama-3-8b")
H100 = FACTS.catalog.get("h100-sxm")


def _phases(runtime: str, plan: Plan):
    e = estimate_gpu(replace(plan, runtime=runtime), H100, FACTS)
    return e, {p.name.split(" (")[0]: p for p in e.phases}


def test_the_2021_schedule_declares_no_overlap():
    t = FACTS.runtimes.get("megatron-lm-2021").training
    assert t.overlap_fraction("ddp", 32) == 0.0 and t.overlap_fraction("zero1", 32) == 0.0
    assert t.comm_overlap == ()
    assert set(t.layouts) == {"ddp", "zero1", "tp", "pp"}  # no distributed optimizer of its own, no SP/CP


def test_ddp_all_reduce_is_exposed_whole():
    # GPT-2 124M, DP 8 over one node, 4 micro-batches a step: the ring all-reduce sends 2 x 7/8 of the bf16
    # gradients (2 B each) once a step; Megatron Core's profile hides all but one layer of it, the 2021 code none
    gpt2 = load_models().get("gpt2-124m")
    job = Train(32, 1024, 1.0, sharding="ddp", global_batch=32)
    plan = Plan(gpt2, job, "bf16", None, "sdpa-flash", "megatron-lm", 1, 8)
    old_e, old = _phases("megatron-lm-2021", plan)
    new_e, new = _phases("megatron-lm", plan)
    step = "train micro-step"
    sent = [c for p, _ in old_e.passes if p.name == step for c in p.comm]
    assert sent == [c for p, _ in new_e.passes if p.name == step for c in p.comm]  # the same collective
    assert old[step].comm_hidden_s == 0.0
    # the same bytes: what the newer schedule hides (all but 1 of 12 layers' share), the 2021 one pays
    assert new[step].comm_hidden_s == pytest.approx(11 / 12 * old[step].comm_s, rel=1e-9)
    assert old[step].comm_s == pytest.approx(new[step].comm_s + new[step].comm_hidden_s, rel=1e-9)
    assert old_e.seconds > new_e.seconds


def test_tensor_parallel_all_reduces_block():
    # TP 4 x DP 2 on 8 GPUs: Megatron Core's recipe overlaps 3 of 4 reduce-scatter chunks (tp_hidden_share); the
    # 2021 code's blocking all-reduce hides none of the same collective
    job = Train(16, 4096, 1.0, sharding="ddp", layout=Layout(tp=4), global_batch=16)
    plan = Plan(MODEL, job, "bf16", None, "sdpa-flash", "megatron-lm", 1, 8)
    _, old = _phases("megatron-lm-2021", plan)
    _, new = _phases("megatron-lm", plan)
    name = "tensor-parallel collectives"
    assert old[name].comm_hidden_s == 0.0
    assert new[name].comm_hidden_s == pytest.approx(3 / 4 * old[name].comm_s, rel=1e-9)
