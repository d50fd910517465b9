"""A benchmark's finite run (GPUStack's and IOG's method): every request sent at once, scored as its output tokens
over the time to the last completion; a benchmark's own requests served once each; arrivals over their expected
span. Expected values are counted by hand on a flat step model."""

import pytest

from planner.engine.serving_sim import (MAX_REQUESTS, Requests, StepTimes, benchmark_arrivals, burst_tokens_per_s,
                                        saturation_rate, simulate)
from planner.inputs.serving_runtimes import Scheduler


def _flat(step_s: float, tokens: int = 4096, kv: int = 10**7) -> StepTimes:
    """Every step costs `step_s` whatever it carries: no attention terms."""
    flat = (step_s,) * (tokens + 1)
    return StepTimes(flat, flat, (0.0,) * (tokens + 1), 0.0, kv, 1e-6, 1.0)


MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def test_a_burst_of_equal_requests_is_their_tokens_over_their_steps():
    """8 requests of 16 + 10 tokens at once: one step prefills all 128 prompt tokens (each request's first token),
    9 decode steps follow; 80 tokens in 10 steps of 10 ms = 800 tokens/s."""
    assert burst_tokens_per_s(_flat(0.01), MIXED, Requests((16,), (10,)), 8) == pytest.approx(800)


def test_the_drain_of_a_burst_counts():
    """Two 10-token and two 30-token replies, each served once: the last finishes after 30 steps (0.30 s) with 80
    tokens, 266.7 tokens/s, where the steady state (the queue never empty, a new request for every finished one)
    keeps the 256-request cap's batch full and serves more."""
    reqs = Requests((16, 16, 16, 16), (10, 10, 30, 30))
    burst = burst_tokens_per_s(_flat(0.01), MIXED, reqs, 4)
    assert burst == pytest.approx(80 / 0.30)
    steady = saturation_rate(_flat(0.01), MIXED, reqs) * 20  # requests/s x the mean reply, 20 tokens
    assert steady > 2 * burst


def test_a_benchmarks_own_requests_are_served_once_each():
    reqs = Requests((1, 2, 3, 4, 5), (10, 20, 30, 40, 50))
    prompts, outputs = reqs.take(5, seed=3)
    assert sorted(prompts) == [1, 2, 3, 4, 5] and sorted(outputs) == [10, 20, 30, 40, 50]
    assert sorted(zip(prompts, outputs)) == list(zip(reqs.prompts, reqs.outputs))  # pairs kept


def test_benchmark_arrivals_span_their_expectation():
    """200 requests at 4/s: the first at 0, the last at 199 / 4 = 49.75 s, in order."""
    t = benchmark_arrivals(4.0, 200, seed=0)
    assert t[0] == 0.0 and t[-1] == pytest.approx(49.75)
    assert all(a <= b for a, b in zip(t, t[1:]))


@pytest.mark.parametrize("n", [0, MAX_REQUESTS + 1])
def test_a_burst_outside_the_run_cap_is_refused(n):
    with pytest.raises(ValueError, match="requests"):
        burst_tokens_per_s(_flat(0.01), MIXED, Requests((16,), (10,)), n)



def test_long_chunked_prompts_are_not_called_a_preemption_storm():
    """20 prompts of 3,200 tokens, one output token each, at once, under a 16-token budget with chunked prefill: 200
    chunk steps a prompt, 4,000 steps of 10 ms in all, no preemption (the cache holds everything). Every request is
    served, the last at 40 s. The loop's allowance (64 iterations a request + 1,000 = 2,280) once called this run
    unsettled after 11 requests (a 32K-token prompt in 512-token chunks scored 0 tokens/s)."""
    chunked = Scheduler("t", "test", "vllm", 256, 16, True, True, 0.9)
    run = simulate(_flat(0.01), chunked, [0.0] * 20, [3200] * 20, [1] * 20)
    assert run.settled and len(run.done_times) == 20
    assert run.span_s == pytest.approx(40.0)


def test_a_lone_sequences_decode_step_is_a_decode_step_not_a_one_token_prefill():
    """A step model whose one-token prefill (50 ms: vLLM V0 dispatches prefill steps eagerly) differs from its decode
    step of one sequence (10 ms, a replayed graph). One request, a 4-token prompt and 3 output tokens: the prefill
    step (50 ms) gives the first token, two decode steps of one sequence follow at 10 ms each: done at 70 ms."""
    one = (0.05,) * 4097
    every = (0.01,) * 4097
    st = StepTimes(one, every, (0.0,) * 4097, 0.0, 10**7, 1e-6, 1.0)
    run = simulate(st, MIXED, [0.0], [4], [3])
    assert run.done_times[-1] == pytest.approx(0.07)
    assert run.tpot_s[0] == pytest.approx(0.01)
