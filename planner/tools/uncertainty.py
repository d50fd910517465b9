"""Uncertainty bands on estimates, from the validation residuals stored in data/uncertainty.yaml.

A residual is measured seconds / predicted seconds for one held-out (test-split) validation row. For each
regime ('decode', 'prefill/compute', 'train') and GPU memory class ('hbm', 'gddr') the file holds the 10th
and 90th percentiles of those ratios: an 80 % band is (seconds x low, seconds x high), widened if needed so
that it always contains the point estimate. The file is written by `python -m planner validate
--write-uncertainty`; a cell with fewer than MIN_CELL_ROWS rows takes the pooled value of its regime (or of
all rows), widened to cover its own rows.

Calibrated band: a calibration (python -m planner.bench) fits the efficiencies of the GPU it ran on, which
removes that GPU's own bias. The calibrated quantiles are those of the residuals after dividing each row's
ratio by the median ratio of its (GPU, runtime, regime) group, i.e. the error left once each GPU's bias is known;
they are never wider than the uncalibrated band.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import yaml

from planner import DATA_DIR
from planner.inputs.runtimes import MEMORY_CLASSES
from planner.base.schema import parse_yaml, DataFileError, Record, load_yaml
from planner.inputs.jobs import Generate, Train

UNCERTAINTY_FILE = DATA_DIR / "uncertainty.yaml"
REGIMES = ("decode", "prefill/compute", "train")
QUANTILES = (0.1, 0.9)  # an 80 % band
FALLBACK_QUANTILES = (0.05, 0.95)  # a pooled stand-in is made wider
MIN_CELL_ROWS = 5  # fewer test rows than this: the cell falls back to a pooled value
CELL_FIELDS = ("regime", "gpu_class", "n", "low", "high", "calibrated_low", "calibrated_high", "fallback")
HEADER_FIELDS = ("schema_version", "generated", "source", "split", "quantiles", "method", "validated_runtimes",
                 "unvalidated_runtime", "cells")


def regime_of(e) -> str:
    """'train'; 'prefill/compute' when most of the time is compute-bound; else 'decode' (memory, launch or
    communication bound: decode-like inference)."""
    w = e.plan.workload
    if isinstance(w, Train):
        return "train"
    if not e.feasible or not e.phases:
        return "decode" if isinstance(w, Generate) and w.gen_tokens > 1 else "prefill/compute"
    split = e.split
    total = sum(split.values())
    return "prefill/compute" if total and split.get("compute", 0.0) >= total / 2 else "decode"


@dataclass(frozen=True)
class Cell:
    """Residual quantiles (measured / predicted seconds) for one regime and GPU class."""

    regime: str
    gpu_class: str
    n: int
    low: float
    high: float
    calibrated_low: float
    calibrated_high: float
    fallback: str | None  # why pooled values stand in, or None


@dataclass(frozen=True)
class UncertaintyTable:
    cells: tuple[Cell, ...]
    generated: date
    source: str
    split: str
    path: str
    validated_runtimes: tuple[tuple[str, int], ...]  # runtime id -> test rows behind the bands
    unvalidated: tuple[float, float]  # (low, high) that a runtime without test rows is widened to

    def cell(self, regime: str, gpu_class: str) -> Cell:
        for c in self.cells:
            if c.regime == regime and c.gpu_class == gpu_class:
                return c
        raise KeyError((regime, gpu_class))


def _parse_cell(rec: Record) -> Cell:
    rec.check_keys(CELL_FIELDS)
    c = Cell(rec.text("regime", choices=REGIMES), rec.text("gpu_class", choices=MEMORY_CLASSES),
             rec.number("n", lo=0, hi=10**6, integer=True), rec.number("low", lo=0.01, hi=1.0),
             rec.number("high", lo=1.0, hi=100.0), rec.number("calibrated_low", lo=0.01, hi=1.0),
             rec.number("calibrated_high", lo=1.0, hi=100.0), rec.text("fallback", required=False))
    if c.calibrated_high / c.calibrated_low > c.high / c.low * 1.001:  # 0.1 %: the file rounds to 3 decimals
        raise rec.fail("calibrated_high", f"a calibrated band is never wider than the uncalibrated one "
                                          f"({c.low:g}-{c.high:g})")
    if c.n < MIN_CELL_ROWS and not c.fallback:
        raise rec.fail("fallback", f"a cell with n < {MIN_CELL_ROWS} must say which pooled value stands in")
    return c


@lru_cache(maxsize=4)
def load_uncertainty(path: str | Path = UNCERTAINTY_FILE) -> UncertaintyTable:
    """Load and check the bands; every regime x GPU class must be present once."""
    raw = load_yaml(path, "cells")
    doc = parse_yaml(Path(path).read_text(encoding="utf-8"), path)
    head = Record(str(path), "header", doc)
    head.check_keys(HEADER_FIELDS)
    cells = tuple(_parse_cell(Record(str(path), f"#{i} ({r.get('regime')}/{r.get('gpu_class')})", r)
                              if isinstance(r, dict) else Record.of(path, i, r)) for i, r in enumerate(raw))
    seen = [(c.regime, c.gpu_class) for c in cells]
    for key in ((g, k) for g in REGIMES for k in MEMORY_CLASSES):
        if seen.count(key) != 1:
            raise DataFileError(path, "-", "cells", f"expected exactly one cell for {key[0]}/{key[1]}, "
                                                   f"found {seen.count(key)}")
    runtimes = head.child("validated_runtimes")
    validated = tuple((str(k), runtimes.number(str(k), lo=1, hi=10**6, integer=True)) for k in runtimes.data)
    wide = head.child("unvalidated_runtime")
    wide.check_keys(("low", "high", "note"))
    unvalidated = (wide.number("low", lo=0.01, hi=1.0), wide.number("high", lo=1.0, hi=100.0))
    wide.text("note")
    return UncertaintyTable(cells, head.day("generated"), head.text("source"), head.text("split"), str(path),
                            validated, unvalidated)


def band(e, calibrated: bool = False, path: str | Path = UNCERTAINTY_FILE) -> tuple[float, float] | None:
    """(low_s, high_s) around e.seconds: the 80 % range of measured / predicted seconds for the estimate's
    regime and GPU class; None for an infeasible estimate. A runtime with no validation rows behind it is
    widened to the pooled 5th-95th percentiles of all rows. calibrated (or efficiencies whose source starts
    with 'calibrated') uses the narrower band left once a GPU's own bias is calibrated away."""
    if not e.feasible or not e.seconds or e.gpu.memory_class not in MEMORY_CLASSES:
        return None  # no band for a CPU device: no published CPU measurement is in validation/ yet
    table = load_uncertainty(path)
    cell = table.cell(regime_of(e), e.gpu.memory_class)
    if calibrated or str(e.efficiency.source).startswith("calibrated"):
        lo, hi = cell.calibrated_low, cell.calibrated_high
    else:
        lo, hi = cell.low, cell.high
        if e.plan.runtime not in dict(table.validated_runtimes):  # no measurement backs this runtime's profile
            lo, hi = min(lo, table.unvalidated[0]), max(hi, table.unvalidated[1])
    return e.seconds * min(lo, 1.0), e.seconds * max(hi, 1.0)


def rate_band(e, calibrated: bool = False, path: str | Path = UNCERTAINTY_FILE) -> tuple[float, float] | None:
    """The band as tokens/s (or items/s when there are no tokens): (low, high) speeds."""
    b = band(e, calibrated, path)
    rate = e.tokens_per_s or e.items_per_s
    if b is None or not rate:
        return None
    return rate * e.seconds / b[1], rate * e.seconds / b[0]


# ---------------------------------------------------------------- writing (from a ValidationReport)

def quantile(values: Iterable[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default), q in [0, 1]."""
    xs = sorted(values)
    if not xs:
        raise ValueError("quantile of no values")
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _calibrated_ratios(rows) -> dict[str, float]:
    """Each row's ratio divided by the median ratio of its (GPU, runtime, regime) group, i.e. what is left once a
    calibration has fitted that GPU's bandwidth and compute fractions; rows alone in a group drop out."""
    groups: dict[tuple[str, str, str], list] = {}
    for r in rows:
        groups.setdefault((r.gpu_id, r.runtime, r.regime), []).append(r)
    out = {}
    for members in groups.values():
        if len(members) >= 2:
            med = statistics.median(m.seconds_ratio for m in members)
            out.update({m.row_id: m.seconds_ratio / med for m in members})
    return out


def _range(ratios: list[float], qs: tuple[float, float] = QUANTILES) -> tuple[float, float]:
    """(low, high) quantiles of the ratios, clamped so that the band contains 1 (the point estimate)."""
    return min(quantile(ratios, qs[0]), 1.0), max(quantile(ratios, qs[1]), 1.0)


def _no_wider(cal: tuple[float, float], band_: tuple[float, float]) -> tuple[float, float]:
    """Shrink a calibrated band toward 1 (in log space) until it is no wider than the uncalibrated one."""
    lo, hi = cal
    width, limit = math.log(hi / lo), math.log(band_[1] / band_[0])
    if width <= limit or width == 0:
        return lo, hi
    f = limit / width
    return lo ** f, hi ** f


def cells_from_rows(rows) -> list[Cell]:
    """Band cells from scored validation rows (RowResult: regime, gpu_class, gpu_id, runtime, seconds_ratio).

    A cell with MIN_CELL_ROWS rows or more: the 10th/90th percentiles of its ratios. Fewer: the wider
    5th/95th percentiles of its regime's rows (or of all rows, if the regime has too few too), widened
    further to cover the cell's own rows.
    """
    rows = [r for r in rows if r.seconds_ratio]
    cal = _calibrated_ratios(rows)
    cal_all = list(cal.values()) or [1.0]
    cells = []
    for g in REGIMES:
        in_regime = [r for r in rows if r.regime == g]
        for k in MEMORY_CLASSES:
            own = [r for r in in_regime if r.gpu_class == k]
            ratios = [r.seconds_ratio for r in own]
            own_cal = [cal[r.row_id] for r in own if r.row_id in cal]
            fallback = None
            if len(ratios) >= MIN_CELL_ROWS:
                low, high = _range(ratios)
            else:
                pool, name = ((in_regime, f"all {g} rows") if len(in_regime) >= MIN_CELL_ROWS else (rows, "all rows"))
                low, high = _range([r.seconds_ratio for r in pool], FALLBACK_QUANTILES)
                low, high = min([low] + ratios), max([high] + ratios)
                fallback = (f"{len(ratios)} test rows < {MIN_CELL_ROWS}: 5th-95th percentiles of {name} "
                            f"(n={len(pool)}), widened to cover this cell's own rows")
            cal_low, cal_high = _no_wider(_range(own_cal if len(own_cal) >= MIN_CELL_ROWS else cal_all), (low, high))
            cells.append(Cell(g, k, len(ratios), round(low, 3), round(high, 3),
                              round(cal_low, 3), round(cal_high, 3), fallback))
    return cells


def write_uncertainty(report, split_rule: str, path: str | Path = UNCERTAINTY_FILE, measurements: str | Path = "",
                      today: date | None = None) -> Path:
    """Write the band file from a ValidationReport's test-split rows (`split_rule` says which rows those are),
    then check it loads."""
    rows = [r for r in report.scored("test") if r.seconds_ratio]
    cells = cells_from_rows(rows)
    wide = _range([r.seconds_ratio for r in rows], FALLBACK_QUANTILES)
    doc = {
        "schema_version": 1,
        "generated": (today or date.today()).isoformat(),
        "source": f"python -m planner validate --write-uncertainty: residuals of {len(rows)} test-split rows of "
                  f"{Path(measurements or report.measurements).name} (published measurements, see validation/README.md)",
        "split": split_rule,
        "quantiles": list(QUANTILES),
        "method": "ratio = measured seconds / predicted seconds per row; low/high = its 10th/90th percentile in the "
                  "cell (clamped to contain 1); calibrated_* = the same after dividing each ratio by the median of "
                  "its (GPU, runtime, regime) group (pooled over all cells when a cell has fewer than "
                  f"{MIN_CELL_ROWS} such rows), shrunk toward 1 if wider than low/high",
        "validated_runtimes": dict(sorted(Counter(r.runtime for r in rows).items())),
        "unvalidated_runtime": {"low": round(wide[0], 3), "high": round(wide[1], 3),
                                "note": "a runtime with no test rows: its cell's band widened to at least the 5th-95th "
                                        "percentiles of all test rows"},
        "cells": [{"regime": c.regime, "gpu_class": c.gpu_class, "n": c.n, "low": c.low, "high": c.high,
                   "calibrated_low": c.calibrated_low, "calibrated_high": c.calibrated_high,
                   "fallback": c.fallback} for c in cells],
    }
    path = Path(path)
    header = ("# Uncertainty bands for estimates (planner/tools/uncertainty.py). WRITTEN by\n"
              "# `python -m planner validate --write-uncertainty`; do not edit by hand.\n")
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=120), encoding="utf-8")
    load_uncertainty.cache_clear()
    load_uncertainty(path)
    return path
