"""Widget callbacks: each hands the widget's value to a core function and stores what comes back."""

from __future__ import annotations

import time

import streamlit as st

from planner.clients import live_prices
from planner.inputs import own_gpu
from planner.views import plan_inputs, uploads
from planner.views.presets import load_all as load_all_presets
from ui import resources, state


def _after_model_change() -> None:
    """A new model: its default input size, and no 'generate' for a generic profile."""
    ss = st.session_state
    m = state.current_model()
    if m is not None:
        state.put("size", plan_inputs.default_size(m))
        if ss.job == "generate" and not m.can_generate:
            ss.job = "infer"


def on_model() -> None:
    ss = st.session_state
    page = state.page()
    if ss.model == plan_inputs.CUSTOM and page.get("prev_model") != plan_inputs.CUSTOM:
        ss.spec = ""
        state.load_arch(state.arch_for(page.get("prev_model", plan_inputs.CUSTOM)))
    page["prev_model"] = ss.model
    _after_model_change()


def on_upload_model() -> None:
    ss = st.session_state
    f = ss.get("upload_model")
    if f is None:
        return
    up = uploads.model_upload(f.getvalue(), f.name)
    state.page()["upload_msg"] = ("success" if up.ok else "error", up.message)
    if not up.ok:
        return
    ss.model = state.page()["prev_model"] = plan_inputs.CUSTOM
    ss.spec = up.spec
    if up.arch:
        state.load_arch(up.arch)
    _after_model_change()


def _use_calibration(up: uploads.CalibrationUpload) -> None:
    ss = st.session_state
    state.page()["cal_msg"] = ("success" if up.ok else "error", up.message)
    if up.ok:
        ss.cal, state.page()["cal_result"] = up.query, up.results


def on_upload_cal() -> None:
    files = st.session_state.get("upload_cal") or []
    if files:
        _use_calibration(uploads.calibration_upload([(f.name, f.getvalue()) for f in files]))


def on_cal_cpu() -> None:
    ss = st.session_state
    name = resources.gpu(ss.cal_cpu).name if ss.cal_cpu else ""
    _use_calibration(uploads.refit_for_cpu(state.page().get("cal_result") or {}, ss.cal_cpu, name))


def remove_calibration() -> None:
    st.session_state.cal = ""
    state.page()["cal_result"] = None


def apply_preset(preset_id: str) -> None:
    p = next(p for p in load_all_presets()[0] if p.id == preset_id)
    state.load(p.inputs)
    state.page().update(link_warnings=[], preset=preset_id)
    st.session_state.presets_open = False  # the question is answered below: the popover must not cover it


def set_price(gpu_id: str, value: float | None) -> None:
    prices_now = dict(state.page()["myprice"])
    if value is None:
        prices_now.pop(gpu_id, None)
    else:
        prices_now[gpu_id] = float(value)
    state.page()["myprice"] = prices_now


def head_dim() -> None:
    """Hidden size or heads changed: head dim follows (hidden / heads) when it divides evenly."""
    ss = st.session_state
    if ss.m_heads and ss.m_hidden % ss.m_heads == 0:
        ss.m_hd = ss.m_hidden // ss.m_heads


def refresh_prices() -> None:
    if not live_prices.request_refresh(time.monotonic()):
        state.page()["refresh_msg"] = (f"Live prices were refreshed less than "
                                       f"{live_prices.MIN_REFRESH_INTERVAL_S / 60:g} minutes ago; these are current.")



def on_own_gpu() -> None:
    """'Rank it with the rest': the form's fields as a description (own_gpu_text checks each); a message otherwise."""
    ss = st.session_state
    try:
        ss.mygpu = own_gpu.own_gpu_text(ss.own_name, ss.own_mem, ss.own_memtype, ss.own_bw,
                                        {p: ss[f"own_r_{p}"] for p in own_gpu.FORM_PATHS}, ss.own_cc, ss.own_usd)
        state.page()["own_gpu_msg"] = ("success", f"{own_gpu.parse_own_gpu(ss.mygpu).name} is ranked with the rest, "
                                                  "marked (yours)")
    except ValueError as exc:
        state.page()["own_gpu_msg"] = ("error", f"{exc}. Nothing was changed.")


def on_own_gpu_yaml() -> None:
    """A YAML description uploaded: checked as the form is (own_gpu_from_yaml); a message naming the field otherwise,
    and the GPU ranked before stays."""
    ss = st.session_state
    upload = ss.get("own_yaml")
    if upload is None:
        return
    data = upload.getvalue()
    try:
        if len(data) > own_gpu.MAX_YAML_BYTES:
            raise ValueError(f"your GPU's YAML file is {len(data):,} bytes; a description is at most "
                             f"{own_gpu.MAX_YAML_BYTES:,}")
        ss.mygpu = own_gpu.own_gpu_from_yaml(data.decode("utf-8"))
        state.page()["own_gpu_msg"] = ("success", f"{own_gpu.parse_own_gpu(ss.mygpu).name} is ranked with the rest, "
                                                  "marked (yours)")
    except UnicodeDecodeError:
        state.page()["own_gpu_msg"] = ("error", "your GPU's YAML file is not UTF-8 text. Nothing was changed.")
    except ValueError as exc:
        state.page()["own_gpu_msg"] = ("error", f"{exc}. Nothing was changed.")


def remove_own_gpu() -> None:
    st.session_state.mygpu = ""
