"""Uncertainty bands on estimates, from the leave-one-source-out residuals stored in data/uncertainty.yaml.

A residual is measured seconds / predicted seconds for one published measurement, predicted with runtime
efficiencies tuned on every OTHER source (planner.validation.loso): the error a user meets on a workload no source
behind the profiles measured. For each regime (REGIMES: what the job is, as a user states it) and GPU memory class
('hbm', 'gddr') the file holds the 10th and 90th percentiles of those ratios: an 80 % band is (seconds x low,
seconds x high), widened if needed so that it always contains the point estimate. A cell with fewer than
MIN_CELL_ROWS rows takes the 5th-95th percentiles of its own regime's rows (never another regime's), widened to cover
its own rows; a regime with fewer rows than that has no band.

Where no measurement backs a range there is none, and the reason says so, rather than another regime's width: a
regime with too few rows, a model kind no row is of (generic or traced profiles), a CPU device (no published CPU
measurement in validation/). Where the evidence is thin, the range is wider and says why: a runtime no source
measured in that regime (other than the one its profile was drawn from) takes its regime's WIDE band, the
THIN_QUANTILES of every row of the regime (all runtimes, both memory classes), never narrower than the regime's own
cells: the spread of the planner's errors on runtimes it had seen, standing in for one whose error nobody measured.

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
from collections.abc import Iterable, Mapping

import yaml

from planner import DATA_DIR
from planner.base.files import write_atomic
from planner.inputs.runtimes import MEMORY_CLASSES
from planner.base.schema import parse_yaml, DataFileError, Record
from planner.inputs.jobs import Generate, Train

UNCERTAINTY_FILE = DATA_DIR / "uncertainty.yaml"
# The regimes the accuracy targets are set for, named from what the job is (a user and a publication both know
# whether one sequence or a batch is decoded), not from what bounds it.
REGIMES = ("decode, batch 1", "decode, batched", "decode, tensor parallel", "prefill", "train")
# The accuracy targets on left-out sources: median |error| % per regime, and no regime's median bias beyond +-10 %.
TARGET_APE_PCT = {"decode, batch 1": 10.0, "decode, batched": 15.0, "decode, tensor parallel": 20.0,
                  "prefill": 15.0, "train": 15.0}
MAX_BIAS_PCT = 10.0
QUANTILES = (0.1, 0.9)  # an 80 % band, as the residuals at hand draw it
FALLBACK_QUANTILES = (0.05, 0.95)  # a cell too small for its own quantiles takes its regime's, wider
# A band must hold ~80 % of a source it was not drawn from, and a source's rows share its bias, so the in-sample 10th-
# 90th percentiles hold fewer of them: per regime, the first of these quantile pairs whose band, rebuilt without each
# source in turn, holds TARGET_COVERAGE of that source's rows (over all sources) is the one written.
TARGET_COVERAGE = 0.8
QUANTILE_LADDER = ((0.10, 0.90), (0.075, 0.925), (0.05, 0.95), (0.025, 0.975), (0.0, 1.0))
MIN_CELL_ROWS = 5  # fewer rows than this: the cell takes its regime's range; a regime with fewer has no band
# A runtime without rows of its own in a regime: a 95 % range of every runtime's residuals stands in for its 80 % one,
# since its own error is unknown and the prediction-first rows show unseen sources' errors wider than seen ones'.
THIN_QUANTILES = (0.025, 0.975)
NO_MEASUREMENT = "no measurement behind this range"
CELL_FIELDS = ("regime", "gpu_class", "n", "quantiles", "low", "high", "calibrated_low", "calibrated_high", "fallback")
HEADER_FIELDS = ("schema_version", "generated", "source", "residuals", "quantiles", "method", "accuracy", "evidence",
                 "cells")
ACCURACY_FIELDS = ("regime", "rows", "median_ape", "p90_ape", "median_bias_pct", "target_ape", "meets")
EVIDENCE_FIELDS = ("rows", "runtimes", "model_kinds", "wide_low", "wide_high")


def regime_for(train: bool, decodes: bool, tensor_parallel: bool, batch: int) -> str:
    """The regime (REGIMES) of a job: training; decode over tensor-parallel GPUs, of one sequence per GPU or a batch,
    for a job that decodes tokens after the prompt; prefill for a forward pass."""
    if train:
        return "train"
    if decodes:
        if tensor_parallel:
            return "decode, tensor parallel"
        return "decode, batch 1" if batch <= 1 else "decode, batched"
    return "prefill"


def regime_of(e) -> str:
    """The estimate's regime (regime_for): a generate job decodes when it has more than its first token (the only
    token of a one-token job comes out of the prefill); the parallelism and batch are the ones the estimate runs."""
    w = e.plan.workload
    return regime_for(isinstance(w, Train), isinstance(w, Generate) and w.gen_tokens > 1, e.parallelism == "tensor",
                      e.batch)


@dataclass(frozen=True)
class Cell:
    """Residual quantiles (measured / predicted seconds) for one regime and GPU class; low = high = None: no band."""

    regime: str
    gpu_class: str
    n: int
    low: float | None
    high: float | None
    calibrated_low: float | None
    calibrated_high: float | None
    fallback: str | None  # why the regime's pooled values stand in, or why there is no band; None: its own rows
    quantiles: tuple[float, float] = QUANTILES  # the residual quantiles low and high are (QUANTILE_LADDER)


@dataclass(frozen=True)
class Evidence:
    """The residual rows behind one regime: how many, of which runtimes and model kinds."""

    regime: str
    rows: int
    runtimes: tuple[tuple[str, int], ...]
    model_kinds: tuple[tuple[str, int], ...]
    wide_low: float | None = None  # the regime's wide band (THIN_QUANTILES) for runtimes without rows; None: none
    wide_high: float | None = None


@dataclass(frozen=True)
class Accuracy:
    """The leave-one-source-out accuracy of one regime (the headline of `planner validate`), as last written."""

    regime: str  # one of REGIMES, or 'all'
    rows: int
    median_ape: float | None
    p90_ape: float | None
    median_bias_pct: float | None
    target_ape: float | None
    meets: bool | None


@dataclass(frozen=True)
class UncertaintyTable:
    cells: tuple[Cell, ...]
    evidence: tuple[Evidence, ...]
    accuracy: tuple[Accuracy, ...]
    generated: date
    source: str
    residuals: str
    path: str

    def cell(self, regime: str, gpu_class: str) -> Cell:
        for c in self.cells:
            if c.regime == regime and c.gpu_class == gpu_class:
                return c
        raise KeyError((regime, gpu_class))

    def evidence_for(self, regime: str) -> Evidence:
        return next(ev for ev in self.evidence if ev.regime == regime)


def _quantile_field(rec: Record, name: str, lo: float, hi: float) -> float | None:
    return rec.number(name, required=False, lo=lo, hi=hi)


def _parse_cell(rec: Record) -> Cell:
    rec.check_keys(CELL_FIELDS)
    c = Cell(rec.text("regime", choices=REGIMES), rec.text("gpu_class", choices=MEMORY_CLASSES),
             rec.number("n", lo=0, hi=10**6, integer=True), _quantile_field(rec, "low", 0.01, 1.0),
             _quantile_field(rec, "high", 1.0, 100.0), _quantile_field(rec, "calibrated_low", 0.01, 1.0),
             _quantile_field(rec, "calibrated_high", 1.0, 100.0), rec.text("fallback", required=False),
             _levels(rec))
    given = [v is not None for v in (c.low, c.high, c.calibrated_low, c.calibrated_high)]
    if any(given) and not all(given):
        raise rec.fail("low", "give all four of low, high, calibrated_low, calibrated_high, or none (no band)")
    if not all(given) and not c.fallback:
        raise rec.fail("fallback", "a cell without a band must say why")
    if all(given) and c.calibrated_high / c.calibrated_low > c.high / c.low * 1.001:  # the file rounds to 3 decimals
        raise rec.fail("calibrated_high", f"a calibrated band is never wider than the uncalibrated one "
                                          f"({c.low:g}-{c.high:g})")
    if all(given) and c.n < MIN_CELL_ROWS and not c.fallback:
        raise rec.fail("fallback", f"a cell with n < {MIN_CELL_ROWS} must say which pooled value stands in")
    return c


def _levels(rec: Record) -> tuple[float, float]:
    """A cell's quantile pair: one of QUANTILE_LADDER."""
    raw = rec.raw("quantiles")
    if not (isinstance(raw, list) and len(raw) == 2 and tuple(raw) in QUANTILE_LADDER):
        raise rec.fail("quantiles", f"expected one of {', '.join(f'[{a:g}, {b:g}]' for a, b in QUANTILE_LADDER)}")
    return float(raw[0]), float(raw[1])


def _counts(rec: Record, name: str) -> tuple[tuple[str, int], ...]:
    sub = rec.child(name)
    return tuple((str(k), sub.number(str(k), lo=1, hi=10**6, integer=True)) for k in sub.data)


def _parse_evidence(rec: Record) -> Evidence:
    rec.check_keys(("regime", *EVIDENCE_FIELDS))
    ev = Evidence(rec.text("regime", choices=REGIMES), rec.number("rows", lo=0, hi=10**6, integer=True),
                  _counts(rec, "runtimes"), _counts(rec, "model_kinds"), _quantile_field(rec, "wide_low", 0.01, 1.0),
                  _quantile_field(rec, "wide_high", 1.0, 100.0))
    if sum(n for _, n in ev.runtimes) != ev.rows:
        raise rec.fail("runtimes", f"the runtimes' rows must add up to rows ({ev.rows})")
    if (ev.wide_low is None) != (ev.wide_high is None):
        raise rec.fail("wide_low", "give both wide_low and wide_high, or neither (no wide band)")
    return ev


def _parse_accuracy(rec: Record) -> Accuracy:
    rec.check_keys(ACCURACY_FIELDS)
    pct = lambda f, lo=0.0: rec.number(f, required=False, lo=lo, hi=1e6)  # noqa: E731
    meets = rec.raw("meets", required=False)
    if meets is not None and not isinstance(meets, bool):
        raise rec.fail("meets", "expected true, false or null")
    return Accuracy(rec.text("regime", choices=("all", *REGIMES)), rec.number("rows", lo=0, hi=10**6, integer=True),
                    pct("median_ape"), pct("p90_ape"), pct("median_bias_pct", -1e6), pct("target_ape"), meets)


def _records(path: str | Path, doc: dict, section: str, key) -> list[Record]:
    raw = doc.get(section)
    if not isinstance(raw, list):
        raise DataFileError(path, "-", section, "expected a list")
    return [Record(str(path), f"{section} #{i} ({key(r)})", r) if isinstance(r, dict) else Record.of(path, i, r)
            for i, r in enumerate(raw)]


@lru_cache(maxsize=4)
def load_uncertainty(path: str | Path = UNCERTAINTY_FILE) -> UncertaintyTable:
    """Load and check the bands; every regime x GPU class must be present once, every regime's evidence once."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(path, "-", "-", f"cannot read the file ({exc.strerror})") from exc
    doc = parse_yaml(text, path)  # the size, depth and alias caps of every data file
    if not isinstance(doc, dict):
        raise DataFileError(path, "-", "-", "expected a mapping at the top level")
    head = Record(str(path), "header", doc)
    head.check_keys(HEADER_FIELDS)
    head.number("schema_version", lo=2, hi=2, integer=True)  # 2: leave-one-source-out residuals, evidence
    cells = tuple(_parse_cell(r) for r in _records(path, doc, "cells",
                                                   lambda r: f"{r.get('regime')}/{r.get('gpu_class')}"))
    evidence = tuple(_parse_evidence(r) for r in _records(path, doc, "evidence", lambda r: r.get("regime")))
    accuracy = tuple(_parse_accuracy(r) for r in _records(path, doc, "accuracy", lambda r: r.get("regime")))
    seen = [(c.regime, c.gpu_class) for c in cells]
    for key in ((g, k) for g in REGIMES for k in MEMORY_CLASSES):
        if seen.count(key) != 1:
            raise DataFileError(path, "-", "cells", f"expected exactly one cell for {key[0]}/{key[1]}, "
                                                   f"found {seen.count(key)}")
    for g in REGIMES:
        if [ev.regime for ev in evidence].count(g) != 1:
            raise DataFileError(path, "-", "evidence", f"expected exactly one evidence record for '{g}'")
    return UncertaintyTable(cells, evidence, accuracy, head.day("generated"), head.text("source"),
                            head.text("residuals"), str(path))


def meets_target(regime: str, median_ape: float | None, median_bias_pct: float | None
                 ) -> tuple[float | None, bool | None]:
    """The accuracy targets' verdict on one regime's rows: (its TARGET_APE_PCT, whether the median |error| is
    within it and the median bias within +-MAX_BIAS_PCT); (None, None) for a group without a target or without
    scored rows."""
    target = TARGET_APE_PCT.get(regime)
    if target is None or median_ape is None:
        return None, None
    return target, median_ape <= target and abs(median_bias_pct) <= MAX_BIAS_PCT


def _runtime_gap(e, ev: Evidence, regime: str) -> str:
    """Why the regime's rows hold none of the estimate's runtime ('' when they do)."""
    if e.plan.runtime in dict(ev.runtimes):
        return ""
    # the evidence is the leave-one-source-out rows: a runtime measured only by the publication its profile was
    # drawn from (TensorRT-LLM: NVIDIA's tables) has none, as one never measured
    return f"no source other than its profile's own measured {e.plan.runtime} in {regime}"


def band_note(e, path: str | Path = UNCERTAINTY_FILE) -> str:
    """Why a feasible estimate has no band ('' when it has one, or when it can't run and needs none)."""
    if not e.feasible or not e.seconds:
        return ""
    if e.gpu.memory_class not in MEMORY_CLASSES:
        return f"{NO_MEASUREMENT}: validation/ holds no published measurement on a CPU"
    table = load_uncertainty(path)
    regime = regime_of(e)
    ev, cell = table.evidence_for(regime), table.cell(regime, e.gpu.memory_class)
    if cell.low is None:
        return f"{NO_MEASUREMENT}: {cell.fallback}"
    kind = e.plan.model.kind
    if kind not in dict(ev.model_kinds):
        return f"{NO_MEASUREMENT}: no published {regime} measurement of a {kind} model (only of " \
               f"{', '.join(k for k, _ in ev.model_kinds)} models)"
    gap = _runtime_gap(e, ev, regime)
    if gap and ev.wide_low is None:
        return f"{NO_MEASUREMENT}: {gap}"
    return ""


def band_basis(e, path: str | Path = UNCERTAINTY_FILE) -> str:
    """Why a band is the regime's wide one (thin evidence: its runtime has no rows of its own in the regime); '' for
    a band drawn from rows of its own runtime, or for no band at all (band_note says why)."""
    if not e.feasible or not e.seconds or band_note(e, path):
        return ""
    regime = regime_of(e)
    gap = _runtime_gap(e, load_uncertainty(path).evidence_for(regime), regime)
    if not gap:
        return ""
    lo, hi = THIN_QUANTILES
    return (f"widened: {gap}, so the range is the {100 * lo:g}th-{100 * hi:g}th percentiles of the planner's errors "
            f"on every published {regime} measurement of other runtimes")


def band(e, calibrated: bool = False, path: str | Path = UNCERTAINTY_FILE) -> tuple[float, float] | None:
    """(low_s, high_s) around e.seconds: the 80 % range of measured / predicted seconds for the estimate's regime and
    GPU class; None for an infeasible estimate and wherever no measurement backs a range (band_note says why).
    calibrated (or efficiencies whose source starts with 'calibrated') uses the narrower band left once a GPU's own
    bias is calibrated away."""
    b = band_or_note(e, calibrated, path)
    return b if isinstance(b, tuple) else None


def band_or_note(e, calibrated: bool = False,
                 path: str | Path = UNCERTAINTY_FILE) -> tuple[float, float] | str | None:
    """The estimate's band (as band()), or the reason no measurement backs one (band_note), or None when it can't
    run: what a table cell, an export row or the explanation shows, from one lookup."""
    if not e.feasible or not e.seconds:
        return None
    note = band_note(e, path)
    if note:
        return note
    table, regime = load_uncertainty(path), regime_of(e)
    ev = table.evidence_for(regime)
    if _runtime_gap(e, ev, regime):
        return e.seconds * ev.wide_low, e.seconds * ev.wide_high
    cell = table.cell(regime, e.gpu.memory_class)
    if calibrated or str(e.efficiency.source).startswith("calibrated"):
        lo, hi = cell.calibrated_low, cell.calibrated_high
    else:
        lo, hi = cell.low, cell.high
    return e.seconds * min(lo, 1.0), e.seconds * max(hi, 1.0)


def rate_band(e, calibrated: bool = False, path: str | Path = UNCERTAINTY_FILE) -> tuple[float, float] | None:
    """The band as tokens/s (or items/s when there are no tokens): (low, high) speeds."""
    b = band(e, calibrated, path)
    rate = e.tokens_per_s or e.items_per_s
    if b is None or not rate:
        return None
    return rate * e.seconds / b[1], rate * e.seconds / b[0]


# ---------------------------------------------------------------- writing (from scored residual rows)

def quantile(values: Iterable[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default), q in [0, 1]."""
    return _quantile_sorted(sorted(values), q)


def _quantile_sorted(xs: list[float], q: float) -> float:
    """quantile() of values already sorted ascending (the bands ask the same row set at several levels)."""
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


def _range_sorted(xs: list[float], qs: tuple[float, float]) -> tuple[float, float]:
    """(low, high) quantiles of ratios already sorted ascending, clamped so that the band contains 1 (the point
    estimate)."""
    return min(_quantile_sorted(xs, qs[0]), 1.0), max(_quantile_sorted(xs, qs[1]), 1.0)


def _no_wider(cal: tuple[float, float], band_: tuple[float, float]) -> tuple[float, float]:
    """Shrink a calibrated band toward 1 (in log space) until it is no wider than the uncalibrated one."""
    lo, hi = cal
    width, limit = math.log(hi / lo), math.log(band_[1] / band_[0])
    if width <= limit or width == 0:
        return lo, hi
    f = limit / width
    return lo ** f, hi ** f


def _no_band(regime: str, n: int) -> str:
    return (f"no published {regime} measurement" if n == 0 else
            f"only {n} published {regime} measurement{'s' if n > 1 else ''}, fewer than {MIN_CELL_ROWS}")


@dataclass(frozen=True)
class _Pool:
    """One set of residual rows as the cells read it, sorted once whatever the quantile levels (band_levels builds
    the same set's cells at up to five levels): per regime, its ratios and calibrated ratios; per (regime, GPU class),
    those of the class's rows. Ratios are measured / predicted seconds; lists ascending."""

    regime: dict[str, tuple[list[float], list[float]]]
    cell: dict[tuple[str, str], tuple[list[float], list[float]]]


def _pool(rows) -> _Pool:
    """The _Pool of scored residual rows (those without a ratio dropped)."""
    rows = [r for r in rows if r.seconds_ratio]
    cal = _calibrated_ratios(rows)
    regimes, cells = {}, {}
    for g in REGIMES:
        in_regime = [r for r in rows if r.regime == g]
        regimes[g] = (sorted(r.seconds_ratio for r in in_regime), sorted(cal[r.row_id] for r in in_regime
                                                                          if r.row_id in cal))
        for k in MEMORY_CLASSES:
            own = [r for r in in_regime if r.gpu_class == k]
            cells[(g, k)] = (sorted(r.seconds_ratio for r in own), sorted(cal[r.row_id] for r in own
                                                                           if r.row_id in cal))
    return _Pool(regimes, cells)


def cells_from_rows(rows, levels: Mapping[str, tuple[float, float]] | None = None) -> list[Cell]:
    """Band cells from scored residual rows (RowResult: regime, gpu_class, gpu_id, runtime, seconds_ratio), at each
    regime's quantile pair (`levels`; QUANTILES where not given).

    A cell with MIN_CELL_ROWS rows or more: those quantiles of its ratios. Fewer: its regime's rows at quantiles at
    least as wide as FALLBACK_QUANTILES, widened further to cover the cell's own rows. A regime with fewer than
    MIN_CELL_ROWS rows has no band (low = high = None, and the reason).
    """
    return _cells(_pool(rows), levels)


def _cells(pool: _Pool, levels: Mapping[str, tuple[float, float]] | None) -> list[Cell]:
    """cells_from_rows() of a pool of rows already split and sorted."""
    cells = []
    for g in REGIMES:
        qs = (levels or {}).get(g, QUANTILES)
        wide = (min(qs[0], FALLBACK_QUANTILES[0]), max(qs[1], FALLBACK_QUANTILES[1]))
        in_regime, regime_cal = pool.regime[g]
        for k in MEMORY_CLASSES:
            ratios, own_cal = pool.cell[(g, k)]
            if len(in_regime) < MIN_CELL_ROWS:
                cells.append(Cell(g, k, len(ratios), None, None, None, None, _no_band(g, len(in_regime)), qs))
                continue
            fallback = None
            if len(ratios) >= MIN_CELL_ROWS:
                low, high = _range_sorted(ratios, qs)
            else:
                low, high = _range_sorted(in_regime, wide)
                low, high = min([low] + ratios), max([high] + ratios)
                fallback = (f"{len(ratios)} rows < {MIN_CELL_ROWS}: {100 * wide[0]:g}th-{100 * wide[1]:g}th "
                            f"percentiles of all {g} rows (n={len(in_regime)}), widened to cover this cell's own rows")
            pool_cal = own_cal if len(own_cal) >= MIN_CELL_ROWS else regime_cal or [1.0]
            cal_low, cal_high = _no_wider(_range_sorted(pool_cal, qs), (low, high))
            cells.append(Cell(g, k, len(ratios), round(low, 3), round(high, 3),
                              round(cal_low, 3), round(cal_high, 3), fallback, qs))
    return cells


def evidence_from_rows(rows, cells: Iterable[Cell] = ()) -> list[Evidence]:
    """Per regime, the residual rows behind its band by runtime and model kind (RowResult.model_kind), and its wide
    band for runtimes without rows: the THIN_QUANTILES of all its rows, widened to hold each of its `cells`' bands
    and 1 (none for a regime with fewer than MIN_CELL_ROWS rows, which has no band at all)."""
    cells = list(cells)
    out = []
    for g in REGIMES:
        members = [r for r in rows if r.regime == g and r.seconds_ratio]
        wide = (None, None)
        if len(members) >= MIN_CELL_ROWS:
            ratios = [r.seconds_ratio for r in members]
            own = [c for c in cells if c.regime == g and c.low is not None]
            wide = (round(min([quantile(ratios, THIN_QUANTILES[0]), 1.0] + [c.low for c in own]), 3),
                    round(max([quantile(ratios, THIN_QUANTILES[1]), 1.0] + [c.high for c in own]), 3))
        out.append(Evidence(g, len(members), tuple(sorted(Counter(r.runtime for r in members).items())),
                            tuple(sorted(Counter(r.model_kind for r in members).items())), *wide))
    return out


def within(cell: Cell, ratio: float) -> bool:
    """A residual inside the cell's band (the band as band() draws it: clamped to contain 1)."""
    return cell.low is not None and min(cell.low, 1.0) <= ratio <= max(cell.high, 1.0)


def coverages(rows, group_of, levels: Mapping[str, tuple[float, float]] | None = None,
              judged: Iterable = (lambda r: True,)) -> list[dict[str, tuple[int, int, int]]]:
    """coverage() for each of the `judged` row sets, the bands built once: the full band and, per group, the band
    without that group are the same whichever rows are then counted."""
    return _HeldOut(rows, group_of).coverages(levels, judged)


class _HeldOut:
    """Residual rows with each one's group (asked once per row), and the pool of the rows without each group, built
    on first use and kept: band_levels asks the same held-out sets at every rung of QUANTILE_LADDER."""

    def __init__(self, rows, group_of):
        self.rows = [r for r in rows if r.seconds_ratio]
        self.groups = [group_of(r) for r in self.rows]
        self.full = _pool(self.rows)
        self.without: dict[str, _Pool] = {}

    def pool_without(self, g: str) -> _Pool:
        """The pool of every row but group g's."""
        if g not in self.without:
            self.without[g] = _pool([x for x, gx in zip(self.rows, self.groups) if gx != g])
        return self.without[g]

    def coverages(self, levels: Mapping[str, tuple[float, float]] | None,
                  judged: Iterable) -> list[dict[str, tuple[int, int, int]]]:
        """coverages() of these rows at `levels`."""
        full = {(c.regime, c.gpu_class): c for c in _cells(self.full, levels)}
        held: dict[str, dict] = {}
        picks = list(judged)
        outs = [{g: [0, 0, 0] for g in REGIMES} for _ in picks]
        for r, g in zip(self.rows, self.groups):
            chosen = [out for out, pick in zip(outs, picks) if pick(r)]
            own = full[(r.regime, r.gpu_class)]
            if not chosen or own.low is None:
                continue
            if g not in held:
                held[g] = {(c.regime, c.gpu_class): c for c in _cells(self.pool_without(g), levels)}
            other = held[g][(r.regime, r.gpu_class)]
            for out in chosen:
                out[r.regime][2] += 1
                out[r.regime][0] += within(own, r.seconds_ratio)
                out[r.regime][1] += within(other, r.seconds_ratio)
        return [{g: tuple(v) for g, v in out.items()} for out in outs]


def coverage(rows, group_of, levels: Mapping[str, tuple[float, float]] | None = None,
             judged=lambda r: True) -> dict[str, tuple[int, int, int]]:
    """Per regime: (rows inside the band built from all rows, rows inside the band built WITHOUT their own group,
    rows with a band at all), at each regime's quantile pair (`levels`), counting the rows `judged` picks (all by
    default; the bands are built from every row). The second is the honest figure when a group is a publication
    (loso.source_of): each source's rows judged by a band its own rows did not shape. An 80 % band should hold about
    80 % of them."""
    return coverages(rows, group_of, levels, (judged,))[0]


def band_levels(rows, group_of, judged=(lambda r: True,)) -> dict[str, tuple[float, float]]:
    """Per regime, the narrowest quantile pair of QUANTILE_LADDER whose band, rebuilt without each group (source) in
    turn, holds at least TARGET_COVERAGE of that group's rows, counted over the rows of each of the `judged` sets
    (all rows; and, as `planner validate` asks, the rows predicted before they were measured, which a band drawn
    mostly from sources like the tuned ones would hold too rarely); the widest when none does."""
    return _band_levels(_HeldOut(rows, group_of), judged)


def banded_coverages(rows, group_of, judged=(lambda r: True,)
                     ) -> tuple[dict[str, tuple[float, float]], list[dict[str, tuple[int, int, int]]]]:
    """(band_levels(rows, group_of, judged), coverages(rows, group_of, those levels, judged)), the rows without each
    group pooled once for both (`planner validate` asks for the two in turn)."""
    folds = _HeldOut(rows, group_of)
    levels = _band_levels(folds, judged)
    return levels, folds.coverages(levels, judged)


def _band_levels(folds: _HeldOut, judged) -> dict[str, tuple[float, float]]:
    """band_levels() of the rows of `folds`."""
    chosen: dict[str, tuple[float, float]] = {}
    for qs in QUANTILE_LADDER:
        covers = folds.coverages(dict.fromkeys(REGIMES, qs), judged)
        for g in REGIMES:
            if g not in chosen and all(n == 0 or held >= TARGET_COVERAGE * n for _, held, n in (c[g] for c in covers)):
                chosen[g] = qs
        if len(chosen) == len(REGIMES):
            break
    return {g: chosen.get(g, QUANTILE_LADDER[-1]) for g in REGIMES}


def write_uncertainty(rows, residuals: str, path: str | Path = UNCERTAINTY_FILE, today: date | None = None,
                      accuracy: Iterable[dict] = (),
                      levels: Mapping[str, tuple[float, float]] | None = None) -> Path:
    """Write the band file from scored residual rows (RowResult; `residuals` says which rows those are and how they
    were predicted) and the accuracy they give per regime (ACCURACY_FIELDS each, for the page), then check it
    loads. levels: each regime's quantile pair when the caller has band_levels(rows) already."""
    rows = [r for r in rows if r.seconds_ratio]
    if levels is None:
        raise ValueError("write_uncertainty needs each regime's quantile pair (band_levels)")
    cells = cells_from_rows(rows, levels)
    doc = {
        "schema_version": 2,
        "generated": (today or date.today()).isoformat(),
        "source": f"python -m planner validate --write-uncertainty: residuals of {len(rows)} published measurements "
                  "(validation/measurements.yaml, see validation/README.md)",
        "residuals": residuals,
        "quantiles": list(QUANTILES),
        "method": "ratio = measured seconds / predicted seconds per row; low/high = its quantiles in the cell "
                  "(clamped to contain 1): the 10th/90th percentiles, or wider, per regime, the narrowest pair of "
                  f"{[list(q) for q in QUANTILE_LADDER]} whose band rebuilt without each source holds "
                  f"{TARGET_COVERAGE:.0%} of that source's rows, over all rows and over the rows predicted before "
                  f"they were measured; a cell with fewer than {MIN_CELL_ROWS} rows takes at "
                  "least the 5th/95th percentiles of its own regime's rows, widened to cover its rows; a regime with "
                  "fewer rows than "
                  "that has no band; calibrated_* = the same after dividing each ratio by the median of its (GPU, "
                  "runtime, regime) group, shrunk toward 1 if wider than low/high. A model kind without rows in a "
                  "regime gets no band in it; a runtime without rows in a regime (evidence) gets the regime's wide "
                  f"band: the {THIN_QUANTILES[0]:g}/{THIN_QUANTILES[1]:g} quantiles of all its rows, widened to "
                  "hold its cells' bands (evidence wide_low/wide_high).",
        "accuracy": [{k: a[k] for k in ACCURACY_FIELDS} for a in accuracy],
        "evidence": [{"regime": ev.regime, "rows": ev.rows, "runtimes": dict(ev.runtimes),
                      "model_kinds": dict(ev.model_kinds), "wide_low": ev.wide_low, "wide_high": ev.wide_high}
                     for ev in evidence_from_rows(rows, cells)],
        "cells": [{"regime": c.regime, "gpu_class": c.gpu_class, "n": c.n, "quantiles": list(c.quantiles),
                   "low": c.low, "high": c.high,
                   "calibrated_low": c.calibrated_low, "calibrated_high": c.calibrated_high,
                   "fallback": c.fallback} for c in cells],
    }
    path = Path(path)
    header = ("# Uncertainty bands for estimates (planner/validation/uncertainty.py). WRITTEN by\n"
              "# `python -m planner validate --write-uncertainty`; do not edit by hand.\n")
    write_atomic(path, header + yaml.safe_dump(doc, sort_keys=False, width=120))
    load_uncertainty.cache_clear()
    load_uncertainty(path)
    return path
