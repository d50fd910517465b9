"""The ranking: one objective (the whole job's bill), the order, the call-outs, your own cards, the batch sweep."""

from dataclasses import replace

import pytest

from planner.engine import ranking
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.job_costs import load_job_costs
from planner.inputs.jobs import Generate, Train
from planner.inputs.models import load_models
from tests.fixtures.plans import ranking_of

FACTS = load_facts()
OVERHEADS = load_job_costs(runtime_ids=tuple(r.id for r in FACTS.runtimes.runtimes))



def test_best_value_is_the_fastest_within_a_quarter_of_the_cheapest_bill():
    pts = [("fast", 1, 10), ("middle", 2, 1.25), ("cheap", 10, 1)]  # $1.25 is exactly 25 % above the cheapest
    assert ranking.best_value(pts) == "middle"
    assert ranking.best_value([("fast", 1, 7), ("cheap", 8, 1)]) == "cheap"  # 8x faster does not buy a 7x bill
    assert ranking.best_value([]) is None


@pytest.mark.parametrize("max_batch, limit, extra, expected", [
    (5, 100, [], [1, 2, 4, 5, 6, 8]),        # powers of two up to 2 x 5, the largest fit and one past it
    (0, 100, [], [1, 2]),                    # nothing fits: still show batch 1 (and 2) as out of memory
    (64, 10, [3], [1, 2, 3, 4, 8, 10]),       # never above the items there are; the user's batch included
])
def test_batch_grid(max_batch, limit, extra, expected):
    assert ranking.batch_grid(max_batch, limit, extra) == expected


def test_callouts_without_overheads_pick_by_compute_cost():
    ests = ranking_of()
    ok = [e for e in ests if e.feasible and e.seconds and e.cost() is not None]
    found = {c.label: c.estimate.gpu.id for c in ranking.callouts(ranking.rank(ests, None))}
    assert found["Fastest"] == min(ok, key=lambda e: e.seconds).gpu.id
    assert found["Cheapest"] == min(ok, key=lambda e: e.cost()).gpu.id
    cheapest = min(e.cost() for e in ok)
    assert found["Best value"] == min((e for e in ok if e.cost() <= 1.25 * cheapest), key=lambda e: e.seconds).gpu.id
    assert ranking.callouts(ranking.rank([e for e in ests if not e.feasible], None)) == []


def _as(e, seconds, cost_usd, feasible=True, reasons=()):
    """A hand-built case: a real GPU's estimate with the time (s) and cost ($, the plan's tier) given here."""
    return replace(e, seconds=seconds, cost_usd={e.plan.price_tier: cost_usd}, feasible=feasible, reasons=reasons)


def test_callouts_on_a_hand_built_case():
    base = {e.gpu.id: e for e in ranking_of()}
    a = _as(base["h100-sxm"], 10.0, 5.0)   # fastest: 10 s; time x cost 50
    b = _as(base["rtx-4090"], 20.0, 1.0)   # cheapest: $1; time x cost 20
    c = _as(base["a100-sxm-80gb"], 12.0, 1.2)  # 20 % above the cheapest bill and faster: the best value
    blocked = _as(base["rtx-3090"], 1.0, 0.01, feasible=False)  # faster and cheaper, but it can't run the plan
    unpriced = _as(base["rtx-4070-ti-super"], 2.0, None)  # runs, no price: no cost to compare
    found = {x.label: x.estimate.gpu.id for x in ranking.callouts(ranking.rank([blocked, unpriced, a, b, c], None))}
    assert found == {"Fastest": "h100-sxm", "Cheapest": "rtx-4090", "Best value": "a100-sxm-80gb"}
    tie = _as(base["rtx-4090"], 10.0, 5.0)  # same time and cost as a: the lower id wins, whatever the order
    assert {x.label: x.estimate.gpu.id for x in ranking.callouts(ranking.rank([tie, a], None))}["Fastest"] == "h100-sxm"


def test_callouts_consider_only_the_rows_shown():
    base = {e.gpu.id: e for e in ranking_of()}
    a, b = _as(base["h100-sxm"], 10.0, 5.0), _as(base["rtx-4090"], 20.0, 1.0)
    r = ranking.rank([a, b], None)
    assert {x.estimate.gpu.id for x in ranking.callouts(r, [a])} == {"h100-sxm"}  # the 4090 is filtered out


def test_the_ranking_and_the_cheapest_follow_the_whole_jobs_bill():
    r = ranking.rank(ranking_of(workload=Generate(1000, 1, 165)), OVERHEADS)  # a job of seconds
    bills = [r.bill_usd(e) for e in r.estimates if e.feasible]
    priced = [b for b in bills if b is not None]
    assert priced == sorted(priced) and bills[:len(priced)] == priced  # priced GPUs first, cheapest bill first
    cheapest = next(c for c in ranking.callouts(r) if c.label == "Cheapest")
    assert r.bill_usd(cheapest.estimate) == min(priced)
    # minutes of pod overhead against seconds of compute: every bill is at least a minute of the GPU's price
    assert all(r.bill_usd(e) >= e.price.usd_hr / 60 for e in r.estimates if e.feasible and e.price)


def test_the_bill_is_the_whole_jobs_billed_hours_at_the_price():
    r = ranking.rank(ranking_of(workload=Generate(1000, 1, 165)), OVERHEADS)
    e = next(e for e in r.estimates if e.feasible and e.price)
    job = r.job(e)
    # billed seconds / 3600 x GPUs x $/GPU-hour: what job_cost documents, computed once and carried by the ranking
    assert r.bill_usd(e) == pytest.approx(job.billed_s / 3600 * e.plan.gpus * e.price.usd_hr)
    assert job.billed_s > e.seconds  # start, download and warm-up come on top of the compute
    blocked = next(e for e in r.estimates if not e.feasible)
    assert r.job(blocked) is None and r.bill_usd(blocked) is None


def test_the_batch_sweep_never_goes_past_the_items_each_gpu_batches_per_epoch():
    # 100 samples a epoch for 3 epochs: the engine batches at most 100 (an epoch's samples), so the sweep stops there
    plan = Plan(load_models().get("gpt2-124m"), Train(100, 64, 3.0), "bf16", price_tier="community")
    points = ranking.batch_sweep(plan, [FACTS.catalog.get("h100-sxm")], FACTS)
    assert max(p.batch for p in points) == 100 and {p.items_per_gpu for p in points} == {100}
    assert all(p.estimate.batch == p.batch for p in points)  # the batch swept is the batch estimated
