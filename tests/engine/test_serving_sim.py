"""The serving simulation: a hand-built step model whose queueing answers are known in closed form, then the
engine-driven step model against physics."""

import math
from dataclasses import replace

import pytest

from planner.engine.plan import Plan
from planner.engine.serving import serving_point
from planner.engine.serving_sim import (Requests, Slo, StepTimes, poisson_arrivals, saturation_rate, serve_rate,
                                        simulate, step_times)
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import Scheduler, load_schedulers

FACTS = load_facts()


def _flat(step_s: float, tokens: int = 4096, kv: int = 10**7) -> StepTimes:
    """Every step costs `step_s` whatever it carries: no attention terms."""
    flat = (step_s,) * (tokens + 1)
    return StepTimes(flat, flat, (0.0,) * (tokens + 1), 0.0, kv, 1e-6, 1.0)


MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def test_one_request_alone_takes_one_step_per_token():
    """A 100-token prompt fits one step (its first token), then 9 decode steps: TTFT 1 step, end-to-end 10 steps."""
    run = simulate(_flat(0.01), MIXED, [0.0], [100], [10])
    assert run.ttft_s.size == 1 and run.ttft_s[0] == pytest.approx(0.01)
    assert run.e2e_s[0] == pytest.approx(0.10)
    assert run.tpot_s[0] == pytest.approx(0.01)


def test_a_long_prompt_is_chunked_by_the_step_budget():
    """10,000 prompt tokens at a 4,096-token budget: 3 steps to the first token."""
    run = simulate(_flat(0.01), MIXED, [0.0], [10_000], [2])
    assert run.ttft_s[0] == pytest.approx(0.03)


def test_requests_beyond_the_cap_queue():
    """A cap of 1 request: the second, arriving together, waits for the first's 5 steps and then takes its own."""
    one = Scheduler("t", "test", "vllm", 1, 4096, True, True, 0.9)
    run = simulate(_flat(0.01), one, [0.0, 0.0], [10, 10], [5, 5])
    assert sorted(run.done_times.tolist()) == pytest.approx([0.05, 0.10])


def test_saturation_of_a_flat_step_is_the_cap_over_the_request_time():
    """Every step 10 ms, 8 requests at once, each 1 prefill + 9 decode steps: at most 8 requests per 10 steps,
    80 requests/s (a prompt joins the decodes' step, so a replaced request costs no extra step)."""
    eight = Scheduler("t", "test", "vllm", 8, 4096, True, True, 0.9)
    rate = saturation_rate(_flat(0.01), eight, Requests((16,), (10,)))
    assert rate == pytest.approx(80, rel=0.05)


def test_a_runtime_that_does_not_mix_makes_decodes_wait_for_prefills():
    """The same load without mixing: each admission costs its own step, so the decodes' token gaps grow."""
    mixed = serve_rate(_flat(0.01), MIXED, Requests((64,), (20,)), 20.0, n=400)
    alone = serve_rate(_flat(0.01), Scheduler("t", "test", "vllm", 256, 4096, False, True, 0.9),
                       Requests((64,), (20,)), 20.0, n=400)
    assert alone.itl[99] > mixed.itl[99] and alone.tpot[50] > mixed.tpot[50]


def test_a_full_kv_cache_preempts_and_recomputes():
    """A KV cache of 300 tokens and three 100+100-token requests: they can't all keep decoding; one is preempted,
    prefilled again, and every request still finishes."""
    run = simulate(_flat(0.01, kv=300), MIXED, [0.0, 0.0, 0.0], [100, 100, 100], [100, 100, 100])
    assert run.settled and run.preemptions >= 1 and len(run.done_times) == 3


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    a, b = poisson_arrivals(5.0, 200, 7), poisson_arrivals(5.0, 200, 7)
    assert a == b and a != poisson_arrivals(5.0, 200, 8)
    assert a[-1] / 199 == pytest.approx(1 / 5.0, rel=0.2)  # mean gap 1/rate


def _h100(runtime="vllm"):
    m = load_models().get("llama-3-8b")
    plan = Plan(m, Generate(1, 512, 256), "bf16", runtime="vllm")
    gpu = FACTS.catalog.get("h100-sxm")
    sched = load_schedulers().get(runtime).on(gpu.id, gpu.vram_gib)
    return plan, gpu, sched, m


def test_engine_steps_share_the_weight_reads_and_charge_prefill_compute():
    plan, gpu, sched, m = _h100()
    st = step_times(plan, gpu, FACTS, sched, 1, 640)
    weights_s = m.matmul_params * 2 / 3.35e12  # bf16 weights over the H100 SXM's 3.35 TB/s
    assert weights_s < st.dense(1, 1) < 2 * weights_s  # one token: the weight read, within the runtime's efficiency
    assert st.dense(64, 64) < 1.5 * st.dense(1, 1)  # 64 decodes read the weights once
    # 4,096 prompt tokens are compute-bound: at least 2 x params FLOPs per token at the 989 TFLOP/s dense peak
    assert st.dense(4096, 1) >= 4096 * 2 * m.matmul_params / 989e12
    # a step mixing 64 decodes with 2,000 prompt tokens costs more than either alone, less than both
    mixed = st.seconds(64, 2000, 64 * 640, 2000 * 2001 / 2, 65)
    apart = st.seconds(64, 0, 64 * 640, 0, 64) + st.seconds(0, 2000, 0, 2000 * 2001 / 2, 1)
    assert max(st.seconds(64, 0, 64 * 640, 0, 64), st.seconds(0, 2000, 0, 2000 * 2001 / 2, 1)) < mixed < apart


def test_kv_capacity_is_the_memory_left_over_per_token():
    """Llama-3-8B in bf16 on an 80 GB H100 at 0.9: ~16 GB of weights leave ~50 GB, 128 KiB per token (2 x 32 layers
    x 1,024 KV width x 2 B): about 400,000 tokens."""
    plan, gpu, sched, m = _h100()
    st = step_times(plan, gpu, FACTS, sched, 1, 640)
    assert st.kv_gb_per_token == pytest.approx(2 * 32 * 1024 * 2 / 1e9, rel=0.01)
    assert 350_000 < st.kv_tokens < 500_000


def test_latency_grows_with_load_and_the_slo_fails_past_saturation():
    plan, gpu, sched, _ = _h100()
    st = step_times(plan, gpu, FACTS, sched, 1, 640)
    reqs = Requests((512,), (256,))
    sat = saturation_rate(st, sched, reqs)
    low, high = (serve_rate(st, sched, reqs, r, Slo(0.5, 0.05), saturation=sat) for r in (0.2 * sat, 1.5 * sat))
    assert low.ttft[95] < high.ttft[95] and low.tpot[50] < high.tpot[50]
    assert low.meets_slo and not high.meets_slo and high.over_saturation
    assert low.tokens_per_s == pytest.approx(0.2 * sat * 256, rel=0.15)  # below saturation it serves what comes
    assert high.tokens_per_s < 1.1 * sat * 256
    assert math.isfinite(high.ttft[99])


@pytest.mark.parametrize("gpu_id", ["h100-sxm", "l40s"])
def test_the_concurrency_model_and_the_simulation_agree_at_a_full_batch(gpu_id):
    """A queue that never empties with a cap of 64 requests is planner.engine.serving's concurrency 64: both charge
    the replacing requests' prefills; the simulation runs them inside the decodes' steps (one weight read for both),
    so it may be faster, by less than the prefills' share (~1/4 of the time here), never slower beyond noise."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm")
    gpu = FACTS.catalog.get(gpu_id)
    sched = replace(load_schedulers().get("vllm").on(gpu.id, gpu.vram_gib), max_num_seqs=64)
    st = step_times(plan, gpu, FACTS, sched, 1, 640)
    simulated = saturation_rate(st, sched, Requests((512,), (256,))) * 256
    steady = serving_point(plan, gpu, FACTS, 64, 512, 256).tokens_per_s
    assert 0.98 * steady <= simulated <= 1.2 * steady


def test_a_trace_is_drawn_at_random_not_in_its_order():
    """A trace sorted short to long: the first 200 requests drawn hold both kinds, about half each."""
    reqs = Requests((100,) * 500 + (4000,) * 500, (10,) * 1000)
    prompts, _ = reqs.take(200, seed=3)
    assert 60 < prompts.count(4000) < 140 and prompts == reqs.take(200, seed=3)[0]


def test_vllms_victim_is_the_prompt_still_being_prefilled():
    """A 400-token KV cache, a 100-token step budget, 10 ms a step. A (100 + 50 tokens) fills step 1 and decodes;
    B (350-token prompt) takes 99, 99 and 98 tokens beside A's decodes in steps 2-4, when A's 104 + 1 keys and B's
    296 no longer fit: vLLM V1 preempts the newest admission, B mid-prefill (its chunks lost), so A decodes a token
    every step and ends at step 50, 0.50 s; B is prefilled again and finishes after it."""
    budget100 = Scheduler("t", "test", "vllm", 256, 100, True, True, 0.9)
    run = simulate(_flat(0.01, kv=400), budget100, [0.0, 0.0], [100, 350], [50, 20])
    assert run.settled and run.preemptions >= 1
    assert run.done_times[0] == pytest.approx(0.50)
    assert len(run.done_times) == 2 and run.done_times[1] > 0.50


def test_a_step_that_preempted_admits_no_waiting_request():
    """vLLM V1 schedules no waiting request in a step that preempted ('if not preempted_reqs:'). A 400-token cache, a
    100-token budget, 10 ms a step: A (100 + 6) fills step 1; B (350) takes 99, 99, 98 beside A's decodes in steps
    2-4; then A's 104 + 1 keys and B's 296 overflow, B is preempted; step 5 decodes A alone, B re-enters in step 6
    (99 beside A's last token), then 100, 100 and the last 51 in step 9: B's first token at 0.09 s (0.08 s if it
    had re-entered at once), A done at 0.06 s."""
    budget100 = Scheduler("t", "test", "vllm", 256, 100, True, True, 0.9)
    run = simulate(_flat(0.01, kv=400), budget100, [0.0, 0.0], [100, 350], [6, 2])
    assert run.preemptions == 1
    assert run.ttft_s.tolist() == pytest.approx([0.01, 0.09])
    assert run.done_times.tolist() == pytest.approx([0.06, 0.10])
