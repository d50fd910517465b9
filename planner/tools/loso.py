"""Leave one source out: how well the planner predicts measurements from a source it has never seen.

A split of rows by hash puts sibling rows of one benchmark on both sides, so it measures interpolation inside a
source. Here the rows are grouped by their source (the repository or document they were published in): for each
source, the runtime efficiencies are tuned on every OTHER source's rows (validation.tune_runtime, the same search
as `validate --tune`) and the left-out source's rows are scored with them. A row whose runtime no other source
measures has no independent evidence: it is scored with the committed profile and reported apart ("no other
source"), never mixed into the headline.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from planner.tools.uncertainty import REGIMES, quantile
from planner.tools.validation import (FRAMEWORK_RUNTIME, MEASUREMENTS_FILE, Measurement, RowResult, _adjust_for,
                                      evaluate_row, load_measurements, tune_runtime, validation_models)
from planner.inputs.catalog import load_catalog
from planner.inputs.runtimes import MEMORY_CLASSES


def source_of(row: Measurement) -> str:
    """The publication a row comes from: its repository or document, without file, anchor or commit."""
    head = row.source.split(";")[0].strip()
    return head.split(":")[0].split(" @")[0].strip()


@dataclass(frozen=True)
class LosoRow:
    result: RowResult
    source: str
    independent: bool  # the row's runtime was tuned on other sources' rows


def _scorable(rows: list[Measurement], catalog, models) -> list[tuple[Measurement, RowResult]]:
    out = []
    for row in rows:
        res, _ = evaluate_row(row, catalog, models)
        if res.split != "excluded" and res.predicted:
            out.append((row, res))
    return out


def leave_one_source_out(measurements: str | Path = MEASUREMENTS_FILE) -> list[LosoRow]:
    """Score every source's rows with efficiencies tuned on all the other sources."""
    catalog, models = load_catalog(), validation_models()
    scored = _scorable(list(load_measurements(measurements)), catalog, models)
    sources = sorted({source_of(row) for row, _ in scored})
    out = []
    for held in sources:
        train: dict[str, list[Measurement]] = {}
        for row, _ in scored:
            if source_of(row) != held:
                train.setdefault(FRAMEWORK_RUNTIME[row.framework], []).append(row)
        tuned = {rt: tune_runtime(rt, rows)[0] for rt, rows in train.items()}
        for row, _ in scored:
            if source_of(row) != held:
                continue
            rt = FRAMEWORK_RUNTIME[row.framework]
            adjust = _adjust_for(rt, tuned[rt]) if rt in tuned else None
            res, _ = evaluate_row(row, catalog, models, adjust)
            out.append(LosoRow(res, held, rt in tuned))
    return out


def _stats(rows: list[LosoRow]) -> dict:
    errors = [r.result.error_pct for r in rows if r.result.error_pct is not None]
    if not errors:
        return {"n": 0, "median_ape": None, "p90_ape": None, "median_bias_pct": None}
    apes = [abs(e) for e in errors]
    return {"n": len(errors), "median_ape": round(statistics.median(apes), 1),
            "p90_ape": round(quantile(apes, 0.9), 1), "median_bias_pct": round(statistics.median(errors), 1)}


def loso_summary(rows: list[LosoRow]) -> list[dict]:
    """Median and p90 absolute % error and median signed error (+ = predicted faster than measured), for the
    rows with independent evidence: all, per regime, per GPU class, per left-out source; then the rows without."""
    ind = [r for r in rows if r.independent]
    groups = [("all", "all", ind)]
    groups += [("regime", g, [r for r in ind if r.result.regime == g]) for g in REGIMES]
    groups += [("gpu_class", c, [r for r in ind if r.result.gpu_class == c]) for c in MEMORY_CLASSES]
    groups += [("source", s, [r for r in ind if r.source == s]) for s in sorted({r.source for r in ind})]
    groups += [("no other source", "runtime measured by this source only", [r for r in rows if not r.independent])]
    return [{"group": kind, "key": key, **_stats(members)} for kind, key, members in groups if members]
