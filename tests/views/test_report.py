"""Rows for JSON/CSV: every figure present, and consistent with the estimate it came from."""

import pytest

from planner.engine.plan import Plan
from planner.engine.estimate import estimate_all
from planner.inputs.models import load_models
from planner.views.report import estimate_row, flat_row
from planner.inputs.jobs import Generate
from planner.inputs.facts import load_facts

FACTS = load_facts()


def _est(gpu="rtx-4090", precision="bf16", runtime="pytorch-eager"):
    plan = Plan(load_models().get("cfdna-gen"), Generate(10_000, 1, 165), precision, price_tier="community",
                runtime=runtime)
    return estimate_all(plan, FACTS, gpu_names=[gpu])[0]


def test_json_row_breakdown_adds_up_to_the_total():
    e = _est()
    row = estimate_row(e)
    assert sum(row["step_time_breakdown_s"].values()) == pytest.approx(row["seconds"], rel=1e-3)
    assert sum(p["seconds"] for p in row["phases"]) == pytest.approx(row["seconds"], rel=1e-3)
    assert row["memory_gb"]["total"] == pytest.approx(sum(v for k, v in row["memory_gb"].items() if k != "total"),
                                                     rel=1e-3)
    assert row["seconds_range"] is not None and row["seconds_range_note"] is None  # published eager batched decode
    # MLC LLM's published rows are batch-1 decode only: no batched row of its own, so the regime's wide range, said so
    unmeasured = estimate_row(_est(runtime="mlc-llm"))
    low, high = unmeasured["seconds_range"]
    note = unmeasured["seconds_range_note"]
    assert low <= unmeasured["seconds"] <= high and note.startswith("widened") and "mlc-llm" in note
    assert high / low > (row["seconds_range"][1] / row["seconds_range"][0])  # wider than a measured runtime's
    # vLLM's batched decode has one published row from a source its profile was not drawn from (ninehills, 4 users)
    assert estimate_row(_est(runtime="vllm"))["seconds_range"] is not None
    # TensorRT-LLM's batched rows now include Azure's AI-benchmarking-guide, a source its profile was not drawn from
    # (NVIDIA's own tables back no range): a range of its own, no note
    trt = estimate_row(_est(runtime="tensorrt-llm"))
    low, high = trt["seconds_range"]
    assert low <= trt["seconds"] <= high and trt["seconds_range_note"] is None
    # FasterTransformer's batched rows (its GPT guide) and LMDeploy's TurboMind rows predict each other: a range
    batched = estimate_row(_est(runtime="fastertransformer"))
    low, high = batched["seconds_range"]
    assert low <= batched["seconds"] <= high and batched["seconds_range_note"] is None


def test_infeasible_rows_have_reasons_and_no_time():
    row = estimate_row(_est("v100-sxm2-16gb", "bf16"))
    assert not row["feasible"] and row["seconds"] is None and row["seconds_range"] is None
    assert any(r["blocking"] and "SM80" in r["text"] for r in row["reasons"])


def test_flat_row_cost_matches_the_tier_price():
    e = _est()
    row = flat_row(e)
    assert row["cost_usd_community"] == pytest.approx(row["seconds"] / 3600 * row["usd_per_hr"], rel=1e-3)


def test_rows_carry_the_price_date_its_age_and_the_stale_flag():
    from datetime import timedelta
    e = _est("rtx-a5000")
    day = e.price.date
    fresh = flat_row(e, today=day + timedelta(days=90))
    old = flat_row(e, today=day + timedelta(days=91))
    assert (fresh["price_date"], fresh["price_age_days"], fresh["price_stale"]) == (day.isoformat(), 90, False)
    assert (old["price_age_days"], old["price_stale"]) == (91, True)
    assert flat_row(e, today=day + timedelta(days=91), stale_after_days=365)["price_stale"] is False
    nested = estimate_row(e, today=day + timedelta(days=91))
    assert nested["price_age_days"]["community"] == 91 and nested["price_stale"]["community"] is True


def test_a_gpu_that_cannot_run_the_plan_has_the_same_columns_and_the_table_prints():
    from planner.engine.ranking import rank
    from planner.inputs.job_costs import load_job_costs
    from planner.views.report import text_table
    overheads = load_job_costs(runtime_ids=tuple(r.id for r in FACTS.runtimes.runtimes))
    runs, blocked = _est("rtx-4090"), _est("v100-sxm2-16gb")
    ranked = rank([runs, blocked], overheads)
    ok, no = flat_row(runs, ranked), flat_row(blocked, ranked)
    assert list(ok) == list(no) and no["job_seconds"] is None and no["job_cost_usd"] is None
    assert "v100-sxm2-16gb" in text_table([ok, no])


def test_price_rows_give_each_tiers_age():
    from datetime import timedelta
    from planner.inputs.price_snapshot import snapshot_table
    from planner.views.report import price_rows
    table = snapshot_table(FACTS.catalog)
    p = table.prices["rtx-a5000"]["community"]
    row = next(r for r in price_rows(table, p.date + timedelta(days=7)) if r["gpu"] == "rtx-a5000")
    assert row["community_age_days"] == 7 and row["community_usd_hr"] == p.usd_hr


def _loso(rid: str, regime: str, metric: str, measured: float, predicted: float | None, independent: bool = True):
    """A leave-one-source-out row scored by hand: error on the row's own metric, as validation.evaluate_row gives."""
    from planner.validation.loso import LosoRow
    from planner.validation.measured import RowResult, load_measurements
    err = None if predicted is None else (predicted - measured) / measured * 100
    res = RowResult(rid, "h100-sxm", "hbm", "llama-3-8b", regime, "vllm", "vllm", "fp16", 1, metric, measured,
                    predicted, err, "test", "", "lab/x:y")
    return LosoRow(load_measurements()[0], res, "lab/x", independent, res)


def test_loso_rows_list_each_regime_worst_first_with_the_bias_on_speed():
    from planner.views.report import loso_rows
    held = [_loso("b1-small", "decode, batch 1", "tokens_per_s", 100.0, 95.0),
            _loso("train-slow", "train", "step_seconds", 10.0, 8.0),  # 8 s for 10: 20 % short, 25 % faster
            _loso("b1-big", "decode, batch 1", "tokens_per_s", 100.0, 130.0, independent=False),
            _loso("unscored", "prefill", "tokens_per_s", 100.0, None)]
    rows = {r["row"]: r for r in loso_rows(held)}
    assert [r["row"] for r in loso_rows(held)] == ["b1-big", "b1-small", "train-slow"]  # REGIMES order, worst first
    assert rows["train-slow"]["error_pct"] == -20.0 and rows["train-slow"]["speed_bias_pct"] == 25.0
    assert rows["b1-small"]["error_pct"] == -5.0 and rows["b1-small"]["speed_bias_pct"] == -5.0
    assert rows["b1-big"]["set"] == "no other source" and rows["b1-small"]["set"] == "leave-one-source-out"


def test_the_narrow_table_fits_its_width_and_keeps_what_decides_a_rental():
    from planner.views.report import NARROW_WIDTH, narrow, text_table
    rows = [{"gpu_id": "rtx-4090", "gpu": "NVIDIA GeForce RTX 4090 24GB", "feasible": True, "batch": 8, "seconds": 1.5,
             "items_per_s": 3.0, "tokens_per_s": 400.0, "job_cost_usd": 0.01, "memory_gb": 20.0, "vram_gb": 25.8,
             "usd_per_hr": 0.69, "reasons": "x" * 300}]
    table = text_table(narrow(rows))
    assert max(len(line) for line in table.splitlines()) <= NARROW_WIDTH
    header = table.splitlines()[0].split()
    assert header == ["gpu_id", "feasible", "batch", "seconds", "job_cost_usd", "tokens_per_s", "memory_gb", "vram_gb",
                      "reasons"]  # tokens/s replaces items/s; the name, price and the rest wait for --wide
    assert table.splitlines()[2].rstrip().endswith("x…")  # the reasons, cut to the room left


def test_json_groups_give_the_sustained_ceiling_and_the_burst_one_it_came_from():
    """H200 SXM bf16: mamf-finder's power-saturated 708.5 TFLOPS timed, the 794.5 burst ceiling beside it
    (data/gpus.yaml); an RTX 4090's published figure is no burst: no second figure."""
    groups = [g for p in estimate_row(_est(gpu="h200-sxm"))["phases"] for g in p["groups"]]
    linear = next(g for g in groups if g["name"] == "linear layers")
    assert (linear["ceiling_tflops"], linear["ceiling_burst_tflops"]) == (708.5, 794.5)
    assert all(g["ceiling_burst_tflops"] is None for p in estimate_row(_est())["phases"] for g in p["groups"])
