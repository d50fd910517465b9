"""The tensor-parallel prefill breakdown (validation/prefill_tp_breakdown.py, issue 37 round 9, POST HOC): the time
TP adds over a TP 1 twin and the two-term split of TP 2 / TP 8 times, each worked by hand."""

import pytest
from tests.fixtures.validation_scripts import load_script

breakdown = load_script("prefill_tp_breakdown")


def test_time_added_over_the_tp1_twin():
    """MuxServe LLaMA-7B, 64 x 256 tokens: 1.2129 s at TP 1, 0.679 s at TP 2: 0.679 - 0.60645 = 72.55 ms added."""
    assert breakdown.added_seconds(0.679018, 1.212936, 2) == pytest.approx(0.679018 - 0.606468)


def test_ring_split_recovers_its_own_terms():
    """C = 600, a = 200 (ms per 1,000 tokens): TP 2 = 300 + 100 = 400, TP 8 = 75 + 175 = 250; solved back exactly."""
    assert breakdown.ring_split(400.0, 250.0) == pytest.approx((600.0, 200.0))


def test_ring_split_of_perfect_scaling_has_no_ring_term():
    """Work that splits perfectly (TP 8 a quarter of TP 2) leaves a = 0 and C = twice the TP 2 time."""
    assert breakdown.ring_split(148.0, 37.0) == pytest.approx((296.0, 0.0))
