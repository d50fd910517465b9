"""The page's session state and the plan it holds: the widgets' keys, loading a plan into them, reading one back,
the link in the address bar. Every input lives in the URL's query parameters (planner.views.share encodes and
decodes them), so a link is a plan."""

from __future__ import annotations

from dataclasses import fields

import streamlit as st

from planner.base.schema import DataFileError, UnknownNameError
from planner.inputs.job_costs import JobOverheads, with_values
from planner.inputs.ownership import OwnAssumptions, Owned
from planner.inputs.ownership import with_values as own_with_values
from planner.views import plan_inputs, share
from ui import resources

BATCH_N_DEFAULT = 8
INPUT_FIELDS = frozenset(f.name for f in fields(plan_inputs.Inputs))
STATE_KEYS = [f.name for f in fields(plan_inputs.Inputs)
              if f.name not in ("arch", "spec", "batch", "myprice", "cal", "cmp", "own", "tab", "prov")]
STATE_KEYS += ["batch_auto", "batch_n", "cmp", "spec", "cal", "own_ids", "prov_ids", "view"]
TABS = tuple(plan_inputs.TABS.values())
TAB_IDS = {label: tab_id for tab_id, label in plan_inputs.TABS.items()}
# The whole-job and owning assumptions: (field, label, step); they stay on the page, not in links
JOB_COST_WIDGETS = (("pod_start_s", "Pod start (s)", 10.0), ("image_gb", "Image to pull (GB)", 1.0),
                    ("download_gb_per_s", "Download (GB/s)", 0.05),
                    ("billing_increment_s", "Billing increment (s)", 1.0),
                    ("spot_interruptions_per_h", "Spot interruptions per hour", 0.05))
OWN_WIDGETS = (("lifetime_years", "Lifetime (years)", 0.5), ("utilization", "Power draw (fraction of TDP)", 0.05),
               ("usd_per_kwh", "Electricity ($/kWh)", 0.01))
# A widget drawn only in some runs (a job's own fields, a closed popover's or expander's, a tab's) keeps its value
# while hidden and shows it again when drawn (Streamlit's persist_state). Rewriting every widget's value into
# st.session_state each run would do the same, at a price: each widget would then be told its value anew every
# rerun, and the browser redraws it.
KEEP = "page"
# The page's own state (no widget's: your prices, the link's warnings, messages, the row last clicked) lives under
# one session-state key, a dict. Every selectbox, radio, number or text input and slider reads the whole session
# state once per run (Streamlit 1.67's SessionState.filtered_state, each key through __getitem__, ~5 us a key), so a
# key costs every widget of every run; for the same reason the custom model's fields and the whole-job assumptions
# enter the session state only when their widgets are drawn (benchmarks/RESULTS.md, issue 35 round 5).
PAGE_KEY = "_page"
# Widgets drawn only in some runs (a closed popover's, another job's, another tab's): until first drawn, their values
# wait in the page's dict (put, drawn, value), not as session-state keys.
HIDEABLE = frozenset({"vendor", "minvram", "maxusd", "feasible", "priced", "cpus",  # the Filters popover
                      "epochs", "opt", "accum", "tokens", "ckpt", "shard", "lay", "gbatch",  # training
                      "prompt", "gen", "kv", "samples", "size", "batch_n",  # one job's or a fixed batch's
                      "sttft", "stpot", "srate", "slen", "cmp",  # the Serving and comparing tabs
                      "node", "fab"})  # the cluster's shape, drawn for more than one GPU


def page() -> dict:
    """The page's non-widget state of this session (PAGE_KEY), created empty on first use."""
    ss = st.session_state
    if PAGE_KEY not in ss:
        ss[PAGE_KEY] = {}
    return ss[PAGE_KEY]


def _held() -> dict:
    return page().setdefault("held", {})


def put(key: str, value) -> None:
    """Set an input: into its widget's session-state key, or held in the page's dict while a HIDEABLE widget has
    never been drawn (one place for each key, always)."""
    ss = st.session_state
    if key in HIDEABLE and key not in ss:
        _held()[key] = value
    else:
        ss[key] = value


def drawn(key: str) -> str:
    """The key of a HIDEABLE widget about to be drawn: a value held for it moves into the session state."""
    held = _held()
    if key in held:
        st.session_state[key] = held.pop(key)
    return key


def value(key: str):
    """An input's value, wherever it is (put)."""
    held = _held()
    return held[key] if key in held else st.session_state[key]


def load(inputs: plan_inputs.Inputs) -> None:
    """Put inputs into the widgets' session state (first run, presets, uploads)."""
    ss = st.session_state
    for name in STATE_KEYS:
        if hasattr(inputs, name) and name != "cmp":
            put(name, getattr(inputs, name))
    ss.batch_auto = inputs.batch is None
    put("batch_n", inputs.batch or BATCH_N_DEFAULT)
    put("cmp", list(inputs.cmp))
    page()["myprice"] = dict(inputs.myprice)
    ss.own_ids = [o.gpu_id for o in inputs.own]
    ss.prov_ids = inputs.prov.split(",")
    for o in inputs.own:
        ss[f"own_n_{o.gpu_id}"] = o.count
        ss[f"own_paid_{o.gpu_id}"] = float(o.paid_usd or 0.0)
    ss.view = plan_inputs.TABS[inputs.tab]
    if inputs.model == plan_inputs.CUSTOM:  # a preset's fields are loaded when 'Custom' is picked (on_model)
        load_arch(dict(inputs.arch) if inputs.arch else arch_for(inputs.model))
    page()["prev_model"] = inputs.model


def arch_for(model_id: str) -> dict:
    """The editable architecture of a preset model (named '(edited)'), or the default one."""
    m = resources.models().get(model_id) if model_id != plan_inputs.CUSTOM else None
    arch = m.architecture() if m is not None else None
    return arch | {"name": f"{m.name} (edited)"} if arch else plan_inputs.default_arch()


def load_arch(arch: dict) -> None:
    for f in share.ARCH_FIELDS:
        st.session_state[f.param] = arch[f.name] if f.name in arch else arch["hidden"] // arch["heads"]


def _arch_from_state() -> dict:
    return {f.name: st.session_state[f.param] for f in share.ARCH_FIELDS}


def inputs() -> plan_inputs.Inputs:
    """The plan the widgets hold now."""
    ss = st.session_state
    held = _held()
    values = {k: held[k] if k in held else ss[k] for k in STATE_KEYS if k in INPUT_FIELDS}
    values.update(batch=None if ss.batch_auto else int(value("batch_n")), cmp=tuple(value("cmp")),
                  myprice=tuple(sorted(page()["myprice"].items())), own=_owned(),
                  tab=TAB_IDS.get(ss.get("view"), "explain"),
                  prov=",".join(ss.prov_ids) or plan_inputs.DEFAULTS.prov)
    if ss.model == plan_inputs.CUSTOM and not ss.spec:
        values["arch"] = plan_inputs.arch_items(_arch_from_state())
    if ss.model != plan_inputs.CUSTOM:
        values["spec"] = ""
    return plan_inputs.Inputs(**values)


def _owned() -> tuple[Owned, ...]:
    """The cards picked under 'Your own GPUs': count and price paid (0 = the listed price) per kind."""
    ss = st.session_state
    return tuple(Owned(g, int(ss.get(f"own_n_{g}", 1)), float(ss.get(f"own_paid_{g}") or 0) or None)
                 for g in ss.own_ids)


def init() -> None:
    """First run of a session: the link's plan into the widgets, its warnings kept to show."""
    ss = st.session_state
    if PAGE_KEY in ss:
        return
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    decoded, warnings = share.decode(params)
    view = ss.get("view")
    load(decoded)
    if view in TABS and "tab" not in params:  # a tab opened before the link was read stays open
        ss.view = view
    page()["link_warnings"] = [str(w) for w in warnings]


def sync_url(now: plan_inputs.Inputs) -> None:
    want = share.encode(now)
    have = {k: st.query_params.get_all(k) for k in st.query_params}
    if have != {k: [v] for k, v in want.items()}:
        st.query_params.from_dict(want)


def overheads() -> JobOverheads:
    """The whole job's assumptions with the page's changes (the widgets' keys exist once their expander opened)."""
    ss = st.session_state
    return with_values(resources.overheads_default(),
                       {k: float(ss[f"jc_{k}"]) for k, _, _ in JOB_COST_WIDGETS if f"jc_{k}" in ss})


def own_assumptions() -> OwnAssumptions:
    ss = st.session_state
    return own_with_values(resources.own_default(),
                           {k: float(ss[f"ow_{k}"]) for k, _, _ in OWN_WIDGETS if f"ow_{k}" in ss})


def current_model():
    """The model the widgets name, or None when the custom one is not valid."""
    return model_of(inputs())


def model_of(plan: plan_inputs.Inputs):
    """The model a plan names, or None when the custom one is not valid."""
    try:
        return plan_inputs.resolve_model(plan)
    except (DataFileError, UnknownNameError):
        return None
