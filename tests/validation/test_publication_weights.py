"""Prediction-first figures with each publication weighing the same (loso.per_publication_stats): one source of a
thousand rows must not decide a regime's median on its own."""

from __future__ import annotations

import pytest

from planner.validation.loso import per_publication_stats, weighted_median
from planner.validation.measured import RowResult


def result(error_pct: float, source: str) -> RowResult:
    # a decode row in tokens/s: + error = the planner predicted more tokens/s, i.e. faster than measured
    return RowResult("r", "h100-sxm", "hbm", "llama-3-8b", "decode, batch 1", "vllm", "vllm", "bf16", 1,
                     "tokens_per_s", 100.0, 100.0 + error_pct, error_pct, "prediction-first", "", source)


def test_equal_weights_give_the_plain_median():
    assert weighted_median([(v, 1.0) for v in (1.0, 2.0, 3.0)]) == 2.0
    assert weighted_median([(v, 1.0) for v in (1.0, 2.0, 3.0, 10.0)]) == 2.5  # even count: the two middle ones


def test_a_heavy_value_moves_the_median_to_itself():
    # weights 0.5, 0.5, 1, 1/3 x 3 (total 3, half 1.5): the cumulative weight passes 1.5 at 30 (plain median: 35)
    pairs = [(10.0, 0.5), (20.0, 0.5), (30.0, 1.0), (40.0, 1 / 3), (50.0, 1 / 3), (60.0, 1 / 3)]
    assert weighted_median(pairs) == 30.0


def test_a_large_publication_counts_once():
    # publication A: four rows at 10 % (a quarter each); B: one row at 50 %: half the weight each, so the median is
    # the mean of the two neighbours at the half, (10 + 50) / 2 = 30, where the plain median over rows says 10
    rows = [result(10.0, "https://github.com/a/big, table 1")] * 4 + [result(50.0, "b/small:README.md")]
    stats = per_publication_stats(rows)
    assert stats["publications"] == 2
    assert stats["pub_median_ape"] == pytest.approx(30.0)
    assert stats["pub_median_bias_pct"] == pytest.approx(30.0)  # + errors on tokens/s: faster than measured
