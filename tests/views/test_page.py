"""The page's logic without Streamlit: filters, ranking rows, call-outs, the no-GPU message, step-time rows."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_all
from planner.engine.feasibility import Reason
from planner.engine.plan import Plan
from planner.engine.ranking import callouts, my_gpus, rank
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Infer
from planner.inputs.models import load_models
from planner.views import page

FACTS = load_facts()


def _ranking(model="cfdna-gen", workload=Generate(10_000, 1, 165), **kw):
    return estimate_all(Plan(load_models().get(model), workload, kw.pop("precision", "bf16"),
                             price_tier=kw.pop("tier", "community"), **kw), FACTS)


def test_the_vram_filter_compares_decimal_gb_as_the_table_shows():
    ests = _ranking()
    ids = lambda f: {e.gpu.id for e in page.filtered(ests, f)}  # noqa: E731
    # an RTX 4090 holds 24 GiB = 24 x 1.0737 = 25.77 GB: a 25 GB minimum keeps it, a 26 GB minimum hides it
    assert "rtx-4090" in ids(page.Filters(min_vram_gb=25.0))
    assert "rtx-4090" not in ids(page.Filters(min_vram_gb=26.0))


def test_vendor_price_and_feasibility_filters():
    ests = _ranking(precision="fp8")  # fp8 needs SM89+: older GPUs can't run it
    amd = page.filtered(ests, page.Filters(vendor="AMD"))
    assert amd and all(e.gpu.vendor == "AMD" for e in amd)
    runs = page.filtered(ests, page.Filters(feasible_only=True))
    assert runs and all(e.feasible for e in runs) and len(runs) < len(ests)
    cheap = page.filtered(ests, page.Filters(max_usd_hr=0.5))
    assert cheap and all(e.price is not None and e.price.usd_hr <= 0.5 for e in cheap)
    priced = page.filtered(ests, page.Filters(priced_only=True))
    assert all(e.price is not None for e in priced)


def test_ranking_rows_are_named_columns_with_capacity_and_use_in_one_unit():
    ests = _ranking()
    rows, unit, rate_name = page.ranking_rows(ests, rank(ests, None), "generate", {}, {})
    row = next(r for r in rows if r["gpu_id"] == "rtx-4090")
    e = next(e for e in ests if e.gpu.id == "rtx-4090")
    assert row["VRAM (GB)"] == pytest.approx(24 * 2**30 / 1e9)
    assert row["Usable (GB)"] == pytest.approx(0.90 * 24 * 2**30 / 1e9)  # the default target of 24 GiB
    assert row["Memory used"] == pytest.approx(row["Memory (GB)"] / row["VRAM (GB)"])  # against the card: auto ~ 90 %
    assert rate_name == "tokens/s" and row["Throughput (tokens/s)"] == e.tokens_per_s
    assert row[f"Compute time ({unit})"] is not None and [r["Rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert "Likely range" not in " ".join(row)  # no band column without bands


def test_the_ranking_shows_rank_and_name_first_and_hides_the_id():
    rows, unit, rate_name = page.ranking_rows(_ranking(), rank(_ranking(), None), "generate", {}, {})
    order = page.ranking_order(rows[0], unit, rate_name, "generate")
    assert order[:3] == ["Rank", "GPU", "Runs?"] and "gpu_id" not in order
    assert set(order) == set(rows[0]) - {"gpu_id"}  # every other column is shown
    assert order.index(f"Compute time ({unit})") < order.index("Why / notes")
    assert page.ranking_order(["Price source", "gpu_id", "Rank"], "h", "tokens/s", "generate") == \
        ["Rank", "Price source"]  # only the columns present, in the page's order


def test_a_formula_model_is_counted_in_samples():
    ests = _ranking("sea", Infer(100, 200), precision="fp32")
    rows, _, rate_name = page.ranking_rows(ests, rank(ests, None), "infer", {}, {})
    assert rate_name == "samples/s" and "Samples/s" not in rows[0]


def _as(e, seconds, cost_usd, feasible=True, reasons=()):
    """A hand-built case: a real GPU's estimate with the time (s) and cost ($, the plan's tier) given here."""
    return replace(e, seconds=seconds, cost_usd={e.plan.price_tier: cost_usd}, feasible=feasible, reasons=reasons)


def test_the_reason_counts_on_a_hand_built_case():
    base = [e for e in _ranking() if e.gpu.id in ("h100-sxm", "rtx-4090", "rtx-3090")]
    oom, prec = Reason("oom", True, "needs 90 GB"), Reason("precision", True, "fp8 needs SM89+")
    note = Reason("parallelism", False, "data parallel")  # a note blocks nothing: not counted
    shown = [_as(base[0], None, None, False, (oom, note)), _as(base[1], None, None, False, (oom, prec)),
             _as(base[2], None, None, False, (oom,))]
    message = page.nothing_runs_message(shown, shown)
    assert "Most common reasons: oom (3 GPUs), precision (1 GPU)." in message and "parallelism" not in message


def test_filters_hiding_only_gpus_that_cannot_run_it_say_so():
    blocked = [_as(e, None, None, False, (Reason("oom", True, "x"),)) for e in _ranking()[:2]]
    message = page.nothing_runs_message([], blocked)
    assert message.startswith("The filters hide every GPU") and "none of them can run this plan" in message
    assert "Most common reasons" not in message


def test_when_nothing_runs_the_message_counts_the_reasons_or_blames_the_filters():
    ests = _ranking("llama-3-70b", Generate(10, 16, 16), precision="fp32")  # 280 GB of fp32 weights: OOM everywhere
    assert not any(e.feasible for e in ests)
    message = page.nothing_runs_message(ests, ests)
    assert message.startswith("No GPU in the list can run this plan") and f"oom ({len(ests)} GPUs)" in message
    fits = _ranking()
    assert page.nothing_runs_message(fits, fits) is None
    hidden = page.nothing_runs_message([], fits)
    assert "filters hide every GPU" in hidden and "loosen the filters" in hidden


def test_step_time_rows_add_up_to_the_estimate():
    e = next(e for e in _ranking() if e.gpu.id == "h100-sxm")
    rows = page.step_time_rows(e)
    assert sum(r["time s"] for r in rows) == pytest.approx(e.seconds)
    assert {r["op group"] for r in rows} >= {"linear layers", "attention", "elementwise & norms"}


def test_the_decode_attention_latency_has_a_row_of_its_own():
    """cfDNA-Gen's 14 layers: every decode step pays 14 attention calls' fixed latency (data/precisions.yaml), shown
    with its per-step figure and counted as overhead."""
    e = next(e for e in _ranking() if e.gpu.id == "h100-sxm")
    us = e.setup.attention.decode_latency_us
    (row,) = [r for r in page.step_time_rows(e) if r["op group"].startswith("decode-attention latency")]
    decode = [ph for ph in e.phases if ph.name == "decode"]
    assert row["time s"] == pytest.approx(sum(ph.steps * ph.passes for ph in decode[:1]) * 14 * us * 1e-6)
    assert f"steps x {14 * us:,.4g} us" in row["formula"] and row["limited by"] == "overhead"


def test_tiled_gemms_explain_how_compute_and_memory_combine():
    """Llama-2-7B on an H100 SXM at batch 32: the decode's GEMMs have 32 rows (tiles), so the linear layers' row gives
    the overlap formula and its source, and the inputs name p; at batch 1 the GEMVs keep the sharp corner."""
    tiled = next(e for e in _ranking("llama-2-7b", Generate(960, 128, 128), precision="fp16", batch=32)
                 if e.gpu.id == "h100-sxm")
    (row,) = [r for r in page.step_time_rows(tiled) if r["phase"] == "decode" and r["op group"] == "linear layers"]
    assert "time = (compute^p + memory^p)^(1/p), p = 1.45" in row["formula"] and "DeepGEMM" in row["formula"]
    assert row["time s"] > max(row["compute s"], row["memory s"])
    inputs = {name: value for name, value, _ in page.inputs_rows(tiled, auto_batch=False)}
    assert inputs["GEMM compute and memory overlap"].startswith("p = 1.45")
    gemv = next(e for e in _ranking("llama-2-7b", Generate(1_000, 1, 128), precision="fp16", batch=1)
                if e.gpu.id == "h100-sxm")
    (row,) = [r for r in page.step_time_rows(gemv) if r["phase"] == "decode" and r["op group"] == "linear layers"]
    assert "compute^p" not in row["formula"] and row["time s"] == pytest.approx(row["memory s"])


def test_the_communication_row_shows_the_link_and_the_collectives_of_each_step():
    """Llama-2-7B at TP=2 on H100 SXM, fp16, batch 1: per decode token 64 all-reduces of 4096 x 2 B (each GPU sends
    2 x 1/2 of it, 2 ring steps) and one all-gather of the 32000 x 2 B logits (half of it, 1 step): 65 calls, each in
    NCCL's LL protocol (half of 364.5 GB/s, capped at 141 GB/s on Hopper; 6.6 us a call, 0.6 us a hop):
    64 x (6.6 + 1.2 + 8192 / 141e3) = 502.92 us + (6.6 + 0.6 + 32000 / 141e3) = 7.43 us: 510.3 us per step."""
    e = _ranking("llama-2-7b", Generate(1, 16, 65), precision="fp16", batch=1, gpus=2, parallel="tensor",
                 runtime="tensorrt-llm")
    e = next(x for x in e if x.gpu.id == "h100-sxm")
    (row,) = [r for r in page.step_time_rows(e) if r["phase"] == "decode" and r["limited by"] == "communication"]
    assert "65 collectives per step" in row["formula"] and "510.3 us per step" in row["formula"]
    assert "2 GPUs over NVLink" in row["formula"] and "364.5" not in row["formula"]  # the rates: Explain's inputs
    assert "64 x 8,192 B sent in 2 ring steps: LL, 7.858 us each" in row["formula"]
    assert "1 x 32,000 B sent in 1 ring step: LL, 7.427 us each" in row["formula"]


def test_the_inputs_name_the_link_and_its_protocols_only_when_gpus_exchange_data():
    """A tensor-parallel plan lists the link its collectives use with NCCL's protocols on it (an H100 pair: LL at
    half of 450 x 0.81 = 364.5 GB/s, capped at 141 GB/s on Hopper) and where the figures come from; one GPU has none."""
    ranking = _ranking("llama-2-7b", Generate(1, 16, 65), precision="fp16", batch=1, gpus=2, parallel="tensor",
                       runtime="tensorrt-llm")
    rows = {name: (value, source) for name, value, source in
            page.inputs_rows(next(x for x in ranking if x.gpu.id == "h100-sxm"), False)}
    value, source = rows["GPU-to-GPU link"]
    assert value.startswith("2 GPUs over NVLink") and "LL 141 GB/s" in value and "Simple 364.5 GB/s" in value
    assert source.startswith("data/interconnects.yaml, link 'nvlink'") and "nccl-tests" in source
    single = next(x for x in _ranking("llama-2-7b", Generate(1, 16, 65), precision="fp16", batch=1)
                  if x.gpu.id == "h100-sxm")
    assert "GPU-to-GPU link" not in {name for name, _, _ in page.inputs_rows(single, False)}


def test_step_time_rows_agree_with_the_exported_phases():
    """The page's table and the JSON export (report.estimate_row) show the same whole-job figures per op group."""
    from planner.views.report import estimate_row
    e = next(e for e in _ranking(workload=Generate(1_000_000, 1, 165)) if e.gpu.id == "h100-sxm")
    exported = [(ph["name"], g) for ph in estimate_row(e)["phases"] for g in ph["groups"]]  # full batches, then the rest
    groups = {g["name"] for _, g in exported}
    rows = [r for r in page.step_time_rows(e) if r["op group"] in groups]
    assert rows and len(rows) == len(exported)
    for r, (phase, g) in zip(rows, exported):
        assert (r["phase"], r["op group"]) == (phase, g["name"])
        assert r["time s"] == pytest.approx(g["seconds"], abs=1e-4)
        assert r["TFLOP"] == pytest.approx(g["flops"] / 1e12) and r["GB moved"] == pytest.approx(g["bytes"] / 1e9)


def test_extra_export_columns_round_the_band():
    e = next(e for e in _ranking() if e.gpu.id == "h100-sxm")
    extra = page.extra_columns([e], {}, {"h100-sxm": (12.3456789, 98.7654321)})
    assert extra == {"h100-sxm": {"seconds_low": 12.35, "seconds_high": 98.77}}


def test_markdown_cells_are_escaped():
    table = page.md_table(["a"], [("[x](http://evil.example)",)])
    assert "\\[x\\]\\(http" in table


def test_the_memory_sentence_states_capacity_in_the_unit_of_use():
    e = next(e for e in _ranking() if e.gpu.id == "rtx-4090")
    text = page.memory_sentence(e)
    usable = 0.9 * 24 * 2**30 / 1e9  # 23.19 GB: 90 % of 24 GiB
    assert f"of {usable:.3g} GB usable (90% of the 25.8 GB it reports (24 GiB))" in text
    share = e.memory.total_gb / (24 * 2**30 / 1e9)  # of the card's 25.8 GB: an auto batch stops near the 90 % target
    assert f"fits: {share:.0%} of the card, under the 90% memory target ({usable - e.memory.total_gb:.2f} GB spare)" \
        in text


def test_the_memory_sentence_shows_the_ecc_reserve_of_a_datacenter_gddr_card():
    e = next(e for e in _ranking() if e.gpu.id == "l40s")
    # nvidia-smi reports 46,068 MiB on an L40S with ECC on (48 GiB less 1/16): 46068 x 2**20 / 1e9 = 48.31 GB
    reported = 46068 * 2**20 / 1e9
    assert f"90% of the {reported:.1f} GB it reports (48 GiB = 51.5 GB, of which the driver reports 46,068 MiB)" \
        in page.memory_sentence(e)


def test_a_price_shows_its_age_and_a_stale_flag():
    from datetime import date

    from planner.inputs.catalog import Price
    today = date(2026, 11, 22)
    old = Price(0.16, date(2025, 6, 21), "third-party dump")  # 365 days to 2026-06-21, then 9+31+31+30+31+22 = 154
    assert page.price_age(old, today) == "⚠ 519 d (2025-06-21)"
    assert page.price_age(Price(0.26, date(2026, 11, 9), "RunPod"), today) == "13 d (2026-11-09)"
    assert page.price_age(old, today, stale_after_days=600) == "519 d (2025-06-21)"
    assert page.price_age(Price(1.0, None, "?"), today) == "undated ⚠"
    assert page.price_age(Price(0.3, today, "entered by you", "custom"), today) == "yours"


def test_the_caption_names_the_oldest_and_newest_price_and_counts_stale_ones():
    from datetime import date
    ests = _ranking()
    today = date(2026, 11, 22)
    dates = page.price_dates(ests, today)
    priced = [e.price for e in ests if e.price is not None]
    assert dates.priced == len(priced) and dates.oldest == min(p.date for p in priced)
    assert dates.stale == sum((today - p.date).days > 90 for p in priced)
    assert f"{dates.stale} of {dates.priced} are older than 90 days" in dates.sentence()


def test_the_cheapest_callout_says_when_it_rests_on_a_stale_price():
    from datetime import date
    ranked = rank(_ranking(), None)
    cheapest = next(c for c in callouts(ranked) if c.label == "Cheapest")
    line = page.callout_line(cheapest, ranked, 1, date(2026, 11, 22))
    age = (date(2026, 11, 22) - cheapest.estimate.price.date).days
    assert ("rests on a price from" in line) == (age > 90)


def test_serving_rows_meet_the_target_they_report():
    from planner.engine.serving import serving_point
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm",
                price_tier="community")
    gpus = [FACTS.catalog.get("h100-sxm"), FACTS.catalog.get("rtx-4090")]
    rows = page.serving_rows(plan, gpus, FACTS, 512, 256, None, 0.03)
    for row, gpu in zip(rows, gpus):
        assert row["gpu_id"] == gpu.id and row["TPOT at max (ms)"] <= 30
        more = serving_point(plan, gpu, FACTS, row["Max concurrency in target"] + 1, 512, 256)
        assert more.tpot_s > 0.03 or not more.fits


def test_a_cpu_device_is_captioned_and_sourced_as_a_cpu():
    plan = Plan(load_models().get("cfdna-gen"), Generate(1000, 1, 64), "bf16")
    (e,) = estimate_all(plan, FACTS, ["amd-epyc-9654"])
    caption = page.gpu_caption(e)
    assert caption.startswith("CPU") and "96 cores" in caption and "460.8 GB/s" in caption
    sources = {name: source for name, _, source in page.inputs_rows(e, True)}
    assert "data/cpus.yaml" in sources["DRAM bandwidth"] and "data/cpus.yaml" in sources["Peak bf16 TFLOPS (dense)"]
    assert "runs on the CPU" in page.reason_text(e)


def test_serving_leaves_out_a_cpu_the_runtime_cannot_run_on():
    plan = Plan(load_models().get("cfdna-gen"), Generate(1, 64, 64), "bf16", runtime="vllm")
    gpus = [FACTS.catalog.get("h100-sxm"), FACTS.catalog.get("amd-epyc-9654")]
    assert [r["gpu_id"] for r in page.serving_rows(plan, gpus, FACTS, 64, 64, None, None)] == ["h100-sxm"]


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
    v = page.own_verdict(m, "community")
    assert v.headline.startswith("**Your 2 × RTX A5000 24GB** · ✓ runs it") and "break-even 130 h/month" in v.cost
    assert "PyTorch" in v.needs  # the software it needs: the oldest build with SM86 kernels
    [row] = page.mine_rows([m], "generate", "s", 1.0)
    assert row["Rank"] == 0 and row["GPU"] == "★ Yours: 2 × RTX A5000 24GB" and row["Own ($/month)"] == 50
    assert row["Compute time (s)"] == m.estimate.seconds
