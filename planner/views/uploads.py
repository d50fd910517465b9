"""What an upload does to the plan, without Streamlit: a model file becomes an architecture or a profile's text,
bench results become a calibration fleet. Each outcome carries the message the page shows (user text escaped)."""

from __future__ import annotations

from dataclasses import dataclass, field
from planner.base.schema import DataFileError
from planner.inputs.bench_result import CalibrationError, parse_result
from planner.inputs.models import parse_model_text
from planner.calibration import codec as calibration_codec, fit as calibration
from planner.views import share
from planner.views.format import fmt_count, md_escape

BENCH_FORMAT_MARK = '"planner-bench-result"'  # what tells a bench result uploaded as a model apart


@dataclass(frozen=True)
class ModelUpload:
    """ok: use `arch` (a decoder's fields) or `spec` (a profile's YAML text); else `message` says why not."""

    ok: bool
    message: str
    arch: dict | None = None
    spec: str = ""


def model_upload(data: bytes, filename: str) -> ModelUpload:
    """A YAML profile or a Hugging Face config.json, checked as the link would carry it."""
    text = data.decode("utf-8", errors="replace")
    name = md_escape(filename, 80)
    try:
        m = parse_model_text(text, filename, f"uploaded {filename}")
    except DataFileError as exc:
        where = "" if exc.field == "-" else f" (field '{md_escape(exc.field, 60)}')"
        hint = (" It looks like a benchmark result: upload it under 6 · Calibration." if BENCH_FORMAT_MARK in text
                else "")
        return ModelUpload(False, f"{name} could not be used: {md_escape(exc.problem, 600)}{where}.{hint} "
                                  "The plan is unchanged.")
    arch = m.architecture()
    too_big = None if arch else share.spec_link_problem(text)
    if too_big:
        return ModelUpload(False, f"{name} could not be used: {md_escape(too_big)}. The plan is unchanged.")
    return ModelUpload(True, f"Loaded {md_escape(m.name, 80)} from {name} ({fmt_count(m.params)} parameters).",
                       arch, "" if arch else text)


@dataclass(frozen=True)
class CalibrationUpload:
    """ok: `query` is the fleet as the link carries it, `results` the bench results by device name."""

    ok: bool
    message: str
    query: str = ""
    results: dict = field(default_factory=dict)


def calibration_upload(files: list[tuple[str, bytes]]) -> CalibrationUpload:
    """One or several bench results (one per GPU of a fleet, at most calibration_codec.MAX_FLEET): each is fitted and
    used for its own GPU; one bad file keeps the current calibration."""
    files = files[:calibration_codec.MAX_FLEET]
    fitted, by_name, problems = [], {}, []
    for name, data in files:
        try:
            result = parse_result(data, name)
            fitted.append(calibration.fit(result))
            by_name[fitted[-1].device_name] = result
        except CalibrationError as exc:  # its message starts with the file's name, which the sentence already gives
            problem = str(exc).removeprefix(f"{name}: ")
            problems.append(f"{md_escape(name, 80)} could not be used: {md_escape(problem, 400)}")
    if problems:
        return CalibrationUpload(False, "; ".join(problems) + ". The plan keeps its current calibration.")
    return CalibrationUpload(True, f"Calibrated with {', '.join(md_escape(n, 80) for n, _ in files)}.",
                             calibration.Fleet(tuple(fitted)).to_query(), by_name)


def cpu_results(results: dict | None) -> dict:
    """The bench results measured on a CPU, by the name their fit carries."""
    return {k: r for k, r in (results or {}).items() if r["environment"]["device_type"] == "cpu"}


def refit_for_cpu(results: dict, cpu: str, cpu_name: str) -> CalibrationUpload:
    """The results fitted again with the CPU a CPU bench ran on (a catalog CPU's id, or
    planner.calibration.measured.THIS_MACHINE)."""
    fitted, by_name = [], {}
    try:
        for result in results.values():
            on_cpu = result["environment"]["device_type"] == "cpu"
            fitted.append(calibration.fit(result, device=cpu if on_cpu else None))
            by_name[fitted[-1].device_name] = result
    except CalibrationError as exc:
        return CalibrationUpload(False, f"{md_escape(exc, 400)}. The plan keeps its current calibration.")
    target = cpu_name if cpu else "the measured machine only"
    return CalibrationUpload(True, f"The CPU bench now calibrates {md_escape(target, 80)}.",
                             calibration.Fleet(tuple(fitted)).to_query(), by_name)
