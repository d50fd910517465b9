"""Training rows by GPU-count bucket: the buckets' edges, and a bucket's verdict from rows whose errors are set by
hand (median |error| <= 12 %, median bias within +-10 %); rows without other sources' evidence kept apart."""

from dataclasses import replace

import pytest

from planner.validation.loso import LOSO_SET, NO_OTHER_SOURCE_SET
from planner.validation.measured import Measurement, RowResult
from planner.validation.train_buckets import (PREDICTED_FIRST_SET, TrainScore, bucket_of, bucket_summary,
                                              train_scores)
from planner.views.report import train_bucket_text

ROW = Measurement("r", "a100-sxm-80gb", 8, "llama-2-7b", "train", "torchtitan", "bf16", 16.0, 64, 0, 0, 2048,
                  "tokens_per_s", 1000.0, "owner/repo: table", "")


def _score(i: int, gpus: int, error_pct: float, scored_set: str = LOSO_SET, metric: str = "tokens_per_s",
           source: str = "owner/a") -> TrainScore:
    row = replace(ROW, id=f"r{i}", gpus=gpus, metric=metric)
    predicted = 1000.0 * (1 + error_pct / 100)
    res = RowResult(row.id, row.gpu, "hbm", row.model, "train", row.framework, "pytorch-eager", "bf16", 64, metric,
                    1000.0, predicted, error_pct, "test", "", source)
    return TrainScore(row, res, source, scored_set, ("owner/tuned",))


@pytest.mark.parametrize("gpus, bucket", [(1, "1"), (2, "2-8"), (8, "2-8"), (9, ">8"), (64, ">8")])
def test_bucket_edges(gpus, bucket):
    assert bucket_of(gpus) == bucket


def test_a_buckets_verdict_from_hand_set_errors():
    """2-8 GPUs: errors +10, -20 and +30 %: median |error| 20 > 12, so the target is missed; median bias +10 % (the
    middle speed error). 1 GPU: +5, -8, +11: median |error| 8 and bias +5, met. The no-other-source row at 8 GPUs is
    apart and carries no verdict."""
    scores = [_score(0, 8, 10), _score(1, 4, -20), _score(2, 2, 30, PREDICTED_FIRST_SET, source="owner/b"),
              _score(3, 1, 5), _score(4, 1, -8), _score(5, 1, 11), _score(6, 8, 50, NO_OTHER_SOURCE_SET)]
    rows = {(d["gpus"], d["set"]): d for d in bucket_summary(scores)}
    mid = rows[("2-8", "other sources' evidence")]
    assert (mid["rows"], mid["median_ape"], mid["median_bias_pct"], mid["meets"]) == (3, 20.0, 10.0, False)
    assert mid["predicted_first"] == 1 and mid["sources"] == "owner/a, owner/b" and mid["tuned_on"] == "owner/tuned"
    one = rows[("1", "other sources' evidence")]
    assert (one["rows"], one["median_ape"], one["median_bias_pct"], one["meets"]) == (3, 8.0, 5.0, True)
    apart = rows[("2-8", NO_OTHER_SOURCE_SET)]
    assert apart["rows"] == 1 and apart["meets"] is None
    assert (">8", "other sources' evidence") not in rows  # no row there


def test_a_step_time_row_predicted_short_counts_as_too_fast():
    """A step_seconds row predicted 20 % short: its speed is 1/0.8 = 1.25x, a +25 % bias; |error| 20 %."""
    d = bucket_summary([_score(0, 1, -20, metric="step_seconds")])[0]
    assert d["median_ape"] == 20.0 and d["median_bias_pct"] == 25.0


def test_the_text_lists_the_sources_tuned_on_in_full():
    text = train_bucket_text(bucket_summary([_score(0, 64, 15)]), 12, 10)
    assert "median |error| <= 12 %" in text and "owner/a; their runtimes tuned on owner/tuned" in text


def test_the_predicted_first_training_rows_fall_in_their_buckets():
    """TorchTitan's three 64-GPU rows (a source no runtime prior drew from) count as predictions from other sources;
    llm.c's predicted-first rows come from the repository its priors were drawn from, so they stand apart."""
    scores = train_scores([])
    by_set = {s.row.id: (bucket_of(s.row.gpus), s.scored_set) for s in scores}
    tt = {i for i in by_set if i.startswith("tt-")}
    assert len(tt) == 3 and {by_set[i] for i in tt} == {(">8", PREDICTED_FIRST_SET)}
    assert {by_set[i] for i in by_set if i.startswith("llmc-")} == {("2-8", NO_OTHER_SOURCE_SET)}
