"""Deployment search: the cheapest replicas x GPU x TP x runtime meeting a p95 SLO, runner-ups and why."""

import pytest

from planner.engine.deployment import search
from planner.engine.plan import Plan
from planner.engine.serving_sim import Requests, Slo
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import load_schedulers

FACTS = load_facts()
PLAN = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm")
REQS = Requests((512,), (256,))


def _gpus(*ids):
    return [FACTS.catalog.get(g) for g in ids]


def test_the_best_meets_the_slo_and_no_runner_up_that_meets_it_is_cheaper():
    dep = search(PLAN, FACTS, load_schedulers(), _gpus("h100-sxm", "a100-sxm-80gb", "l40s"), REQS, 20.0,
                 Slo(0.5, 0.05))
    best = dep.best
    assert best is not None and best.point.meets_slo
    assert best.point.ttft[95] <= 0.5 and best.point.tpot[95] <= 0.05
    assert best.replicas * best.point.rate == pytest.approx(20.0)  # the rate is split evenly over the replicas
    assert best.usd_per_hour == pytest.approx(best.replicas * best.tp * FACTS.prices.for_gpu(best.gpu)["secure"].usd_hr)
    for c in dep.runner_ups:
        assert c.why  # every runner-up says why it loses
        if c.usd_per_hour is not None and c.point is not None and c.point.meets_slo:
            assert c.usd_per_hour >= best.usd_per_hour


def test_an_slo_below_one_step_is_answered_per_candidate():
    dep = search(PLAN, FACTS, load_schedulers(), _gpus("h100-sxm"), REQS, 5.0, Slo(0.5, 0.0005))
    assert dep.best is None
    assert any("one decode step alone takes" in c.why for c in dep.runner_ups)


def test_a_model_that_does_not_fit_one_gpu_is_left_out_with_its_reason():
    big = Plan(load_models().get("llama-3-70b"), Generate(1, 512, 256), "bf16", runtime="vllm")
    dep = search(big, FACTS, load_schedulers(), _gpus("l40s"), REQS, 1.0, Slo(2.0, 0.2), runtimes=("vllm",),
                 tps=(1,))
    assert dep.best is None
    assert "GB" in dep.left_out[0].why  # 140 GB of bf16 weights on a 48 GB card
