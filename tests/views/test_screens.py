"""What the page shows, without Streamlit: the ranking screen and 'Explain a GPU' agree with the ranking's bill."""

from datetime import date

from planner.engine.estimate import estimate_all
from planner.engine.ranking import rank
from planner.inputs.facts import load_facts
from planner.inputs.job_costs import load_job_costs
from planner.views import plan_inputs, screens
from planner.views.format import fmt_usd, md_escape, short_name
from planner.views.plan_inputs import Inputs

FACTS = load_facts()
OVERHEADS = load_job_costs(runtime_ids=tuple(r.id for r in FACTS.runtimes.runtimes))
TODAY = date(2026, 11, 27)


def _view(**kw):
    inputs = Inputs(tier="community", seqs=10_000, **kw)
    plan = plan_inputs.to_plan(inputs, plan_inputs.resolve_model(inputs))
    ranked = rank(estimate_all(plan, FACTS), OVERHEADS)
    return inputs, ranked, screens.ranking_view(ranked, {}, inputs, [], TODAY)


def test_the_table_shows_the_rankings_bill_for_every_row_in_its_order():
    _, ranked, v = _view()
    assert list(v.table.gpu_id) == [e.gpu.id for e in ranked.estimates]
    for e, billed in zip(ranked.estimates, v.table["Whole job ($)"]):
        want = ranked.bill_usd(e)
        assert (billed != billed and want is None) or billed == want  # NaN where the GPU has no bill


def test_call_outs_come_from_the_rows_the_filters_keep():
    _, _, everything = _view()
    _, _, cheap = _view(maxusd=0.5)  # GPUs rented at up to $0.50/h: the fastest of all is not among them
    assert cheap.rows and all(e.price.usd_hr <= 0.5 for e in cheap.rows)
    titles = {md_escape(short_name(e.gpu.name)) for e in cheap.rows}
    assert len(cheap.callouts) == 3
    for _, text, _ in cheap.callouts:  # '**Cheapest** · **<GPU>**  ...': each names a GPU the filter kept
        assert text.split("**")[3] in titles
    assert everything.callouts[0][1].split("**")[3] not in titles


def test_explain_shows_the_same_whole_job_bill_as_the_ranking_to_the_cent():
    inputs, ranked, v = _view()
    e = next(e for e in ranked.estimates if e.feasible and e.price)
    ex = screens.explain_view(e, None, ranked, inputs.tier, inputs.job, True)
    assert f"billed, **{fmt_usd(ranked.bill_usd(e))}**" in ex.inputs
    cheapest = next(text for key, text, _ in v.callouts if key == "callout_cheapest")
    first = ranked.estimates[0]  # ranked by the bill: the first priced GPU that runs it is the cheapest
    assert f"**{fmt_usd(ranked.bill_usd(first))}**" in cheapest


def test_a_calibration_says_which_gpus_it_reached_and_shows_before_and_after():
    from planner import DATA_DIR
    from planner.calibration.fit import Fleet, fit
    from planner.inputs.bench_result import parse_result
    path = DATA_DIR / "calibrations" / "2026-11-26_cuda-nvidia-h200.json"
    cal = fit(parse_result(path.read_bytes(), path.name))
    assert cal.gpu_id == "h200-sxm"  # a GPU bench: measured on one, carried to the others
    inputs = Inputs(tier="community", seqs=10_000)
    plan = plan_inputs.to_plan(inputs, plan_inputs.resolve_model(inputs))
    ranked, cal_ests = screens.rankings(plan, FACTS, False, Fleet((cal,)).adjust, OVERHEADS)
    sentence, rows = screens.calibration_effect(ranked, cal_ests, {cal.gpu_id})
    runs = [e for e in ranked.estimates if e.feasible and e.seconds]
    reached = [e for e in runs if e.gpu.id in cal_ests]
    assert reached
    assert sentence.startswith(f"Your calibration reaches {len(reached)} of the {len(runs)} GPUs")
    assert f"{len(runs) - len(reached)} untouched" in sentence and "1 measured" in sentence
    assert [r["GPU"] for r in rows] == [e.gpu.name for e in runs[:screens.CALIBRATION_ROWS]]
    for r, e in zip(rows, runs):
        assert (r["Calibration"] == "untouched") == (e.gpu.id not in cal_ests)
