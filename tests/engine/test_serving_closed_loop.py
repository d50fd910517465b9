"""A benchmark client's finite closed loop (serving_sim.closed_loop): n requests, c in flight, the first c sent at
once and each later one as an earlier one completes. Expected values are counted by hand on a flat step model
(every step 10 ms whatever it carries)."""

import pytest

from planner.engine.serving_sim import (MAX_REQUESTS, Requests, StepTimes, burst_tokens_per_s, closed_loop,
                                        closed_loop_run)
from planner.inputs.serving_runtimes import Scheduler


def _flat(step_s: float, tokens: int = 4096, kv: int = 10**7) -> StepTimes:
    flat = (step_s,) * (tokens + 1)
    return StepTimes(flat, flat, (0.0,) * (tokens + 1), 0.0, kv, 1e-6, 1.0)


MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def test_a_closed_loop_sends_the_next_wave_as_the_first_completes():
    """4 requests of 16 + 10 tokens, 2 in flight: the first two share a prefill step (first tokens at 10 ms) and 9
    decode steps (done at 100 ms); the last two are sent then and take the same 10 steps (done at 200 ms). 40 tokens
    over 0.2 s = 200 tokens/s, half a burst of all 4 at once (40 tokens in 10 steps), every TTFT one step."""
    pt = closed_loop(_flat(0.01), MIXED, Requests((16,), (10,)), concurrency=2, n=4)
    assert pt.tokens_per_s == pytest.approx(200)
    assert burst_tokens_per_s(_flat(0.01), MIXED, Requests((16,), (10,)), 4) == pytest.approx(400)
    assert pt.ttft[50] == pytest.approx(0.01) and pt.ttft[99] == pytest.approx(0.01)
    assert pt.tpot[50] == pytest.approx(0.01)
    assert pt.requests_per_s == pytest.approx(4 / 0.2)


def test_a_concurrency_above_the_servers_cap_queues_in_the_server():
    """A cap of 1 request, 2 in flight, 3 requests of 10 + 5 tokens: request 0 runs 5 steps (done at 50 ms) while
    request 1 waits in the server; request 2 is sent at 50 ms as request 1 starts (TTFT 60 ms) and starts when it
    ends at 100 ms (TTFT 110 - 50 = 60 ms). TTFTs 10, 60, 60 ms: median 60 ms (no warm-up share left out: a finite
    benchmark reports every request); 15 tokens over 150 ms = 100 tokens/s."""
    one = Scheduler("t", "test", "vllm", 1, 4096, True, True, 0.9)
    pt = closed_loop(_flat(0.01), one, Requests((10,), (5,)), concurrency=2, n=3)
    assert pt.ttft[50] == pytest.approx(0.06)
    assert pt.tokens_per_s == pytest.approx(100)
    run = closed_loop_run(_flat(0.01), one, Requests((10,), (5,)), concurrency=2, n=3)
    assert sorted(run.ttft_s.tolist()) == pytest.approx([0.01, 0.06, 0.06])
    assert run.ttft_s.mean() == pytest.approx(0.13 / 3)  # the mean a harness publishes, below this median


def test_a_concurrency_of_all_requests_is_the_burst():
    """c >= n: every request sent at once, the burst (burst_tokens_per_s) exactly."""
    reqs = Requests((16, 16, 16, 16), (10, 10, 30, 30))
    pt = closed_loop(_flat(0.01), MIXED, reqs, concurrency=8, n=4)
    assert pt.tokens_per_s == pytest.approx(burst_tokens_per_s(_flat(0.01), MIXED, reqs, 4))
    assert pt.tokens_per_s == pytest.approx(80 / 0.30)


@pytest.mark.parametrize(("c", "n"), [(0, 10), (4, 0), (4, MAX_REQUESTS + 1)])
def test_a_loop_outside_the_caps_is_refused(c, n):
    with pytest.raises(ValueError, match="requests"):
        closed_loop(_flat(0.01), MIXED, Requests((16,), (10,)), c, n)
