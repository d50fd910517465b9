"""Prefix caching in the serving simulation: a prompt whose start the engine holds in its prefix cache prefills only
the rest, in whole cache blocks, and still attends to (and decodes over) the cached tokens."""

from dataclasses import replace

import pytest

from planner.engine.serving_sim import Requests, StepTimes, cached_prompt_tokens, closed_loop_run, simulate
from planner.inputs.serving_runtimes import Scheduler, load_schedulers

BUDGET = 4096
CACHING = Scheduler("t", "test", "vllm", 256, BUDGET, True, True, 0.9, prefix_cache_block_tokens=16)


def _steps(step_s: float = 0.01, key_s: float = 0.0, pair_s: float = 0.0) -> StepTimes:
    """Every step's dense part costs `step_s`; each decode row's cached key `key_s`, each prefill pair `pair_s`."""
    flat = (step_s,) * (BUDGET + 1)
    return StepTimes(flat, flat, (key_s,) * (BUDGET + 1), pair_s, 10**7, 1e-6, 1.0)


@pytest.mark.parametrize("prompt, cached, block, expected", [
    (39, 39, 16, 32),  # an identical 39-token prompt: two whole blocks, 7 tokens computed
    (32, 32, 16, 16),  # every token cached: the last is computed anyway, so its block is not reused
    (100, 20, 16, 16),  # a 20-token shared system prompt: one whole block
    (100, 15, 16, 0),  # shorter than a block: nothing
    (39, 39, 0, 0),  # no prefix cache
])
def test_whole_blocks_are_reused_never_the_last_token(prompt, cached, block, expected):
    assert cached_prompt_tokens(prompt, cached, block) == expected


def test_a_cached_prompt_prefills_only_its_tail():
    """10,000 prompt tokens at a 4,096-token budget take 3 steps; with its first 9,000 cached (8,992 in whole
    16-token blocks) the 1,008 left take one."""
    steps = _steps()
    assert simulate(steps, CACHING, [0.0], [10_000], [2]).ttft_s[0] == pytest.approx(0.03)
    assert simulate(steps, CACHING, [0.0], [10_000], [2], cached_prefix=9000).ttft_s[0] == pytest.approx(0.01)
    without = replace(CACHING, prefix_cache_block_tokens=0)  # an engine without a prefix cache ignores it
    assert simulate(steps, without, [0.0], [10_000], [2], cached_prefix=9000).ttft_s[0] == pytest.approx(0.03)


def test_the_tail_attends_to_the_cached_tokens_and_decodes_over_them():
    """A 1,000-token prompt, 992 tokens cached: its 8 computed tokens attend to the 992 and to each other, 8 x 992
    + 8 x 9 / 2 = 7,972 pairs (1,000 x 1,001 / 2 = 500,500 uncached); each of its 10 decode steps reads the whole
    context, 1,001..1,010 keys, exactly as without the cache."""
    steps = _steps(key_s=1e-6, pair_s=1e-9)
    cold = simulate(steps, CACHING, [0.0], [1000], [11])
    warm = simulate(steps, CACHING, [0.0], [1000], [11], cached_prefix=1000)
    assert cold.ttft_s[0] == pytest.approx(0.01 + 500_500e-9)
    assert warm.ttft_s[0] == pytest.approx(0.01 + 7_972e-9)
    assert warm.tpot_s[0] == pytest.approx(cold.tpot_s[0]) == pytest.approx(0.01 + 1e-6 * 1005.5)


def test_requests_carry_their_cached_prefix_into_a_closed_loop():
    """The closed loop's requests take Requests.cached_prefix: 2 requests at once, 6,000-token prompts, 2 x 6,000
    = 12,000 tokens in 3 budget steps before the first token uncached; cached but the last 16-token block's share
    (5,984 each), 2 x 16 in one step."""
    steps = _steps()
    cold = closed_loop_run(steps, CACHING, Requests((6000,), (2,)), 2, 2)
    warm = closed_loop_run(steps, CACHING, Requests((6000,), (2,), cached_prefix=6000), 2, 2)
    assert max(cold.ttft_s) == pytest.approx(0.03)
    assert max(warm.ttft_s) == pytest.approx(0.01)


def test_vllm_caches_in_16_token_blocks():
    """vLLM's CacheConfig block_size default on CUDA (data/serving.yaml prefix_cache_source)."""
    assert load_schedulers().get("vllm").prefix_cache_block_tokens == 16
