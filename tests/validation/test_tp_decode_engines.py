"""The tensor-parallel decode analysis (validation/tp_decode_engines.py, issue 37 round 9, POST HOC): the generation
step split off a generate()'s seconds, the signed speed error and a generate()'s seconds per metric, each by hand."""

import pytest
from tests.fixtures.validation_scripts import load_script

engines = load_script("tp_decode_engines")


def test_the_generation_step_is_what_g_tokens_cost_beyond_one_over_g_minus_one_steps():
    """Azure's 70B FP8 batch 16 on 8 H100s as planned: 126.8 ms for 8 tokens, 72.3 ms for 1 (the context step and
    its token): (126.8 - 72.3) / 7 = 7.786 ms a generation step. One output token has no generation step to split."""
    assert engines.generation_step_s(0.1268, 0.0723, 8) == pytest.approx(0.007786, abs=1e-6)
    with pytest.raises(ValueError, match="gen_tokens"):
        engines.generation_step_s(0.1, 0.1, 1)


def test_speed_bias_is_positive_when_the_plan_is_faster_than_measured():
    """ROCm vLLM 0.10.0, 70B, batch 128, 128-token prompts: 22.56 ms a step measured against 12.46 planned as V1:
    22.56 / 12.46 - 1 = +81.1 %; against 23.89 planned as V0: 22.56 / 23.89 - 1 = -5.6 % (the plan slower)."""
    assert engines.speed_bias_pct(22.56, 12.46) == pytest.approx(81.06, abs=0.01)
    assert engines.speed_bias_pct(22.56, 23.89) == pytest.approx(-5.57, abs=0.01)


def test_a_generate_s_seconds_from_each_metric():
    """benchmark.py's tokens_per_sec is batch x output length / latency: 64 x 8 / 2,696 tok/s = 0.18991 s; a
    step_seconds row is the seconds already; another metric is refused by name."""
    assert engines.generate_seconds("tokens_per_s", 2696.0, 64, 8) == pytest.approx(0.18991, abs=1e-5)
    assert engines.generate_seconds("step_seconds", 17.188, 1, 2048) == 17.188
    with pytest.raises(ValueError, match="ttft_ms"):
        engines.generate_seconds("ttft_ms", 40.0, 1, 8)
