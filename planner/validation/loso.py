"""Leave one source out: how well the planner predicts measurements from a source it has never seen.

A split of rows by hash puts sibling rows of one benchmark on both sides, so it measures interpolation inside a
source. Here the rows are grouped by their source (the repository or document they were published in): for each
source, the runtime efficiencies are tuned on every OTHER source's rows (measured.tune_runtime, the same search
as `validate --tune`) and the left-out source's rows are scored with them. The bandwidth fraction is tuned per memory
class (HBM, GDDR), and only from enough rows (measured.MIN_TUNE_ROWS). A row whose runtime's fraction for its class
no other source could tune is scored with the profile's prior: that is a prediction from elsewhere when
the profile's priors come from other publications (a source new to the planner), and it counts; when the prior was
set or tuned on this very source (DRAWN_FROM: MLC LLM, llm-foundry, llm.c, TensorRT-LLM; llama.cpp on HBM, each
measured by its own source alone) there is no independent evidence, and the row is reported apart ("no other
source"), never in the headline.

The values estimates use (data/runtimes_tuned.yaml) come from the same search run on every source (tune_deployed),
for the parameters every fold here tunes too: the headline scores the procedure that produced them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path

import yaml

from planner.base.files import write_atomic
from planner.validation.uncertainty import REGIMES, meets_target, quantile
from planner.validation import measured
from planner.validation.measured import (FRAMEWORK_RUNTIME, MEASUREMENTS_FILE, Measurement, RowResult, adjust_for,
                                      evaluate_row, load_measurements, movers, tune_runtime,
                                      validation_models)
from planner.inputs.catalog import load_catalog
from planner.inputs.runtimes import LAUNCH_PARAMS, MEMORY_CLASSES, RUNTIMES_FILE, load_runtimes, load_tuned


# The publications data/runtimes.yaml was tuned on or drawn from (validation/README.md, sources 1-10, and
# validation/REPORT.md "What was tuned"); every other source in measurements.yaml is new to the planner.
DRAWN_FROM = ("XiongjieDai/GPU-Benchmarks-on-LLM-Inference", "NVIDIA/TensorRT-LLM", "pytorch-labs/gpt-fast",
              "mlc-ai/llm-perf-bench", "karpathy/llm.c", "KellerJordan/modded-nanogpt", "mosaicml/llm-foundry")


# How the band file's residuals were predicted (data/uncertainty.yaml: residuals).
RESIDUALS_RULE = ("leave one source out: each row predicted with the runtime efficiencies tuned on every other "
                  "source's rows (planner.validation.loso); rows whose runtime no other source measures on that memory "
                  "class, from a source the profile was drawn from, are left out; with them, every row predicted "
                  "before it was measured, by its committed prediction (validation/predictions/): the error on sources "
                  "the planner had never seen widens the bands where it is larger")

# The sets loso_summary scores rows in: the headline (other sources' evidence predicts the row), the rows without that
# evidence, and the rows of sources the priors never drew from, scored with the priors as they are.
LOSO_SET = "leave-one-source-out"
NO_OTHER_SOURCE_SET = "no other source"
UNTUNED_SET = "untuned, new sources"


def source_of(row: Measurement) -> str:
    """The publication a row comes from: its repository (owner/name) or web host, without file, anchor or commit."""
    return _publication(row.source)


# ~60 distinct source texts, asked millions of times by the folds and the band coverage (one entry per text)
@lru_cache(maxsize=4096)
def _publication(source: str) -> str:
    """source_of for a row's source text (memoized: the answer depends on the text alone)."""
    head = source.split(";")[0].split(",")[0].strip()
    if "://" in head:  # a URL: a GitHub thread belongs to its repository, any other page to its host
        host, _, path = head.split("://", 1)[1].partition("/")
        parts = [p for p in path.split("/") if p]
        return "/".join(parts[:2]) if host.lower() == "github.com" and len(parts) >= 2 else host.lower()
    return head.split(":")[0].split(" @")[0].strip()


@dataclass(frozen=True)
class LosoRow:
    row: Measurement
    result: RowResult  # scored with efficiencies tuned on the other sources (the priors where none could)
    source: str
    # nothing of the row's own source went into its prediction: its runtime was tuned on other sources' rows of the
    # row's memory class (the bandwidth fraction is per class), or it was not and the profile's priors never drew
    # from this source
    independent: bool
    untuned: RowResult  # scored with the runtime's priors (data/runtimes.yaml), untuned

    @property
    def scored_set(self) -> str:
        """The summary set this row's leave-one-source-out score counts in: the headline's (LOSO_SET) when other
        sources' evidence made its prediction, else NO_OTHER_SOURCE_SET."""
        return LOSO_SET if self.independent else NO_OTHER_SOURCE_SET

    @property
    def new_source(self) -> bool:
        """The runtime priors (data/runtimes.yaml) never drew from this row's source."""
        return self.source not in DRAWN_FROM


def _scorable(rows: list[Measurement], catalog, models) -> list[tuple[Measurement, RowResult]]:
    """(row, its score with the runtime's priors) for every row the engine can score, but those predicted before they
    were measured (measured.prediction_first_ids: scored by their committed predictions, never tuned on)."""
    held = measured.prediction_first_ids()
    out = []
    for row in rows:
        if row.id in held:
            continue
        res = measured.priors_result(row, catalog, models)
        if res.split != "excluded" and res.predicted:
            out.append((row, res))
    return out


def leave_one_source_out(measurements: str | Path = MEASUREMENTS_FILE) -> list[LosoRow]:
    """Score every source's rows with efficiencies tuned on all the other sources (computed once per process for a
    file as it is on disk: `planner validate` asks for it for the headline, the ratios and the bands)."""
    path = Path(measurements).resolve()
    stat = path.stat()
    return list(_leave_one_source_out(str(path), stat.st_mtime_ns, stat.st_size, measured.TUNABLE))


@lru_cache(maxsize=4)
def _leave_one_source_out(measurements: str, _mtime_ns: int, _size: int, _tunable: tuple) -> tuple[LosoRow, ...]:
    catalog, models, runtimes = load_catalog(), validation_models(), load_runtimes()
    scored = _scorable(list(load_measurements(measurements)), catalog, models)
    of = [source_of(row) for row, _ in scored]  # each row's source, asked once per fold below
    sources = sorted(set(of))
    # a runtime the held source lacks tunes on all its rows: (its parameters, the names the search could move)
    cache: dict[tuple[str, frozenset], tuple[dict[str, float], frozenset]] = {}

    def tuned_on(runtime: str, rows: list[Measurement]) -> tuple[dict[str, float], frozenset]:
        key = (runtime, frozenset(r.id for r in rows))
        if key not in cache:
            params, info = tune_runtime(runtime, rows)
            cache[key] = params, frozenset(info["tuned"])
        return cache[key]

    out = []
    for held in sources:
        train: dict[str, list[Measurement]] = {}
        for (row, _), source in zip(scored, of):
            if source != held:
                train.setdefault(FRAMEWORK_RUNTIME[row.framework], []).append(row)
        for (row, untuned), source in zip(scored, of):
            if source != held:
                continue
            rt = FRAMEWORK_RUNTIME[row.framework]
            params, moved = tuned_on(rt, train[rt]) if rt in train else (None, frozenset())
            family = runtimes.get(rt).launch_family
            if family in train:  # its launch path's costs as the family's other-source rows tune them
                fam = tuned_on(family, train[family])[0]
                params = (params or measured.prior_params(rt)) | {n: fam[n] for n in LAUNCH_PARAMS}
            res, _ = evaluate_row(row, catalog, models, adjust_for(rt, params) if params else None)
            # the bandwidth fraction is per memory class, and the search moves it only with enough other-source rows
            # of that class (measured.MIN_TUNE_ROWS): else it is the committed value
            tuned_elsewhere = f"mem_bw_efficiency.{untuned.gpu_class}" in moved
            out.append(LosoRow(row, res, held, tuned_elsewhere or held not in DRAWN_FROM, untuned))
    return tuple(out)


def error_stats(results: list[RowResult]) -> dict:
    """n, median and p90 |error| and the median bias (+ = the planner faster) of the rows that have a prediction."""
    scored = [r for r in results if r.error_pct is not None and r.seconds_ratio]
    if not scored:
        return {"n": 0, "median_ape": None, "p90_ape": None, "median_bias_pct": None}
    apes = [abs(r.error_pct) for r in scored]
    # bias on speed, whatever the row's metric: + = the planner is faster than the measurement (optimistic)
    speed = [r.speed_bias_pct for r in scored]
    return {"n": len(scored), "median_ape": round(statistics.median(apes), 1),
            "p90_ape": round(quantile(apes, 0.9), 1), "median_bias_pct": round(statistics.median(speed), 1)}


def weighted_median(pairs: list[tuple[float, float]]) -> float:
    """The median of values with weights (value, weight > 0): the value at which half the total weight lies on either
    side, the mean of the two neighbours where a value's cumulative weight ends exactly at the half (as the plain median
    of an even count does)."""
    ordered = sorted(pairs)
    half, acc = sum(w for _, w in ordered) / 2.0, 0.0
    for i, (value, weight) in enumerate(ordered):
        acc += weight
        if abs(acc - half) <= 1e-9 * half and i + 1 < len(ordered):
            return (value + ordered[i + 1][0]) / 2.0
        if acc > half:
            return value
    return ordered[-1][0]


def per_publication_stats(results: list[RowResult]) -> dict:
    """Median |error| and bias with each publication (source_of) weighing the same, whatever its row count: a source
    of 1,000 rows counts once, as one of 5 rows does. n publications, and the medians over their rows' weights."""
    scored = [r for r in results if r.error_pct is not None and r.seconds_ratio]
    counts: dict[str, int] = {}
    for r in scored:
        counts[source_of(r)] = counts.get(source_of(r), 0) + 1
    if not scored:
        return {"publications": 0, "pub_median_ape": None, "pub_median_bias_pct": None}
    weights = [1.0 / counts[source_of(r)] for r in scored]
    return {"publications": len(counts),
            "pub_median_ape": round(weighted_median([(abs(r.error_pct), w) for r, w in zip(scored, weights)]), 1),
            "pub_median_bias_pct": round(weighted_median([(r.speed_bias_pct, w) for r, w in zip(scored, weights)]), 1)}


def result_groups(results: list[tuple[RowResult, str]], by_gpu_class: bool) -> list[tuple[str, str, list[RowResult]]]:
    """all, per regime (uncertainty.REGIMES), per GPU class and regime x GPU class, per source."""
    rs = [r for r, _ in results]
    groups = [("all", "all", rs)]
    groups += [("regime", g, [r for r in rs if r.regime == g]) for g in REGIMES]
    if by_gpu_class:
        groups += [("gpu_class", c, [r for r in rs if r.gpu_class == c]) for c in MEMORY_CLASSES]
        groups += [("regime x gpu_class", f"{g} / {c}", [r for r in rs if r.regime == g and r.gpu_class == c])
                   for g in REGIMES for c in MEMORY_CLASSES]
    groups += [("source", s, [r for r, src in results if src == s]) for s in sorted({src for _, src in results})]
    return groups


def _verdict(kind: str, key: str, stats: dict, targeted: bool) -> dict:
    """The accuracy target for a regime's row and whether it is met (uncertainty.meets_target)."""
    target, meets = (meets_target(key, stats["median_ape"], stats["median_bias_pct"]) if targeted and kind == "regime"
                     else (None, None))
    return {"target_ape": target, "meets": meets}


def loso_summary(rows: list[LosoRow]) -> list[dict]:
    """Median and p90 absolute % error and median bias on speed (+ = the planner faster than measured, whatever the
    row's metric: a step_seconds row that is predicted too short counts as +).

    set 'leave-one-source-out': rows whose runtime other sources measure, tuned on those (all, per regime, GPU class
    and left-out source); set 'no other source': the rows without that evidence, apart; set 'untuned, new sources':
    rows from sources the priors never drew from (DRAWN_FROM), scored with the priors as they are.
    """
    sets = [(LOSO_SET, [(r.result, r.source) for r in rows if r.independent], True),
            (NO_OTHER_SOURCE_SET, [(r.result, r.source) for r in rows if not r.independent], False),
            (UNTUNED_SET, [(r.untuned, r.source) for r in rows if r.new_source], False)]
    out = []
    for name, results, by_class in sets:
        for kind, key, members in result_groups(results, by_class) if results else ():
            if members:
                stats = error_stats(members)
                out.append({"set": name, "group": kind, "key": key, **stats,
                            **_verdict(kind, key, stats, name == LOSO_SET)})
    return out


# ---------------------------------------------------------------- speed-up ratios

RATIO_TARGET_PCT = 15.0  # the accuracy target for speed-up ratios: within 15 % of the measured one
# What a ratio varies, and the row fields that must match for two rows to form one (everything else the estimate
# depends on). Each group is ordered by the varied quantity; its first row is the base every other row is compared to.
_SAME = ("gpu", "gpus", "model", "framework", "regime", "metric", "attention", "kv_dtype", "checkpointing",
         "custom_allreduce", "opt_in_allreduce")
RATIO_KINDS = {
    "precision": (_SAME + ("batch", "prompt_tokens", "gen_tokens", "seq_len", "micro_batch", "grad_accum"),
                  lambda r: -r.weight_bits, lambda r: f"{r.precision} {r.weight_bits:g} b/w"),
    "batch": (_SAME + ("precision", "weight_bits", "prompt_tokens", "gen_tokens", "seq_len", "grad_accum"),
              lambda r: r.batch, lambda r: f"batch {r.batch:,}"),
    "context": (_SAME + ("precision", "weight_bits", "batch", "micro_batch", "grad_accum"),
                lambda r: r.seq_len or r.prompt_tokens + r.gen_tokens,
                lambda r: (f"seq {r.seq_len:,}" if r.seq_len else f"{r.prompt_tokens:,} + {r.gen_tokens:,} tokens")),
}


@dataclass(frozen=True)
class SpeedupRatio:
    """How much faster one row runs than another of the same source that differs in one thing only."""

    kind: str  # a key of RATIO_KINDS
    source: str
    base_id: str
    other_id: str
    label: str  # 'fp16 16 b/w -> q4_0 4.5 b/w'
    measured: float  # speed of the other row / speed of the base row
    predicted: float  # the same with each row's leave-one-source-out prediction
    untuned: float  # the same with the priors (untuned)

    @property
    def error_pct(self) -> float:
        """Signed: (predicted ratio / measured ratio - 1) x 100."""
        return (self.predicted / self.measured - 1.0) * 100.0

    @property
    def untuned_error_pct(self) -> float:
        return (self.untuned / self.measured - 1.0) * 100.0


def _speed(value: float, metric: str) -> float:
    """Work per second whatever the metric: throughputs as they are, a step time inverted."""
    return 1.0 / value if metric == "step_seconds" else value


def _ratio(base: float, other: float, metric: str) -> float:
    """How much faster the other value runs than the base one, both in the row's metric."""
    return _speed(other, metric) / _speed(base, metric)


def speedup_ratios(rows: list[LosoRow]) -> list[SpeedupRatio]:
    """Every pair (base, other) of scored rows from one source that differ only in precision, batch or context."""
    scored = [r for r in rows if r.result.predicted and r.untuned.predicted]
    out = []
    for kind, (same, order, label) in RATIO_KINDS.items():
        groups: dict[tuple, list[LosoRow]] = {}
        for r in scored:
            groups.setdefault((r.source, *(getattr(r.row, f) for f in same)), []).append(r)
        for members in groups.values():
            base, *rest = sorted(members, key=lambda r: order(r.row))
            m = base.row.metric  # one of the fields every member shares (_SAME)
            out += [SpeedupRatio(kind, base.source, base.row.id, other.row.id,
                                 f"{label(base.row)} -> {label(other.row)}",
                                 _ratio(base.row.value, other.row.value, m),
                                 _ratio(base.result.predicted, other.result.predicted, m),
                                 _ratio(base.untuned.predicted, other.untuned.predicted, m))
                    for other in rest if order(other.row) != order(base.row)]
    return out


def ratio_summary(ratios: list[SpeedupRatio]) -> list[dict]:
    """Per kind of ratio: pairs, median and p90 |error| of the predicted ratio (leave-one-source-out and untuned),
    and how many pairs are within RATIO_TARGET_PCT."""
    out = []
    for kind in RATIO_KINDS:
        rs = [r for r in ratios if r.kind == kind]
        if not rs:
            continue
        errs, raw = [abs(r.error_pct) for r in rs], [abs(r.untuned_error_pct) for r in rs]
        out.append({"kind": kind, "pairs": len(rs), "median_ape": round(statistics.median(errs), 1),
                    "p90_ape": round(quantile(errs, 0.9), 1),
                    "median_signed_pct": round(statistics.median(r.error_pct for r in rs), 1),
                    "within_target": f"{sum(e <= RATIO_TARGET_PCT for e in errs)}/{len(rs)}",
                    "untuned_median_ape": round(statistics.median(raw), 1)})
    return out


# ---------------------------------------------------------------- the tuned values estimates use

# A parameter is tuned for estimates only when leave one source out has scored that tuning on every source it uses:
# with any one source left out, the other sources' rows still move it (measured.MIN_TUNE_ROWS of them). So at least
# two sources inform it, and no value rests on one source alone, which cannot show that it carries to another (as
# TensorRT-LLM's old static-batch fit did not carry to its newer releases: validation/REPORT.md).
TUNED_RULE = ("each runtime tuned on all its scored rows (measured.tune_runtime, the search every "
              "leave-one-source-out fold runs), only the parameters that the other sources' rows still move with "
              "any one source left out; the others keep their priors (data/runtimes.yaml)")


def deployable(moving: dict[str, list[Measurement]]) -> tuple[str, ...]:
    """The parameters of `moving` (name -> rows that move it) that every leave-one-source-out fold tunes too."""
    def every_fold_tunes(rows: list[Measurement]) -> bool:
        sources = {source_of(r) for r in rows}
        return len(sources) >= 2 and all(sum(source_of(r) != s for r in rows) >= measured.MIN_TUNE_ROWS
                                         for s in sources)
    return tuple(name for name, rows in moving.items() if every_fold_tunes(rows))


@dataclass(frozen=True)
class DeployedTuning:
    runtime: str
    values: dict[str, float]
    rows: tuple[str, ...]  # the ids of the rows it was tuned on
    sources: tuple[str, ...]


def tune_deployed(measurements: str | Path = MEASUREMENTS_FILE) -> list[DeployedTuning]:
    """The values estimates use: per runtime, the deployable parameters, tuned on all of its scored rows (TUNED_RULE).
    A runtime's held parameters and those its launch family sets (RuntimeProfile.fixed) are not tuned on its rows."""
    catalog, models = load_catalog(), validation_models()
    by_runtime: dict[str, list[Measurement]] = {}
    for row, _ in _scorable(list(load_measurements(measurements)), catalog, models):
        by_runtime.setdefault(FRAMEWORK_RUNTIME[row.framework], []).append(row)
    out = []
    for runtime, rows in sorted(by_runtime.items()):
        fixed = load_runtimes().get(runtime).fixed()
        names = deployable(movers(runtime, rows, tuple(n for n in measured.TUNABLE if n not in fixed)))
        if names:
            params, _ = tune_runtime(runtime, rows, names=names)
            out.append(DeployedTuning(runtime, {n: params[n] for n in names}, tuple(r.id for r in rows),
                                      tuple(sorted({source_of(r) for r in rows}))))
    return out


def write_tuned(tunings: list[DeployedTuning], path: str | Path, today: date) -> Path:
    """Write data/runtimes_tuned.yaml from `tunings`, then check it loads against data/runtimes.yaml."""
    doc = {"schema_version": 1, "read_on": today.isoformat(),
           "source": "python -m planner validate --write-tuned: published measurements of validation/measurements.yaml "
                     "(each row with its source; validation/README.md)",
           "rule": TUNED_RULE,
           "tuned": [{"id": t.runtime, "day": today.isoformat(), "rows": len(t.rows), "sources": list(t.sources),
                      "values": t.values} for t in tunings]}
    path = Path(path)
    header = ("# Runtime parameters tuned on published measurements (planner/inputs/runtimes.py reads them over the\n"
              "# priors of data/runtimes.yaml). WRITTEN by `python -m planner validate --write-tuned`; do not edit by "
              "hand.\n")
    write_atomic(path, header + yaml.safe_dump(doc, sort_keys=False, width=120))
    load_tuned(path, [r.id for r in load_runtimes(RUNTIMES_FILE, tuned_path=path).runtimes])
    return path
