"""A calibration in a share link: the field table of its compact text (encode, decode) and how a fleet of them
joins (FLEET_SEPARATOR, MAX_FLEET)."""

from __future__ import annotations

import math
import re
from datetime import date
from typing import Any

from planner.base.safe_parse import shown
from planner.base.schema import UnknownNameError
from planner.calibration.measured import DEVICE_CLASSES, slug
from planner.calibration.solve import EFF_BOUNDS, ERR_CAP_PCT, FACTORS, LO_BOUNDS
from planner.inputs.bench_result import (BENCH_VERSION, BW_GBPS, MEMORY_GB, OVER_DATASHEET, PATHS, TFLOPS,
                                         CalibrationError, datasheet_problem)
from planner.inputs.catalog import Catalog, load_catalog

FACTOR_KEYS = {"bandwidth": "bw", "compute": "mm", "overhead": "lo"}  # the fitted factors' keys in a calibration link
FLEET_SEPARATOR = "|"  # between calibrations in a link
MAX_FLEET = 8  # calibrations carried at once (a link stays short: each is ~150 characters)


def encode(cal) -> str:
    """A Calibration (planner.calibration.fit) as compact URL-safe text:
    'v=1;dev=rtx-4090;cls=gddr;bw=0.83;mm=0.71;lo=3.2;path=bf16;pbw=950;fp32=80;...'."""
    dev = cal.gpu_id or slug(cal.device_name)
    parts = [f"v={BENCH_VERSION}", f"dev={dev}", f"cls={cal.device_class}", f"bw={cal.mem_bw_efficiency:.4g}",
             f"mm={cal.compute_efficiency:.4g}", f"lo={cal.overhead_us:.4g}", f"path={cal.compute_path}",
             f"pbw={cal.measured_bw_gbps:.5g}"]
    parts += [f"{p}={t:.5g}" for p, t in cal.measured_tflops]
    parts += [f"mem={cal.memory_gb:.4g}", f"d={cal.bench_date.replace('-', '')}", f"err={cal.fit_rms_pct:.3g}",
              f"n={cal.fit_points}"]
    if cal.fit_err_pct is not None:  # the fit's 95 % uncertainty per factor, and what it could not pin down
        parts += [f"e{FACTOR_KEYS[f]}={e:.4g}" for f, e in zip(FACTORS, cal.fit_err_pct)]
    if cal.unidentified:
        parts.append("ill=" + ".".join(FACTOR_KEYS[f] for f in cal.unidentified))
    return ";".join(parts)


def decode(text: str, catalog: Catalog | None = None) -> dict[str, Any]:
    """The fields of a Calibration from `encode` text (e.g. a hand-edited link), by name; CalibrationError on anything
    invalid."""
    hint = "; remove the 'cal' parameter from the link or upload the bench result again"
    if not isinstance(text, str) or not text or len(text) > 600 or not re.fullmatch(r"[A-Za-z0-9.=;_+-]+", text):
        raise CalibrationError(f"calibration link is malformed (expected 'v=1;dev=...;bw=...'){hint}")
    fields: dict[str, str] = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if not sep or not value or key in fields:
            raise CalibrationError(f"calibration link: bad or repeated entry {shown(part)}{hint}")
        fields[key] = value
    err_keys = [f"e{FACTOR_KEYS[f]}" for f in FACTORS]
    known = {"v", "dev", "cls", "bw", "mm", "lo", "path", "pbw", "mem", "d", "err", "n", "ill", *err_keys, *PATHS}
    unknown = sorted(set(fields) - known)
    missing = sorted({"v", "dev", "cls", "bw", "mm", "lo", "path", "pbw", "mem", "d"} - set(fields))
    if unknown or missing:
        raise CalibrationError(f"calibration link: {'unknown ' + ', '.join(unknown) if unknown else ''}"
                               f"{'; ' if unknown and missing else ''}"
                               f"{'missing ' + ', '.join(missing) if missing else ''}{hint}")

    def num(key: str, bounds: tuple[float, float]) -> float:
        try:
            value = float(fields[key])
        except ValueError:
            raise CalibrationError(f"calibration link: {key}={shown(fields[key])} is not a number{hint}") from None
        if not (math.isfinite(value) and bounds[0] <= value <= bounds[1]):
            raise CalibrationError(f"calibration link: {key}={fields[key]} is outside "
                                   f"{bounds[0]:g}..{bounds[1]:g}{hint}")
        return value

    if fields["v"] != str(BENCH_VERSION):
        raise CalibrationError(f"calibration link is from bench_version {fields['v']}, this planner uses "
                               f"{BENCH_VERSION}: re-run `python -m planner.bench`{hint}")
    klass = fields["cls"]
    if klass not in DEVICE_CLASSES:
        raise CalibrationError(f"calibration link: cls={shown(klass)} must be one of "
                               f"{', '.join(DEVICE_CLASSES)}{hint}")
    if fields["path"] not in PATHS:
        raise CalibrationError(f"calibration link: path={shown(fields['path'])} must be one of "
                               f"{', '.join(PATHS)}{hint}")
    if not re.fullmatch(r"\d{8}", fields["d"]):
        raise CalibrationError(f"calibration link: d={shown(fields['d'])} must be a date YYYYMMDD{hint}")
    try:
        day = date(int(fields["d"][:4]), int(fields["d"][4:6]), int(fields["d"][6:])).isoformat()
    except ValueError:
        raise CalibrationError(f"calibration link: d={shown(fields['d'])} is not a valid date{hint}") from None
    gpu_id, name = None, fields["dev"]
    catalog = catalog or load_catalog()
    cpu_ids = {c.id for c in catalog.cpus}
    if klass in ("hbm", "gddr") or (klass == "cpu" and name in cpu_ids):  # a catalog GPU, or a catalog CPU row
        try:
            gpu = catalog.get(name)
        except UnknownNameError as exc:
            raise CalibrationError(f"calibration link: {exc}{hint}") from None
        if gpu.memory_class != klass:
            raise CalibrationError(f"calibration link: {gpu.id} is a {gpu.memory_class.upper()} device, not "
                                   f"{klass}{hint}")
        gpu_id, name = gpu.id, gpu.name
    peaks = tuple((p, num(p, TFLOPS)) for p in PATHS if p in fields)
    if fields["path"] not in dict(peaks):
        raise CalibrationError(f"calibration link: no measured peak for path {fields['path']}{hint}")
    if gpu_id:  # the same plausibility checks as an uploaded result
        problem = datasheet_problem(gpu, num("pbw", BW_GBPS), dict(peaks))
        if not problem and max(num("bw", EFF_BOUNDS), num("mm", EFF_BOUNDS)) > OVER_DATASHEET:
            problem = f"an efficiency above {OVER_DATASHEET:g} x the {gpu.name} datasheet"
        if problem:
            raise CalibrationError(f"calibration link: {problem}{hint}")
    if any(k in fields for k in err_keys) and not all(k in fields for k in err_keys):
        raise CalibrationError(f"calibration link: give all of {', '.join(err_keys)} or none{hint}")
    errs = tuple(num(k, (0, ERR_CAP_PCT)) for k in err_keys) if err_keys[0] in fields else None
    by_key = {v: k for k, v in FACTOR_KEYS.items()}
    ill = fields["ill"].split(".") if "ill" in fields else []
    if any(k not in by_key for k in ill) or len(set(ill)) != len(ill):
        raise CalibrationError(f"calibration link: ill={shown(fields['ill'])} must name factors among "
                               f"{', '.join(by_key)}, each once{hint}")
    return dict(device_name=name, gpu_id=gpu_id, device_class=klass, mem_bw_efficiency=num("bw", EFF_BOUNDS),
                compute_efficiency=num("mm", EFF_BOUNDS), overhead_us=num("lo", LO_BOUNDS), compute_path=fields["path"],
                measured_bw_gbps=num("pbw", BW_GBPS), measured_tflops=peaks, memory_gb=num("mem", MEMORY_GB),
                bench_date=day, fit_rms_pct=num("err", (0, 1000)) if "err" in fields else 0.0,
                fit_points=int(num("n", (0, 500))) if "n" in fields else 0, fit_err_pct=errs,
                unidentified=tuple(f for f in FACTORS if FACTOR_KEYS[f] in ill))


def split_fleet(text: str) -> list[str]:
    """The calibrations' texts of a fleet link; CalibrationError unless it carries 1 to MAX_FLEET of them."""
    parts = [p for p in str(text).split(FLEET_SEPARATOR) if p]
    if not parts or len(parts) > MAX_FLEET:
        raise CalibrationError(f"a link carries 1 to {MAX_FLEET} calibrations, got {len(parts)}")
    return parts
