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


# The publications data/runtimes.yaml was tuned on or drawn from (validation/README.md, sources 1-10, and
# validation/REPORT.md "What was tuned"); every other source in measurements.yaml is new to the planner.
DRAWN_FROM = ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference", "NVIDIA/TensorRT-LLM", "pytorch-labs/gpt-fast",
              "mlc-ai/llm-perf-bench", "karpathy/llm.c", "KellerJordan/modded-nanogpt", "mosaicml/llm-foundry")


def source_of(row: Measurement) -> str:
    """The publication a row comes from: its repository (owner/name) or web host, without file, anchor or commit."""
    head = row.source.split(";")[0].split(",")[0].strip()
    if "://" in head:  # a URL: a GitHub thread belongs to its repository, any other page to its host
        host, _, path = head.split("://", 1)[1].partition("/")
        parts = [p for p in path.split("/") if p]
        return "/".join(parts[:2]) if host.lower() == "github.com" and len(parts) >= 2 else host.lower()
    return head.split(":")[0].split(" @")[0].strip()


@dataclass(frozen=True)
class LosoRow:
    result: RowResult  # scored with efficiencies tuned on the other sources (the committed ones if not independent)
    source: str
    independent: bool  # the row's runtime was tuned on other sources' rows
    untuned: RowResult  # scored with the committed runtime profile

    @property
    def new_source(self) -> bool:
        """The committed profiles never drew from this row's source."""
        return self.source not in DRAWN_FROM


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
    cache: dict[tuple[str, frozenset], dict[str, float]] = {}  # a runtime the held source lacks tunes on all its rows

    def tuned_on(runtime: str, rows: list[Measurement]) -> dict[str, float]:
        key = (runtime, frozenset(r.id for r in rows))
        if key not in cache:
            cache[key] = tune_runtime(runtime, rows)[0]
        return cache[key]

    out = []
    for held in sources:
        train: dict[str, list[Measurement]] = {}
        for row, _ in scored:
            if source_of(row) != held:
                train.setdefault(FRAMEWORK_RUNTIME[row.framework], []).append(row)
        for row, untuned in scored:
            if source_of(row) != held:
                continue
            rt = FRAMEWORK_RUNTIME[row.framework]
            adjust = _adjust_for(rt, tuned_on(rt, train[rt])) if rt in train else None
            res, _ = evaluate_row(row, catalog, models, adjust)
            out.append(LosoRow(res, held, rt in train, untuned))
    return out


def _stats(results: list[RowResult]) -> dict:
    scored = [r for r in results if r.error_pct is not None and r.seconds_ratio]
    if not scored:
        return {"n": 0, "median_ape": None, "p90_ape": None, "median_bias_pct": None}
    apes = [abs(r.error_pct) for r in scored]
    # bias on speed, whatever the row's metric: + = the planner is faster than the measurement (optimistic)
    speed = [100.0 * (r.seconds_ratio - 1.0) for r in scored]
    return {"n": len(scored), "median_ape": round(statistics.median(apes), 1),
            "p90_ape": round(quantile(apes, 0.9), 1), "median_bias_pct": round(statistics.median(speed), 1)}


def _groups(results: list[tuple[RowResult, str]], by_gpu_class: bool) -> list[tuple[str, str, list[RowResult]]]:
    """all, per regime (as the engine classifies the row), per GPU class, per source."""
    rs = [r for r, _ in results]
    groups = [("all", "all", rs)]
    groups += [("regime", g, [r for r in rs if r.regime == g]) for g in REGIMES]
    if by_gpu_class:
        groups += [("gpu_class", c, [r for r in rs if r.gpu_class == c]) for c in MEMORY_CLASSES]
    groups += [("source", s, [r for r, src in results if src == s]) for s in sorted({src for _, src in results})]
    return groups


def loso_summary(rows: list[LosoRow]) -> list[dict]:
    """Median and p90 absolute % error and median bias on speed (+ = the planner faster than measured, whatever the
    row's metric: a step_seconds row that is predicted too short counts as +).

    set 'leave-one-source-out': rows whose runtime other sources measure, tuned on those (all, per regime, GPU class
    and left-out source); set 'no other source': the rows without that evidence, apart; set 'untuned, new sources':
    rows from sources the committed profiles never drew from (DRAWN_FROM), scored with those profiles as they are.
    """
    sets = [("leave-one-source-out", [(r.result, r.source) for r in rows if r.independent], True),
            ("no other source", [(r.result, r.source) for r in rows if not r.independent], False),
            ("untuned, new sources", [(r.untuned, r.source) for r in rows if r.new_source], False)]
    return [{"set": name, "group": kind, "key": key, **_stats(members)}
            for name, results, by_class in sets if results
            for kind, key, members in _groups(results, by_class) if members]
