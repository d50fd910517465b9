"""A serving front end's work on a request (HTTP, tokenising the prompt, the hop to the engine; data/serving.yaml
request_overhead_ms + tokenize_us_per_token) is host CPU work like the engine's step times: on a host `host_speed`
times as fast single-threaded it takes 1/host_speed as long (planner.engine.host_speed.host_seconds), in the TTFT
alone, the serving simulation and a streamed row's first-token lag. Answers counted by hand."""

from dataclasses import replace

import pytest

from planner.engine.host_speed import host_seconds
from planner.engine.plan import Plan
from planner.engine.serving import serving_point
from planner.engine.serving_sim import simulate
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import Scheduler, load_schedulers
from planner.validation.measured import as_known_now, first_token_lag_s, load_measurements
from tests.fixtures.serving_engine import flat_steps

MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def test_host_seconds_divides_by_the_speed():
    assert host_seconds(0.004, 0.5) == pytest.approx(0.008)
    assert host_seconds(0.004, 2.0) == pytest.approx(0.002)


def test_the_ttft_alone_charges_the_front_end_on_the_plans_host():
    """vLLM's front end: 4 ms a request + 1.5 us a prompt token; a 1,000-token prompt: 5.5 ms, on a host half as
    fast 11 ms. The prefill step's own host time, vLLM V1's 260 us a step (data/runtimes.yaml step_host_us), doubles
    too: the prefill grows by 260 us, the TTFT by 5.5 + 0.26 ms."""
    gpu, facts = load_catalog().get("h100-sxm"), load_facts()
    sched = load_schedulers().get("vllm").on(gpu.id, gpu.vram_gib)
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 1000, 10), "bf16", runtime="vllm")
    ref = serving_point(plan, gpu, facts, 1, 1000, 10, sched)
    slow = serving_point(replace(plan, host_speed=0.5), gpu, facts, 1, 1000, 10, sched)
    assert ref.front_end_s == pytest.approx(0.0055)
    assert slow.front_end_s == pytest.approx(0.011)
    assert slow.prefill_s - ref.prefill_s == pytest.approx(260e-6)
    assert slow.ttft_s - ref.ttft_s == pytest.approx(0.0055 + 260e-6)


def test_the_simulation_queues_requests_through_the_front_end_at_the_hosts_speed():
    """A 10 ms front end on a host half as fast: 20 ms a request. Two requests sent at once reach the scheduler at
    20 and 40 ms; each 10-token prompt with one output token is one 1 ms step: TTFT 21 and 41 ms."""
    steps = replace(flat_steps(0.001, 10**6), host_speed=0.5)
    run = simulate(steps, replace(MIXED, request_overhead_s=0.01), [0.0] * 2, [10] * 2, [1] * 2)
    assert sorted(run.ttft_s.tolist()) == pytest.approx([0.021, 0.041])


def test_a_streamed_v1_rows_first_token_lag_runs_on_its_host():
    """Spare Cores' SmolLM2 chat row on GCP's a2-highgpu-1g (Cascade Lake, host_speed 0.63, read after): through
    vLLM V1's OpenAI server, 4 ms + 256 tokens x 1.5 us = 4.384 ms at the reference speed, 4.384 / 0.63 = 6.959 ms
    there; V1 emits the first token with its step (no first-token steps)."""
    row = next(r for r in load_measurements() if r.id == "scv-smollm2-135m-bf16-a100-sxm-40gb-chat256-ttft")
    now = as_known_now(row)
    assert (now.host_speed, now.api_server, now.engine, now.prompt_tokens) == (0.63, True, "v1", 256)
    assert first_token_lag_s(now) == pytest.approx(4.384e-3 / 0.63)
    assert first_token_lag_s(replace(now, host_speed=None)) == pytest.approx(4.384e-3)
