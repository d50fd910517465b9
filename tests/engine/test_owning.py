"""Owning vs renting, from hand-set assumptions and a hand-set cloud price."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.owning import HOURS_PER_MONTH, break_even_hours, own_cost
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.ownership import OwnAssumptions, Owned
from planner.inputs.price_snapshot import with_custom

FACTS = load_facts()
A = OwnAssumptions(lifetime_years=5, utilization=0.5, usd_per_kwh=0.2, purchase_usd=(("rtx-a5000", 1000.0),),
                   sources=(("purchase_usd.rtx-a5000", "test price"),))


def _est(gpu="rtx-a5000", gpus=3, usd_hr=0.269):
    facts = replace(FACTS, prices=with_custom(FACTS.prices, {gpu: usd_hr}))
    plan = Plan(load_models().get("cfdna-gen"), Generate(10_000, 1, 165), "bf16", gpus=gpus, price_tier="community")
    return estimate_gpu(plan, FACTS.catalog.get(gpu), facts)


def test_three_a5000s_owned_vs_rented():
    e = _est()
    c = own_cost(e, Owned("rtx-a5000", 3), A, e.cost())
    assert c.fixed_usd_per_month == pytest.approx(3 * 1000 / (5 * 12))  # $50 a month
    assert c.power_kw == pytest.approx(3 * 230 * 0.5 / 1000)  # 0.345 kW: 230 W TDP each (data/gpus.yaml)
    assert c.energy_usd_per_h == pytest.approx(0.345 * 0.2)  # $0.069 an hour
    assert c.rent_usd_per_h == pytest.approx(3 * 0.269)  # $0.807 an hour
    assert c.break_even_h_per_month == pytest.approx(50 / (0.807 - 0.069))  # 67.75 h a month
    assert c.job_hours == pytest.approx(e.seconds / 3600)
    assert c.job_energy_usd == pytest.approx(e.seconds / 3600 * 0.069)
    assert c.job_rent_usd == pytest.approx(e.cost())  # no overheads given: compute only
    assert c.purchase_source == "test price"


def test_the_price_paid_replaces_the_listed_one():
    e = _est()
    c = own_cost(e, Owned("rtx-a5000", 3, 2400.0), A, e.cost())
    assert c.fixed_usd_per_month == pytest.approx(3 * 2400 / 60) and c.purchase_source == "the price you paid"


def test_without_a_purchase_price_there_is_no_break_even():
    e = _est("rtx-4090", 1)
    c = own_cost(e, Owned("rtx-4090", 1), A, e.cost())
    assert c.fixed_usd_per_month is None and c.break_even_h_per_month is None
    assert c.energy_usd_per_h == pytest.approx(450 * 0.5 / 1000 * 0.2)  # RTX 4090: 450 W TDP


def test_break_even_needs_rent_above_electricity():
    assert break_even_hours(100.0, 1.0, 0.5) == pytest.approx(200.0)  # 100 / (1.0 - 0.5)
    assert break_even_hours(100.0, 0.5, 0.5) is None
    assert break_even_hours(None, 1.0, 0.5) is None
    assert HOURS_PER_MONTH == pytest.approx(730.0)
