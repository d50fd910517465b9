"""The result file of the local benchmark (`python -m planner.bench`): its format and its validation.

The bench writes it (planner.bench), the calibration fits it (planner.calibration.fit); both read the format
from here, so neither imports the other. Parsing is safe (json / yaml.safe_load only, never pickle or torch.load)
and every problem raises CalibrationError naming the file and field and how to fix it.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import yaml

from planner.base.safe_parse import ParseError, TextError, check_text_values, load_json_text, load_yaml_text
from planner.base.schema import DataFileError, Record, UnknownNameError, parse_compute_capability
from planner.inputs.catalog import GPU, Catalog, load_catalog
from planner.inputs.models import DecoderProfile, ModelProfile, parse_decoder, parse_model

BENCH_VERSION = 1  # bump when the measuring method changes: results of another version are refused
# 2 added model_runs (`python -m planner.bench --model`: the user's own model at several input sizes); 1 still reads
RESULT_SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)
MAX_RESULT_BYTES = 1_000_000
MAX_POINTS = 500
MAX_MODEL_RUNS = 4  # models measured in one result
MAX_MODEL_POINTS = 64  # (workload, size) points of one model run
MAX_MODEL_ARGS = 32  # factory arguments recorded with a model run
MODEL_KINDS = ("forward", "train")  # what a model run times at each size (no decode: any model, not only decoders)
RESULT_KIND = "planner-bench-result"
DEVICE_TYPES = ("cuda", "mps", "cpu")
PATHS = ("fp32", "tf32", "fp16", "bf16")  # matmul dtypes the bench measures
KINDS = ("decode", "forward", "train")  # workload points
STATUSES = ("ok", "unavailable")
RERUN = "re-run `python -m planner.bench`"

# Plausibility bounds: anything outside is a broken measurement or a hand-edited file.
BW_GBPS = (0.1, 20_000.0)  # fastest catalog HBM is ~8 TB/s
TFLOPS = (1e-4, 10_000.0)
LAUNCH_US = (0.05, 10_000.0)
SECONDS = (1e-7, 36_000.0)
MEMORY_GB = (0.1, 100_000.0)
OVER_DATASHEET = 1.5  # a measured peak above 1.5 x the datasheet is not a measurement of that GPU


class CalibrationError(ValueError):
    """A bench result, calibration file or calibration link is unusable; the message says what and how to fix it."""


def _fail(filename: str, problem: str) -> CalibrationError:
    return CalibrationError(f"{filename}: {problem}")


def _from_record(exc: DataFileError) -> CalibrationError:
    """A Record error as a calibration message: the field's path in the result and what to do."""
    where = exc.record.removeprefix("result").lstrip(".")
    where = f"{where}.{exc.field}" if where else exc.field
    if exc.problem == "missing":
        return CalibrationError(f"{exc.path}: field '{where}' is missing; {RERUN}")
    return CalibrationError(f"{exc.path}: field '{where}': {exc.problem} (not a plausible measurement, or the file "
                            f"was edited; {RERUN})")


def _decode_bytes(data: bytes | str, filename: str) -> str:
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    if size > MAX_RESULT_BYTES:
        raise _fail(filename, f"file is {size:,} bytes; a bench result is under {MAX_RESULT_BYTES:,} bytes. Upload the "
                    "JSON that `python -m planner.bench` wrote, not a log or a model checkpoint")
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(filename, "not a text file (binary data); upload the JSON or YAML written by "
                    "`python -m planner.bench`") from None


def _load_doc(text: str, filename: str) -> Any:
    """The file's document, JSON or else YAML, every string in it checked (safe_parse.check_text_values)."""
    doc = _parse_doc(text, filename)
    try:
        check_text_values(doc, filename)
    except TextError as exc:
        raise CalibrationError(f"{exc}; {RERUN}") from None
    return doc


def _parse_doc(text: str, filename: str) -> Any:
    try:
        return load_json_text(text, filename, MAX_RESULT_BYTES)
    except ParseError as exc:
        raise CalibrationError(str(exc)) from None
    except json.JSONDecodeError as json_exc:
        if filename.lower().endswith(".json"):
            raise _fail(filename, f"not valid JSON (line {json_exc.lineno}: {json_exc.msg}); upload the file "
                        "`python -m planner.bench` wrote, unedited") from None
    try:
        return load_yaml_text(text, filename, MAX_RESULT_BYTES)
    except ParseError as exc:
        raise CalibrationError(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise _fail(filename,
                    f"neither JSON nor YAML{where}; upload the file `python -m planner.bench` wrote") from None


def _catalog_gpu(name: str, catalog: Catalog, filename: str) -> GPU:
    try:
        return catalog.get(name)
    except UnknownNameError as exc:
        raise CalibrationError(f"{filename}: device {exc}. The calibration needs the GPU's datasheet to transfer "
                               "the fit: add it to data/gpus.yaml (with its torch device name as an alias)") from None


def _check_environment(env: Record, catalog: Catalog) -> GPU | None:
    dtype = env.text("device_type", choices=DEVICE_TYPES)
    name = env.text("device_name", max_len=200)
    env.number("memory_gb", lo=MEMORY_GB[0], hi=MEMORY_GB[1])
    env.text("torch_version", max_len=200)
    env.number("torch_threads", lo=1, hi=4096, integer=True)
    try:
        date.fromisoformat(env.text("date", max_len=40)[:10])
    except ValueError:
        raise env.fail("date", "expected an ISO date like 2026-11-20") from None
    if dtype != "cuda":
        return None
    gpu = _catalog_gpu(name, catalog, env.path)
    cc = env.raw("compute_capability", required=False)
    if cc is not None:
        parse_compute_capability(cc, lambda p: env.fail("compute_capability", p))
    return gpu


def _ok(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("status", "ok") == "ok"


def datasheet_problem(gpu: GPU, bw_gbps: float, peaks: dict[str, float]) -> str | None:
    """Why measured bandwidth (GB/s) or matmul peaks (TFLOPS per dtype) can't be from `gpu` (None if they can):
    anything above OVER_DATASHEET x its datasheet. Uploads and calibration links both check it."""
    if bw_gbps > OVER_DATASHEET * gpu.mem_bw_gbps:
        return (f"measured bandwidth {bw_gbps:,.0f} GB/s is above {OVER_DATASHEET:g} x the {gpu.name} datasheet "
                f"({gpu.mem_bw_gbps:,.0f} GB/s): not a measurement of this GPU")
    for path, peak in peaks.items():
        sheet = gpu.peak_tflops(path)
        if sheet and peak > OVER_DATASHEET * sheet:
            return (f"measured {path} matmul {peak:,.1f} TFLOPS is above {OVER_DATASHEET:g} x the {gpu.name} "
                    f"datasheet ({sheet:g}): not a measurement of this GPU")
    return None


def _check_micro(micro: Record, gpu: GPU | None) -> set[str]:
    """Check the micro-benchmarks; return the matmul dtypes that were measured."""
    bw = micro.child("memory_bandwidth").number("gbps", lo=BW_GBPS[0], hi=BW_GBPS[1])
    mm = micro.child("matmul")
    mm.check_keys(PATHS)
    if not _ok(mm.data.get("fp32")):
        raise _fail(micro.path, f"field 'micro.matmul.fp32' is missing; every device has an fp32 matmul: {RERUN}")
    measured = {p for p in mm.data if _ok(mm.data[p])}
    peaks = {p: mm.child(p).number("best_tflops", lo=TFLOPS[0], hi=TFLOPS[1]) for p in sorted(measured)}
    problem = datasheet_problem(gpu, bw, peaks) if gpu else None
    if problem:
        raise _fail(micro.path, problem)
    micro.child("launch_overhead").number("us_per_op", lo=LAUNCH_US[0], hi=LAUNCH_US[1])
    return measured


def point_model(pt: Record) -> DecoderProfile:
    """The decoder a workload point ran (the bench builds its torch model from this profile)."""
    model = pt.child("model")
    return parse_decoder(Record(model.path, model.label, {k: v for k, v in model.data.items() if k != "kind"}))


def _check_point(pt: Record, paths: set[str]) -> bool:
    """Check one workload point; True if it is a measured eager point (one the calibration fits)."""
    point_model(pt)
    kind = pt.text("workload", choices=KINDS)
    pt.number("batch", lo=1, hi=1e6, integer=True)
    precision = pt.text("precision", choices=PATHS)
    pt.number("position" if kind == "decode" else "seq", lo=1, hi=1e7, integer=True)
    compiled = pt.flag("compiled", default=False)
    if pt.text("status", choices=STATUSES) != "ok":
        return False
    pt.number("measured_s", lo=SECONDS[0], hi=SECONDS[1])
    if precision not in paths:
        raise pt.fail("precision", f"{precision} has no matmul measurement in micro.matmul")
    return not compiled


def run_model(run: Record) -> ModelProfile:
    """The model a model run measured: its profile as recorded in the run (a traced profile, usually)."""
    return parse_model(run.child("profile"))


def _check_model_run(run: Record, paths: set[str]) -> list[bool]:
    """Check one model run (`--model`): what ran, its profile, and each point; True per measured point."""
    run.check_keys(("factory", "args", "input_size_name", "precision", "batch", "profile", "points", "trace_s"))
    run.text("factory", max_len=500)
    args = run.child("args", required=False)
    if args is not None and len(args.data) > MAX_MODEL_ARGS:
        raise run.fail("args", f"{len(args.data):,} factory arguments; at most {MAX_MODEL_ARGS} are recorded")
    run.text("input_size_name", max_len=40)
    run.number("trace_s", required=False, lo=0, hi=1e6)
    precision = run.text("precision", choices=PATHS)
    if precision not in paths:
        raise run.fail("precision", f"{precision} has no matmul measurement in micro.matmul")
    run.number("batch", lo=1, hi=1e6, integer=True)
    model = run_model(run)
    measured = []
    for pt in run.records("points", MAX_MODEL_POINTS):
        pt.check_keys(("workload", "size", "status", "measured_s", "reason", "timing"))
        pt.text("workload", choices=MODEL_KINDS)
        size = int(pt.number("size", lo=1, hi=1e7, integer=True))
        try:
            model.check_size(size)
        except ValueError as exc:
            raise pt.fail("size", f"the profile can't be evaluated there: {exc}") from None
        ok = pt.text("status", choices=STATUSES) == "ok"
        if ok:
            pt.number("measured_s", lo=SECONDS[0], hi=SECONDS[1])
        measured.append(ok)
    return measured


def _check_header(doc: dict, filename: str) -> None:
    if doc.get("kind") != RESULT_KIND:
        raise _fail(filename, f"not a planner bench result (field 'kind' should be '{RESULT_KIND}'); "
                    "run `python -m planner.bench` and upload the file it writes")
    version = doc.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
        raise _fail(filename, f"schema_version {str(version)[:20]!r} is not supported (this planner reads "
                    f"{', '.join(map(str, READABLE_SCHEMA_VERSIONS))}); re-run the benchmark with this version of "
                    "the planner")
    if version == 1 and "model_runs" in doc:
        raise _fail(filename, "model_runs needs schema_version 2 (schema 1 files hold workloads only); re-run "
                    "`python -m planner.bench --model ...` with this version of the planner")
    if doc.get("bench_version") != BENCH_VERSION:
        raise _fail(filename, f"measured with bench_version {str(doc.get('bench_version'))[:20]!r}, but this planner "
                    f"fits bench_version {BENCH_VERSION} (the method changed); {RERUN}")


def parse_result(data: bytes | str, filename: str, catalog: Catalog | None = None) -> dict:
    """The validated bench result as a dict; CalibrationError (what is wrong and how to fix it) otherwise."""
    doc = _load_doc(_decode_bytes(data, filename), filename)
    if not isinstance(doc, dict):
        raise _fail(filename, "expected a mapping at the top level; upload the file `python -m planner.bench` wrote")
    _check_header(doc, filename)
    top = Record(filename, "result", doc)
    try:
        gpu = _check_environment(top.child("environment"), catalog or load_catalog())
        paths = _check_micro(top.child("micro"), gpu)
        runs = top.records("model_runs", MAX_MODEL_RUNS) if "model_runs" in doc else []
        # a --model result may have no decoder workloads: its runs are what the calibration fits
        empty = runs and doc.get("workloads") == []
        fitted = [] if empty else [_check_point(pt, paths) for pt in top.records("workloads", MAX_POINTS)]
        for run in runs:
            fitted += _check_model_run(run, paths)
    except DataFileError as exc:
        raise _from_record(exc) from None
    if not any(fitted):
        raise _fail(filename, f"no eager workload point (nor model-run point) was measured ('status: ok'); {RERUN}")
    return doc
