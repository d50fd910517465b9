"""What the page shows, as plain data: the ranking screen (table, call-outs, dates, exports' columns, the whole-job
chart's data) and 'Explain a GPU' (Markdown, metrics, chart data, tables). Built once per distinct plan and view;
ui/ turns them into Streamlit elements. No streamlit here (tests/views/test_screens.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from collections.abc import Mapping

import pandas as pd
import pyarrow as pa

from planner.engine import sweep
from planner.engine.estimate import Estimate, EfficiencyAdjust, estimate_all
from planner.engine.ranking import Mine, Ranking, callouts, rank
from planner.inputs.facts import Facts
from planner.inputs.job_costs import JobOverheads
from planner.views import charts, explain_text, ranking_table
from planner.views.format import fmt_count, fmt_seconds, fmt_usd, md_escape, time_unit
from planner.views.plan_inputs import Inputs


def rankings(plan, facts: Facts, include_cpus: bool, adjust: EfficiencyAdjust | None,
             overheads: JobOverheads | None) -> tuple[Ranking, dict[str, Estimate]]:
    """(the ranking, calibrated estimates by GPU id) for one distinct plan: only the GPUs a calibration reaches get
    a calibrated estimate (a CPU calibration changes none of the catalog's). The ranking is the catalog sweep on
    arrays (planner.engine.sweep)."""
    ranked = rank(estimate_all(plan, facts, include_cpus=include_cpus, arrays=sweep), overheads)
    cal_all = estimate_all(plan, facts, adjust=adjust, include_cpus=include_cpus) if adjust else []
    return ranked, {e.gpu.id: e for e in cal_all if str(e.efficiency.source).startswith("calibrated")}


def filters_of(inputs: Inputs) -> ranking_table.Filters:
    return ranking_table.Filters(inputs.vendor, inputs.minvram, inputs.maxusd, inputs.feasible, inputs.priced)


@dataclass(frozen=True, eq=False)
class RankingView:
    """Everything the page shows of one ranking."""

    ranking: Ranking  # every estimate, in ranking order, with its whole-job bill
    rows: list  # the estimates the filters keep
    bands: dict
    table: pd.DataFrame
    arrow: pa.Table  # the same, as st.dataframe sends it: converted once, not once a session
    unit: str  # the time column's unit
    rate_name: str
    order: list
    callouts: list  # (key, Markdown, help) per call-out
    nothing: str | None  # why nothing runs, or None
    dates: str  # the prices' dates, in words
    extra: dict  # export columns
    jobs: pd.DataFrame  # the whole-job chart's data (top 10)


def ranking_view(ranked: Ranking, cal_ests: Mapping[str, Estimate], inputs: Inputs, mine: list[Mine],
                 today: date) -> RankingView:
    """The ranking as the page shows it: filtered rows, the table (your own cards on top), call-outs and dates."""
    rows = ranking_table.filtered(ranked.estimates, filters_of(inputs))
    bands = ranking_table.bands(rows, cal_ests)
    data, unit, rate_name = ranking_table.ranking_rows(rows, ranked, inputs.job, cal_ests, bands, today, inputs.stale)
    div = time_unit(e.seconds for e in rows)[1]
    df = pd.DataFrame(ranking_table.mine_rows(mine, inputs.job, unit, div, today, inputs.stale) + data)
    found = [(f"callout_{c.label.replace(' ', '_').lower()}",
              f"**{c.label}** · **{ranking_table.callout_title(c)}**  \n"
              f"{ranking_table.callout_line(c, ranked, inputs.gpus, today, inputs.stale)}", c.why)
             for c in callouts(ranked, rows)]
    return RankingView(ranked, rows, bands, df, pa.Table.from_pandas(df, preserve_index=False), unit, rate_name,
                       ranking_table.ranking_order(df.columns, unit, rate_name, inputs.job), found,
                       ranking_table.nothing_runs_message(rows, list(ranked.estimates)),
                       ranking_table.price_dates(rows, today, inputs.stale).sentence(),
                       ranking_table.extra_columns(rows, cal_ests, bands),
                       charts.whole_jobs_data(rows, ranked))


@dataclass(frozen=True, eq=False)
class ExplainView:
    """'Explain a GPU' for one GPU of one ranking, as Markdown, chart data and a table."""

    title: str
    caption: str
    sources: str
    blocking: list  # why it can't run, one Markdown line each
    notes: str | None  # every note in one box, or None
    metrics: list  # (label, value, help)
    range_note: str | None  # the estimate's likely range and the evidence behind it (uncertainty bands)
    calibrated: str | None
    inputs: str  # the inputs behind the figures, the cost formula and the whole job's bill by part
    job_data: pd.DataFrame | None  # the whole job's chart's data, None without a price
    memory: str  # the memory breakdown, what it follows from, and the heading of 'Your own price'
    steps: str  # how a step is timed, or why it is not
    split: pd.DataFrame | None  # the time split chart's data, None when the plan can't run
    steps_table: list | None  # the step-time table's figures (explain_text.step_time_tables), None when not timed
    steps_formulas: list | None  # each of its rows' formula, None when not timed


def explain_view(e: Estimate, cal_e: Estimate | None, ranked: Ranking, tier: str, job_name: str,
                 auto_batch: bool) -> ExplainView:
    """'Explain a GPU' for one estimate of a ranking. Text that follows from one another shares one Markdown
    element: each element is one more thing for the browser to redraw on every change."""
    g, price = e.gpu, e.price
    rate = ranking_table.rate(e)
    metrics = [("Compute time", fmt_seconds(e.seconds), "Sum over every step of the job (formula below); the whole "
                "job adds the pod's start, download and warm-up (below)"),
               (f"Compute cost ({tier})", fmt_usd(e.cost()), "compute seconds / 3600 x GPUs x $/GPU-hour"),
               (f"Throughput ({ranking_table.rate_unit(job_name, e.plan.model.counts_tokens)})",
                fmt_count(rate) if rate else "-", "average over the whole job"),
               (f"Memory (card: {e.gpu.vram_gb:.3g} GB)", f"{e.memory.total_gb:.3g} GB",
                f"per GPU at batch {e.batch:,}, decimal GB; {e.usable_gb:.3g} GB usable; "
                f"{explain_text.memory_sentence(e)}")]
    span = explain_text.range_sentence(e, cal_e is not None)
    calibrated = (f"Calibrated: {fmt_seconds(cal_e.seconds)}, {fmt_usd(cal_e.cost())} "
                  f"({md_escape(cal_e.efficiency.source, 400)})" if cal_e is not None and cal_e.seconds else None)
    behind = ["#### Inputs behind the figures", explain_text.md_table(["input", "value", "source"],
                                                                      explain_text.inputs_rows(e, auto_batch))]
    if e.seconds and price:
        behind.append(f"**Cost** = {e.seconds:,.4g} s ÷ 3600 × {e.plan.gpus} GPU × ${price.usd_hr:.3f}/h "
                      f"= **{fmt_usd(e.cost())}**")
    job = ranked.job(e)
    if job:
        behind += [f"#### The whole job: {fmt_seconds(job.billed_s)} billed, **{fmt_usd(job.cost_usd)}**",
                   " · ".join(f"{name} {fmt_seconds(sec)}" for name, sec in job.parts if sec > 0)
                   + ". Assumptions (each with its source): data/job_costs.yaml."]
    memory = "\n\n".join(["#### Memory breakdown", explain_text.md_table(
        ["used by", "GB", "formula"], [(i.name.replace("_", " "), f"{i.gb:.4g}", i.formula) for i in e.memory.items]),
        explain_text.memory_sentence(e), "#### Your own price",
        "It applies to every tier of this GPU and travels in the share link."])
    if e.feasible:
        steps, split = explain_text.STEP_TIME_INTRO, charts.time_split_data(e)
        steps_table, steps_formulas = explain_text.step_time_tables(e)
    else:
        steps, split = "Not timed: the plan can't run on this GPU (reasons above).", None
        steps_table = steps_formulas = None
    notes = [md_escape(r.text, 600) for r in e.reasons if not r.blocking]
    return ExplainView(
        f"### {g.name}", explain_text.gpu_caption(e),
        md_escape(g.source, 2000) + (f"  \nNotes: {md_escape(g.notes, 2000)}" if g.notes else ""),
        [f"Can't run: {md_escape(r.text, 600)}" for r in e.reasons if r.blocking],
        "  \n".join(f"Note: {n}" for n in notes) or None,
        metrics, md_escape(span, 600) if span else None, calibrated, "\n\n".join(behind),
        charts.job_cost_data(job, price.usd_hr if price else None, e.plan.gpus) if job else None,
        memory, steps, split, steps_table, steps_formulas)


CALIBRATION_ROWS = 10  # GPUs the calibration panel compares before and after, in ranking order


def calibration_effect(ranked: Ranking, cal_ests: Mapping[str, Estimate], measured_ids: set[str]) -> tuple[str, list]:
    """What a calibration changed: a sentence counting the GPUs it reached (measured on, carried to) and left
    untouched, and the first CALIBRATION_ROWS GPUs that run the plan with their time before and after."""
    runs = [e for e in ranked.estimates if e.feasible and e.seconds]
    reached = [e for e in runs if e.gpu.id in cal_ests]
    measured = sum(e.gpu.id in measured_ids for e in reached)
    sentence = (f"Your calibration reaches {len(reached)} of the {len(runs)} GPUs that run this plan: {measured} "
                f"measured, {len(reached) - measured} carried over by the ratio to the priors; "
                f"{len(runs) - len(reached)} untouched.")
    rows = []
    for e in runs[:CALIBRATION_ROWS]:
        cal = cal_ests.get(e.gpu.id)
        after = cal.seconds if cal is not None and cal.seconds else None
        rows.append({"GPU": e.gpu.name, "Before": fmt_seconds(e.seconds), "After": fmt_seconds(after) if after else "-",
                     "Change": f"{100 * (after / e.seconds - 1):+.0f} %" if after else "-",
                     "Calibration": ("measured" if e.gpu.id in measured_ids else "carried over") if after
                     else "untouched"})
    return sentence, rows


def with_prices(facts: Facts, table) -> Facts:
    """The facts with another price table (live prices, your own prices)."""
    return replace(facts, prices=table)
