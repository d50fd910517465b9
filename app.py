"""Streamlit page over the planner core: widgets in, core calls, tables and charts out.

Every input lives in the URL's query parameters (planner/share.py encodes and decodes them), so a link
is a plan. The page keeps its own time: st.session_state['_run_ms'] is the last script run, start to end
(benchmarks/app_rerun.py reads it).
"""

import time

_T0 = time.perf_counter()

from dataclasses import fields, replace  # noqa: E402
from datetime import date  # noqa: E402
from typing import NamedTuple  # noqa: E402

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import streamlit as st  # noqa: E402
from streamlit.dataframe_util import convert_anything_to_arrow_bytes  # noqa: E402

from planner.base.schema import DataFileError, UnknownNameError  # noqa: E402
from planner.engine.estimate import estimate_all, estimate_gpu  # noqa: E402
from planner.engine.plan import PARALLEL_MODES  # noqa: E402
from planner.inputs import price_snapshot  # noqa: E402
from planner.inputs.bench_result import CalibrationError, parse_result  # noqa: E402
from planner.inputs.catalog import CUSTOM_MAX_USD_HR, CUSTOM_MIN_USD_HR, MAX_STALE_DAYS, MAX_VRAM_GB, PRICE_TIERS  # noqa: E402, E501
from planner.engine.job_cost import job_cost  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.job_costs import LIMITS as JOB_COST_LIMITS  # noqa: E402
from planner.inputs.job_costs import load_job_costs, with_values  # noqa: E402
from planner.inputs.jobs import BOUNDS, OPTIMIZERS  # noqa: E402
from planner.inputs.models import load_models, parse_model_text  # noqa: E402
from planner.inputs.ownership import LIMITS as OWN_LIMITS  # noqa: E402
from planner.inputs.ownership import (MAX_CARDS, MAX_OWNED, MAX_PAID_USD, OwnAssumptions, Owned,  # noqa: E402
                                      load_ownership)
from planner.inputs.ownership import with_values as own_with_values  # noqa: E402
from planner.tools import calibration, live_prices, validation  # noqa: E402
from planner.inputs.launch_names import load_skypilot_names  # noqa: E402
from planner.views import calibration_text, charts, launch, page, share  # noqa: E402
from planner.views.cache_key import content_key  # noqa: E402
from planner.views.format import fmt_count, fmt_seconds, fmt_usd, md_escape, short_name, time_unit  # noqa: E402
from planner.views.presets import load_all as load_all_presets  # noqa: E402


st.set_page_config(page_title="GPU cost & throughput planner", page_icon="🧮", layout="wide")  # no icon font fetched
# st.html, not st.markdown(unsafe_allow_html=True): a style-only st.html takes no room on the page, and raw HTML in
# Markdown makes the browser load a 190 kB HTML parser (rehype-raw) for this one rule
st.html("""<style>
div.block-container {padding-top: 1.2rem; padding-left: 1.5rem; padding-right: 1.5rem;}
</style>""")

FACTS = load_facts()
CATALOG, RULES, RUNTIMES = FACTS.catalog, FACTS.rules, FACTS.runtimes
OVERHEADS_DEFAULT = load_job_costs(runtime_ids=tuple(r.id for r in RUNTIMES.runtimes))
OVERHEADS = OVERHEADS_DEFAULT  # with the page's whole-job assumptions, set each run before main()
JOB_COST_WIDGETS = (("pod_start_s", "Pod start (s)", 10.0), ("image_gb", "Image to pull (GB)", 1.0),
                    ("download_gb_per_s", "Download (GB/s)", 0.05), ("billing_increment_s", "Billing increment (s)", 1.0),
                    ("spot_interruptions_per_h", "Spot interruptions per hour", 0.05))
MODELS = load_models()
GPU_BY_ID = {g.id: g for g in CATALOG.devices}  # GPUs and CPU devices
JOB_LABELS = {"generate": "Generate sequences", "infer": "Run inference", "train": "Train"}
TABS = tuple(share.TABS.values())
TAB_IDS = {label: tab_id for tab_id, label in share.TABS.items()}
OWN_DEFAULT = load_ownership(gpu_ids=CATALOG.ids())
OWN_WIDGETS = (("lifetime_years", "Lifetime (years)", 0.5), ("utilization", "Power draw (fraction of TDP)", 0.05),
               ("usd_per_kwh", "Electricity ($/kWh)", 0.01))
BATCH_N_DEFAULT = 8
ARCH_KEYS = [f.param for f in share.ARCH_FIELDS]
INPUT_FIELDS = frozenset(f.name for f in fields(share.Inputs))
STATE_KEYS = [f.name for f in fields(share.Inputs)
              if f.name not in ("arch", "spec", "batch", "myprice", "cal", "cmp", "own", "tab")]
STATE_KEYS += ["batch_auto", "batch_n", "cmp", "spec", "myprice", "cal", "own_ids", "view", *ARCH_KEYS]
# A widget drawn only in some runs (a job's own fields, a closed popover's or expander's, a tab's) keeps its value
# while hidden and shows it again when drawn (Streamlit's persist_state). Rewriting every widget's value into
# st.session_state each run would do the same, at a price: each widget would then be told its value anew every
# rerun, and the browser redraws it (~2 ms a widget, ~40 widgets, every change).
KEEP = "page"


# ---------------------------------------------------------------- state <-> inputs


def _load(inputs: share.Inputs) -> None:
    """Put inputs into the widgets' session state (first run, presets, uploads)."""
    ss = st.session_state
    for name in STATE_KEYS:
        if hasattr(inputs, name) and name not in ("cmp", "myprice"):
            ss[name] = getattr(inputs, name)
    ss.batch_auto = inputs.batch is None
    ss.batch_n = inputs.batch or BATCH_N_DEFAULT
    ss.cmp = list(inputs.cmp)
    ss.myprice = dict(inputs.myprice)
    ss.own_ids = [o.gpu_id for o in inputs.own]
    for o in inputs.own:
        ss[f"own_n_{o.gpu_id}"] = o.count
        ss[f"own_paid_{o.gpu_id}"] = float(o.paid_usd or 0.0)
    ss.view = share.TABS[inputs.tab]
    _load_arch(dict(inputs.arch) if inputs.arch else _arch_for(inputs.model))
    ss._prev_model = inputs.model


def _arch_for(model_id: str) -> dict:
    m = MODELS.get(model_id) if model_id != share.CUSTOM else None
    arch = m.architecture() if m is not None else None
    return arch | {"name": f"{m.name} (edited)"} if arch else share.default_arch()


def _load_arch(arch: dict) -> None:
    for f in share.ARCH_FIELDS:
        st.session_state[f.param] = arch[f.name] if f.name in arch else arch["hidden"] // arch["heads"]


def _arch_from_state() -> dict:
    return {f.name: st.session_state[f.param] for f in share.ARCH_FIELDS}


def _inputs() -> share.Inputs:
    ss = st.session_state
    values = {k: ss[k] for k in STATE_KEYS if k in INPUT_FIELDS}
    values.update(batch=None if ss.batch_auto else int(ss.batch_n), cmp=tuple(ss.cmp),
                  myprice=tuple(sorted(ss.myprice.items())), own=_owned(), tab=TAB_IDS.get(ss.get("view"), "explain"))
    if ss.model == share.CUSTOM and not ss.spec:
        values["arch"] = share.arch_items(_arch_from_state())
    if ss.model != share.CUSTOM:
        values["spec"] = ""
    return share.Inputs(**values)


def _owned() -> tuple[Owned, ...]:
    """The cards picked under 'Your own GPUs': count and price paid (0 = the listed price) per kind."""
    ss = st.session_state
    return tuple(Owned(g, int(ss.get(f"own_n_{g}", 1)), float(ss.get(f"own_paid_{g}") or 0) or None)
                 for g in ss.own_ids)


def _init() -> None:
    ss = st.session_state
    for key, _, _ in JOB_COST_WIDGETS:  # read every run (OVERHEADS), drawn only while their expander is open
        ss.setdefault(f"jc_{key}", float(getattr(OVERHEADS_DEFAULT, key)))
    if "_ready" in ss:
        return
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    inputs, warnings = share.decode(params)
    view = ss.get("view")
    _load(inputs)
    if view in TABS and "tab" not in params:  # a tab opened before the link was read stays open
        ss.view = view
    ss._link_warnings = [str(w) for w in warnings]
    ss._fresh = not params
    ss._ready = True


def _sync_url(inputs: share.Inputs) -> None:
    want = share.encode(inputs)
    have = {k: st.query_params.get_all(k) for k in st.query_params}
    if have != {k: [v] for k, v in want.items()}:
        st.query_params.from_dict(want)


# ---------------------------------------------------------------- callbacks


def _current_model():
    try:
        return share.resolve_model(_inputs())
    except (DataFileError, UnknownNameError):
        return None


def _after_model_change() -> None:
    """A new model: its default input size, and no 'generate' for a generic profile."""
    ss = st.session_state
    m = _current_model()
    if m is not None:
        ss.size = share.default_size(m)
        if ss.job == "generate" and not m.can_generate:
            ss.job = "infer"


def _on_model() -> None:
    ss = st.session_state
    if ss.model == share.CUSTOM and ss._prev_model != share.CUSTOM:
        ss.spec = ""
        _load_arch(_arch_for(ss._prev_model))
    ss._prev_model = ss.model
    _after_model_change()


def _on_upload_model() -> None:
    ss = st.session_state
    f = ss.get("upload_model")
    if f is None:
        return
    text = f.getvalue().decode("utf-8", errors="replace")
    name = md_escape(f.name, 80)
    try:
        m = parse_model_text(text, f.name, f"uploaded {f.name}")
    except DataFileError as exc:
        where = "" if exc.field == "-" else f" (field '{md_escape(exc.field, 60)}')"
        hint = (" It looks like a benchmark result: upload it under 5 · Calibration." if '"planner-bench-result"' in text
                else "")
        ss._upload_msg = ("error", f"{name} could not be used: {md_escape(exc.problem, 600)}{where}.{hint} "
                                   "The plan is unchanged.")
        return
    arch = m.architecture()
    too_big = None if arch else share.spec_link_problem(text)
    if too_big:
        ss._upload_msg = ("error", f"{name} could not be used: {md_escape(too_big)}. The plan is unchanged.")
        return
    ss.model = ss._prev_model = share.CUSTOM
    if arch:
        ss.spec = ""
        _load_arch(arch)
    else:
        ss.spec = text
    ss._upload_msg = ("success", f"Loaded {md_escape(m.name, 80)} from {name} ({fmt_count(m.params)} parameters).")
    _after_model_change()


def _on_upload_cal() -> None:
    """One or several bench results (one per GPU of a fleet): each is fitted and used for its own GPU."""
    ss = st.session_state
    files = ss.get("upload_cal") or []
    if not files:
        return
    fitted, results, problems = [], {}, []
    for f in files[:calibration.MAX_FLEET]:
        try:
            result = parse_result(f.getvalue(), f.name)
            fitted.append(calibration.fit(result))
            results[fitted[-1].device_name] = result
        except CalibrationError as exc:
            problems.append(f"{md_escape(f.name, 80)} could not be used: {md_escape(exc, 400)}")
    if problems:
        ss._cal_msg = ("error", "; ".join(problems) + ". The plan keeps its current calibration.")
        return
    ss.cal = calibration.Fleet(tuple(fitted)).to_query()
    ss._cal_result = results
    names = ", ".join(md_escape(f.name, 80) for f in files[:calibration.MAX_FLEET])
    ss._cal_msg = ("success", f"Calibrated with {names}.")


def _cpu_results() -> dict:
    """The uploaded bench results measured on a CPU, by the name their fit carries."""
    return {k: r for k, r in (st.session_state.get("_cal_result") or {}).items()
            if r["environment"]["device_type"] == "cpu"}


def _on_cal_cpu() -> None:
    """Refit the uploaded results with the CPU a CPU bench ran on (a catalog CPU row, or the measured machine)."""
    ss = st.session_state
    fitted, results = [], {}
    try:
        for result in (ss.get("_cal_result") or {}).values():
            cpu = result["environment"]["device_type"] == "cpu"
            fitted.append(calibration.fit(result, device=ss.cal_cpu if cpu else None))
            results[fitted[-1].device_name] = result
    except CalibrationError as exc:
        ss._cal_msg = ("error", f"{md_escape(exc, 400)}. The plan keeps its current calibration.")
        return
    ss.cal = calibration.Fleet(tuple(fitted)).to_query()
    ss._cal_result = results
    target = GPU_BY_ID[ss.cal_cpu].name if ss.cal_cpu else "the measured machine only"
    ss._cal_msg = ("success", f"The CPU bench now calibrates {md_escape(target, 80)}.")


def _apply_preset(preset_id: str) -> None:
    p = next(p for p in load_all_presets()[0] if p.id == preset_id)
    _load(p.inputs)
    st.session_state._link_warnings = []
    st.session_state._preset = preset_id


def _set_price(gpu_id: str, value: float | None) -> None:
    prices_now = dict(st.session_state.myprice)
    if value is None:
        prices_now.pop(gpu_id, None)
    else:
        prices_now[gpu_id] = float(value)
    st.session_state.myprice = prices_now


def _head_dim() -> None:
    """Hidden size or heads changed: head dim follows (hidden / heads) when it divides evenly."""
    ss = st.session_state
    if ss.m_heads and ss.m_hidden % ss.m_heads == 0:
        ss.m_hd = ss.m_hidden // ss.m_heads


def _refresh_prices() -> None:
    if not live_prices.request_refresh(time.monotonic()):
        st.session_state._refresh_msg = (f"Live prices were refreshed less than "
                                         f"{live_prices.MIN_REFRESH_INTERVAL_S / 60:g} minutes ago; these are current.")


# ---------------------------------------------------------------- sidebar


def _bounds(name: str) -> tuple:
    """(min, max) of a job input for number_input: planner.inputs.jobs.BOUNDS, the CLI's and the links' too."""
    b = BOUNDS[name]
    return (int(b.lo), int(b.hi)) if b.integer else (float(b.lo), float(b.hi))


def _arch_bounds(param: str) -> tuple[int, int]:
    f = next(f for f in share.ARCH_FIELDS if f.param == param)
    return f.lo, f.hi


@st.cache_resource(show_spinner=False)
def _model_labels() -> dict[str, str]:
    return model_labels()


def model_labels() -> dict[str, str]:
    """The model picker's labels, computed once (a profile's parameter count evaluates its formulas)."""
    return {**{m.id: f"{m.name} · {fmt_count(m.params)} params" for m in MODELS.models},
            share.CUSTOM: "Custom model (edit fields or upload)"}


def sidebar() -> None:
    ss = st.session_state
    sb = st.sidebar
    sb.header("Your plan")
    sb.subheader("1 · Model")
    sb.selectbox("Model", [m.id for m in MODELS.models] + [share.CUSTOM], key="model", format_func=_model_labels().get,
                 on_change=_on_model, help="A preset architecture, or 'Custom' to type or upload your own.")
    if ss.model == share.CUSTOM and not ss.spec:
        with sb.expander("Architecture (decoder transformer)", expanded=True):
            st.text_input("Name", key="m_name", persist_state=KEEP)
            c1, c2 = st.columns(2)
            c1.number_input("Layers", *_arch_bounds("m_layers"), key="m_layers", persist_state=KEEP)
            c2.number_input("Hidden size", *_arch_bounds("m_hidden"), key="m_hidden", persist_state=KEEP,
                            on_change=_head_dim)
            c1.number_input("Attention heads", *_arch_bounds("m_heads"), key="m_heads", persist_state=KEEP,
                            on_change=_head_dim)
            c2.number_input("KV heads", *_arch_bounds("m_kv"), key="m_kv", persist_state=KEEP,
                            help="= heads for multi-head attention; fewer for GQA/MQA")
            c1.number_input("Head dim", *_arch_bounds("m_hd"), key="m_hd", persist_state=KEEP,
                            help="usually hidden / heads")
            c2.number_input("FFN size", *_arch_bounds("m_ffn"), key="m_ffn", persist_state=KEEP)
            c1.selectbox("FFN kind", ["swiglu", "gelu"], key="m_act", persist_state=KEEP)
            c2.selectbox("Norm", ["rmsnorm", "layernorm"], key="m_norm", persist_state=KEEP)
            c1.number_input("Experts per layer", *_arch_bounds("m_experts"), key="m_experts", persist_state=KEEP,
                            help="mixture of experts: MLPs of the FFN size per layer (1 = a dense MLP)")
            c2.number_input("Experts per token", *_arch_bounds("m_topk"), key="m_topk", persist_state=KEEP,
                            help="top-k: experts the router sends each token to (at most the experts per layer)")
            c1.number_input("Shared expert FFN size", *_arch_bounds("m_shared"), key="m_shared", persist_state=KEEP,
                            help="intermediate size of the MLP every token also goes through (Qwen-MoE); 0 = none")
            c1.number_input("Vocabulary", *_arch_bounds("m_vocab"), key="m_vocab", persist_state=KEEP)
            c2.number_input("Context (tokens)", *_arch_bounds("m_ctx"), key="m_ctx", persist_state=KEEP)
            st.checkbox("Tied input/output embeddings", key="m_tied", persist_state=KEEP)
            st.checkbox("Learned position embeddings (GPT-2)", key="m_pos", persist_state=KEEP)
            st.checkbox("Biases in linear layers (GPT-2)", key="m_bias", persist_state=KEEP)
    elif ss.model == share.CUSTOM:
        sb.caption("Custom model from an uploaded YAML profile (formulas in its input size).")
    m = _current_model()
    if m is not None:
        sb.caption(f"{fmt_count(m.params)} parameters · {md_escape(m.describe())}")
    # the closed expanders below draw their widgets only when opened: nothing to send or lay out on every rerun
    with sb.expander("Upload a model (YAML profile or Hugging Face config.json)", key="upload_open",
                     on_change="rerun") as box:
        if box.open:
            st.file_uploader("Model file", type=["yaml", "yml", "json"], key="upload_model",
                             on_change=_on_upload_model, label_visibility="collapsed", max_upload_size=1)
    msg = ss.pop("_upload_msg", None)
    if msg:
        (sb.error if msg[0] == "error" else sb.success)(msg[1])

    sb.subheader("2 · Job")
    jobs = list(share.JOBS) if m is None or m.can_generate else ["infer", "train"]
    sb.radio("What to run", jobs, key="job", format_func=JOB_LABELS.get, horizontal=True)
    size_label = f"Input size ({share.size_name(m)})" if m is not None else "Input size"
    if ss.job == "generate":
        sb.number_input("Sequences to generate", *_bounds("sequences"), step=1000, key="seqs", persist_state=KEEP)
        c1, c2 = sb.columns(2)
        c1.number_input("Prompt tokens", *_bounds("prompt_tokens"), key="prompt", persist_state=KEEP,
                        help="at least 1 (a BOS token counts)")
        c2.number_input("New tokens each", *_bounds("gen_tokens"), key="gen", persist_state=KEEP)
    else:
        sb.number_input("Samples" + (" per epoch" if ss.job == "train" else ""), *_bounds("samples"), step=1000,
                        key="samples", persist_state=KEEP)
        sb.number_input(size_label, *_bounds("input_size"), key="size", persist_state=KEEP)
    if ss.job == "train":
        c1, c2 = sb.columns(2)
        c1.number_input("Epochs", *_bounds("epochs"), step=1.0, key="epochs", persist_state=KEEP)
        c2.selectbox("Optimizer", sorted(OPTIMIZERS), key="opt", persist_state=KEEP)
        c1.number_input("Grad. accumulation", *_bounds("grad_accum"), key="accum", persist_state=KEEP)
        c2.checkbox("Activation checkpointing", key="ckpt", persist_state=KEEP,
                    help="recompute activations in the backward pass: "
                    "less memory, about one more forward pass of time")
        sb.radio("Several GPUs train with", share.SHARDINGS, key="shard", persist_state=KEEP, horizontal=True,
                 format_func={"ddp": "DDP (full copies)", "fsdp": "FSDP (sharded states)"}.get,
                 help="with more than one GPU per job: DDP keeps weights, gradients and optimizer states on every "
                      "GPU and all-reduces gradients; FSDP (ZeRO-3) shards them and all-gathers weights per layer")
    sb.checkbox("Auto batch (the cheapest batch that fits, per GPU)", key="batch_auto")
    if not ss.batch_auto:
        sb.number_input("Batch size (per GPU)" + (" (micro-batch)" if ss.job == "train" else ""), *_bounds("batch"),
                        key="batch_n", persist_state=KEEP)

    sb.subheader("3 · Precision & software")
    c1, c2 = sb.columns(2)
    c1.selectbox("Precision", [p.id for p in RULES.precisions], key="prec",
                 help="; ".join(f"{p.id}: {p.note}" for p in RULES.precisions))
    if ss.job == "generate":
        c2.selectbox("KV-cache dtype", ["auto"] + [k.id for k in RULES.kv_dtypes], key="kv", persist_state=KEEP,
                     help="auto = the activation dtype")
    sb.selectbox("Attention", [a.id for a in RULES.attention_backends], key="attn",
                 format_func=lambda a: "sdpa (auto: PyTorch's pick per GPU)" if a == "sdpa" else a,
                 help="; ".join(f"{a.id}: {a.name}" for a in RULES.attention_backends) + ". Each GPU's notes say "
                 "which kernel it runs (data/precisions.yaml).")
    sb.selectbox("PyTorch build", ["", *FACTS.builds.choices()], key="pt",
                 format_func=lambda v: v or "latest (any build that runs each GPU)",
                 help="Pin the PyTorch you have, e.g. 1.13.1+cu116, or a version for any of its variants: a GPU its "
                      "build ships no kernels for is marked as unable to run (data/pytorch_builds.yaml).")
    sb.selectbox("Framework / runtime", [r.id for r in RUNTIMES.runtimes], key="rt",
                 format_func=lambda r: RUNTIMES.get(r).name, help="torch.compile = 'torch.compile (reduce-overhead, "
                 "CUDA graphs)'. Each runtime reaches its own fraction of peak bandwidth and of each GPU's measured "
                 "matmul ceiling (data/runtimes.yaml, data/gpus.yaml).")

    sb.subheader("4 · GPUs & prices")
    c1, c2 = sb.columns([2, 3])
    c1.number_input("GPUs per job", *_bounds("gpus"), key="gpus", help="how they share the job: see Parallelism")
    c2.selectbox("Price tier", PRICE_TIERS, key="tier", help="RunPod secure cloud, community cloud or spot")
    sb.selectbox("Parallelism", PARALLEL_MODES, key="par", help="auto: tensor parallel only when the weights don't "
                 "fit one GPU, else data parallel; data: a whole copy per GPU (training: DDP, or FSDP with sharding "
                 "fsdp); tensor: split every layer over the GPUs (inference), with 2 all-reduces per layer over the "
                 "GPU's link (NVLink, PCIe, or PCIe through host memory where the driver blocks peer-to-peer)")
    sb.slider("Usable memory (% of what each GPU reports)", *_bounds("memory_target_pct"), step=1.0, key="mem",
              format="%.0f %%", help="A plan fills at most this share of the memory the driver reports (ECC keeps "
              "1/16 of a data-center GDDR card); 90 % is vLLM's default gpu_memory_utilization, the rest absorbs "
              "allocator fragmentation. batch=auto stays below it; a fixed batch above it is out of memory.")
    sb.number_input("Flag prices older than (days)", 1, MAX_STALE_DAYS, key="stale",
                    help="A price read longer ago than this is marked ⚠ in the table and in the call-outs")
    sb.radio("Prices", share.PRICE_SOURCES, key="psrc", horizontal=True,
             format_func={"snapshot": "Snapshot (dated)", "live": "Live from RunPod"}.get)
    if ss.psrc == "live":
        sb.button("Refresh prices", on_click=_refresh_prices, icon=":material/refresh:")
        msg = ss.pop("_refresh_msg", None)
        if msg:
            sb.caption(msg)

    with sb.expander("Whole-job assumptions (pod start, download, billing…)", key="jc_open",
                     on_change="rerun") as box:
        if box.open:
            for key, label, step in JOB_COST_WIDGETS:
                lo, hi = JOB_COST_LIMITS[key]
                st.number_input(label, float(lo), float(hi), step=step, key=f"jc_{key}", persist_state=KEEP,
                                help=dict(OVERHEADS_DEFAULT.sources).get(key, ""))
            st.caption("Defaults and their sources: data/job_costs.yaml. These settings stay on this page (not in "
                       "links).")

    sb.subheader("5 · Your own GPUs (optional)")
    sb.multiselect("GPUs you own", CATALOG.ids(), key="own_ids", max_selections=MAX_OWNED,
                   format_func=lambda gid: GPU_BY_ID[gid].name, placeholder="Pick the cards you have",
                   help="Each kind runs the plan on all its cards together; a verdict and a row on top of the table "
                        "compare owning them with renting as many")
    for gid in ss.own_ids:
        c1, c2 = sb.columns(2)
        ss.setdefault(f"own_n_{gid}", 1)
        ss.setdefault(f"own_paid_{gid}", 0.0)
        c1.number_input(f"How many {short_name(GPU_BY_ID[gid].name)}", 1, MAX_CARDS, key=f"own_n_{gid}",
                        persist_state=KEEP)
        c2.number_input("Paid per card ($, 0 = listed)", 0.0, MAX_PAID_USD, step=50.0, key=f"own_paid_{gid}",
                        persist_state=KEEP,
                        format="%g", help=md_escape(OWN_DEFAULT.source(f"purchase_usd.{gid}") or
                                                   "no listed price for this card: give what you paid"))
    if ss.own_ids:
        with sb.expander("Owning assumptions (lifetime, power, electricity)", key="ow_open", on_change="rerun") as box:
            if box.open:
                for key, label, step in OWN_WIDGETS:
                    lo, hi = OWN_LIMITS[key]
                    ss.setdefault(f"ow_{key}", float(getattr(OWN_DEFAULT, key)))
                    st.number_input(label, float(lo), float(hi), step=step, key=f"ow_{key}", persist_state=KEEP,
                                    help=OWN_DEFAULT.source(key))
                st.caption("Defaults and their sources: data/ownership.yaml. These stay on this page (not in links).")

    sb.subheader("6 · Calibration (optional)")
    sb.caption("Upload results of `python -m planner.bench` run on your GPUs (one file per GPU, several at once "
               "for a fleet): each one's measured efficiencies replace the priors for its GPU.")
    sb.file_uploader("Benchmark results", key="upload_cal", on_change=_on_upload_cal, max_upload_size=5,
                     accept_multiple_files=True, label_visibility="collapsed")
    msg = ss.pop("_cal_msg", None)
    if msg:
        (sb.error if msg[0] == "error" else sb.success)(msg[1])
    if ss.cal and _cpu_results():
        fleet = _calibration(_inputs())
        now = next((c.gpu_id or "" for c in fleet.members if c.device_class == "cpu"), "") if fleet else ""
        ss.setdefault("cal_cpu", now)
        sb.selectbox("CPU the bench ran on", [calibration.THIS_MACHINE, *(c.id for c in CATALOG.cpus)], key="cal_cpu",
                     persist_state=KEEP,
                     on_change=_on_cal_cpu,
                     format_func=lambda c: GPU_BY_ID[c].name if c else "the measured machine only",
                     help="A CPU bench calibrates this CPU's row (tick Filters → Include CPUs above the ranking to see it); "
                          "a VM or container slice calibrates only the measured machine")
    if ss.cal:
        sb.button("Remove calibration", on_click=lambda: ss.update(cal="", _cal_result=None))


# ---------------------------------------------------------------- computing


def _api_key() -> str | None:
    key = live_prices.api_key_from_env()
    if key:
        return key
    try:
        return str(st.secrets.get(live_prices.API_KEY_ENV) or "").strip() or None
    except Exception:  # no secrets file or an unreadable one: run without a key
        return None


def _live(wait: bool = False) -> price_snapshot.PriceTable:
    """Live prices, shared by every session; the page never waits: the snapshot shows while a fetch is under way."""
    return live_prices.fetch_live(CATALOG, api_key=_api_key(), url=live_prices.RUNPOD_GRAPHQL_URL, wait=wait)


@st.fragment(run_every=1.0)
def _await_live() -> None:
    """Polls the fetch in flight once a second and reruns the page when live prices have arrived."""
    if not _live().pending:
        st.rerun(scope="app")


def price_table(inputs: share.Inputs) -> price_snapshot.PriceTable:
    base = _live() if inputs.psrc == "live" else FACTS.prices
    return price_snapshot.with_custom(base, inputs.custom_prices) if inputs.myprice else base


def _calibration(inputs: share.Inputs):
    if not inputs.cal:
        return None
    try:
        return calibration.Fleet.from_query(inputs.cal)
    except CalibrationError:  # decoded once already; a failure here only drops the calibration
        return None


# The shared caches: st.cache_resource keeps one result per key for every session. Each decorated function is a
# one-line wrapper because Streamlit reads and hashes a cached function's source every time the script defines it
# (every rerun): a long body costs ~0.5 ms a rerun. The key is the content the result depends on (content_key);
# the arguments whose names start with _ ride along unhashed.


@st.cache_resource(max_entries=64, show_spinner=False)
def _rankings(key: str, _plan, _include_cpus: bool, _table, _cal) -> tuple[list, dict]:
    return rankings(_plan, _include_cpus, _table, _cal)


def rankings(plan, include_cpus: bool, table, cal) -> tuple[list, dict]:
    """(analytic ranking, calibrated estimates by GPU id) for one distinct plan (key: _estimates_key): a page rerun
    that only changes the view, or another visitor asking the same, costs nothing."""
    facts = replace(FACTS, prices=table)
    ests = estimate_all(plan, facts, include_cpus=include_cpus)
    cal_all = estimate_all(plan, facts, adjust=cal.adjust, include_cpus=include_cpus) if cal else []
    # only GPUs the calibration reaches (a CPU calibration changes none of the catalog's)
    return ests, {e.gpu.id: e for e in cal_all if str(e.efficiency.source).startswith("calibrated")}


def _vega_spec(chart) -> dict:
    """An Altair chart as the Vega-Lite spec st.vega_lite_chart sends, its datasets already Arrow IPC bytes
    (Streamlit's own conversion, which it skips for bytes): _chart_spec keeps it, so a session drawing a chart
    another one drew pays neither Altair (~10 ms a chart) nor the Arrow conversion (~1 ms a dataset). Not validated
    against the Vega-Lite schema here (up to half of the build): tests/views/test_charts.py validates every
    builder's spec."""
    spec = chart.to_dict(validate=False)
    if "datasets" in spec:
        spec["datasets"] = {name: convert_anything_to_arrow_bytes(rows) for name, rows in spec["datasets"].items()}
    return spec


@st.cache_resource(max_entries=256, show_spinner=False)
def _chart_spec(key: str, builder: str, _args: tuple) -> dict:
    return _vega_spec(getattr(charts, builder)(*_args))  # the spec of charts.<builder>(*args)


def _chart(builder: str, *args) -> None:
    st.vega_lite_chart(_chart_spec(content_key(builder, args), builder, args), width="stretch")


def _estimates_key(plan, inputs: share.Inputs, table) -> str:
    """What a ranking depends on: the plan's content, the prices' identity (source, date, your own prices), the
    calibration text and whether CPUs join."""
    return content_key(plan, (inputs.psrc, table.source, table.as_of, inputs.myprice), inputs.cal, inputs.cpus)


@st.cache_resource(max_entries=64, show_spinner=False)
def _my_gpus(key: str, _plan, _own, _table, _assumptions, _overheads, _cal) -> list:
    return page.my_gpus(_plan, _own, replace(FACTS, prices=_table), _assumptions, _overheads, _cal and _cal.adjust)


class RankingView(NamedTuple):
    """Everything the page shows of one ranking, built once per distinct plan and view and shared by every
    session."""

    ranked: list  # every estimate, in ranking order
    rows: list  # the ones the filters keep
    bands: dict
    table: pd.DataFrame
    arrow: pa.Table  # the same, as st.dataframe sends it: converted once, not once a session (~1.5 ms)
    config: dict
    order: list
    callouts: list  # (key, Markdown, help) per call-out
    nothing: str | None  # why nothing runs, or None
    dates: str  # the prices' dates, in words
    extra: dict  # export columns
    jobs: pd.DataFrame  # the whole-job chart's data (top 10)


@st.cache_resource(max_entries=128, show_spinner=False)
def _ranking_view(key: str, _ests, _cal_ests, _inputs, _overheads, _mine, _gpus: int) -> RankingView:
    return ranking_view(_ests, _cal_ests, _inputs, _overheads, _mine, _gpus)


def ranking_view(ests, cal_ests, inputs, overheads, mine, gpus: int) -> RankingView:
    """The ranking as the page shows it (key: the estimates' key, whole-job assumptions, your cards, filters, job,
    tier, memory target, stale-price age and today's date)."""
    today = date.today()
    ranked = page.rank_by_whole_job(ests, overheads)
    rows = page.filtered(ranked, _filters(inputs))
    bands = page.bands(rows, cal_ests)
    df, config, order = ranking_table(rows, inputs, cal_ests, bands, mine, overheads)
    found = [(f"callout_{c.label.replace(' ', '_').lower()}",
              f"**{c.label}** · **{page.callout_title(c)}**  \n"
              f"{page.callout_line(c, gpus, today, inputs.stale, overheads)}", c.why)
             for c in page.callouts(rows, overheads)]
    dates = page.price_dates(rows, today, inputs.stale)
    return RankingView(ranked, rows, bands, df, pa.Table.from_pandas(df, preserve_index=False), config, order, found,
                       page.nothing_runs_message(rows, ranked),
                       dates.sentence(), page.extra_columns(rows, cal_ests, bands),
                       charts.whole_jobs_data(rows, overheads))


def _skypilot_text(ests, plan, url: str) -> str:
    try:
        task, _ = launch.skypilot_task(ests, load_skypilot_names(), plan.price_tier == "spot", url)
    except ValueError as exc:
        return f"# {exc}\n"
    order = ", ".join(f"{k}:{v}" for r in task["resources"]["ordered"] for k, v in r["accelerators"].items())
    return launch.skypilot_yaml(task, share.plan_sentence(_inputs(), plan.model), order)


def _filters(inputs: share.Inputs) -> page.Filters:
    return page.Filters(inputs.vendor, inputs.minvram, inputs.maxusd, inputs.feasible, inputs.priced)


# ---------------------------------------------------------------- rendering


def ranking_table(rows, inputs, cal_ests, bands, mine, overheads) -> tuple[pd.DataFrame, dict, list]:
    data, unit, rate_name = page.ranking_rows(rows, inputs.job, cal_ests, bands, date.today(), inputs.stale,
                                              overheads)
    div = time_unit(e.seconds for e in rows)[1]
    data = page.mine_rows(mine, inputs.job, unit, div, date.today(), inputs.stale, overheads) + data
    df = pd.DataFrame(data)
    noun = page.NOUNS[inputs.job]
    cc = st.column_config
    config = {
        "Rank": cc.NumberColumn(width=40, pinned=True, help="Feasible first, then by what the whole job bills "
                                "(compute, start, download, warm-up, billing increments), then by time; "
                                "0 = your own cards"),
        "GPU": cc.TextColumn(width=320, pinned=True, help="★ = cards you own (sidebar, section 5)"),
        "Own ($/month)": cc.NumberColumn(format="$%.4g", help="Your cards' purchase written off over the lifetime "
                                         "(data/ownership.yaml; sidebar, section 5)"),
        "Break-even (h/month)": cc.NumberColumn(format="%.0f", help="Hours of use a month above which owning your "
                                                "cards costs less than renting as many in this tier"),
        "Electricity for the job ($)": cc.NumberColumn(format="$%.3g", help="Your cards' TDP x power draw x $/kWh "
                                                       "over the job's compute time"),
        "Runs?": cc.CheckboxColumn(width=50, help="Can this GPU run the plan? If not, 'Why / notes' says why"),
        "Why / notes": cc.TextColumn(width=420, help="✗ = blocks the plan; • = a note (software requirements, "
                                     "parallelism). Hover a cell to read it whole, or click the row to explain it"),
        f"Time ({unit})": cc.NumberColumn(format="%.3g", width=80, help="Estimated wall-clock time of the whole job"),
        f"Likely range ({unit})": cc.TextColumn(help="80 % range from the planner's errors on published measurements "
                                                "of sources it was not tuned on; 'no measurement': none backs a range "
                                                "for this kind of job, runtime or model ('Explain a GPU' says which)"),
        f"Calibrated time ({unit})": cc.NumberColumn(format="%.3g", help="With the efficiencies of your calibration"),
        f"Throughput ({rate_name})": cc.NumberColumn(format="%.4g", width=155, help="Average over the whole job"),
        f"{noun.capitalize()}/s": cc.NumberColumn(format="%.4g"),
        "Compute cost ($)": cc.NumberColumn(format="$%.3g", help=f"compute time x GPUs x $/GPU-hour ({inputs.tier} "
                                            "tier)"),
        "Whole job ($)": cc.NumberColumn(format="$%.3g", width=95, help="what the pod bills: compute plus start, image pull, "
                                         "model download, warm-up, checkpoint upload, spot rework and billing "
                                         "increments (data/job_costs.yaml; 'Explain a GPU' shows the parts)"),
        "Calibrated cost ($)": cc.NumberColumn(format="$%.3g"),
        "$/GPU-h": cc.NumberColumn(format="$%.2f", help=f"RunPod {inputs.tier} price per GPU-hour"),
        "Price date": cc.TextColumn(width="medium", help=f"When the price was read and its age in days; ⚠ = older "
                                    f"than {inputs.stale} days (set in the sidebar) or undated"),
        "Price source": cc.TextColumn(width="medium"),
        "Limited by": cc.TextColumn(width="small", help="memory = bandwidth-bound; compute = TFLOPS-bound; "
                                    "overhead = kernel launches; communication = GPU-to-GPU links"),
        "Batch": cc.NumberColumn(width=60, help="Per GPU; auto = the cheapest that fits"),
        "Memory (GB)": cc.NumberColumn(format="%.3g", help="Per GPU at this batch, decimal GB (1e9 bytes)"),
        "Usable (GB)": cc.NumberColumn(format="%.1f", help=f"{inputs.mem:g} % (the memory target, sidebar) "
                                       "of what the GPU reports: ECC takes 1/16 on data-center GDDR cards"),
        "VRAM (GB)": cc.NumberColumn(format="%.1f", help="Decimal GB (1e9 bytes), like the memory column: "
                                     "a card sold as '24 GB' holds 24 GiB = 25.8 GB"),
        "Memory used": cc.ProgressColumn(format="percent", min_value=0.0, max_value=1.0, width=105,
                                         help="Memory / usable memory; above 100 % it does not fit"),
        "gpu_id": None,
    }
    return df, config, page.ranking_order(df.columns, unit, rate_name, inputs.job)


def callouts(found: list) -> None:
    if not found:
        return
    for col, (key, text, why) in zip(st.columns(len(found)), found):
        with col.container(border=True, key=key, gap="small"):
            st.markdown(text, help=why)


def calibration_panel(plan, fleet) -> None:
    """Each calibration: what it is, where it applies, and (file at hand) its points: measured vs analytic vs calibrated."""
    for cal in fleet.members:
        where = (f"applied to the {cal.device_name} row as fitted (tick Filters → Include CPUs to rank it); it does not "
                 "carry to GPUs or other CPUs" if cal.gpu_id and cal.device_class == "cpu" else
                 f"applied to {cal.gpu_id} as fitted and carried to the other GPUs by the ratio to the priors "
                 f"(half of it across architectures)" if cal.gpu_id else
                 "measured on a CPU or Apple GPU: it does not carry to the catalog GPUs, only to the measured device "
                 "(for a CPU bench, pick the catalog CPU it ran on in the sidebar)")
        with st.expander(f"**Your calibration** · {md_escape(cal.device_name, 80)}, bench of {cal.bench_date}",
                         expanded=len(fleet.members) == 1, icon=":material/tune:"):
            st.markdown(f"{calibration_text.fit_markdown(cal)} It is {where}.")
            for problem in calibration_text.fit_warnings_markdown(cal):
                st.warning(problem)
            device = cal.measured_gpu(CATALOG)
            a, c = estimate_gpu(plan, device, FACTS), estimate_gpu(plan, device, FACTS, cal.adjust)
            if a.seconds and c.seconds:
                st.markdown(f"This plan on **{md_escape(device.name, 80)}**: {fmt_seconds(a.seconds)} analytic, "
                            f"**{fmt_seconds(c.seconds)} calibrated**.")
            result = (st.session_state.get("_cal_result") or {}).get(cal.device_name)
            if result is not None:
                df = charts.calibration_data(calibration.point_table(result, cal))
                if len(df):
                    _chart("calibration_chart", df)


class ExplainView(NamedTuple):
    """'Explain a GPU' for one GPU of one ranking, as Markdown, chart data and a table: built once per distinct
    plan, GPU and view, and shared by every session."""

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
    steps_table: pa.Table | None


@st.cache_resource(max_entries=128, show_spinner=False)
def _explain_view(key: str, _e, _cal_e, _tier: str, _job: str, _auto_batch: bool, _overheads) -> ExplainView:
    return explain_view(_e, _cal_e, _tier, _job, _auto_batch, _overheads)


def explain_view(e, cal_e, tier: str, job_name: str, auto_batch: bool, overheads) -> ExplainView:
    """'Explain a GPU' for one estimate (key: the estimates' key, the GPU, tier, job, auto batch and whole-job
    assumptions). Text that follows from one another shares one Markdown element: each element is one more
    thing for the browser to redraw on every change."""
    g, price = e.gpu, e.price
    rate = page.rate(e)
    metrics = [("Time for the job", fmt_seconds(e.seconds), "Sum over every step of the job (formula below)"),
               (f"Cost ({tier})", fmt_usd(e.cost()), "seconds / 3600 x GPUs x $/GPU-hour"),
               (f"Throughput ({page.rate_unit(job_name, e.plan.model.counts_tokens)})",
                fmt_count(rate) if rate else "-", "average over the whole job"),
               (f"Memory per GPU (of {e.usable_gb:.3g} GB usable)", f"{e.memory.total_gb:.3g} GB",
                f"at batch {e.batch:,}; decimal GB; {page.memory_sentence(e)}")]
    span = page.range_sentence(e, cal_e is not None)
    calibrated = (f"Calibrated: {fmt_seconds(cal_e.seconds)}, {fmt_usd(cal_e.cost())} "
                  f"({md_escape(cal_e.efficiency.source, 400)})" if cal_e is not None and cal_e.seconds else None)
    behind = ["#### Inputs behind the figures", page.md_table(["input", "value", "source"],
                                                               page.inputs_rows(e, auto_batch))]
    if e.seconds and price:
        behind.append(f"**Cost** = {e.seconds:,.4g} s ÷ 3600 × {e.plan.gpus} GPU × ${price.usd_hr:.3f}/h "
                      f"= **{fmt_usd(e.cost())}**")
    job = job_cost(e, overheads)
    if job:
        behind += [f"#### The whole job: {fmt_seconds(job.billed_s)} billed, **{fmt_usd(job.cost_usd)}**",
                   " · ".join(f"{name} {fmt_seconds(sec)}" for name, sec in job.parts if sec > 0)
                   + ". Assumptions (each with its source): data/job_costs.yaml."]
    memory = "\n\n".join(["#### Memory breakdown", page.md_table(
        ["used by", "GB", "formula"], [(i.name.replace("_", " "), f"{i.gb:.4g}", i.formula) for i in e.memory.items]),
        page.memory_sentence(e), "#### Your own price",
        "It applies to every tier of this GPU and travels in the share link."])
    if e.feasible:
        steps = page.STEP_TIME_INTRO
        split = charts.time_split_data(e)
        steps_table = pa.Table.from_pylist(page.step_time_rows(e))
    else:
        steps, split, steps_table = "Not timed: the plan can't run on this GPU (reasons above).", None, None
    notes = [md_escape(r.text, 600) for r in e.reasons if not r.blocking]
    return ExplainView(
        f"### {g.name}", page.gpu_caption(e),
        md_escape(g.source, 2000) + (f"  \nNotes: {md_escape(g.notes, 2000)}" if g.notes else ""),
        [f"Can't run: {md_escape(r.text, 600)}" for r in e.reasons if r.blocking],
        "  \n".join(f"Note: {n}" for n in notes) or None,
        metrics, md_escape(span, 600) if span else None, calibrated, "\n\n".join(behind),
        charts.job_cost_data(job, price.usd_hr if price else None, e.plan.gpus) if job else None,
        memory, steps, split, steps_table)


def explain(e, cal_e, inputs: share.Inputs, est_key: str) -> None:
    g, price = e.gpu, e.price
    v = _explain_view(content_key(est_key, g.id, inputs.tier, inputs.job, inputs.batch is None, OVERHEADS), e, cal_e,
                      inputs.tier, inputs.job, inputs.batch is None, OVERHEADS)
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
                _chart("job_cost_chart", v.job_data)
    st.markdown(v.memory)
    key = f"price_in_{g.id}_{inputs.tier}"  # per tier: switching tiers shows that tier's price, not a stale one
    current = inputs.custom_prices.get(g.id) or (price.usd_hr if price else 1.0)
    if key not in st.session_state:
        st.session_state[key] = float(min(max(current, CUSTOM_MIN_USD_HR), CUSTOM_MAX_USD_HR))
    c1, c2, c3 = st.columns([2, 1, 1], vertical_alignment="bottom")
    c1.number_input(f"$/GPU-hour for {short_name(g.name)}", CUSTOM_MIN_USD_HR, CUSTOM_MAX_USD_HR, step=0.05, key=key,
                    format="%.3f", persist_state=KEEP)
    c2.button("Use this price", key=f"use_price_{g.id}", on_click=lambda: _set_price(g.id, st.session_state[key]),
              disabled=g.id not in inputs.custom_prices and price is not None
              and abs(st.session_state[key] - price.usd_hr) < 5e-4,
              help="Enabled once you type a price that differs from the listed one")
    if g.id in inputs.custom_prices:
        c3.button("Listed price", key=f"drop_price_{g.id}", on_click=lambda: _set_price(g.id, None),
                  help="Forget your price for this GPU")
    if v.steps_table is None:
        st.markdown(f"#### Step-time breakdown\n\n{v.steps}")
        return
    with st.expander("**Step-time breakdown** · each op group's FLOPs, bytes, time and formula, and where the time "
                     "goes", icon=":material/timer:", key="steps_open", on_change="rerun") as box:
        if not box.open:
            return
        st.markdown(v.steps)
        if len(v.split):
            _chart("time_split_chart", v.split)
        secs = st.column_config.NumberColumn(format="%.4g")
        st.dataframe(v.steps_table, placeholder="-", column_config={
            "TFLOP": st.column_config.NumberColumn(format="%.4g", help="10^12 floating-point operations, whole job"),
            "GB moved": st.column_config.NumberColumn(format="%.4g", help="DRAM bytes read + written / 1e9, whole job"),
            "FLOP/byte": st.column_config.NumberColumn(format="%.3g"),
            "compute s": secs, "memory s": secs, "time s": secs, "formula": st.column_config.TextColumn(width="large")})


def chart_tab(name: str, rows, inputs, plan, table, cal, cal_ests, cmp_ids) -> None:
    if name == "Cost vs time":
        unit = time_unit(e.seconds for e in rows)
        df = charts.cost_time_data(rows, {k: v for k, v in cal_ests.items() if k in {e.gpu.id for e in rows}}, unit)
        if df.empty:
            st.info("No GPU in the table can run this plan with a price.")
        else:
            _chart("cost_time_chart", df, inputs.tier, unit[0])
    elif name == "Roofline":
        chosen = [e for e in rows if e.gpu.id in cmp_ids]
        ceilings, points = charts.roofline_data(chosen)
        if points.empty:
            st.info("None of the compared GPUs can run this plan.")
        else:
            _chart("roofline_chart", ceilings, points)
    elif name == "Batch size":
        gpus = [GPU_BY_ID[g] for g in cmp_ids]
        df = charts.batch_sweep(plan, gpus, replace(FACTS, prices=table), cal.adjust if cal else None)
        per_gpu = -(-plan.workload.items // plan.gpus)
        if len(df) and df.batch.max() >= per_gpu and per_gpu < 64:
            st.caption(f"The job has only {per_gpu:,} item(s) per GPU, so no batch can be larger: raise the job size "
                       f"in the sidebar to see how larger batches would run.")
        col, title = charts.rate_column(inputs.job, plan.model.counts_tokens)
        _chart("batch_chart", df, col, title)
        _chart("batch_chart", df, "cost_usd", f"Job cost ($, RunPod {inputs.tier})")
    elif name == "Memory":
        chosen = [e for e in rows if e.gpu.id in cmp_ids]
        _chart("memory_chart", charts.memory_data(chosen))
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
    c1, c2 = st.columns(2)
    ttft = c1.number_input("Time to first token target (ms)", 1.0, 60_000.0, 1000.0, step=100.0, key="srv_ttft",
                           persist_state=KEEP)
    tpot = c2.number_input("Time per output token target (ms)", 1.0, 10_000.0, 50.0, step=5.0, key="srv_tpot",
                           persist_state=KEEP)
    st.caption(f"Continuous batching, {prompt:,} prompt and {output:,} output tokens per request "
               "(the job's, or 512 + 256 for other jobs); planner.engine.serving states the model.")
    gpus = [GPU_BY_ID[g] for g in cmp_ids]
    rows = page.serving_rows(plan, gpus, replace(FACTS, prices=table), prompt, max(output, 2), ttft / 1e3, tpot / 1e3)
    num = st.column_config.NumberColumn(format="%.4g")
    st.dataframe(pd.DataFrame(rows), hide_index=True, placeholder="-", column_config={
        "gpu_id": None, "TTFT alone (ms)": num, "TPOT alone (ms)": num, "TPOT at max (ms)": num,
        "Tokens/s at max": num, "$ per 1M tokens at max": st.column_config.NumberColumn(format="$%.3g")})


@st.cache_resource(show_spinner="Checking the planner against published measurements…")
def _validation_report():
    return validation.run_validation(priors=True)


def accuracy() -> None:
    st.markdown("How far the planner's estimates are from throughput that others **measured and published** "
                "(validation/measurements.yaml, each row with its source). **Leave one source out**: each "
                "publication is predicted with the runtime efficiencies tuned on every *other* publication, which "
                "is what a workload the planner never saw gets. The estimates use the values the same search gives "
                "on every publication (data/runtimes_tuned.yaml; Explain names them and the priors they replace).")
    try:
        head, written = page.accuracy_rows()
    except (DataFileError, OSError) as exc:
        st.error(f"The accuracy summary could not be read: {md_escape(exc, 400)}")
    else:
        st.dataframe(pd.DataFrame(head), hide_index=True, placeholder="-")
        st.caption(f"`python -m planner validate --write-uncertainty` of {written.isoformat()} (data/uncertainty.yaml); "
                   "the likely ranges in the ranking come from the same residuals.")
    st.markdown("Within sources (rows split by a hash of their id; the *test* rows were never used to set the "
                "runtime priors they are scored with), and each row measured against its estimate:")
    report = _validation_report()
    summary = pd.DataFrame(report.summary("test")).rename(columns={
        "group": "grouped by", "key": "group", "n": "rows", "median_ape": "median |error| %",
        "p90_ape": "90th pct |error| %", "median_speed_bias_pct": page.BIAS_COLUMN,
        "target_median_ape": "target median %", "meets_target": page.VERDICT_COLUMN}).drop(columns=["split"])
    st.dataframe(summary, hide_index=True, placeholder="-")
    st.altair_chart(charts.validation_chart(report), width="stretch")


def presets_block(where, inputs: share.Inputs) -> None:
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
                st.button(p.question, key=f"preset_{p.id}", on_click=_apply_preset, args=(p.id,), width="stretch")
    p = next((p for p in presets if p.id == st.session_state.get("_preset")), None)
    if p and share.encode(replace(p.inputs, tab=inputs.tab)) == share.encode(inputs):  # still the example's plan
        with st.expander(f"**{md_escape(p.question)}** · what the example assumes", icon=":material/lightbulb:"):
            st.info(f"{p.answer_hint}  \n*Assumed:* {p.assumptions}")
    elif p:
        st.caption(f"Started from the example “{p.question}”, then changed.")


def filters() -> None:
    """The ranking's filters (inside the 'Filters' popover)."""
    st.selectbox("Vendor", share.VENDORS, key="vendor", persist_state=KEEP)
    st.number_input("Min VRAM (GB)", 0.0, MAX_VRAM_GB, step=8.0, key="minvram", persist_state=KEEP, format="%g",
                    help="Decimal GB, like the VRAM column (a '24 GB' card holds 25.8 GB)")
    st.number_input("Max $/GPU-h (0 = any)", 0.0, CUSTOM_MAX_USD_HR, step=0.25, key="maxusd", persist_state=KEEP,
                    format="%g")
    st.checkbox("Can run it", key="feasible", persist_state=KEEP, help="Hide the GPUs that can't run this plan")
    st.checkbox("Has a price", key="priced", persist_state=KEEP,
                help="Hide the GPUs without a $/h in this tier (RunPod doesn't rent "
                "them; type your own price in 'Explain a GPU')")
    st.checkbox("Include CPUs", key="cpus", persist_state=KEEP,
                help="Rank the CPU devices too (data/cpus.yaml): what the job costs "
                "when it falls back to the CPU. They have no listed price: type your own in 'Explain a GPU'")


def own_assumptions() -> OwnAssumptions:
    ss = st.session_state
    return own_with_values(OWN_DEFAULT, {k: float(ss[f"ow_{k}"]) for k, _, _ in OWN_WIDGETS if f"ow_{k}" in ss})


def own_cards(mine, tier: str) -> None:
    """One verdict card per kind of card the user owns, above the call-outs."""
    for col, m in zip(st.columns(len(mine)), mine):
        with col.container(border=True, key=f"own_card_{m.owned.gpu_id}", gap="small"):
            v = page.own_verdict(m, tier)
            st.markdown("  \n".join(x for x in (v.headline, v.needs, v.cost) if x),
                        help=f"{v.details}  \n{page.own_assumptions_sentence(own_assumptions())}")


def main(inputs: share.Inputs) -> None:
    ss = st.session_state
    c_title, c_presets = st.columns([5, 1.3], vertical_alignment="bottom")
    c_title.markdown("### GPU cost & throughput planner")
    presets_block(c_presets, inputs)
    if ss._link_warnings:
        st.warning("Some values in this link could not be used; they fell back to defaults:\n\n"
                   + "\n".join(f"- {md_escape(w, 300)}" for w in ss._link_warnings), icon=":material/link_off:")

    try:
        model = share.resolve_model(inputs)
    except (DataFileError, UnknownNameError) as exc:
        field = getattr(exc, "field", "")
        st.error(f"The custom model is not valid: {md_escape(getattr(exc, 'problem', exc), 400)}"
                 + (f" (field '{md_escape(field, 60)}')" if field else "")
                 + ". Fix it in the sidebar; nothing else was changed.")
        return
    plan = share.to_plan(inputs, model)
    table = price_table(inputs)
    cal = _calibration(inputs)
    est_key = _estimates_key(plan, inputs, table)
    assumptions = own_assumptions()
    mine_key = content_key(est_key, inputs.own, assumptions, OVERHEADS)
    try:
        ests, cal_ests = _rankings(est_key, plan, inputs.cpus, table, cal)
        mine = _my_gpus(mine_key, plan, inputs.own, table, assumptions, OVERHEADS, cal) if inputs.own else []
    except (ValueError, UnknownNameError, DataFileError) as exc:
        st.error(f"This plan can't be estimated: {md_escape(exc, 400)}. Change the input it names in the sidebar.")
        return
    st.markdown(f"**Plan:** {md_escape(share.plan_sentence(inputs, model), 1000)}")
    if table.pending:
        st.info(f"Prices: {md_escape(table.message, 600)}", icon=":material/hourglass_top:")
        _await_live()
    elif not table.ok or table.source != "snapshot" or inputs.myprice:
        (st.warning if not table.ok or table.suspect else st.caption)(f"Prices: {md_escape(table.message, 600)}")

    view = _ranking_view(content_key(mine_key, _filters(inputs), inputs.job, inputs.stale, inputs.tier, inputs.mem,
                                     date.today()), ests, cal_ests, inputs, OVERHEADS, mine, plan.gpus)
    rows, df = view.rows, view.table
    if mine:
        own_cards(mine, inputs.tier)
    callouts(view.callouts)
    if view.nothing:
        st.error(view.nothing)

    c_head, c_filters = st.columns([5, 1.3], vertical_alignment="bottom")
    c_head.markdown("#### Every GPU, ranked")
    with c_filters.popover("Filters", icon=":material/filter_list:", width="stretch", key="filters_open",
                           on_change="rerun") as box:
        if box.open:  # drawn when opened: the six widgets cost every rerun nothing while it is closed
            filters()
    event = st.dataframe(view.arrow, placeholder="-", column_config=view.config, column_order=view.order,
                         key="ranking", on_select="rerun", row_height=35, selection_mode="single-row",
                         height=min(38 + 35 * len(df), 560))
    st.caption(f"{len(rows)} of {len(view.ranked)} GPUs shown"
               + (" (your own cards on top, marked ★)" if mine else "")
               + ". Ranked by what the whole job bills; time and cost are for the whole job; click a header to sort, "
               f"a row to explain it. Prices ({table.source}, {inputs.tier}): {view.dates}. Specs: "
               f"datasheets in data/gpus.yaml; efficiencies: data/runtimes.yaml.")
    if cal is not None:
        calibration_panel(plan, cal)

    url = share.link(st.context.url, inputs)
    c_link, c_csv, c_json, c_sky = st.columns([6, 1, 1, 1.4], vertical_alignment="bottom")
    with c_link.container(key="share"):
        # a plain link, not st.code: the code box pulls in a 1.5 MB syntax highlighter (benchmarks/browser_page.py)
        st.link_button("Share this plan: a link to exactly this page", url, icon=":material/link:",
                       help="Right-click it and copy the link to share; it is also the address in your browser's bar")
    ctx = share.ExportContext(url, "data/gpus.yaml", table.source, table.as_of, view.extra, OVERHEADS, mine)
    c_csv.download_button("CSV", data=lambda: share.export_csv(inputs, model, rows, ctx), file_name="gpu-plan.csv",
                          mime="text/csv", icon=":material/download:", on_click="ignore", key="dl_csv")
    c_json.download_button("JSON", data=lambda: share.export_json(inputs, model, rows, ctx), file_name="gpu-plan.json",
                           mime="application/json", icon=":material/download:", on_click="ignore", key="dl_json")
    if any(e.feasible for e in view.ranked):
        c_sky.download_button("SkyPilot task", data=lambda: _skypilot_text(view.ranked, plan, url),
                              file_name="task.yaml", mime="application/x-yaml", icon=":material/rocket_launch:",
                              on_click="ignore", key="dl_sky", help="The GPUs that can run this plan, in this order, "
                              "for `sky launch task.yaml` (SkyPilot tries them in turn)")
    if len(view.jobs):
        with st.expander("**The whole job** · compute next to the pod's start, download, warm-up and billing, top 10",
                         icon=":material/stacked_bar_chart:", key="jobs_open", on_change="rerun") as box:
            if box.open:
                _chart("whole_jobs_chart", view.jobs)
    sel = getattr(getattr(event, "selection", None), "rows", None) or []
    picked = df.gpu_id.iloc[sel[0]] if sel and sel[0] < len(df) else None
    if picked and picked != ss.get("_picked"):
        ss.gpu = picked
        ss.view = TABS[0]
    ss._picked = picked
    tab_area(view, inputs, plan, table, cal, cal_ests, est_key)


@st.fragment
def tab_area(view: RankingView, inputs: share.Inputs, plan, table, cal, cal_ests: dict, est_key: str) -> None:
    """The tabs under the ranking, a fragment: picking a GPU to explain, a tab, GPUs to compare or serving targets
    reruns this part alone, not the ranking and the sidebar; a change here that moves the ranking (your own price
    for a GPU) reruns the page."""
    now = _inputs()
    if not FULL_RUN and replace(now, gpu=inputs.gpu, cmp=inputs.cmp, tab=inputs.tab) != inputs:
        st.rerun(scope="app")
    try:
        tabs_of(view, now, plan, table, cal, cal_ests, est_key)
    finally:
        _sync_url(_inputs())  # a rerun of the fragment alone ends here, not at the end of the script


def tabs_of(view: RankingView, inputs: share.Inputs, plan, table, cal, cal_ests: dict, est_key: str) -> None:
    ss, rows, ests = st.session_state, view.rows, view.ranked
    feasible_ids = [e.gpu.id for e in rows if e.feasible]
    default_gpu = (feasible_ids or [e.gpu.id for e in rows] or [ests[0].gpu.id])[0]
    cmp_ids = list(inputs.cmp) or feasible_ids[:3]
    tabs = st.tabs(TABS, key="view", on_change="rerun")
    for name, tab in zip(TABS, tabs):
        if not tab.open:
            continue
        with tab:
            if name == "Explain a GPU":
                options = [""] + [g.id for g in CATALOG.selection(inputs.cpus)]
                if ss.get("gpu") not in options:  # a CPU named by a link or a click while CPUs are left out
                    ss.gpu = ""
                picked_gpu = st.selectbox("GPU to explain (or click a row of the table)", options, key="gpu",
                                          persist_state=KEEP,
                                          format_func=lambda gid: GPU_BY_ID[gid].name if gid else
                                          f"Top of the ranking ({short_name(GPU_BY_ID[default_gpu].name)})")
                chosen = picked_gpu or default_gpu
                e = next((x for x in ests if x.gpu.id == chosen), None)
                explain(e, cal_ests.get(chosen), inputs, est_key)
            else:
                if name in ("Roofline", "Batch size", "Memory", "Serving"):
                    shown_ids = [g.id for g in CATALOG.selection(inputs.cpus)]
                    ss.cmp = [g for g in ss.cmp if g in shown_ids]
                    st.multiselect("GPUs to compare (up to 6; empty = the top three that can run it)",
                                   shown_ids, key="cmp", persist_state=KEEP, max_selections=share.MAX_CMP,
                                   format_func=lambda gid: GPU_BY_ID[gid].name)
                if name not in ("Accuracy", "Cost vs time") and not cmp_ids:
                    st.info("No GPU can run this plan: nothing to compare.")
                else:
                    chart_tab(name, rows, inputs, plan, table, cal, cal_ests, cmp_ids)


FULL_RUN = True  # False once the script has ended: a rerun of the fragment alone then finds it so
_init()
OVERHEADS = with_values(OVERHEADS_DEFAULT, {k: float(st.session_state[f"jc_{k}"]) for k, _, _ in JOB_COST_WIDGETS})
INPUTS = _inputs()
try:
    main(INPUTS)  # the answer first: the browser draws the ranking before the sidebar's ~30 widgets arrive
finally:
    try:
        sidebar()  # the widgets' values are already in st.session_state (_init), so drawing them last changes none
    finally:
        _sync_url(_inputs())
        st.session_state._run_ms = (time.perf_counter() - _T0) * 1e3
        FULL_RUN = False
