"""The early tensor-parallel breakdown (validation/early_tp_breakdown.py, issue 37, POST HOC): per-layer times, the
mean context of a generation and the per-token slope against it, each worked by hand."""

import pytest
from tests.fixtures.validation_scripts import load_script

breakdown = load_script("early_tp_breakdown")


def test_a_step_per_layer():
    """MuxServe's LLaMA-7B TP 2 prefill of 32 tokens: 19.46 ms over 32 layers = 0.608 ms a layer."""
    assert breakdown.per_layer_ms(0.01946, 32) == pytest.approx(0.608125)


def test_mean_context_is_the_prompt_and_half_the_output():
    """128 prompt tokens and 512 generated: the steps attend 128 ... 639 tokens, 384 on average (128 + 256)."""
    assert breakdown.mean_context(128, 512) == 384
    assert breakdown.mean_context(128, 2048) == 1152


def test_slope_between_the_shortest_and_longest_generation():
    """GLM-130B on FasterTransformer: 18.77 s / 512 tokens = 36.66 ms at context 384, 89.88 s / 2,048 = 43.89 ms at
    1,152: (43.89 - 36.66) ms / 768 tokens = 9.41 us per output token per context token; the middle point is not
    used."""
    points = [(384.0, 18.77e3 / 512), (640.0, 39.81e3 / 1024), (1152.0, 89.88e3 / 2048)]
    assert breakdown.slope_us_per_token(points) == pytest.approx((89.88e3 / 2048 - 18.77e3 / 512) * 1e3 / 768)
    assert breakdown.slope_us_per_token(points) == pytest.approx(9.41, abs=0.01)
