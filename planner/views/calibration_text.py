"""A calibration's fit in words: each factor with its 95 % uncertainty, and what the points could not pin down.

Used by `python -m planner calibration FILE`, `python -m planner.bench` and the app's calibration panel (as Markdown).
"""

from __future__ import annotations

from planner.calibration.fit import Calibration
from planner.calibration.measured import on_host
from planner.calibration.solve import FACTOR_NAMES
from planner.views.format import md_escape

UNITS = {"bandwidth": "", "compute": "", "overhead": " us per kernel"}


def _reference(cal: Calibration, factor: str) -> str:
    """What an efficiency is a fraction of: the datasheet (catalog GPU) or the micro-benchmark peak."""
    if factor == "overhead":
        return ("host dispatch, overlapping the GPU's work" if on_host(cal.device_class) else
                "launch, serial with the compute") + ", per kernel as data/runtimes.yaml counts kernels"
    if cal.gpu_id:
        return f"of the {cal.device_name} datasheet" + (f" ({cal.compute_path})" if factor == "compute" else "")
    if factor == "bandwidth":
        return f"of the measured copy bandwidth, {cal.measured_bw_gbps:.3g} GB/s"
    peak = dict(cal.measured_tflops).get(cal.compute_path)
    return f"of the measured {cal.compute_path} matmul peak" + (f", {peak:.3g} TFLOPS" if peak else "")


def _plus_minus(err_pct: float | None) -> str:
    if err_pct is None:
        return "uncertainty not recorded"
    return "± more than 100 %" if err_pct > 100 else f"± {err_pct:.2g} %"


def factor_rows(cal: Calibration) -> list[dict]:
    """One row per fitted factor: name, value, 95 % uncertainty (percent, None if not recorded), whether the points
    pinned it down, and what it is relative to."""
    return [{"factor": FACTOR_NAMES[f], "value": float(f"{value:.4g}"),
             "uncertainty_95_pct": None if err is None else float(f"{err:.3g}"),
             "pinned_down": f not in cal.unidentified, "relative_to": _reference(cal, f)}
            for f, value, err in cal.uncertainty()]


def fit_lines(cal: Calibration) -> list[str]:
    """Plain text: a line per factor, the fit's error, then a 'warning:' line per problem."""
    lines = [f"{FACTOR_NAMES[f]} {value:.3g}{UNITS[f]} {_plus_minus(err)} (95 %, {_reference(cal, f)})"
             + ("" if f not in cal.unidentified else ", NOT pinned down by the points")
             for f, value, err in cal.uncertainty()]
    lines.append(f"fit: rms error {cal.fit_rms_pct:.3g} % over {cal.fit_points} points")
    return lines + [f"warning: {p}" for p in cal.problems()]


def fit_markdown(cal: Calibration) -> str:
    """The same for the page: factors in bold with their uncertainty; problems follow as a separate list."""
    parts = [f"{FACTOR_NAMES[f]} **{value:.3g}{UNITS[f]}** {_plus_minus(err)}"
             + (" (not pinned down)" if f in cal.unidentified else "") for f, value, err in cal.uncertainty()]
    return (f"Fitted on {cal.fit_points} points (rms error {cal.fit_rms_pct:.3g} %; ± is the 95 % interval from the "
            f"fit's residuals): " + ", ".join(parts) + f" on {md_escape(cal.device_name, 80)}.")


def fit_warnings_markdown(cal: Calibration) -> list[str]:
    """Each problem of the fit as Markdown-safe text (empty when every factor is pinned down)."""
    return [md_escape(p, 600) for p in cal.problems()]
