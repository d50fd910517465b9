"""Your own cards in words: the verdict on each kind, owning against renting."""

from dataclasses import replace

import pytest

from planner.engine.plan import Plan
from planner.engine.ranking import my_gpus
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.views import owning_text, ranking_table

FACTS = load_facts()


def test_my_gpus_run_the_plan_on_all_their_cards_and_say_what_owning_costs():
    from planner.inputs.ownership import OwnAssumptions, Owned
    from planner.inputs.price_snapshot import with_custom

    facts = replace(FACTS, prices=with_custom(FACTS.prices, {"rtx-a5000": 0.25}))
    plan = Plan(load_models().get("cfdna-gen"), Generate(10_000, 1, 165), "bf16", price_tier="community")
    a = OwnAssumptions(4, 1.0, 0.25, (("rtx-a5000", 1200.0),), (("purchase_usd.rtx-a5000", "test"),))
    [m] = my_gpus(plan, [Owned("rtx-a5000", 2)], facts, a, None)
    assert m.estimate.plan.gpus == 2 and m.estimate.feasible
    # $2,400 over 48 months = $50/month; 2 x 230 W x 1.0 x $0.25/kWh = $0.115/h; rent 2 x $0.25 = $0.50/h
    assert m.cost.break_even_h_per_month == pytest.approx(50 / (0.50 - 0.115))  # 129.9 h
    v = owning_text.own_verdict(m, "community")
    assert v.headline.startswith("**Your 2 × RTX A5000 24GB** · ✓ runs it") and "break-even 130 h/month" in v.cost
    assert "PyTorch" in v.needs  # the software it needs: the oldest build with SM86 kernels
    [row] = ranking_table.mine_rows([m], "generate", "s", 1.0)
    assert row["Rank"] == 0 and row["GPU"] == "★ Yours: 2 × RTX A5000 24GB" and row["Own ($/month)"] == 50
    assert row["Compute time (s)"] == m.estimate.seconds
