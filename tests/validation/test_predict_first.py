"""Predict before measuring: a predictions file's contents, the refusals, and scoring committed predictions against
values entered later (a tiny synthetic source)."""

from __future__ import annotations

import subprocess
from datetime import date
from pathlib import Path

import pytest
import yaml

from planner.base.schema import DataFileError
from planner.inputs.catalog import load_catalog
from planner.validation.measured import load_measurements, prediction_first_ids
from planner.validation.predict_first import (PREDICTION_SPLIT, GitState, PredictFirstError, git_state,
                                              load_predictions, predict_file, prediction_summary, score_predictions)

DAY = date(2026, 11, 28)
CLEAN = GitState("ab" * 20, ())
SOURCE = "https://example.org/hand-made-bench"

# Llama-3-8B in fp16 on an RTX 4090 at batch 1: every decode step reads the 16.06 GB of weights once
DECODE = {"id": "hand-l3-8b-f16-4090-tg256", "gpu": "rtx-4090", "gpus": 1, "model": "llama-3-8b", "regime": "decode",
          "framework": "hf-transformers", "precision": "fp16", "weight_bits": 16, "batch": 1, "prompt_tokens": 128,
          "gen_tokens": 256, "metric": "tokens_per_s", "source": SOURCE, "conditions": "hand-made"}
PREFILL = {**DECODE, "id": "hand-l3-8b-f16-4090-pp2048-seconds", "regime": "prefill", "prompt_tokens": 2048,
           "gen_tokens": 0, "metric": "step_seconds"}
OTHER = {**DECODE, "id": "hand-measured-before", "source": "https://example.org/older", "value": 40.0}


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": rows}, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def setup(tmp_path):
    """(rows to predict, measurements without them, predictions folder)."""
    return (write(tmp_path / "new.yaml", [DECODE, PREFILL]), write(tmp_path / "m.yaml", [OTHER]),
            tmp_path / "predictions")


def test_a_predictions_file_names_the_commit_the_day_and_each_rows_prediction(setup):
    rows, measurements, out = setup
    path = predict_file(rows, out, measurements, day=DAY, state=CLEAN)
    assert path == out / "2026-11-28_example-org.yaml"  # the day, then the source's host as a slug
    pf = load_predictions(path)
    assert pf.commit == "ab" * 20 and pf.dirty == () and pf.day == "2026-11-28" and pf.source == "example.org"
    by_id = {r["id"]: r for r in pf.rows}
    assert set(by_id) == {DECODE["id"], PREFILL["id"]}
    decode = by_id[DECODE["id"]]
    assert "value" not in decode and decode["gpu"] == "rtx-4090" and decode["gen_tokens"] == 256
    assert decode["predicted_regime"] == "decode, batch 1" and decode["runtime"] == "pytorch-eager"
    # physics: a decode step cannot beat reading the weights at the card's DRAM bandwidth (1008 GB/s / 16.06 GB)
    bound = load_catalog().get("rtx-4090").mem_bw_gbps / 16.06
    assert 0 < decode["predicted"] < bound
    # a 2048-token prefill of 8B parameters is >= 2 x 8.03e9 x 2048 FLOPs at <= the card's 165 dense fp16 TFLOPS
    assert by_id[PREFILL["id"]]["predicted"] >= 2 * 8.03e9 * 2048 / 165.2e12


def test_a_row_that_carries_a_value_is_refused(tmp_path, setup):
    _, measurements, out = setup
    rows = write(tmp_path / "with_value.yaml", [{**DECODE, "value": 50.0}])
    with pytest.raises(DataFileError, match="value"):
        predict_file(rows, out, measurements, day=DAY, state=CLEAN)
    assert not out.exists()


def test_rows_already_measured_are_refused(tmp_path, setup):
    rows, _, out = setup
    measurements = write(tmp_path / "m2.yaml", [{**DECODE, "value": 50.0}])
    with pytest.raises(PredictFirstError, match=DECODE["id"]):
        predict_file(rows, out, measurements, day=DAY, state=CLEAN)


def test_a_dirty_tree_is_refused_unless_allowed_and_then_recorded(setup):
    rows, measurements, out = setup
    dirty = GitState("cd" * 20, ("planner/data/gpus.yaml",))
    with pytest.raises(PredictFirstError, match="gpus.yaml"):
        predict_file(rows, out, measurements, day=DAY, state=dirty)
    pf = load_predictions(predict_file(rows, out, measurements, day=DAY, state=dirty, allow_dirty=True))
    assert pf.dirty == ("planner/data/gpus.yaml",)


def test_committed_predictions_are_scored_against_values_entered_later(tmp_path, setup):
    rows, measurements, out = setup
    pf = load_predictions(predict_file(rows, out, measurements, day=DAY, state=CLEAN))
    pred = {r["id"]: r["predicted"] for r in pf.rows}
    # measured later: the decode 1.25x slower than predicted (error +25 %), the prefill's seconds 1.25x the predicted
    # ones (error on seconds -20 %, on speed +25 %); a row the source has not reported yet is left out
    later = write(tmp_path / "m_later.yaml", [
        OTHER, {**DECODE, "value": pred[DECODE["id"]] / 1.25}, {**PREFILL, "value": pred[PREFILL["id"]] * 1.25}])
    assert len(load_measurements(later)) == 3
    [scored] = score_predictions(out, later)
    errors = {r.row_id: r.error_pct for r in scored.results}
    assert errors[DECODE["id"]] == pytest.approx(25.0) and errors[PREFILL["id"]] == pytest.approx(-20.0)
    assert all(r.split == PREDICTION_SPLIT for r in scored.results)
    summary = {(d["group"], d["key"]): d for d in prediction_summary([scored])}
    assert summary[("all", "all")]["n"] == 2 and summary[("all", "all")]["median_ape"] == 22.5
    assert summary[("all", "all")]["median_bias_pct"] == 25.0  # the planner faster than measured on both
    assert summary[("regime", "decode, batch 1")]["n"] == 1 and summary[("regime", "prefill")]["n"] == 1
    assert summary[("source", "example.org @abababab")]["n"] == 2


def test_a_measured_row_whose_conditions_changed_after_its_prediction_is_an_error(tmp_path, setup):
    rows, measurements, out = setup
    predict_file(rows, out, measurements, day=DAY, state=CLEAN)
    changed = write(tmp_path / "m_changed.yaml", [{**DECODE, "batch": 2, "value": 50.0}])
    with pytest.raises(DataFileError, match="batch"):
        score_predictions(out, changed)


def test_a_predictions_file_is_never_rewritten_once_its_rows_are_measured(tmp_path, setup):
    rows, measurements, out = setup
    path = predict_file(rows, out, measurements, day=DAY, state=CLEAN)
    before = path.read_bytes()
    assert predict_file(rows, out, measurements, day=DAY, state=CLEAN) == path  # nothing measured yet: may redo
    later = write(tmp_path / "m_later.yaml", [OTHER, {**DECODE, "value": 50.0}])
    third = write(tmp_path / "third.yaml", [{**PREFILL, "id": "hand-another-row"}])  # same source, same day
    with pytest.raises(PredictFirstError, match="never rewritten"):
        predict_file(third, out, later, day=DAY, state=CLEAN)
    assert path.read_bytes() == before


def test_predicted_rows_are_the_ones_held_out_of_tuning(setup):
    rows, measurements, out = setup
    assert prediction_first_ids(out) == frozenset()
    predict_file(rows, out, measurements, day=DAY, state=CLEAN)
    assert prediction_first_ids(out) == {DECODE["id"], PREFILL["id"]}


def test_git_state_names_the_commit_and_the_uncommitted_files_estimates_read(tmp_path):
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True).stdout
    git("init", "-q")
    for folder in ("planner/engine", "planner/views"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "a.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = git("rev-parse", "HEAD").strip()
    assert git_state(tmp_path) == GitState(head, ())
    for folder in ("planner/engine", "planner/views"):  # views are changed too, but no estimate reads them
        (tmp_path / folder / "a.py").write_text("x = 2\n")
    (tmp_path / "planner" / "inputs").mkdir()
    (tmp_path / "planner" / "inputs" / "new.py").write_text("untracked: no committed module imports it\n")
    assert git_state(tmp_path) == GitState(head, ("planner/engine/a.py",))
