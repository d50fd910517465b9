"""The answer at the top of the page: a named GPU's verdict, why others can't run the plan, the profile's
cross-check."""

from dataclasses import replace

from planner.engine.estimate import estimate_all
from planner.engine.feasibility import Reason
from planner.engine.plan import Plan
from planner.engine.ranking import rank
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.views import answers

FACTS = load_facts()


def _ranked(**kw):
    plan = Plan(load_models().get("cfdna-gen"), Generate(10_000, 1, 165), "bf16", price_tier="community", **kw)
    return rank(estimate_all(plan, FACTS), None)


def test_a_gpu_that_runs_it_gets_its_rank_time_and_memory_against_the_card():
    r = _ranked()
    e = r.estimates[2]
    text = answers.verdict(e, r)
    assert "✓ runs it · rank 3 of " in text and f"batch {e.batch:,}" in text
    assert f"{e.memory.total_gb:.3g} of {e.gpu.vram_gb:.3g} GB" in text


def test_a_gpu_that_cannot_run_it_says_every_blocking_reason():
    r = _ranked()
    e = replace(r.estimates[0], feasible=False,
                reasons=(Reason("oom", True, "too big"), Reason("precision", True, "no bf16"),
                         Reason("x", False, "a note")))
    text = answers.verdict(e, r)
    assert "✗ can't run this plan: too big; no bf16." in text and "a note" not in text


def test_the_blocked_summary_groups_by_reason_and_counts_the_rest():
    base = _ranked().estimates
    blocked = [replace(e, feasible=False, reasons=(Reason("oom", True, "out of memory here"),)) for e in base[:5]]
    blocked += [replace(base[5], feasible=False, reasons=(Reason("attention", True, "no kernel"),))]
    text = answers.blocked_summary(blocked + list(base[6:8]))
    assert text.startswith("**6 GPUs can't run this plan**")
    assert "and 2 more: out of memory here" in text and ": no kernel" in text  # 5 GPUs: 3 named, 2 counted
    assert answers.blocked_summary(base[6:8]) is None


def test_a_profile_that_disagrees_with_its_source_says_so_and_one_that_agrees_says_nothing():
    models = load_models()
    assert "120M" in answers.cross_check(models.get("cfdna-gen"))
    assert answers.cross_check(models.get("gpt2-124m")) is None
