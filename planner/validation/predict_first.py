"""Predict before measuring: the planner's predictions for a new source's rows, committed before their values are known.

The rule (validation/README.md, 'Predicted before measured'): the rows of a new source are written without their
measured values (the fields of measurements.yaml less `value`), the planner predicts them as estimates are made (the
tuned values of data/runtimes_tuned.yaml) and the predictions are written to validation/predictions/<date>_<source>.yaml
with the planner's git commit; that file is committed, and only then are the measured values entered in
measurements.yaml. The error of those committed predictions, per regime, is the headline generalisation figure: no
choice made after seeing the values can reach it. A predictions file whose rows are measured is never rewritten.

Rows of a predictions file are held out of tuning (measured.prediction_first_ids), so the tuned values that made a
prediction are the ones its row is scored against until someone decides otherwise.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import MISSING, dataclass, fields
from datetime import date
from functools import lru_cache
from pathlib import Path

import yaml

from planner import ROOT_DIR
from planner.base.files import file_version, write_atomic
from planner.base.schema import DataFileError, Record, sections_of, unique_ids
from planner.inputs.catalog import load_catalog
from planner.validation.loso import error_stats, per_publication_stats, result_groups, source_of
from planner.validation.measured import (MEASUREMENTS_FILE, PREDICTIONS_DIR, ROW_FIELDS, Measurement, RowResult,
                                         load_measurements, predict_row, predictions_document, validation_models)

# What a row's estimate reads: the layers under the tools one (base, inputs, engine), the data files (the tuned values
# among them), this package and the validation models. A change there not yet committed would make the recorded
# commit a lie about what predicted; views, the UI and the CLI's other commands do not reach an estimate.
ESTIMATE_PATHS = ("planner/__init__.py", "planner/base", "planner/inputs", "planner/engine", "planner/data",
                  "planner/validation", "validation/models_extra.yaml")
# The fields of a row that determine its prediction: a measured row must still have them when it is scored
PREDICTED_FIELDS = tuple(f for f in ROW_FIELDS if f not in ("id", "value", "source", "conditions"))
# fields a row may leave out, at their defaults (a prediction file written before such a field existed)
ROW_DEFAULTS = {f.name: f.default for f in fields(Measurement) if f.default is not MISSING}
PREDICTION_SPLIT = "prediction-first"
RULE = ("predicted before measured: each row estimated as estimates are made (data/runtimes_tuned.yaml over "
        "data/runtimes.yaml) from its conditions alone, committed before its measured value was entered in "
        "validation/measurements.yaml (planner.validation.predict_first)")


class PredictFirstError(ValueError):
    """A refusal: predicting rows that are measured already, from a dirty tree, or over a scored predictions file."""


@dataclass(frozen=True)
class GitState:
    commit: str
    dirty: tuple[str, ...]  # the tracked paths of ESTIMATE_PATHS with changes not committed


def git_state(root: str | Path = ROOT_DIR, paths: tuple[str, ...] = ESTIMATE_PATHS) -> GitState:
    """HEAD's commit of the repository at `root` and the files under `paths` that differ from it."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                                  text=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            raise PredictFirstError(f"cannot read the planner's git commit in {root} ({exc}): predictions must "
                                    "name the commit that made them") from None
    commit = git("rev-parse", "HEAD").strip()
    # tracked files only: an untracked file no committed module imports cannot change an estimate
    dirty = tuple(line[3:] for line in git("status", "--porcelain", "--untracked-files=no", "--", *paths).splitlines()
                  if line.strip())
    return GitState(commit, dirty)


def slug(text: str) -> str:
    """A file-name slug: lower case, runs of anything but letters and digits as one '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def predictions_path(out_dir: str | Path, day: date, source_slug: str) -> Path:
    return Path(out_dir) / f"{day.isoformat()}_{source_slug}.yaml"


def _measured_ids(measurements: str | Path) -> set[str]:
    return {r.id for r in load_measurements(measurements)}


def predicted_row(row: Measurement, catalog=None, models=None) -> dict:
    """One row's entry of a predictions file: its id, the fields its prediction depends on, and the prediction."""
    p = predict_row(row, catalog, models)
    gpu = p.estimate.gpu
    fields = {f: getattr(row, f) for f in PREDICTED_FIELDS}
    return {"id": row.id, **fields, "source": row.source, "predicted_regime": p.regime, "gpu_class": gpu.memory_class,
            "runtime": p.plan.runtime, "plan_precision": p.plan.precision,
            "predicted": None if p.predicted is None else float(f"{p.predicted:.6g}"),
            "excluded": p.excluded, "note": p.note}


def predict_file(rows_path: str | Path, out_dir: str | Path = PREDICTIONS_DIR,
                 measurements: str | Path = MEASUREMENTS_FILE, day: date | None = None, source_slug: str | None = None,
                 state: GitState | None = None, allow_dirty: bool = False) -> Path:
    """Predict the rows of `rows_path` (no `value`) and write them, with the planner's commit and the day, to
    out_dir/<day>_<source slug>.yaml. Refuses rows already in `measurements`, a tree with uncommitted changes to what
    estimates read (unless `allow_dirty`, which the file records), and rewriting a file whose rows are measured."""
    rows = load_measurements(rows_path, measured=False)
    measured = _measured_ids(measurements)
    already = sorted(r.id for r in rows if r.id in measured)
    if already:
        raise PredictFirstError(f"{rows_path}: rows already measured in {measurements} ({', '.join(already)}): a "
                                "prediction made after the value is known is not a prediction")
    sources = sorted({source_of(r) for r in rows})
    if len(sources) != 1:
        raise PredictFirstError(f"{rows_path}: one source per predictions file, found {', '.join(sources)}")
    state = state or git_state()
    if state.dirty and not allow_dirty:
        raise PredictFirstError("uncommitted changes to what estimates read (" + ", ".join(state.dirty) + "): commit "
                                "them first, or pass --allow-dirty to record that the commit is not the whole planner")
    day = day or date.today()
    path = predictions_path(out_dir, day, source_slug or slug(sources[0]))
    if path.exists():
        scored = sorted({r["id"] for r in load_predictions(path).rows} & measured)
        if scored:
            raise PredictFirstError(f"{path} predicts rows that are measured now ({', '.join(scored)}): a committed "
                                    "prediction is never rewritten; predict new rows into a new file")
    catalog, models = load_catalog(), validation_models()
    doc = {"schema_version": 1, "read_on": day.isoformat(), "source": sources[0],
           "planner_commit": state.commit, "planner_dirty": list(state.dirty), "rule": RULE,
           "rows": [predicted_row(r, catalog, models) for r in rows]}
    header = ("# Predictions made BEFORE these rows were measured (planner.validation.predict_first). Never edit\n"
              "# or rewrite: the measured values go to validation/measurements.yaml; `planner validate` scores them.\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, header + yaml.safe_dump(doc, sort_keys=False, width=120))
    return path


@dataclass(frozen=True)
class PredictionFile:
    path: Path
    source: str
    commit: str
    dirty: tuple[str, ...]
    day: str
    rows: tuple[dict, ...]


def load_predictions(path: str | Path) -> PredictionFile:
    """A predictions file, checked: its header fields and every row's id, fields and prediction. Parsed once per
    version of the file (size and modification time); callers only read it."""
    return _load_predictions(*file_version(path))


@lru_cache(maxsize=128)
def _load_predictions(name: str, mtime_ns: int, size: int) -> PredictionFile:
    path = Path(name)
    doc = predictions_document(path)  # parsed once, under the caps of every data file
    Record(str(path), "-", doc).day("read_on")  # dated, as schema.load_document(dated=True) checks
    raws = sections_of(doc, path, ("rows",))["rows"]
    head = Record(str(path), "-", doc)
    commit = head.text("planner_commit")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise head.fail("planner_commit", f"expected a 40-hex-digit git commit, got {commit!r}")
    rows = []
    for i, raw in enumerate(raws):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", *PREDICTED_FIELDS, "source", "predicted_regime", "gpu_class", "runtime",
                        "plan_precision", "predicted", "excluded", "note"))
        rec.text("id")
        if rec.raw("predicted", required=False) is not None:
            rec.number("predicted", lo=0, hi=1e12)
        rows.append(dict(raw))
    unique_ids(path, (r["id"] for r in rows))
    return PredictionFile(path, head.text("source"), commit, tuple(doc.get("planner_dirty") or ()),
                          head.text("read_on"), tuple(rows))


def prediction_files(directory: str | Path = PREDICTIONS_DIR) -> list[PredictionFile]:
    return [load_predictions(p) for p in sorted(Path(directory).glob("*.yaml"))]


def score_file(pf: PredictionFile, measured: dict[str, Measurement]) -> list[RowResult]:
    """The committed predictions of `pf` against the rows of `measured` (by id) entered since; rows not measured yet
    are left out. A measured row whose conditions differ from the predicted one's is an error naming the field."""
    out = []
    for p in pf.rows:
        row = measured.get(p["id"])
        if row is None:
            continue
        for f in PREDICTED_FIELDS:
            # a field added to the rows after the file was written had its default then
            then = p[f] if f in p else ROW_DEFAULTS.get(f)
            if getattr(row, f) != then:
                raise DataFileError(pf.path, p["id"], f, f"predicted with {then!r}, measured row has "
                                                         f"{getattr(row, f)!r}: a row may not change after its "
                                                         "prediction is committed (predict it anew, as a new row)")
        predicted = p["predicted"] if not p.get("excluded") else None
        error = None if predicted is None else (predicted - row.value) / row.value * 100.0
        out.append(RowResult(row.id, row.gpu, p["gpu_class"], row.model, p["predicted_regime"], row.framework,
                             p["runtime"], p["plan_precision"], row.batch, row.metric, row.value, predicted, error,
                             "excluded" if p.get("excluded") else PREDICTION_SPLIT, p.get("note") or "", row.source))
    return out


@dataclass(frozen=True)
class ScoredPredictions:
    file: PredictionFile
    results: tuple[RowResult, ...]  # the rows measured so far


def score_predictions(directory: str | Path = PREDICTIONS_DIR, measurements: str | Path = MEASUREMENTS_FILE
                      ) -> list[ScoredPredictions]:
    """Every predictions file under `directory` scored against the measured rows of `measurements`."""
    measured = {r.id: r for r in load_measurements(measurements)}
    return [ScoredPredictions(pf, tuple(score_file(pf, measured))) for pf in prediction_files(directory)]


def prediction_summary(scored: list[ScoredPredictions]) -> list[dict]:
    """n, median |error|, p90 and median bias on speed (+ = the planner faster than measured) of the committed
    predictions: all, per regime, per source (a predictions file's source, with its commit); for all and each regime
    also the same medians with each publication weighing the same (loso.per_publication_stats)."""
    results = [(r, f"{s.file.source} @{s.file.commit[:8]}") for s in scored for r in s.results
               if r.split == PREDICTION_SPLIT]
    return [{"set": PREDICTION_SPLIT, "group": kind, "key": key, **error_stats(members),
             **(per_publication_stats(members) if kind in ("all", "regime") else {})}
            for kind, key, members in (result_groups(results, False) if results else ()) if members]
