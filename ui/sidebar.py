"""The sidebar: the plan's inputs in six numbered sections. Drawn after the answer, so the browser shows the ranking
first; the widgets' values are already in st.session_state (state.init), so drawing them last changes none."""

from __future__ import annotations

import streamlit as st

from planner.engine.plan import PARALLEL_MODES, attention_choices
from planner.inputs import own_gpu
from planner.inputs.catalog import CUSTOM_MAX_USD_HR, MAX_STALE_DAYS, MAX_VRAM_GB, PRICE_TIERS
from planner.inputs.job_costs import LIMITS as JOB_COST_LIMITS
from planner.inputs.jobs import BOUNDS, OPTIMIZERS, SHARDINGS
from planner.inputs.layouts import MAX_LAYOUT_CHARS
from planner.inputs.ownership import LIMITS as OWN_LIMITS
from planner.inputs.ownership import MAX_CARDS, MAX_OWNED, MAX_PAID_USD
from planner.calibration import measured as calibration_measured
from planner.views import plan_inputs, share, uploads
from planner.views.format import fmt_count, md_escape, short_name
from planner.views.plan_inputs import field_help
from ui import callbacks, resources, state
from ui.state import KEEP

JOB_LABELS = {"generate": "Generate sequences", "infer": "Run inference", "train": "Train"}


def _bounds(name: str) -> tuple:
    """(min, max) of a job input for number_input: planner.inputs.jobs.BOUNDS, the CLI's and the links' too."""
    b = BOUNDS[name]
    return (int(b.lo), int(b.hi)) if b.integer else (float(b.lo), float(b.hi))


def _arch_bounds(param: str) -> tuple[int, int]:
    f = next(f for f in share.ARCH_FIELDS if f.param == param)
    return f.lo, f.hi


def _message(key: str) -> None:
    msg = state.page().pop(key, None)
    if msg:
        (st.sidebar.error if msg[0] == "error" else st.sidebar.success)(msg[1])


def _architecture() -> None:
    """The custom decoder's fields, two columns."""
    st.text_input("Name", key="m_name", persist_state=KEEP)
    c1, c2 = st.columns(2)
    c1.number_input("Layers", *_arch_bounds("m_layers"), key="m_layers", persist_state=KEEP)
    c2.number_input("Hidden size", *_arch_bounds("m_hidden"), key="m_hidden", persist_state=KEEP,
                    on_change=callbacks.head_dim)
    c1.number_input("Attention heads", *_arch_bounds("m_heads"), key="m_heads", persist_state=KEEP,
                    on_change=callbacks.head_dim)
    c2.number_input("KV heads", *_arch_bounds("m_kv"), key="m_kv", persist_state=KEEP,
                    help="= heads for multi-head attention; fewer for GQA/MQA")
    c1.number_input("Head dim", *_arch_bounds("m_hd"), key="m_hd", persist_state=KEEP, help="usually hidden / heads")
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


def _model(inputs: plan_inputs.Inputs):
    ss, sb = st.session_state, st.sidebar
    sb.subheader("1 · Model")
    sb.selectbox("Model", [m.id for m in resources.models().models] + [plan_inputs.CUSTOM], key="model",
                 format_func=resources.model_labels().get, on_change=callbacks.on_model,
                 help="A preset architecture, or 'Custom' to type or upload your own.")
    if ss.model == plan_inputs.CUSTOM and not ss.spec:
        with sb.expander("Architecture (decoder transformer)", expanded=True):
            _architecture()
    elif ss.model == plan_inputs.CUSTOM:
        sb.caption("Custom model from an uploaded YAML profile (formulas in its input size).")
    m = state.model_of(inputs)  # the run's plan: drawing the widgets above changed no value
    if m is not None:
        sb.caption(f"{md_escape(m.name, 120)}: {fmt_count(m.params)} parameters · {md_escape(m.describe())}")
    # the closed expanders below draw their widgets only when opened: nothing to send or lay out on every rerun
    with sb.expander("Upload a model (YAML profile or Hugging Face config.json)", key="upload_open",
                     on_change="rerun") as box:
        if box.open:
            st.file_uploader("Model file", type=["yaml", "yml", "json"], key="upload_model",
                             on_change=callbacks.on_upload_model, label_visibility="collapsed", max_upload_size=1)
    _message("upload_msg")
    return m


def _job(m) -> None:
    ss, sb = st.session_state, st.sidebar
    sb.subheader("2 · Job")
    jobs = list(plan_inputs.JOBS) if m is None or m.can_generate else ["infer", "train"]
    sb.radio("What to run", jobs, key="job", format_func=JOB_LABELS.get, horizontal=True)
    if ss.job == "generate":
        sb.number_input("Sequences to generate", *_bounds("sequences"), step=1000, key="seqs", persist_state=KEEP)
        c1, c2 = sb.columns(2)
        c1.number_input("Prompt tokens", *_bounds("prompt_tokens"), key=state.drawn("prompt"), persist_state=KEEP,
                        help=field_help("prompt"))
        c2.number_input("New tokens each", *_bounds("gen_tokens"), key=state.drawn("gen"), persist_state=KEEP)
    else:
        sb.number_input("Samples" + (" per epoch" if ss.job == "train" else ""), *_bounds("samples"), step=1000,
                        key=state.drawn("samples"), persist_state=KEEP)
        sb.number_input(f"Input size ({plan_inputs.size_name(m)})" if m is not None else "Input size",
                        *_bounds("input_size"), key=state.drawn("size"), persist_state=KEEP)
    if ss.job == "train":
        c1, c2 = sb.columns(2)
        c1.number_input("Epochs", *_bounds("epochs"), step=1.0, key=state.drawn("epochs"), persist_state=KEEP)
        c2.selectbox("Optimizer", sorted(OPTIMIZERS), key=state.drawn("opt"), persist_state=KEEP)
        c1.number_input("Grad. accumulation", *_bounds("grad_accum"), key=state.drawn("accum"), persist_state=KEEP)
        if m is None or m.counts_tokens:
            sb.number_input("Train tokens (0 = samples x epochs)", *_bounds("train_tokens"), step=1e9,
                            format="%.4g", key=state.drawn("tokens"), persist_state=KEEP, help=field_help("tokens"))
            if ss.tokens:  # drawn just above
                sb.caption("Samples and epochs are not used while train tokens are set (the plan at the top of "
                           "the page says how many samples hold them).")
        sb.checkbox("Activation checkpointing", key=state.drawn("ckpt"), persist_state=KEEP, help=field_help("ckpt"))
        sb.radio("Several GPUs train with", SHARDINGS, key=state.drawn("shard"), persist_state=KEEP, horizontal=True,
                 format_func={"ddp": "DDP (full copies)", "zero1": "ZeRO-1", "zero2": "ZeRO-2",
                              "fsdp": "FSDP (ZeRO-3)", "auto": "Auto (cheapest that fits)"}.get,
                 help=field_help("shard"))
        c1, c2 = sb.columns(2)
        c1.text_input("Layout (tp, pp, v, cp)", key=state.drawn("lay"), persist_state=KEEP, max_chars=MAX_LAYOUT_CHARS,
                      placeholder="auto, or tp=2,pp=4", help=field_help("lay"))
        c2.number_input("Global batch (0 = off)", *_bounds("global_batch"), key=state.drawn("gbatch"),
                        persist_state=KEEP, help=field_help("gbatch"))
    sb.checkbox("Auto batch (the cheapest batch that fits, per GPU)", key="batch_auto")
    if not ss.batch_auto:
        sb.number_input("Batch size (per GPU)" + (" (micro-batch)" if ss.job == "train" else ""), *_bounds("batch"),
                        key=state.drawn("batch_n"), persist_state=KEEP)


def _software() -> None:
    ss, sb = st.session_state, st.sidebar
    facts = resources.facts()
    rules, runtimes = facts.rules, facts.runtimes
    sb.subheader("3 · Precision & software")
    c1, c2 = sb.columns(2)
    c1.selectbox("Precision", [p.id for p in rules.precisions], key="prec",
                 help="; ".join(f"{p.id}: {p.note}" for p in rules.precisions))
    if ss.job == "generate":
        c2.selectbox("KV-cache dtype", ["auto"] + [k.id for k in rules.kv_dtypes], key=state.drawn("kv"),
                     persist_state=KEEP, help="auto = the activation dtype")
    sb.selectbox("Attention", attention_choices(ss.rt, rules, ss.attn), key="attn",
                 format_func=lambda a: "sdpa (auto: PyTorch's pick per GPU)" if a == "sdpa" else a,
                 help="; ".join(f"{a.id}: {a.name}" for a in rules.attention_backends) + ". Each GPU's notes say "
                 "which kernel it runs (data/precisions.yaml).")
    sb.selectbox("PyTorch build", ["", *facts.builds.choices()], key="pt",
                 format_func=lambda v: v or "latest (any build that runs each GPU)", help=field_help("pt"))
    sb.text_input("transformers release", key="tf", placeholder="current", help=field_help("tf"))
    # the name up to its parenthesis, shown whole in the closed picker; the full names are in its help
    sb.selectbox("Framework / runtime", [r.id for r in runtimes.runtimes], key="rt",
                 format_func=lambda r: runtimes.get(r).name.split(" (")[0],
                 help=field_help("rt") + ". " + "; ".join(r.name for r in runtimes.runtimes))


def _gpus_and_prices() -> None:
    ss, sb = st.session_state, st.sidebar
    sb.subheader("4 · GPUs & prices")
    c1, c2 = sb.columns([2, 3])
    c1.number_input("GPUs per job", *_bounds("gpus"), key="gpus", help=field_help("gpus"))
    c2.selectbox("Price tier", PRICE_TIERS, key="tier", help=field_help("tier"))
    if ss.gpus > 1:  # a job on one GPU crosses no node
        _cluster()
    sb.multiselect("Providers you rent from", plan_inputs.providers(), key="prov_ids", help=field_help("prov"),
                   placeholder="RunPod when none is picked")
    sb.selectbox("Parallelism", PARALLEL_MODES, key="par", help=field_help("par"))
    sb.slider("Usable memory (% of what each GPU reports)", *_bounds("memory_target_pct"), step=1.0, key="mem",
              format="%.0f %%", help=field_help("mem"))
    sb.number_input("Host CPU speed (x the reference hosts')", *_bounds("host_speed"), step=0.05, key="host",
                    format="%g", help=field_help("host"))
    sb.number_input("Flag prices older than (days)", 1, MAX_STALE_DAYS, key="stale",
                    help="A price read longer ago than this is marked ⚠ in the table and in the call-outs")
    sb.radio("Prices", plan_inputs.PRICE_SOURCES, key="psrc", horizontal=True,
             format_func={"snapshot": "Snapshot (dated)", "live": "Live from RunPod"}.get)
    if ss.psrc == "live":
        sb.button("Refresh prices", on_click=callbacks.refresh_prices, icon=":material/refresh:")
        msg = state.page().pop("refresh_msg", None)
        if msg:
            sb.caption(msg)
    default = resources.overheads_default()
    with sb.expander("Whole-job assumptions (pod start, download, billing…)", key="jc_open",
                     on_change="rerun") as box:
        if box.open:
            for key, label, step in state.JOB_COST_WIDGETS:
                lo, hi = JOB_COST_LIMITS[key]
                ss.setdefault(f"jc_{key}", float(getattr(default, key)))  # a key from the first opening on
                st.number_input(label, float(lo), float(hi), step=step, key=f"jc_{key}", persist_state=KEEP,
                                help=dict(default.sources).get(key, ""))
            st.caption("Defaults and their sources: data/job_costs.yaml. These settings stay on this page (not in "
                       "links).")


def _cluster() -> None:
    """Your cluster's nodes and network (0: each GPU's as the catalog gives it); the link keeps them."""
    c1, c2 = st.sidebar.columns(2)
    c1.number_input("GPUs per node (0 = catalog's)", 0, _bounds("node_gpus")[1], key=state.drawn("node"),
                    persist_state=KEEP,
                    help=field_help("node"))
    c2.number_input("Network Gb/s per node (0 = catalog's)", 0.0, _bounds("fabric_gbits_per_node")[1], step=100.0,
                    format="%g", key=state.drawn("fab"), persist_state=KEEP, help=field_help("fab"))


def _own_gpus() -> None:
    ss, sb = st.session_state, st.sidebar
    own = resources.own_default()
    sb.subheader("5 · Your own GPUs (optional)")
    catalog = resources.committed_facts().catalog  # once: the picker names every GPU
    sb.multiselect("GPUs you own", catalog.ids(), key="own_ids", max_selections=MAX_OWNED,
                   format_func=lambda gid: short_name(catalog.get(gid).name), placeholder="Pick the cards you have",
                   help="Each kind runs the plan on all its cards together; a verdict and a row on top of the table "
                        "compare owning them with renting as many")
    for gid in ss.own_ids:
        c1, c2 = sb.columns(2)
        ss.setdefault(f"own_n_{gid}", 1)
        ss.setdefault(f"own_paid_{gid}", 0.0)
        c1.number_input(f"How many {short_name(resources.gpu(gid).name)}", 1, MAX_CARDS, key=f"own_n_{gid}",
                        persist_state=KEEP)
        c2.number_input("Paid per card ($, 0 = listed)", 0.0, MAX_PAID_USD, step=50.0, key=f"own_paid_{gid}",
                        persist_state=KEEP, format="%g",
                        help=md_escape(own.source(f"purchase_usd.{gid}")
                                       or "no listed price for this card: give what you paid"))
    if ss.own_ids:
        with sb.expander("Owning assumptions (lifetime, power, electricity)", key="ow_open", on_change="rerun") as box:
            if box.open:
                for key, label, step in state.OWN_WIDGETS:
                    lo, hi = OWN_LIMITS[key]
                    ss.setdefault(f"ow_{key}", float(getattr(own, key)))
                    st.number_input(label, float(lo), float(hi), step=step, key=f"ow_{key}", persist_state=KEEP,
                                    help=own.source(key))
                st.caption("Defaults and their sources: data/ownership.yaml. These stay on this page (not in links).")


def _own_gpu() -> None:
    """A GPU the catalog lacks, described in a small form and ranked with the rest (planner.inputs.own_gpu)."""
    ss, sb = st.session_state, st.sidebar
    with sb.expander("A GPU the catalog lacks", key="own_gpu_open", on_change="rerun") as box:
        if box.open:  # drawn when opened: eleven widgets cost a closed expander's rerun nothing
            with st.form("own_gpu_form", border=False):
                st.text_input("Name", key="own_name", max_chars=own_gpu.MAX_NAME_CHARS, placeholder="My accelerator")
                c1, c2 = st.columns(2)
                c1.number_input("Memory (GB)", 1.0, MAX_VRAM_GB, 48.0, key="own_mem")
                c2.selectbox("Memory kind", own_gpu.MEMORY_TYPES, key="own_memtype", format_func=str.upper,
                             help="HBM or GDDR: each reaches its own share of its peak bandwidth (data/runtimes.yaml)")
                c1.number_input("Bandwidth (GB/s)", *own_gpu.MEM_BW_GBPS, 900.0, key="own_bw")
                c2.number_input("$/GPU-hour (0 = unpriced)", 0.0, CUSTOM_MAX_USD_HR, 0.0, key="own_usd")
                cols = st.columns(3)
                for i, path in enumerate(own_gpu.FORM_PATHS):
                    cols[i % 3].number_input(f"{path} TFLOPS", 0.0, own_gpu.TFLOPS[1], 0.0, key=f"own_r_{path}",
                                             help="dense (no 2:4 sparsity); 0 = no such rate" if path != "fp32"
                                             else "dense; required")
                st.text_input("Compute capability", "unknown", key="own_cc",
                              help="8.9 or sm_89 for NVIDIA, gfx942 for AMD, or unknown (no CUDA or ROCm kernels "
                                   "assumed)")
                st.form_submit_button("Rank it with the rest", on_click=callbacks.on_own_gpu)
            st.file_uploader("…or upload its description (YAML)", type=["yaml", "yml"], key="own_yaml",
                             on_change=callbacks.on_own_gpu_yaml, max_upload_size=1,
                             help="name, memory_gb, memory_type (hbm|gddr), mem_bw_gbps, dense_tflops: {fp32: .., "
                                  "bf16: ..}, compute_capability (8.9, gfx942 or unknown), usd_hr")
    _message("own_gpu_msg")
    if ss.get("mygpu"):
        sb.caption(f"Ranked with the rest: {md_escape(ss.mygpu, 400)}")
        sb.button("Remove your GPU", on_click=callbacks.remove_own_gpu)


def _calibration(fleet) -> None:
    ss, sb = st.session_state, st.sidebar
    sb.subheader("6 · Calibration (optional)")
    sb.caption("Upload results of `python -m planner.bench` run on your GPUs (one file per GPU, several at once "
               "for a fleet): each one's measured efficiencies replace the priors for its GPU.")
    sb.file_uploader("Benchmark results", key="upload_cal", on_change=callbacks.on_upload_cal, max_upload_size=5,
                     accept_multiple_files=True, label_visibility="collapsed")
    _message("cal_msg")
    if ss.cal and uploads.cpu_results(state.page().get("cal_result")):
        now = next((c.gpu_id or "" for c in fleet.members if c.device_class == "cpu"), "") if fleet else ""
        ss.setdefault("cal_cpu", now)
        cpus = [calibration_measured.THIS_MACHINE, *(c.id for c in resources.facts().catalog.cpus)]
        sb.selectbox("CPU the bench ran on", cpus,
                     key="cal_cpu", persist_state=KEEP, on_change=callbacks.on_cal_cpu,
                     format_func=lambda c: resources.gpu(c).name if c else "the measured machine only",
                     help="A CPU bench calibrates this CPU's row (tick Filters → Include CPUs above the ranking to "
                          "see it); a VM or container slice calibrates only the measured machine")
    if ss.cal:
        sb.button("Remove calibration", on_click=callbacks.remove_calibration)


def sidebar(fleet, inputs: plan_inputs.Inputs) -> None:
    """Every input of the plan (`inputs`: the values they hold at the run's start); `fleet` is the calibration in use
    (None without one)."""
    st.sidebar.header("Your plan")
    m = _model(inputs)
    _job(m)
    _software()
    _gpus_and_prices()
    _own_gpus()
    _own_gpu()
    _calibration(fleet)
