"""The Serving tab's table: each row meets the latency target it reports."""

from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.views import tab_tables

FACTS = load_facts()


def test_serving_rows_meet_the_target_they_report():
    from planner.engine.serving import serving_point
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm",
                price_tier="community")
    gpus = [FACTS.catalog.get("h100-sxm"), FACTS.catalog.get("rtx-4090")]
    rows = tab_tables.serving_rows(plan, gpus, FACTS, 512, 256, None, 0.03)
    for row, gpu in zip(rows, gpus):
        assert row["gpu_id"] == gpu.id and row["TPOT at max (ms)"] <= 30
        more = serving_point(plan, gpu, FACTS, row["Max concurrency in target"] + 1, 512, 256)
        assert more.tpot_s > 0.03 or not more.fits


def test_serving_leaves_out_a_cpu_the_runtime_cannot_run_on():
    plan = Plan(load_models().get("cfdna-gen"), Generate(1, 64, 64), "bf16", runtime="vllm")
    gpus = [FACTS.catalog.get("h100-sxm"), FACTS.catalog.get("amd-epyc-9654")]
    assert [r["gpu_id"] for r in tab_tables.serving_rows(plan, gpus, FACTS, 64, 64, None, None)] == ["h100-sxm"]
