"""The static-batch residual analysis (validation/static_batch_residual.py, issue 37, POST HOC): a whole generate()'s
seconds from each metric, the miss per forward step, the weight-streaming floor and the a + b x batch fit, each
worked by hand."""

import pytest
from tests.fixtures.validation_scripts import load_script

residual = load_script("static_batch_residual")


def test_tokens_per_second_is_the_batch_s_output_over_one_generate():
    """Azure's Llama-3-70B FP8 row on 8 H100s: 16 sequences x 8 tokens at 624.57 tokens/s = 128 / 624.57 =
    0.20494 s; a step_seconds value is already the generate()'s seconds."""
    assert residual.generate_seconds("tokens_per_s", 624.57, 16, 8) == pytest.approx(0.20494, abs=1e-5)
    assert residual.generate_seconds("step_seconds", 0.1365, 1, 20) == 0.1365
    with pytest.raises(ValueError, match="tokens_per_s"):
        residual.generate_seconds("ttft_ms", 12.0, 1, 20)


def test_the_miss_is_spread_over_one_step_per_output_token():
    """20 output tokens are 20 forward steps (the context step and 19 generation steps): (0.1365 - 0.0495) s / 20 =
    4.35 ms a step; a prediction slower than measured gives a negative residual."""
    assert residual.residual_ms_per_step(0.1365, 0.0495, 20) == pytest.approx(4.35)
    assert residual.residual_ms_per_step(0.1, 0.3, 20) == pytest.approx(-10.0)


def test_weight_floor_of_a_16_bit_13b_model_on_one_a100():
    """19 generation steps x 13e9 weights x 2 B / 2,039 GB/s = 0.24227 s: a 13B row measured at 0.1425 s for 20
    tokens cannot have streamed 16-bit weights; at 8 bits the floor halves (0.12113 s), on 2 GPUs it halves again."""
    floor = residual.weight_floor_s(13e9, 16, 20, 1, 2039.0)
    assert floor == pytest.approx(19 * 26e9 / 2.039e12, rel=1e-9)
    assert floor == pytest.approx(0.24227, abs=1e-5)
    assert 0.1425 < floor
    assert residual.weight_floor_s(13e9, 8, 20, 1, 2039.0) == pytest.approx(floor / 2)
    assert residual.weight_floor_s(13e9, 16, 20, 2, 2039.0) == pytest.approx(floor / 2)


def test_least_squares_line_by_hand():
    """(1, 3), (3, 7), (5, 11) lie on y = 1 + 2x; every x the same: the mean, slope 0."""
    assert residual.fit_line([1, 3, 5], [3, 7, 11]) == pytest.approx((1.0, 2.0))
    assert residual.fit_line([64, 64], [4.0, 6.0]) == (5.0, 0.0)


def test_families_keep_the_vllm_version():
    assert residual.family("rocmvllm0100-llama31-70b-fp8-mi300x-tp8-b1-p128-g2048") == "rocmvllm0100"
    assert residual.family("rocmvllm066-llama31-405b-fp8-mi300x-tp8-b8-p2048-g2048") == "rocmvllm066"
    assert residual.family("azure-trtllm-mistral-7b-fp8-h100sxm-tp1-b64-p128-g8") == "azure-trtllm"
    assert residual.family("nemo-llama2-7b-h100sxm-tp8-b1-p128-g20") == "nemo-llama2"
