"""The answer, top of the page: the question's plan in words, your own cards, the call-outs, every GPU ranked, the
share link and downloads; the tabs follow (ui.tabs)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date

import streamlit as st

from planner.base.schema import DataFileError, UnknownNameError
from planner.inputs.launch_names import load_skypilot_names
from planner.calibration import fit as calibration
from planner.inputs.bench_result import CalibrationError
from planner.views import answers, exports, launch, owning_text, plan_inputs, share
from planner.views.cache_key import content_key
from planner.views.format import md_escape
from planner.views.presets import load_all as load_all_presets
from ui import callbacks, prices, resources, state, tabs
from ui.columns import ranking_columns
from ui.state import KEEP, TABS
from planner.inputs.catalog import CUSTOM_MAX_USD_HR, MAX_VRAM_GB


def presets_block(where, inputs: plan_inputs.Inputs) -> None:
    """The example questions in a popover (one click away, not in the answer's way); the chosen one's hint below."""
    try:
        presets, broken = load_all_presets()
    except DataFileError as exc:
        st.error(f"The example questions could not be loaded: {md_escape(exc, 400)}")
        return
    for exc in broken:
        st.error(f"An example question could not be loaded: {md_escape(exc, 400)}")
    with where.popover("Example questions", icon=":material/lightbulb:", width="stretch",
                       help="One click fills in the whole plan", key="presets_open", on_change="rerun") as box:
        if box.open:  # drawn when opened: a closed popover costs every rerun nothing
            for p in presets:
                st.button(p.question, key=f"preset_{p.id}", on_click=callbacks.apply_preset, args=(p.id,),
                          width="stretch")
    p = next((p for p in presets if p.id == state.page().get("preset")), None)
    if p and share.encode(replace(p.inputs, tab=inputs.tab)) == share.encode(inputs):  # still the example's plan
        with st.expander(f"**{md_escape(p.question)}** · what the example assumes", icon=":material/lightbulb:"):
            st.info(f"{p.answer_hint}  \n*Assumed:* {p.assumptions}")
    elif p:
        st.caption(f"Started from the example “{p.question}”, then changed.")


def filters() -> None:
    """The ranking's filters (inside the 'Filters' popover)."""
    st.selectbox("Vendor", plan_inputs.VENDORS, key=state.drawn("vendor"), persist_state=KEEP)
    st.number_input("Min VRAM (GB)", 0.0, MAX_VRAM_GB, step=8.0, key=state.drawn("minvram"), persist_state=KEEP,
                    format="%g", help="Decimal GB, like the VRAM column (a '24 GB' card holds 25.8 GB)")
    st.number_input("Max $/GPU-h (0 = any)", 0.0, CUSTOM_MAX_USD_HR, step=0.25, key=state.drawn("maxusd"),
                    persist_state=KEEP, format="%g")
    st.checkbox("Can run it", key=state.drawn("feasible"), persist_state=KEEP,
                help="Hide the GPUs that can't run this plan")
    st.checkbox("Has a price", key=state.drawn("priced"), persist_state=KEEP,
                help="Hide the GPUs without a $/h in this tier (RunPod doesn't rent "
                "them; type your own price in 'Explain a GPU')")
    st.checkbox("Include CPUs", key=state.drawn("cpus"), persist_state=KEEP,
                help="Rank the CPU devices too (data/cpus.yaml): what the job costs "
                "when it falls back to the CPU. They have no listed price: type your own in 'Explain a GPU'")


def fleet_of(inputs: plan_inputs.Inputs):
    """The calibration the link carries, or None (it was decoded once already: a failure here only drops it)."""
    if not inputs.cal:
        return None
    try:
        return calibration.Fleet.from_query(inputs.cal)
    except CalibrationError:
        return None


def own_cards(mine, tier: str) -> None:
    """One verdict card per kind of card the user owns, above the call-outs."""
    assumptions = owning_text.own_assumptions_sentence(state.own_assumptions())
    for col, m in zip(st.columns(len(mine)), mine):
        with col.container(border=True, key=f"own_card_{m.owned.gpu_id}", gap="small"):
            v = owning_text.own_verdict(m, tier)
            st.markdown("  \n".join(x for x in (v.headline, v.needs, v.cost) if x),
                        help=f"{v.details}  \n{assumptions}")


def answer_box(a: Answer, named: str) -> None:
    """The verdict on the GPU `named` (by a link, an example or a click), unless it is one of your own cards (their
    card answers), and why the GPUs that can't run the plan can't."""
    e = next((x for x in a.view.ranking.estimates if x.gpu.id == named), None)
    own = {o.gpu_id for o in a.inputs.own}
    notes = [x for x in (answers.cross_check(a.model), answers.blocked_summary(a.view.rows)) if x]
    if e is None or named in own:
        for note in notes:
            st.caption(note)
        return
    with st.container(border=True, key="answer", gap="small"):
        st.markdown(answers.verdict(e, a.view.ranking))
        for note in notes:
            st.caption(note)


def callouts(found: list) -> None:
    for col, (key, text, why) in zip(st.columns(len(found)), found):
        with col.container(border=True, key=key, gap="small"):
            st.markdown(text, help=why)


@dataclass(frozen=True)
class Answer:
    """One plan's computed answer, as the page draws it."""

    inputs: plan_inputs.Inputs
    model: object
    plan: object
    table: object  # the price table
    fleet: object  # the calibration, or None
    est_key: str
    cal_ests: dict
    mine: list
    view: object  # planner.views.screens.RankingView


def compute(inputs: plan_inputs.Inputs) -> Answer | None:
    """The plan's ranking (shared caches); None after an error message naming the input to change."""
    try:
        model = plan_inputs.resolve_model(inputs)
    except (DataFileError, UnknownNameError) as exc:
        field = getattr(exc, "field", "")
        st.error(f"The custom model is not valid: {md_escape(getattr(exc, 'problem', exc), 400)}"
                 + (f" (field '{md_escape(field, 60)}')" if field else "")
                 + ". Fix it in the sidebar; nothing else was changed.")
        return None
    try:
        plan = plan_inputs.to_plan(inputs, model)
    except ValueError as exc:  # a typed training layout that does not parse, named in the message
        st.error(f"This plan can't be estimated: {md_escape(exc, 400)}. Change the input it names in the sidebar.")
        return None
    table, fleet, overheads = prices.price_table(inputs), fleet_of(inputs), state.overheads()
    est_key = content_key(plan, (inputs.psrc, table.source, table.as_of, inputs.myprice), inputs.cal, inputs.cpus,
                          inputs.mygpu,
                          overheads)
    assumptions = state.own_assumptions()
    mine_key = content_key(est_key, inputs.own, assumptions)
    try:
        ranked, cal_ests = resources.rankings(est_key, plan, inputs.cpus, table, fleet, overheads)
        mine = resources.mine(mine_key, plan, inputs.own, table, assumptions, overheads, fleet) if inputs.own else []
    except (ValueError, UnknownNameError, DataFileError) as exc:
        st.error(f"This plan can't be estimated: {md_escape(exc, 400)}. Change the input it names in the sidebar.")
        return None
    today = date.today()
    view = resources.ranking_view(content_key(mine_key, inputs.vendor, inputs.minvram, inputs.maxusd, inputs.feasible,
                                              inputs.priced, inputs.job, inputs.stale, inputs.tier, inputs.mem,
                                              inputs.gpus, today), ranked, cal_ests, inputs, mine, today)
    return Answer(inputs, model, plan, table, fleet, est_key, cal_ests, mine, view)


def _downloads(a: Answer, url: str) -> None:
    """CSV, JSON and the SkyPilot task, each built from values on click (never from session state: Streamlit runs a
    deferred download in another thread)."""
    inputs, model, view = a.inputs, a.model, a.view
    c_link, c_csv, c_json, c_sky = st.columns([5, 1, 1, 1.8], vertical_alignment="bottom")
    with c_link.container(key="share"):
        # a plain link, not st.code: the code box pulls in a 1.5 MB syntax highlighter (benchmarks/browser_page.py)
        st.link_button("Share this plan: a link to exactly this page", url, icon=":material/link:",
                       help="Right-click it and copy the link to share; it is also the address in your browser's bar")
    ctx = exports.ExportContext(url, "data/gpus.yaml", a.table.source, a.table.as_of, view.extra, view.ranking, a.mine)
    rows = view.rows
    c_csv.download_button("CSV", data=lambda: exports.export_csv(inputs, model, rows, ctx), file_name="gpu-plan.csv",
                          mime="text/csv", icon=":material/download:", on_click="ignore", key="dl_csv")
    c_json.download_button("JSON", data=lambda: exports.export_json(inputs, model, rows, ctx),
                           file_name="gpu-plan.json", mime="application/json", icon=":material/download:",
                           on_click="ignore", key="dl_json")
    if any(e.feasible for e in view.ranking.estimates):
        ranked, spot = view.ranking.estimates, a.plan.price_tier == "spot"
        words = plan_inputs.plan_sentence(inputs, model)
        c_sky.download_button("SkyPilot task", data=lambda: launch.skypilot_text(ranked, load_skypilot_names(), spot,
                                                                                 url, words),
                              file_name="task.yaml", mime="application/x-yaml", icon=":material/rocket_launch:",
                              on_click="ignore", key="dl_sky", help="The GPUs that can run this plan, in this order, "
                              "for `sky launch task.yaml` (SkyPilot tries them in turn), with the runtime's pinned "
                              "install and autostop; put your command in `run`")
        tier_note = launch.skypilot_tier_note(ranked, a.plan.price_tier)
        if tier_note:
            st.caption(md_escape(f"SkyPilot task: {tier_note}", 700))


def _table(a: Answer) -> None:
    """The ranking table, its filters and what it shows."""
    view, inputs = a.view, a.inputs
    # Filters beside the heading, not at the right edge: the grid's toolbar appears above the table's top right corner
    c_head, c_filters, _ = st.columns([1.7, 1.1, 3.5], vertical_alignment="bottom")
    c_head.markdown("#### Every GPU, ranked")
    with c_filters.popover("Filters", icon=":material/filter_list:", width="stretch", key="filters_open",
                           on_change="rerun") as box:
        if box.open:  # drawn when opened: the six widgets cost every rerun nothing while it is closed
            filters()
    config = ranking_columns(view.unit, view.rate_name, inputs.job, inputs.tier, inputs.mem, inputs.stale)
    st.dataframe(view.arrow, placeholder="-", column_config=config, column_order=view.order, key="ranking",
                         on_select="rerun", row_height=35, selection_mode=["single-row", "single-cell"],
                         height=min(38 + 35 * len(view.table), 560))
    st.caption(f"{len(view.rows)} of {len(view.ranking.estimates)} GPUs shown"
               + (" (your own cards on top, marked ★)" if a.mine else "")
               + ". Ranked by what the whole job bills (Whole job $); compute time and cost are the steps alone; click "
               "a header to sort, "
               f"a row to explain it. Prices ({a.table.source}, {inputs.tier}): {view.dates}. Specs: "
               f"datasheets in data/gpus.yaml; efficiencies: data/runtimes.yaml.")


def _clicked(view) -> str | None:
    """The GPU of the row or cell the user clicked in the ranking (its selection state, read before the table is
    drawn so that the answer above it already follows the click), or None."""
    selection = (st.session_state.get("ranking") or {}).get("selection") or {}
    rows = list(selection.get("rows") or []) + [cell[0] for cell in selection.get("cells") or []]
    return view.table.gpu_id.iloc[rows[0]] if rows and rows[0] < len(view.table) else None


def main(inputs: plan_inputs.Inputs) -> None:
    ss = st.session_state
    c_title, c_presets = st.columns([5, 1.3], vertical_alignment="bottom")
    c_title.markdown("### GPU cost & throughput planner")
    presets_block(c_presets, inputs)
    page = state.page()
    if page["link_warnings"]:
        st.warning("Some values in this link could not be used; they fell back to defaults:\n\n"
                   + "\n".join(f"- {md_escape(w, 300)}" for w in page["link_warnings"]), icon=":material/link_off:")
    a = compute(inputs)
    if a is None:
        return
    st.markdown(f"**Plan:** {md_escape(plan_inputs.plan_sentence(inputs, a.model), 1000)}")
    prices.show_status(a.table, inputs)
    picked = _clicked(a.view)
    if picked and picked != page.get("picked"):
        ss.gpu = picked
        ss.view = TABS[0]
    page["picked"] = picked
    if a.mine:
        own_cards(a.mine, inputs.tier)
    answer_box(a, ss.get("gpu") or "")
    if a.view.callouts:
        callouts(a.view.callouts)
    if a.view.nothing:
        st.error(a.view.nothing)
    _table(a)
    if a.fleet is not None:
        tabs.calibration_panel(a.plan, a.fleet, a.view.ranking, a.cal_ests)
    _downloads(a, share.link(st.context.url, inputs))
    if len(a.view.jobs):
        with st.expander("**The whole job** · compute next to the pod's start, download, warm-up and billing, top 10",
                         icon=":material/stacked_bar_chart:", key="jobs_open", on_change="rerun") as box:
            if box.open:
                resources.chart("whole_jobs_chart", a.view.jobs)
    tabs.tab_area(a.view, inputs, a.plan, a.table, a.fleet, a.cal_ests, a.est_key)
