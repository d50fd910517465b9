"""The tabs under the ranking: Explain a GPU, the charts, Serving and Accuracy; and the calibration panel."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from planner.base.schema import DataFileError
from planner.engine.estimate import estimate_gpu
from planner.inputs.serving_trace import LENGTH_SPREADS
from planner.calibration import tables as calibration_tables
from planner.views import calibration_text, charts, plan_inputs, screens, tab_tables
from planner.views.cache_key import content_key
from planner.views.format import fmt_seconds, fmt_sig, md_escape, short_name, time_unit
from ui import columns, explain, resources, state
from ui.state import KEEP, TABS

COMPARING = ("Roofline", "Batch size", "Memory", "Serving")  # the tabs that compare a few chosen GPUs


def calibration_panel(plan, fleet, ranked, cal_ests: dict) -> None:
    """What the calibration changed (before and after per GPU, which GPUs it reached), then each calibration: what it
    is, where it applies, and (file at hand) its points: measured vs analytic vs calibrated."""
    facts = resources.facts()
    sentence, rows = screens.calibration_effect(ranked, cal_ests, {c.gpu_id for c in fleet.members if c.gpu_id})
    with st.container(border=True, key="calibration_effect"):
        st.markdown(f"**Before and after your calibration** · {sentence}")
        columns.small_table(rows)
    for cal in fleet.members:
        where = (f"applied to the {cal.device_name} row as fitted (tick Filters → Include CPUs to rank it); it does "
                 "not carry to GPUs or other CPUs" if cal.gpu_id and cal.device_class == "cpu" else
                 f"applied to {cal.gpu_id} as fitted and carried to the other GPUs by the ratio to the priors "
                 f"(half of it across architectures)" if cal.gpu_id else
                 "measured on a CPU or Apple GPU: it does not carry to the catalog GPUs, only to the measured device "
                 "(for a CPU bench, pick the catalog CPU it ran on in the sidebar)")
        with st.expander(f"**Your calibration** · {md_escape(cal.device_name, 80)}, bench of {cal.bench_date}",
                         expanded=len(fleet.members) == 1, icon=":material/tune:"):
            st.markdown(f"{calibration_text.fit_markdown(cal)} It is {where}.")
            for problem in calibration_text.fit_warnings_markdown(cal):
                st.warning(problem)
            device = cal.measured_gpu(facts.catalog)
            a, c = estimate_gpu(plan, device, facts), estimate_gpu(plan, device, facts, cal.adjust)
            if a.seconds and c.seconds:
                st.markdown(f"This plan on **{md_escape(device.name, 80)}**: {fmt_seconds(a.seconds)} analytic, "
                            f"**{fmt_seconds(c.seconds)} calibrated**.")
            result = (state.page().get("cal_result") or {}).get(cal.device_name)
            if result is not None:
                df = charts.calibration_data(calibration_tables.point_table(result, cal))
                if len(df):
                    resources.chart("calibration_chart", df)


def _batch_size(plan, inputs, table, cal, cmp_ids, est_key: str) -> None:
    gpus = [resources.gpu(g) for g in cmp_ids]
    key = content_key(est_key, cmp_ids)
    df, per_gpu, largest = resources.batch_frame(key, plan, gpus, table, cal.adjust if cal else None)
    if len(df) and largest >= per_gpu and per_gpu < 64:  # the engine's rule (ranking.batch_sweep), per GPU
        st.caption(f"The job has only {per_gpu:,} item(s) per GPU, so no batch can be larger: raise the job size "
                   f"in the sidebar to see how larger batches would run.")
    # the frame is the key's content: the charts are found by it, the frame is not pickled again
    for y, title in (charts.rate_column(inputs.job, plan.model.counts_tokens),
                     ("cost_usd", f"Job cost ($, RunPod {inputs.tier})")):
        resources.chart("batch_chart", df, y, title, key=content_key(key, y, title))


def chart_tab(name: str, view: screens.RankingView, inputs, plan, table, cal, cal_ests, cmp_ids, est_key: str) -> None:
    rows = view.rows
    if name == "Cost vs time":
        unit = time_unit(e.seconds for e in rows)
        shown = {e.gpu.id for e in rows}
        points = charts.cost_time_rows(rows, {k: v for k, v in cal_ests.items() if k in shown}, unit)
        if not points:
            st.info("No GPU in the table can run this plan with a price.")
        else:  # plain rows: the spec is found by them, its DataFrame built only when it is not cached
            resources.chart("cost_time_chart", points, inputs.tier, unit[0])
    elif name == "Roofline":
        ceilings, points = charts.roofline_data([e for e in rows if e.gpu.id in cmp_ids])
        if points.empty:
            st.info("None of the compared GPUs can run this plan.")
        else:
            resources.chart("roofline_chart", ceilings, points)
    elif name == "Batch size":
        _batch_size(plan, inputs, table, cal, cmp_ids, est_key)
    elif name == "Memory":
        resources.chart("memory_chart", charts.memory_data([e for e in rows if e.gpu.id in cmp_ids]))
    elif name == "Serving":
        serving(plan, inputs, table, cmp_ids)
    elif name == "Accuracy":
        accuracy()


def serving(plan, inputs, table, cmp_ids) -> None:
    """Serving an LLM: latency alone and the most concurrent sequences within a latency target, per compared GPU."""
    if not plan.model.can_generate:
        st.info("Serving applies to decoder models (token by token generation); this model is a "
                f"{md_escape(plan.model.kind)} profile.")
        return
    prompt, output = (inputs.prompt, inputs.gen) if inputs.job == "generate" else (512, 256)
    c1, c2, c3 = st.columns(3)
    ttft = c1.number_input("p95 time to first token target (ms)", 1.0, plan_inputs.MAX_TTFT_MS, step=100.0,
                           key=state.drawn("sttft"), persist_state=KEEP)
    tpot = c2.number_input("p95 time per output token target (ms)", 1.0, plan_inputs.MAX_TPOT_MS, step=5.0,
                           key=state.drawn("stpot"), persist_state=KEEP)
    rate = c3.number_input("Requests per second to serve (0 = none)", 0.0, plan_inputs.MAX_SERVING_RATE, step=1.0,
                           key=state.drawn("srate"), persist_state=KEEP)
    # a row of its own: four inputs in one row wrap their labels at laptop width
    lengths = st.columns(3)[0].selectbox(
        "Request lengths", LENGTH_SPREADS, key=state.drawn("slen"), persist_state=KEEP,
        format_func=tab_tables.LENGTH_WORDS.get,
        help="fixed: every request at the job's lengths; ShareGPT-like: spread around them (exponential, cut at 1,024 "
        "prompt and 2,048 total tokens) as the serving benchmarks' ShareGPT samples are")
    st.caption(f"Continuous batching, {prompt:,} prompt and {output:,} output tokens per request "
               "(the job's, or 512 + 256 for other jobs); planner.engine.serving states the model. TTFT includes the "
               "server's front end (its column: the request's fixed part and the prompt's tokenisation, "
               "data/serving.yaml).")
    gpus = [resources.gpu(g) for g in cmp_ids]
    facts = screens.with_prices(resources.facts(), table)
    rows = tab_tables.serving_rows(plan, gpus, facts, prompt, max(output, 2), ttft / 1e3, tpot / 1e3)
    columns.small_table(rows, {"$ per 1M tokens at max": lambda usd: f"${fmt_sig(usd, 3)}"})
    if rate > 0:
        _deployment(plan, inputs, table, gpus, prompt, max(output, 2), rate, ttft / 1e3, tpot / 1e3, lengths)


def _deployment(plan, inputs, table, gpus, prompt, output, rate, ttft_s, tpot_s, lengths) -> None:
    """The cheapest replicas x GPU x tensor parallel x runtime of the compared GPUs meeting the p95 targets at the
    rate (a simulation of each runtime's scheduler, shared by sessions asking the same), the runner-ups, and the
    hand-off."""
    key = content_key(plan, [g.id for g in gpus], (inputs.psrc, table.source, table.as_of, inputs.myprice), prompt,
                      output, rate, ttft_s, tpot_s, lengths)
    try:
        sentence, rows, command, service = resources.deployment(key, plan, gpus, table, prompt, output, rate, ttft_s,
                                                                tpot_s, lengths)
    except ValueError as exc:  # lengths a ShareGPT-like spread cannot keep: the message names them
        st.error(md_escape(str(exc)))
        return
    st.markdown(md_escape(sentence))
    columns.small_table(rows, {})
    if command:
        st.code(command, language="bash")
    if service:  # a disaggregated deployment's runtime or unit size may allow no service
        st.download_button("SkyServe service (sky serve up service.yaml)", service, "service.yaml",
                           mime="text/yaml", on_click="ignore")


def accuracy() -> None:
    st.markdown("How far the planner's estimates are from throughput that others **measured and published** "
                "(validation/measurements.yaml, each row with its source). **Leave one source out**: each "
                "publication is predicted with the runtime efficiencies tuned on every *other* publication, which "
                "is what a workload the planner never saw gets. The estimates use the values the same search gives "
                "on every publication (data/runtimes_tuned.yaml; Explain names them and the priors they replace).")
    try:
        head, written = tab_tables.accuracy_rows()
    except (DataFileError, OSError) as exc:
        st.error(f"The accuracy summary could not be read: {md_escape(exc, 400)}")
    else:
        st.dataframe(pd.DataFrame(head), hide_index=True, placeholder="-")
        st.caption(f"`python -m planner validate --write-uncertainty` of {written.isoformat()} "
                   "(data/uncertainty.yaml); the likely ranges in the ranking come from the same residuals.")
    st.markdown("Within sources (rows split by a hash of their id; the *test* rows were never used to set the "
                "runtime priors they are scored with), and each row measured against its estimate:")
    report = resources.validation_report()
    summary = pd.DataFrame(report.summary("test")).rename(columns={
        "group": "grouped by", "key": "group", "n": "rows", "median_ape": "median |error| %",
        "p90_ape": "90th pct |error| %", "median_speed_bias_pct": tab_tables.BIAS_COLUMN,
        "target_median_ape": "target median %", "meets_target": tab_tables.VERDICT_COLUMN}).drop(columns=["split"])
    st.dataframe(summary, hide_index=True, placeholder="-")
    st.altair_chart(charts.validation_chart(report), width="stretch")


def _explain_tab(view: screens.RankingView, inputs, cal_ests, est_key: str, default_gpu: str) -> None:
    ss = st.session_state
    catalog = resources.facts().catalog  # once: the picker names every device (resources.gpu reads the session)
    options = [""] + [g.id for g in catalog.selection(inputs.cpus)]
    if ss.get("gpu") not in options:  # a CPU named by a link or a click while CPUs are left out
        ss.gpu = ""
    picked = st.selectbox("GPU to explain (or click a row of the table)", options, key="gpu", persist_state=KEEP,
                          format_func=lambda gid: catalog.get(gid).name if gid else
                          f"Top of the ranking ({short_name(catalog.get(default_gpu).name)})")
    chosen = picked or default_gpu
    e = next((x for x in view.ranking.estimates if x.gpu.id == chosen), None)
    explain.explain(e, cal_ests.get(chosen), view.ranking, inputs, est_key)


def tabs_of(view: screens.RankingView, inputs: plan_inputs.Inputs, plan, table, cal, cal_ests: dict,
            est_key: str) -> None:
    rows = view.rows
    feasible_ids = [e.gpu.id for e in rows if e.feasible]
    default_gpu = (feasible_ids or [e.gpu.id for e in rows] or [view.ranking.estimates[0].gpu.id])[0]
    cmp_ids = list(inputs.cmp) or feasible_ids[:3]
    catalog = resources.facts().catalog  # once: the compare picker names every device (resources.gpu reads the
    # session and the day for each)
    for name, tab in zip(TABS, st.tabs(TABS, key="view", on_change="rerun")):
        if not tab.open:
            continue
        with tab:
            if name == "Explain a GPU":
                _explain_tab(view, inputs, cal_ests, est_key, default_gpu)
                continue
            if name in COMPARING:
                shown_ids = [g.id for g in catalog.selection(inputs.cpus)]
                state.put("cmp", [g for g in state.value("cmp") if g in shown_ids])
                st.multiselect("GPUs to compare (up to 6; empty = the top three that can run it)", shown_ids,
                               key=state.drawn("cmp"), persist_state=KEEP, max_selections=plan_inputs.MAX_CMP,
                               format_func=lambda gid: catalog.get(gid).name)
            if name not in ("Accuracy", "Cost vs time") and not cmp_ids:
                st.info("No GPU can run this plan: nothing to compare.")
            else:
                chart_tab(name, view, inputs, plan, table, cal, cal_ests, cmp_ids, est_key)


@st.fragment
def tab_area(view: screens.RankingView, inputs: plan_inputs.Inputs, plan, table, cal, cal_ests: dict,
             est_key: str) -> None:
    """The tabs, a fragment: picking a GPU to explain, a tab, GPUs to compare or serving targets reruns this part
    alone, not the ranking and the sidebar; a change here that moves the ranking (your own price for a GPU) reruns
    the page."""
    now = state.inputs()
    full_run = state.page().get("full_run")
    if not full_run and replace(now, gpu=inputs.gpu, cmp=inputs.cmp, tab=inputs.tab,
                                                         srate=inputs.srate, sttft=inputs.sttft,
                                                         stpot=inputs.stpot, slen=inputs.slen) != inputs:
        st.rerun(scope="app")
    try:
        tabs_of(view, now, plan, table, cal, cal_ests, est_key)
    finally:
        if not full_run:  # a rerun of the fragment alone ends here; a full run, at the end of the script (app.py)
            state.sync_url(state.inputs())
