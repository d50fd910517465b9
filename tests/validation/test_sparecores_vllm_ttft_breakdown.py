"""Spare Cores' vLLM TTFT breakdown (validation/sparecores_vllm_ttft_breakdown.py, issue 37 round 9, POST HOC): the
speed bias of a time and the all-reduce rate an added time implies, each worked by hand."""

from types import SimpleNamespace

import pytest
from tests.fixtures.validation_scripts import load_script

breakdown = load_script("sparecores_vllm_ttft_breakdown")


def test_a_prediction_twice_as_fast_as_measured_is_plus_100_percent():
    """20 ms measured, 10 ms predicted: the plan is 2x too fast, +100 %; 10 ms against 20 ms predicted: -50 %."""
    assert breakdown.speed_bias(0.020, 0.010) == pytest.approx(100.0)
    assert breakdown.speed_bias(0.010, 0.020) == pytest.approx(-50.0)


def test_allreduce_rate_of_an_added_time():
    """Gemma-2-2B's shapes (26 layers, hidden 2,304), 4,096 tokens at TP 2: 26 x 2 all-reduces x 4,096 x 2,304 x 2 B
    = 981.5 MB, ring factor 2 x 1 / 2 = 1, so 0.2 s added is 4.907 GB/s; at TP 4 the ring moves 1.5x the data."""
    gemma = SimpleNamespace(layers=26, hidden=2304)
    data_gb = 26 * 2 * 4096 * 2304 * 2 / 1e9
    assert breakdown.allreduce_gbps(gemma, 4096, 2, 0.2) == pytest.approx(data_gb / 0.2)
    assert breakdown.allreduce_gbps(gemma, 4096, 4, 0.2) == pytest.approx(1.5 * data_gb / 0.2)
