"""What every session shares: the data files as loaded once, and the caches of rankings, screens and charts.

st.cache_resource keeps one result per key for every session. The key is the content the result depends on
(planner.views.cache_key.content_key); the arguments whose names start with _ ride along unhashed.
"""

from __future__ import annotations

import threading
from datetime import date

import streamlit as st
from streamlit.dataframe_util import convert_anything_to_arrow_bytes

from planner.engine.ranking import my_gpus
from planner.inputs.facts import Facts, facts_with_own_gpu, load_facts
from planner.inputs.job_costs import JobOverheads, load_job_costs
from planner.inputs.models import load_models
from planner.inputs.ownership import OwnAssumptions, load_ownership
from planner.inputs.price_snapshot import utc_today
from planner.validation import measured
from planner.views import charts, plan_inputs, screens, tab_tables
from planner.views.cache_key import content_key
from planner.views.format import fmt_count


# Script runs that compute at once, server-wide. Python runs one thread at a time, so N sessions asking together
# under processor sharing all finish near the end (every one waits for all); taking turns, half of them are done by
# half-time. Two, not one, so that one slow run (a long Explain) does not hold every other session up.
RUN_SLOTS = 2


@st.cache_resource
def run_slots() -> threading.BoundedSemaphore:
    """The server's script-run slots (RUN_SLOTS), one object shared by every session."""
    return threading.BoundedSemaphore(RUN_SLOTS)


def facts() -> Facts:
    """The data files as loaded, with the GPU this session described (sidebar or the link's mygpu) among the GPUs."""
    return facts_with_own_gpu(st.session_state.get("mygpu") or "", utc_today())


def committed_facts() -> Facts:
    """The data files alone: what live prices and the owning assumptions are keyed on."""
    return load_facts()


def models():
    return load_models()


def gpu(gpu_id: str):
    """A catalog device (GPU or CPU), or the GPU this session described, by id."""
    return facts().catalog.get(gpu_id)


def overheads_default() -> JobOverheads:
    return load_job_costs(runtime_ids=tuple(r.id for r in load_facts().runtimes.runtimes))


def own_default() -> OwnAssumptions:
    return load_ownership(gpu_ids=load_facts().catalog.ids())


@st.cache_resource(show_spinner=False)
def model_labels() -> dict[str, str]:
    """The model picker's labels, computed once (a profile's parameter count evaluates its formulas): the name up to
    its parenthesis, so that the closed picker shows it whole in the sidebar; the caption under it has the full name."""
    return {**{m.id: f"{m.name.split(' (')[0]} · {fmt_count(m.params)} params" for m in models().models},
            plan_inputs.CUSTOM: "Custom model (edit fields or upload)"}


@st.cache_resource(max_entries=64, show_spinner=False)
def rankings(key: str, _plan, _include_cpus: bool, _table, _cal, _overheads):
    """(ranking, calibrated estimates by GPU id) for one distinct plan: a rerun that only changes the view, or
    another visitor asking the same, costs nothing."""
    return screens.rankings(_plan, screens.with_prices(facts(), _table), _include_cpus, _cal and _cal.adjust,
                            _overheads)


@st.cache_resource(max_entries=64, show_spinner=False)
def mine(key: str, _plan, _own, _table, _assumptions, _overheads, _cal) -> list:
    return my_gpus(_plan, _own, screens.with_prices(facts(), _table), _assumptions, _overheads, _cal and _cal.adjust)


@st.cache_resource(max_entries=32, show_spinner="Simulating each runtime's scheduler at that rate…")
def deployment(key: str, _plan, _gpus, _table, _prompt: int, _output: int, _rate: float, _ttft_s: float,
               _tpot_s: float, _lengths: str):
    """The Serving tab's deployment answer (planner.views.tab_tables.deployment_answer) for one distinct plan, GPUs,
    prices, lengths, rate and targets: a simulation per candidate, shared by every session that asks the same."""
    return tab_tables.deployment_answer(_plan, _gpus, screens.with_prices(facts(), _table), _prompt, _output, _rate,
                                        _ttft_s, _tpot_s, _lengths)


@st.cache_resource(max_entries=64, show_spinner=False)
def batch_frame(key: str, _plan, _gpus, _table, _adjust) -> tuple:
    """The Batch size tab's sweep (planner.views.charts.batch_sweep) for one distinct plan (key: the ranking's, with
    the compared GPUs), with the fewest items per GPU and the largest batch in it (0, 0 when empty): a click on the
    tab or another session asking the same sweeps and reads nothing again."""
    df = charts.batch_sweep(_plan, _gpus, screens.with_prices(facts(), _table), _adjust)
    return df, int(df.items_per_gpu.min()) if len(df) else 0, int(df.batch.max()) if len(df) else 0


@st.cache_resource(max_entries=128, show_spinner=False)
def ranking_view(key: str, _ranked, _cal_ests, _inputs, _mine, _today: date) -> screens.RankingView:
    return screens.ranking_view(_ranked, _cal_ests, _inputs, _mine, _today)


@st.cache_resource(max_entries=128, show_spinner=False)
def explain_view(key: str, _e, _cal_e, _ranked, _tier: str, _job: str, _auto_batch: bool) -> screens.ExplainView:
    return screens.explain_view(_e, _cal_e, _ranked, _tier, _job, _auto_batch)


@st.cache_resource(show_spinner="Checking the planner against published measurements…")
def validation_report():
    return measured.run_validation(priors=True)


@st.cache_resource(max_entries=256, show_spinner=False)
def _arrow_bytes(name: str, _df) -> bytes:
    """A chart's dataset as Arrow IPC bytes (Streamlit's own conversion, which it skips for bytes), by its name: a
    digest of its content (planner.views.charts), so two charts of the same rows convert them once."""
    return convert_anything_to_arrow_bytes(_df)


def _vega_spec(spec: dict) -> dict:
    """A chart's Vega-Lite spec (planner.views.charts, a plain dict) as st.vega_lite_chart sends it, its datasets
    already Arrow bytes: a session drawing a chart another one drew pays neither the spec nor the conversion."""
    return {**spec, "datasets": {name: _arrow_bytes(name, df) for name, df in spec["datasets"].items()}}


@st.cache_resource(max_entries=256, show_spinner=False)
def _chart_spec(key: str, builder: str, _args: tuple) -> dict:
    return _vega_spec(getattr(charts, builder)(*_args))


def chart(builder: str, *args, key: str = "") -> None:
    """Draw charts.<builder>(*args), its spec shared by every session that draws the same. `key`: a digest of the
    args' content the caller already holds (a cached frame's key with the other args), so that a rerun does not
    pickle a DataFrame again to find the spec."""
    st.vega_lite_chart(_chart_spec(content_key(builder, key or args), builder, args), width="stretch")
