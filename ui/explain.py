"""'Explain a GPU': one GPU's figures, the inputs and formulas behind them, its memory, your own price for it and
its step-time breakdown. What it shows is planner.views.screens.ExplainView; this module only draws it."""

from __future__ import annotations

import streamlit as st

from planner.inputs.catalog import CUSTOM_MAX_USD_HR, CUSTOM_MIN_USD_HR
from planner.views import explain_text, plan_inputs
from planner.views.cache_key import content_key
from planner.views.format import short_name
from ui import callbacks, columns, resources, state
from ui.state import KEEP


def _own_price(e, inputs: plan_inputs.Inputs) -> None:
    """Type a $/GPU-hour for this GPU; it applies to every tier and travels in the link."""
    g, price = e.gpu, e.price
    key = f"price_in_{g.id}_{inputs.tier}"  # per tier: switching tiers shows that tier's price, not a stale one
    page = state.page()
    if page.get("price_key", key) != key and page["price_key"] in st.session_state:
        # the box of the GPU explained before goes (a price typed there and not used is forgotten): one such key at
        # a time, not one per GPU and tier ever explained, each walked by every widget of every run (ui/state.py)
        del st.session_state[page["price_key"]]
    page["price_key"] = key
    current = inputs.custom_prices.get(g.id) or (price.usd_hr if price else 1.0)
    if key not in st.session_state:
        st.session_state[key] = float(min(max(current, CUSTOM_MIN_USD_HR), CUSTOM_MAX_USD_HR))
    c1, c2, c3 = st.columns([2, 1, 1], vertical_alignment="bottom")
    c1.number_input(f"$/GPU-hour for {short_name(g.name)}", CUSTOM_MIN_USD_HR, CUSTOM_MAX_USD_HR, step=0.05, key=key,
                    format="%.3f", persist_state=KEEP)
    c2.button("Use this price", key=f"use_price_{g.id}",
              on_click=lambda: callbacks.set_price(g.id, st.session_state[key]),
              disabled=g.id not in inputs.custom_prices and price is not None
              and abs(st.session_state[key] - price.usd_hr) < 5e-4,
              help="Enabled once you type a price that differs from the listed one")
    if g.id in inputs.custom_prices:
        c3.button("Listed price", key=f"drop_price_{g.id}", on_click=lambda: callbacks.set_price(g.id, None),
                  help="Forget your price for this GPU")


def _steps(v) -> None:
    if v.steps_table is None:
        st.markdown(f"#### Step-time breakdown\n\n{v.steps}")
        return
    with st.expander("**Step-time breakdown** · each op group's FLOPs, bytes, time and formula, and where the time "
                     "goes", icon=":material/timer:", key="steps_open", on_change="rerun") as box:
        if not box.open:
            return
        st.markdown(v.steps)
        if len(v.split):
            resources.chart("time_split_chart", v.split)
        columns.small_table(v.steps_table)
        st.caption(explain_text.STEP_TIME_UNITS)
        columns.small_table(v.steps_formulas)


def explain(e, cal_e, ranked, inputs: plan_inputs.Inputs, est_key: str) -> None:
    auto = inputs.batch is None
    v = resources.explain_view(content_key(est_key, e.gpu.id, inputs.tier, inputs.job, auto), e, cal_e, ranked,
                               inputs.tier, inputs.job, auto)
    st.markdown(v.title)
    st.caption(v.caption)
    # what a reader opens is drawn when opened: on a closed expander the browser has nothing to redraw per change, and
    # a chart on the first screen would make it load and start Vega (~1 MB of JavaScript) before the ranking
    with st.expander("Where these specs come from", key="specs_open", on_change="rerun") as box:
        if box.open:
            st.caption(v.sources)
    for text in v.blocking:
        st.error(text)
    if v.notes:
        st.info(v.notes)
    for col, (label, value, why) in zip(st.columns(4), v.metrics):
        col.metric(label, value, help=why)
    if v.range_note:
        st.caption(v.range_note)
    if v.calibrated:
        st.success(v.calibrated)
    st.markdown(v.inputs)
    if v.job_data is not None:
        with st.expander("**Chart** · the whole job's billed time by part", icon=":material/stacked_bar_chart:",
                         key="job_chart_open", on_change="rerun") as box:
            if box.open:
                resources.chart("job_cost_chart", v.job_data)
    st.markdown(v.memory)
    _own_price(e, inputs)
    _steps(v)
