"""The ranking table without Streamlit: filters, ranking rows, call-outs, price ages, the no-GPU message."""

from dataclasses import replace

import pytest

from planner.engine.feasibility import Reason
from planner.engine.ranking import callouts, rank
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Infer, Train
from planner.views import ranking_table
from tests.fixtures.plans import ranking_of

FACTS = load_facts()



def test_the_vram_filter_compares_decimal_gb_as_the_table_shows():
    ests = ranking_of()
    ids = lambda f: {e.gpu.id for e in ranking_table.filtered(ests, f)}  # noqa: E731
    # an RTX 4090 holds 24 GiB = 24 x 1.0737 = 25.77 GB: a 25 GB minimum keeps it, a 26 GB minimum hides it
    assert "rtx-4090" in ids(ranking_table.Filters(min_vram_gb=25.0))
    assert "rtx-4090" not in ids(ranking_table.Filters(min_vram_gb=26.0))


def test_vendor_price_and_feasibility_filters():
    ests = ranking_of(precision="fp8")  # fp8 needs SM89+: older GPUs can't run it
    amd = ranking_table.filtered(ests, ranking_table.Filters(vendor="AMD"))
    assert amd and all(e.gpu.vendor == "AMD" for e in amd)
    runs = ranking_table.filtered(ests, ranking_table.Filters(feasible_only=True))
    assert runs and all(e.feasible for e in runs) and len(runs) < len(ests)
    cheap = ranking_table.filtered(ests, ranking_table.Filters(max_usd_hr=0.5))
    assert cheap and all(e.price is not None and e.price.usd_hr <= 0.5 for e in cheap)
    priced = ranking_table.filtered(ests, ranking_table.Filters(priced_only=True))
    assert all(e.price is not None for e in priced)


def test_ranking_rows_are_named_columns_with_capacity_and_use_in_one_unit():
    ests = ranking_of()
    rows, unit, rate_name = ranking_table.ranking_rows(ests, rank(ests, None), "generate", {}, {})
    row = next(r for r in rows if r["gpu_id"] == "rtx-4090")
    e = next(e for e in ests if e.gpu.id == "rtx-4090")
    assert row["VRAM (GB)"] == pytest.approx(24 * 2**30 / 1e9)
    assert row["Usable (GB)"] == pytest.approx(0.90 * 24 * 2**30 / 1e9)  # the default target of 24 GiB
    assert row["Memory used"] == pytest.approx(row["Memory (GB)"] / row["VRAM (GB)"])  # against the card: auto ~ 90 %
    assert rate_name == "tokens/s" and row["Throughput (tokens/s)"] == e.tokens_per_s
    assert row[f"Compute time ({unit})"] is not None and [r["Rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert "Likely range" not in " ".join(row)  # no band column without bands


def test_the_ranking_shows_rank_and_name_first_and_hides_the_id():
    rows, unit, rate_name = ranking_table.ranking_rows(ranking_of(), rank(ranking_of(), None), "generate", {}, {})
    order = ranking_table.ranking_order(rows[0], unit, rate_name, "generate")
    assert order[:3] == ["Rank", "GPU", "Runs?"] and "gpu_id" not in order
    assert set(order) == set(rows[0]) - {"gpu_id"}  # every other column is shown
    assert order.index(f"Compute time ({unit})") < order.index("Why / notes")
    assert ranking_table.ranking_order(["Price source", "gpu_id", "Rank"], "h", "tokens/s", "generate") == \
        ["Rank", "Price source"]  # only the columns present, in the page's order


def test_a_formula_model_is_counted_in_samples():
    ests = ranking_of("sea", Infer(100, 200), precision="fp32")
    rows, _, rate_name = ranking_table.ranking_rows(ests, rank(ests, None), "infer", {}, {})
    assert rate_name == "samples/s" and "Samples/s" not in rows[0]


def _as(e, seconds, cost_usd, feasible=True, reasons=()):
    """A hand-built case: a real GPU's estimate with the time (s) and cost ($, the plan's tier) given here."""
    return replace(e, seconds=seconds, cost_usd={e.plan.price_tier: cost_usd}, feasible=feasible, reasons=reasons)


def test_the_reason_counts_on_a_hand_built_case():
    base = [e for e in ranking_of() if e.gpu.id in ("h100-sxm", "rtx-4090", "rtx-3090")]
    oom, prec = Reason("oom", True, "needs 90 GB"), Reason("precision", True, "fp8 needs SM89+")
    note = Reason("parallelism", False, "data parallel")  # a note blocks nothing: not counted
    shown = [_as(base[0], None, None, False, (oom, note)), _as(base[1], None, None, False, (oom, prec)),
             _as(base[2], None, None, False, (oom,))]
    message = ranking_table.nothing_runs_message(shown, shown)
    assert "Most common reasons: oom (3 GPUs), precision (1 GPU)." in message and "parallelism" not in message


def test_filters_hiding_only_gpus_that_cannot_run_it_say_so():
    blocked = [_as(e, None, None, False, (Reason("oom", True, "x"),)) for e in ranking_of()[:2]]
    message = ranking_table.nothing_runs_message([], blocked)
    assert message.startswith("The filters hide every GPU") and "none of them can run this plan" in message
    assert "Most common reasons" not in message


def test_when_nothing_runs_the_message_counts_the_reasons_or_blames_the_filters():
    ests = ranking_of("llama-3-70b", Generate(10, 16, 16), precision="fp32")  # 280 GB of fp32 weights: OOM everywhere
    assert not any(e.feasible for e in ests)
    message = ranking_table.nothing_runs_message(ests, ests)
    assert message.startswith("No GPU in the list can run this plan") and f"oom ({len(ests)} GPUs)" in message
    fits = ranking_of()
    assert ranking_table.nothing_runs_message(fits, fits) is None
    hidden = ranking_table.nothing_runs_message([], fits)
    assert "filters hide every GPU" in hidden and "loosen the filters" in hidden


def test_extra_export_columns_round_the_band():
    e = next(e for e in ranking_of() if e.gpu.id == "h100-sxm")
    extra = ranking_table.extra_columns([e], {}, {"h100-sxm": (12.3456789, 98.7654321)})
    assert extra == {"h100-sxm": {"seconds_low": 12.35, "seconds_high": 98.77}}


def test_a_price_shows_its_age_and_a_stale_flag():
    from datetime import date

    from planner.inputs.catalog import Price
    today = date(2026, 11, 22)
    old = Price(0.16, date(2025, 6, 21), "third-party dump")  # 365 days to 2026-06-21, then 9+31+31+30+31+22 = 154
    assert ranking_table.price_age(old, today) == "⚠ 519 d (2025-06-21)"
    assert ranking_table.price_age(Price(0.26, date(2026, 11, 9), "RunPod"), today) == "13 d (2026-11-09)"
    assert ranking_table.price_age(old, today, stale_after_days=600) == "519 d (2025-06-21)"
    assert ranking_table.price_age(Price(1.0, None, "?"), today) == "undated ⚠"
    assert ranking_table.price_age(Price(0.3, today, "entered by you", "custom"), today) == "yours"


def test_the_caption_names_the_oldest_and_newest_price_and_counts_stale_ones():
    from datetime import date
    ests = ranking_of()
    today = date(2026, 11, 22)
    dates = ranking_table.price_dates(ests, today)
    priced = [e.price for e in ests if e.price is not None]
    assert dates.priced == len(priced) and dates.oldest == min(p.date for p in priced)
    assert dates.stale == sum((today - p.date).days > 90 for p in priced)
    assert f"{dates.stale} of {dates.priced} are older than 90 days" in dates.sentence()


def test_the_cheapest_callout_says_when_it_rests_on_a_stale_price():
    from datetime import date
    ranked = rank(ranking_of(), None)
    cheapest = next(c for c in callouts(ranked) if c.label == "Cheapest")
    line = ranking_table.callout_line(cheapest, ranked, 1, date(2026, 11, 22))
    age = (date(2026, 11, 22) - cheapest.estimate.price.date).days
    assert ("rests on a price from" in line) == (age > 90)


def test_a_callout_beyond_one_node_names_the_providers_with_clusters():
    from datetime import date
    ranked = rank(ranking_of(workload=Train(1_000, 256, 1), gpus=64), None)
    line_of = {c.estimate.gpu.id: ranking_table.callout_line(c, ranked, 64, date(2026, 11, 22))
               for c in callouts(ranked)}
    assert line_of
    for gpu, line in line_of.items():
        # RunPod's Instant Clusters (16-256 GPUs) rent H100 SXM, H200, B200 and A100 SXM 80GB (data/clusters.yaml)
        assert ("clusters of 64 from runpod" in line) == (gpu in ("h100-sxm", "h200-sxm", "b200", "a100-sxm-80gb"))
        assert "clusters of 64 from" in line or "no provider's cluster offer of 64" in line


def test_training_rows_show_mfu_and_the_cost_of_a_billion_tokens_after_throughput():
    ests = ranking_of(workload=Train(1_000, 256, 1))
    rows, unit, rate_name = ranking_table.ranking_rows(ests, rank(ests, None), "train", {}, {})
    h100 = next(r for r in rows if r["gpu_id"] == "h100-sxm")
    e = next(e for e in ests if e.gpu.id == "h100-sxm")
    assert 0 < h100["MFU"] < 1
    assert h100["$ per 1B tokens"] == pytest.approx(e.cost() / (1_000 * 256) * 1e9)  # 1,000 samples x 256 tokens
    order = ranking_table.ranking_order(rows[0], unit, rate_name, "train")
    assert order.index("MFU") == order.index(f"Throughput ({rate_name})") + 1
    gen_rows, *_ = ranking_table.ranking_rows(ranking_of(), rank(ranking_of(), None), "generate", {}, {})
    assert "MFU" not in gen_rows[0]
