"""Serving mechanisms the scored rows pointed at (validation/REPORT.md): multi-step scheduling rounds, the per-step
CPU work as the engine charges it, the front end's time per request, an overlapped scheduler's late admission, and a
ShareGPT-like spread of lengths. Each
expected figure is derived by hand from a flat step model or from the runtime's data."""

from dataclasses import replace

import numpy as np
import pytest

from planner.engine.deployment import search
from planner.engine.plan import Plan
from planner.engine.serving_sim import (SHAREGPT_MAX_PROMPT, SHAREGPT_MAX_TOTAL, SHAREGPT_MIN_TOKENS, Requests,
                                        Slo, StepTimes, scheduler_efficiency, simulate, step_times)
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import Scheduler, load_schedulers

FACTS = load_facts()
STEP = 0.01  # every step of the flat model, seconds


def _flat(tokens: int = 4096) -> StepTimes:
    flat = (STEP,) * (tokens + 1)
    return StepTimes(flat, flat, (0.0,) * (tokens + 1), 0.0, 10**7, 1e-6, 1.0)


MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def test_a_multi_step_round_makes_a_new_request_wait_for_its_end():
    """A arrives at 0 (10-token prompt, 20 outputs): its prefill step ends at 10 ms. B arrives at 15 ms, during A's
    first decode step. One step a round: that step ends at 20 ms, B's prompt rides the next step, first token at
    30 ms (TTFT 15 ms). Four steps a round: the round runs 10-50 ms whatever arrives, B's prompt takes the step
    50-60 ms (TTFT 45 ms)."""
    one = simulate(_flat(), MIXED, [0.0, 0.015], [10, 10], [20, 20])
    four = simulate(_flat(), replace(MIXED, steps_per_round=4), [0.0, 0.015], [10, 10], [20, 20])
    # the measured share starts at request int(2 x 0.1) = 0: both requests are in ttft_s
    assert one.ttft_s.tolist() == pytest.approx([0.01, 0.015])
    assert four.ttft_s.tolist() == pytest.approx([0.01, 0.045])


def test_an_overlapped_scheduler_sees_a_new_request_a_step_later():
    """SGLang's overlap loop receives requests as it launches step i+1, while the GPU runs step i. A arrives at 0 on
    an idle engine: received at once, prefill 0-10 ms. B arrives at 15 ms, during A's first decode step (10-20 ms),
    which was launched at 10 ms: B is received as the step 20-30 ms launches and rides 30-40 ms (TTFT 25 ms, 15 ms
    at step boundaries). B at 5 ms, during A's prefill: received at 10 ms, rides 20-30 ms (TTFT 25 ms, not 15).
    Whether the steps mix prompts with decodes or not, the same. And it hands a step's tokens out only after the
    next step (serving_sim.first_token_late_s, sglang PR #2067 / #25772): each first token one 10 ms decode step
    later, TTFT 20 and 35 ms; a lone request's 20 ms (2 steps), its end to end unchanged."""
    over = replace(MIXED, host_overlapped=True)
    def ttft(sched, second: float) -> list[float]:
        return simulate(_flat(), sched, [0.0, second], [10, 10], [20, 20]).ttft_s.tolist()

    for sched in (over, replace(over, mixed_batches=False)):
        assert ttft(sched, 0.015) == pytest.approx([0.02, 0.035])
        assert ttft(sched, 0.005) == pytest.approx([0.02, 0.035])
    assert ttft(MIXED, 0.005) == pytest.approx([0.01, 0.015])
    lone = simulate(_flat(), over, [0.0], [100], [10])
    assert lone.ttft_s[0] == pytest.approx(2 * STEP) and lone.e2e_s[0] == pytest.approx(10 * STEP)
    # A wants one token, so after its prefill nothing is left to run and no step was launched ahead: B (at 5 ms) is
    # received as A's step ends and rides 10-20 ms (TTFT 15 ms); neither waits for a next step (one token each)
    assert simulate(_flat(), over, [0.0, 0.005], [10, 10], [1, 1]).ttft_s.tolist() == pytest.approx([0.01, 0.015])
    # whole prompts of 3,000 tokens in a 4,096-token budget, one a step: A runs 0-10 ms while B waits, so the loop
    # launches B's step (10-20 ms) ahead; C, arriving at 5 ms, is received at 10 ms and rides 20-30 ms (TTFT 25 ms)
    whole = replace(over, chunked_prefill=False)
    run = simulate(_flat(), whole, [0.0, 0.0, 0.005], [3000, 3000, 10], [1, 1, 1])
    assert run.ttft_s.tolist() == pytest.approx([0.01, 0.02, 0.025])


def test_a_lone_request_runs_as_fast_in_rounds():
    """Nothing arrives meanwhile: 1 prefill step + 9 decode steps either way (the last round cut short when the
    request finishes)."""
    run = simulate(_flat(), replace(MIXED, steps_per_round=8), [0.0], [100], [10])
    assert run.e2e_s[0] == pytest.approx(10 * STEP)


def test_the_front_end_time_counts_in_ttft_not_in_the_steps():
    """5 ms in the HTTP server and tokenizer before the scheduler sees the request: TTFT 5 + 10 ms, TPOT 10 ms."""
    run = simulate(_flat(), replace(MIXED, request_overhead_s=0.005), [0.0], [100], [10])
    assert run.ttft_s[0] == pytest.approx(0.015)
    assert run.tpot_s[0] == pytest.approx(STEP)
    assert run.e2e_s[0] == pytest.approx(0.005 + 10 * STEP)


def _h100_steps(**changes):
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm")
    gpu = FACTS.catalog.get("h100-sxm")
    sched = replace(load_schedulers().get("vllm").on(gpu.id, gpu.vram_gib), **changes)
    return plan, gpu, sched


def test_each_step_pays_the_runtime_host_work_once_or_once_a_round():
    """The engine adds vLLM's per-step CPU work (data/runtimes.yaml step_host_us) after each step's GPU work. The
    simulation's steps carry exactly that: a 64-decode step and a 2,000-token prefill step are one step_host_us
    longer than with the work overlapped (SGLang's scheduler), and a tenth of it longer with 10 steps a round."""
    plan, gpu, sched = _h100_steps()
    host_s = scheduler_efficiency(plan, gpu, FACTS, sched)[1].step_host_us * 1e-6
    assert host_s > 0
    base = step_times(plan, gpu, FACTS, sched, 1, 640)
    hidden = step_times(plan, gpu, FACTS, replace(sched, host_overlapped=True), 1, 640)
    rounds = step_times(plan, gpu, FACTS, replace(sched, steps_per_round=10), 1, 640)
    for args in ((64, 0, 64 * 640, 0.0, 64), (0, 2000, 0, 2000 * 2001 / 2, 1)):
        assert base.seconds(*args) - hidden.seconds(*args) == pytest.approx(host_s, rel=1e-6)
        assert rounds.seconds(*args) - hidden.seconds(*args) == pytest.approx(host_s / 10, rel=1e-6)


def test_an_fp8_kv_cache_halves_the_bytes_per_token():
    """Llama-3-8B: 2 x 32 layers x 1,024 KV width per token, 2 bytes in bf16 and 1 in fp8: 131 kB -> 65.5 kB, so
    about twice the tokens fit in what the weights leave."""
    plan, gpu, sched = _h100_steps()
    bf16 = step_times(plan, gpu, FACTS, sched, 1, 640)
    fp8 = step_times(replace(plan, kv_dtype="fp8"), gpu, FACTS, sched, 1, 640)
    assert fp8.kv_gb_per_token == pytest.approx(2 * 32 * 1024 * 1 / 1e9, rel=0.01)
    assert fp8.kv_tokens == pytest.approx(2 * bf16.kv_tokens, rel=0.01)


def test_a_sharegpt_spread_keeps_the_means_within_the_benchmarks_cuts():
    """Exponential lengths of mean 220 and 200: median 220 ln 2 = 152 and 200 ln 2 = 139 (the cuts move them a
    little), means kept within a token, every prompt within 4..1,024, every request within 2,048 tokens."""
    r = Requests.sharegpt_like(220, 200)
    p, o = np.array(r.prompts), np.array(r.outputs)
    assert p.mean() == pytest.approx(220, abs=1) and o.mean() == pytest.approx(200, abs=1.5)
    assert np.median(p) == pytest.approx(220 * np.log(2), rel=0.05)
    assert np.median(o) == pytest.approx(200 * np.log(2), rel=0.05)
    assert p.min() >= SHAREGPT_MIN_TOKENS and p.max() <= SHAREGPT_MAX_PROMPT
    assert o.min() >= SHAREGPT_MIN_TOKENS and (p + o).max() <= SHAREGPT_MAX_TOTAL
    assert r == Requests.sharegpt_like(220, 200)  # deterministic


def test_a_uniform_spread_runs_evenly_from_one_to_twice_the_means():
    """The benchmarks' random dataset at range ratio 0 draws a prompt of mean 4 uniformly on 1..8 and an output of
    mean 3 on 0..6. Four rows at the quantiles 1/8, 3/8, 5/8, 7/8: prompts 8 x q = 1, 3, 5, 7 (mean 4), outputs 6 x q
    = 0.75, 2.25, 3.75, 5.25, rounded 1, 2, 4, 5 (mean 3); the prompts shuffled, the outputs in order."""
    r = Requests.uniform(4, 3, rows=4)
    assert sorted(r.prompts) == [1, 3, 5, 7] and r.outputs == (1, 2, 4, 5)
    assert Requests.spread(4, 3, "uniform") == Requests.uniform(4, 3)
    wide = Requests.uniform(512, 512)
    assert min(wide.prompts) == 1 and max(wide.prompts) == 1023 and sum(wide.prompts) / len(wide.prompts) == 512


def test_an_slo_below_one_step_is_refused_with_the_step_it_misses():
    """A p95 TPOT target of 0.1 ms is below any decode step of an 8B model (its 16 GB of weights over 3.35 TB/s
    take ~5 ms): no deployment, and each candidate says which step misses by how much."""
    plan, gpu, _ = _h100_steps()
    dep = search(plan, FACTS, load_schedulers(), [gpu], Requests((512,), (256,)), 5.0, Slo(0.5, 1e-4),
                 runtimes=("vllm",), tps=(1,))
    assert dep.best is None and dep.runner_ups
    for c in dep.runner_ups:
        assert "one decode step alone takes" in c.why and "above the p95 TPOT target of 0.1 ms" in c.why
        step_ms = float(c.why.split("takes ")[1].split(" ms")[0])
        assert 16e9 / 3.35e12 * 1e3 < step_ms < 20


def test_requests_spread_fixed_keeps_the_lengths_and_an_unknown_spread_is_named():
    fixed = Requests.spread(512, 256, "fixed")
    assert fixed.prompts == (512,) and fixed.outputs == (256,)
    spread = Requests.spread(512, 256, "sharegpt")
    assert abs(sum(spread.prompts) / len(spread.prompts) - 512) < 0.5 and len(set(spread.prompts)) > 10
    with pytest.raises(ValueError, match="^lengths: expected one of fixed, sharegpt, uniform"):
        Requests.spread(512, 256, "poisson")
