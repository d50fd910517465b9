"""One definition of a step's host time for the decode estimate and the serving simulation (issue 32 item 6):
host(b) = step_host_us + b x host_us_per_seq (Efficiency.step_host_seconds), in series with the GPU's step. The
expected figures are derived by hand from that formula: a batch-64 V0 step at 1.9 ms + 64 x 90 us = 7.66 ms."""

from dataclasses import replace

import pytest

from planner.engine.phases import generate_phases
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.engine.estimate import estimate_gpu, setup_on
from planner.engine.serving_sim import scheduler_efficiency, step_times
from planner.engine.sweep import affine_work, gpu_constants
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import Efficiency, with_engine_generation
from planner.inputs.serving_runtimes import load_schedulers

FACTS = load_facts()
GPU = FACTS.catalog.get("h100-sxm")
PLAN = Plan(load_models().get("llama-3-8b"), Generate(64, 128, 65), "bf16", runtime="vllm")
EFF = Efficiency(0.8, 0.7, 1.5, 1.0, 1.0, "by hand")


def _decode(eff: Efficiency) -> float:
    """Seconds of the plan's decode phase (64 sequences, 64 steps) on the H100 under `eff`."""
    s = setup_on(PLAN, GPU, FACTS)
    return phase_seconds(generate_phases(PLAN.model, PLAN.workload, s, 64, 1.0)[-1], GPU, eff)


def test_a_host_step_is_the_fixed_part_plus_each_sequence():
    """1.9 ms + 64 x 90 us = 7.66 ms; the current generation (no per-sequence term): 1.9 ms at any batch."""
    v0 = replace(EFF, step_host_us=1900.0, host_us_per_seq=90.0)
    assert v0.step_host_seconds(64) == pytest.approx(0.00766)
    assert replace(v0, host_us_per_seq=0.0).step_host_seconds(64) == pytest.approx(0.0019)


def test_a_batch_64_v0_decode_step_is_gpu_time_plus_host_time_in_series():
    """The decode estimate: 64 steps of 64 sequences. With no host work the phase is the GPU's time G; with
    1.9 ms a step it is G + 64 x 1.9 ms; with V0's 90 us a sequence more it is G + 64 x 7.66 ms: the host time
    adds to the GPU's whatever the GPU does (the GPU waits for it), and nothing of it overlaps."""
    gpu_only = _decode(EFF)
    fixed = _decode(replace(EFF, step_host_us=1900.0))
    v0 = _decode(replace(EFF, step_host_us=1900.0, host_us_per_seq=90.0))
    assert fixed - gpu_only == pytest.approx(64 * 0.0019, rel=1e-9)
    assert v0 - gpu_only == pytest.approx(64 * (0.0019 + 64 * 90e-6), rel=1e-9)


def test_the_estimate_and_the_simulation_charge_the_same_v0_step():
    """A 64-decode step under 'v0-sync' is 64 x host_us_per_seq longer than under the current generation, both in
    the simulation's step times and in the decode estimate's step (one decode step: its phase over 64 steps / 64):
    the same step, the same answer (issue 32 item 6)."""
    profile = load_schedulers().get("vllm")
    us = profile.host_us_per_seq("v0-sync")
    assert 80 <= us <= 105  # data/serving.yaml's bounds for vLLM before 0.6.0
    sched = profile.on(GPU.id, GPU.vram_gib)
    v1_sim = step_times(PLAN, GPU, FACTS, sched, 1, 640)
    v0_sim = step_times(PLAN, GPU, FACTS, replace(sched, host_us_per_seq=us), 1, 640)
    args = (64, 0, 64 * 640, 0.0, 64)
    sim_extra = v0_sim.seconds(*args) - v1_sim.seconds(*args)
    eff = scheduler_efficiency(PLAN, GPU, FACTS, replace(sched, host_us_per_seq=us))[1]
    est_extra = (_decode(eff) - _decode(replace(eff, host_us_per_seq=0.0))) / 64
    assert sim_extra == pytest.approx(64 * us * 1e-6, rel=1e-9)
    assert est_extra == pytest.approx(64 * us * 1e-6, rel=1e-9)


def test_the_default_estimate_is_the_current_generation_s():
    """Users' estimates take vLLM's current engine (V1): no per-sequence host time, so the decode phase's host
    work is its steps x the per-step figure alone; an older generation named adds 64 x 64 x its figure."""
    e = estimate_gpu(PLAN, GPU, FACTS)
    eff = e.efficiency
    assert eff.host_us_per_seq == 0.0
    decode = e.phases[-1]
    assert decode.step_host_s == pytest.approx(64 * eff.step_host_us * 1e-6)
    old = replace(FACTS, runtimes=with_engine_generation(FACTS.runtimes, "vllm", 78.0))
    e0 = estimate_gpu(PLAN, GPU, old)
    assert e0.phases[-1].step_host_s - decode.step_host_s == pytest.approx(64 * 64 * 78e-6)


def test_the_sweep_refuses_a_per_sequence_term_rather_than_drop_it():
    """The page's sweep has no term for it: it says so instead of answering without it."""
    work = affine_work(PLAN.model, PLAN.workload, setup_on(PLAN, GPU, FACTS), 1)
    with pytest.raises(ValueError, match="per sequence"):
        gpu_constants(work, GPU, replace(EFF, host_us_per_seq=90.0))
