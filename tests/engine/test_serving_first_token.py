"""A closed loop's first token (planner.engine.serving): the server's front end first (Scheduler.front_end_s, the
formula the simulation and the validation rows charge), then the prompt's prefill; a decode step in flight only when
other sequences run, or where the scheduler's overlapped loop hands the first token out after the next step
(SGLang: sglang PR #2067, #25772). Answers from the point's own prefill and step times, combined by hand."""

import pytest

from planner.engine.plan import Plan
from planner.engine.serving import serving_point
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import load_schedulers

FACTS = load_facts()
GPU = FACTS.catalog.get("h100-sxm")
PLAN = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm", price_tier="community")


def test_one_sequence_alone_waits_for_no_decode_step():
    p = serving_point(PLAN, GPU, FACTS, 1, 512, 256)
    assert p.front_end_s == 0.0 and p.ttft_s == pytest.approx(p.prefill_s)
    # one alone: prefill, then 255 decode steps, nothing else prefilled
    assert 1 / p.requests_per_s == pytest.approx(p.prefill_s + 255 * p.decode_step_s)


def test_vllm_s_front_end_comes_first():
    """vLLM's front end on a 512-token prompt: 4 ms + 512 x 1.5 us = 4.768 ms, before the prefill."""
    vllm = load_schedulers().serving("vllm", GPU.id, GPU.vram_gib)
    p = serving_point(PLAN, GPU, FACTS, 1, 512, 256, vllm)
    assert p.front_end_s == pytest.approx(0.004768)
    assert p.ttft_s == pytest.approx(0.004768 + p.prefill_s)


def test_under_load_the_step_in_flight_is_waited_for_once():
    """At 32 sequences the new prompt waits for the step in flight (unchanged); SGLang's late first token is that
    same step, not a second one; alone, SGLang's first token still waits one step."""
    vllm = load_schedulers().serving("vllm", GPU.id, GPU.vram_gib)
    sglang = load_schedulers().serving("sglang", GPU.id, GPU.vram_gib)
    assert sglang.host_overlapped and not vllm.host_overlapped
    for sched in (vllm, sglang):
        p = serving_point(PLAN, GPU, FACTS, 32, 512, 256, sched)
        assert p.ttft_s == pytest.approx(sched.front_end_s(512) + p.prefill_s + p.decode_step_s)
    alone = serving_point(PLAN, GPU, FACTS, 1, 512, 256, sglang)
    assert alone.ttft_s == pytest.approx(sglang.front_end_s(512) + alone.prefill_s + alone.decode_step_s)


def test_a_runtime_without_a_serving_engine_has_no_front_end():
    assert load_schedulers().serving("pytorch-eager", GPU.id, GPU.vram_gib) is None
