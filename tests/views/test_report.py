"""Rows for JSON/CSV: every figure present, and consistent with the estimate it came from."""

import pytest

from planner.engine.plan import Plan
from planner.engine.estimate import estimate_all
from planner.inputs.models import load_models
from planner.views.report import estimate_row, flat_row
from planner.inputs.jobs import Generate
from planner.inputs.facts import load_facts

FACTS = load_facts()


def _est(gpu="rtx-4090", precision="bf16"):
    plan = Plan(load_models().get("cfdna-gen"), Generate(10_000, 1, 165), precision, price_tier="community")
    return estimate_all(plan, FACTS, gpu_names=[gpu])[0]


def test_json_row_breakdown_adds_up_to_the_total():
    e = _est()
    row = estimate_row(e)
    assert sum(row["step_time_breakdown_s"].values()) == pytest.approx(row["seconds"], rel=1e-3)
    assert sum(p["seconds"] for p in row["phases"]) == pytest.approx(row["seconds"], rel=1e-3)
    assert row["memory_gb"]["total"] == pytest.approx(sum(v for k, v in row["memory_gb"].items() if k != "total"),
                                                     rel=1e-3)
    low, high = row["seconds_range"]
    assert low <= row["seconds"] <= high


def test_infeasible_rows_have_reasons_and_no_time():
    row = estimate_row(_est("v100-sxm2-16gb", "bf16"))
    assert not row["feasible"] and row["seconds"] is None and row["seconds_range"] is None
    assert any(r["blocking"] and "SM80" in r["text"] for r in row["reasons"])


def test_flat_row_cost_matches_the_tier_price():
    e = _est()
    row = flat_row(e)
    assert row["cost_usd_community"] == pytest.approx(row["seconds"] / 3600 * row["usd_per_hr"], rel=1e-3)
