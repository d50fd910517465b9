"""The OpenAI server's front end serves one request at a time (serving_sim.front_end_entries: one preprocessing
thread, vllm-project/vllm issue #25301): a burst enters the scheduler over n x the front end's time, while spaced
arrivals wait for nothing more. Hand-built flat steps, answers counted by hand."""

from dataclasses import replace

import pytest

from planner.engine.serving_sim import simulate
from planner.inputs.serving_runtimes import Scheduler
from tests.fixtures.serving_engine import flat_steps

MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def test_a_burst_passes_the_front_end_one_request_at_a_time():
    """Three requests sent at once through a 10 ms front end reach the scheduler at 10, 20 and 30 ms; each
    10-token prompt with a 1-token output is served by one 1 ms step: TTFT 11, 21 and 31 ms. Without the front end's
    queue all three would enter at 10 ms and share one step (11 ms each)."""
    run = simulate(flat_steps(0.001, 10**6), replace(MIXED, request_overhead_s=0.01), [0.0] * 3, [10] * 3, [1] * 3)
    assert sorted(run.ttft_s.tolist()) == pytest.approx([0.011, 0.021, 0.031])


def test_requests_spaced_wider_than_the_front_end_wait_for_nothing_more():
    """Arrivals 50 ms apart through a 10 ms front end: none queues, each TTFT is 10 ms + its 1 ms step."""
    front = replace(MIXED, request_overhead_s=0.01)
    run = simulate(flat_steps(0.001, 10**6), front, [0.0, 0.05, 0.1], [10] * 3, [1] * 3)
    assert run.ttft_s.tolist() == pytest.approx([0.011] * 3)
