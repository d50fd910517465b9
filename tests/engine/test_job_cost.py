"""The whole job's billed time and cost, part by part, from hand-set assumptions."""

import math

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.job_cost import job_cost
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.job_costs import JobOverheads
from planner.inputs.jobs import Generate, Train
from planner.inputs.models import load_models

FACTS = load_facts()
OVERHEADS = JobOverheads(pod_start_s=60, image_gb=7, pull_gb_per_s=0.1, download_gb_per_s=0.1, upload_gb_per_s=0.05,
                         billing_increment_s=60, spot_interruptions_per_h=0.1, checkpoint_interval_s=1800,
                         warmup_s=(("pytorch-eager", 5.0),), sources=())


def _est(workload, tier="community", model="cfdna-gen", gpu="rtx-4090"):
    plan = Plan(load_models().get(model), workload, "bf16", price_tier=tier)
    return estimate_gpu(plan, FACTS.catalog.get(gpu), FACTS)


def test_a_short_generation_job_is_mostly_start_and_billing():
    e = _est(Generate(1000, 1, 165))
    job = job_cost(e, OVERHEADS)
    parts = job.seconds
    assert parts["start"] == pytest.approx(60 + 7 / 0.1)  # 130 s: pod start and a 7 GB image at 0.1 GB/s
    assert parts["download"] == pytest.approx(132_192_000 * 2 / 1e9 / 0.1)  # cfDNA-Gen in bf16: 0.264 GB
    assert parts["warm-up"] == 5 and parts["checkpoint upload"] == 0 and parts["spot rework"] == 0
    work = 130 + parts["download"] + 5 + e.seconds
    assert job.billed_s == math.ceil(work / 60) * 60 and parts["billing round-up"] == pytest.approx(job.billed_s - work)
    assert job.cost_usd == pytest.approx(job.billed_s / 3600 * e.price.usd_hr)
    assert job.overhead_s > e.seconds  # a job of seconds pays minutes of overhead


def test_training_uploads_its_checkpoint():
    e = _est(Train(1000, 256, 1.0))
    params = load_models().get("cfdna-gen").params
    assert job_cost(e, OVERHEADS).seconds["checkpoint upload"] == pytest.approx(params * (4 + 8) / 1e9 / 0.05)


def test_spot_adds_the_expected_rework_of_interruptions():
    e = _est(Generate(1_000_000, 1, 165), tier="spot")
    job = job_cost(e, OVERHEADS)
    parts = job.seconds
    restart = parts["start"] + parts["download"] + parts["warm-up"]
    hours = (restart + e.seconds) / 3600
    assert parts["spot rework"] == pytest.approx(0.1 * hours * (restart + min(1800, e.seconds) / 2))
    assert job_cost(e, OVERHEADS, tier="community").seconds["spot rework"] == 0


def test_no_whole_job_where_the_plan_cannot_run():
    e = _est(Generate(10, 1, 10), model="llama-3-70b", gpu="rtx-3070")
    assert not e.feasible and job_cost(e, OVERHEADS) is None
