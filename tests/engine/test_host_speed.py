"""The host CPU's speed (planner.engine.host_speed): host-side times divided by the host's single-thread speed over
the reference hosts', the GPU's own time untouched; default 1 changes nothing."""

from dataclasses import replace

import pytest

from planner.engine.estimate import efficiency_on, estimate_gpu
from planner.engine.host_speed import on_host
from planner.engine.plan import Plan, check_plan
from planner.engine.roofline import pass_seconds
from planner.engine.phases import PREFILL, Phase
from planner.engine.serving_sim import scheduler_efficiency, step_times
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import Efficiency
from planner.inputs.serving_runtimes import load_schedulers
from planner.views.explain_text import host_speed_row, inputs_rows
from planner.views.plan_inputs import DEFAULTS
from planner.views.share import decode, encode

GPU = load_catalog().get("h100-sxm")
# 20 us of Python dispatch a kernel, 1.5 us of GPU gap, 1,000 us a step and 80 us a sequence of serial CPU work
EFF = Efficiency(0.8, 0.9, 1.5, 1.0, 1.0, "test", host_us_per_kernel=20.0, step_host_us=1000.0,
                 host_us_per_seq=80.0, prefill_host_us_per_kernel=20.0)


def test_every_host_time_is_divided_by_the_speed_and_no_gpu_time():
    fast = on_host(EFF, 2.0)
    assert (fast.host_us_per_kernel, fast.prefill_host_us_per_kernel, fast.step_host_us, fast.host_us_per_seq) == \
        (10.0, 10.0, 500.0, 40.0)
    assert (fast.launch_overhead_us, fast.mem_bw_efficiency, fast.compute_efficiency) == (1.5, 0.8, 0.9)
    assert on_host(EFF, 1.0) is EFF


def test_a_host_bound_prefill_takes_the_hosts_time():
    """300 kernels and no other GPU work: the GPU is busy 300 x 1.5 us = 0.45 ms, the host dispatches them at 20 + 20
    us (eager dispatch and eager prefill's) = 12 ms, on a host half as fast 24 ms; a host four times as fast, 3 ms."""
    prefill = Phase(PREFILL, (), 300.0, 1, 0, 1.0)
    dispatch_only = replace(EFF, step_host_us=0.0, host_us_per_seq=0.0)
    assert pass_seconds(prefill, GPU, on_host(dispatch_only, 0.5)) == pytest.approx(300 * 80e-6)
    assert pass_seconds(prefill, GPU, on_host(dispatch_only, 4.0)) == pytest.approx(300 * 10e-6)


def test_the_plans_host_speed_reaches_the_estimate_and_defaults_to_none():
    """Eager PyTorch decoding GPT-2 at batch 1 on an H100 is host-bound (its kernels are microseconds long), so half
    the host speed doubles the job's time; the efficiencies at the default speed are the runtime's own."""
    facts = load_facts()
    plan = Plan(load_models().get("gpt2-124m"), Generate(100, 16, 64), "bf16", runtime="pytorch-eager", batch=1)
    assert efficiency_on(plan, GPU, facts) == facts.runtimes.get("pytorch-eager").efficiency(GPU.memory_class)
    slow = replace(plan, host_speed=0.5)
    assert efficiency_on(slow, GPU, facts).host_us_per_kernel == \
        pytest.approx(2 * efficiency_on(plan, GPU, facts).host_us_per_kernel)
    assert estimate_gpu(slow, GPU, facts).seconds == pytest.approx(2 * estimate_gpu(plan, GPU, facts).seconds,
                                                                    rel=0.01)


def test_a_serving_engines_own_host_times_are_scaled_once():
    """vLLM V0's 1,712 us a step and 78 us a sequence on a host twice as fast: 856 and 39 us, and the streamed
    first token's one step of host work 856 us."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 100, 10), "bf16", runtime="vllm", host_speed=2.0)
    sched = replace(load_schedulers().get("vllm").on(GPU.id, GPU.vram_gib), step_host_us=1712.0, host_us_per_seq=78.0,
                    first_token_steps=1)
    _, eff = scheduler_efficiency(plan, GPU, load_facts(), sched)
    assert (eff.step_host_us, eff.host_us_per_seq) == (856.0, 39.0)
    assert step_times(plan, GPU, load_facts(), sched, 1, 100).first_token_s == pytest.approx(856e-6)


def test_a_speed_out_of_bounds_is_refused_naming_it():
    plan = Plan(load_models().get("gpt2-124m"), Generate(1, 16, 16), "bf16", host_speed=9.0)
    with pytest.raises(ValueError, match="host speed must be between 0.25 and 4"):
        check_plan(plan)


def test_the_link_keeps_a_stated_speed_and_omits_the_default():
    assert "host" not in encode(DEFAULTS)
    params = encode(replace(DEFAULTS, host=0.5))
    assert params["host"] == "0.5"
    assert decode(params)[0].host == 0.5


def test_explain_says_what_the_speed_divided():
    """The inputs behind the figures name the speed and what it divided; the dispatch row shows the divided time."""
    facts = load_facts()
    plan = Plan(load_models().get("gpt2-124m"), Generate(100, 16, 64), "bf16", runtime="pytorch-eager", batch=1,
                host_speed=0.5)
    rows = dict((r[0], r[1]) for r in inputs_rows(estimate_gpu(plan, GPU, facts), False))
    assert "divided by 0.5" in rows["Host CPU speed"]
    reference_us = facts.runtimes.get("pytorch-eager").efficiency(GPU.memory_class).host_us_per_kernel
    assert rows["Host dispatch"].startswith(f"{2 * reference_us:g} us of CPU per kernel")
    assert "as measured" in host_speed_row(1.0)[1]
