"""vLLM V0's time to first token (data/serving.yaml vllm `engines`: eager_prefill, first_token_steps): its prefill
steps dispatch every kernel from Python (CUDA graphs for decode steps only), and a streamed request's first token
waits for the next step's host work (asynchronous output processing). Expected figures are derived by hand from a
flat phase, or from the data file's sourced constants (1,712 us a step + 78 us a sequence)."""

from dataclasses import replace

import pytest

from planner.engine.phases import PREFILL, Phase
from planner.engine.plan import Plan
from planner.engine.roofline import pass_seconds
from planner.engine.serving_sim import StepTimes, scheduler_efficiency, simulate, step_times
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import EAGER_RUNTIME, Efficiency, eager_dispatch_us, with_engine_generation
from planner.inputs.serving_runtimes import Scheduler, load_schedulers
from planner.validation.measured import eager_prefill_us, first_token_lag_s, load_measurements

GPU = load_catalog().get("h100-sxm")
# no per-kernel dispatch but the eager prefill's; 1.5 us of GPU gap a kernel, no serial step time
EFF = Efficiency(0.8, 0.9, 1.5, 1.0, 1.0, "test", prefill_host_us_per_kernel=20.0)
MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)


def test_an_eager_prefill_is_host_bound_where_its_kernels_are_short():
    """300 kernels, no GPU work beyond their gaps: the GPU is busy 300 x 1.5 us = 0.45 ms; the host dispatches the
    prefill's 300 kernels at 20 us, 6 ms, beside it: the prefill takes 6 ms, the longer of the two. A decode phase
    of the same kernels is launched as the runtime launches it (a graph): 0.45 ms."""
    prefill = Phase(PREFILL, (), 300.0, 1, 0, 1.0)
    decode = Phase("decode", (), 300.0, 1, 1, 1.0)
    assert pass_seconds(prefill, GPU, EFF) == pytest.approx(300 * 20e-6)
    assert pass_seconds(decode, GPU, EFF) == pytest.approx(300 * 1.5e-6)


def test_the_data_file_gives_v0_an_eager_prefill_and_a_first_token_one_step_late():
    """V0 0.6-0.10 ('v0'): eager prefill, first token after one more step; before 0.6 ('v0-sync'): eager prefill,
    outputs processed in the step itself; V1: neither (piecewise graphs, outputs in the API server's process)."""
    vllm = load_schedulers().get("vllm")
    assert (vllm.eager_prefill("v0"), vllm.first_token_steps("v0")) == (True, 1)
    assert (vllm.eager_prefill("v0-sync"), vllm.first_token_steps("v0-sync")) == (True, 0)
    assert (vllm.eager_prefill("v1"), vllm.first_token_steps("v1")) == (False, 0)


def test_a_streamed_v0_first_token_waits_one_step_of_host_work():
    """An AccelMark row (vLLM 0.7.3 V0, streamed, batch 1): 1,712 us + 1 x 78 us = 1.79 ms after its prefill; the
    same row's V1 or 'v0-sync' generation, or a row not streamed (a max_tokens 1 request), waits none."""
    row = next(r for r in load_measurements() if r.id == "accelmark-a-h100-sxm-vllm073-prefill")
    streamed = replace(row, streamed_ttft=True)
    assert first_token_lag_s(streamed) == pytest.approx(1.790e-3)
    for engine in ("v1", "v0-sync"):
        assert first_token_lag_s(replace(streamed, engine=engine)) == 0.0
    assert first_token_lag_s(replace(row, streamed_ttft=None)) == 0.0


def test_a_v0_row_dispatches_its_prefill_at_eager_pytorchs_cost():
    """The eager prefill's per-kernel CPU time is eager PyTorch's as estimates use it (one fact, one place), and
    with_engine_generation hands it to the vLLM profile's efficiency alone."""
    runtimes = load_facts().runtimes
    eager = runtimes.get(EAGER_RUNTIME)
    expected = eager.efficiency("hbm").host_us_per_kernel
    assert eager_dispatch_us(runtimes) == expected > 0
    assert eager_prefill_us("vllm", "v0", runtimes) == expected
    assert eager_prefill_us("vllm", "v1", runtimes) == 0.0
    moved = with_engine_generation(runtimes, "vllm", 78.0, 1712.0, expected)
    assert moved.get("vllm").efficiency("hbm").prefill_host_us_per_kernel == expected
    assert moved.get("tensorrt-llm").efficiency("hbm").prefill_host_us_per_kernel == 0.0


def test_the_simulation_emits_a_v0_first_token_after_the_next_steps_host_work():
    """One request (100-token prompt, 10 tokens), every step 10 ms of GPU + 1 ms a sequence: its prefill step ends at
    11 ms; the next step's host work, 2 ms a step + 1 x 1 ms, passes before its first token is out: TTFT 14 ms. Its
    later tokens come a step apart as before (TPOT 11 ms, done at 110 ms); a scheduler that emits the token with its
    step (first_token_steps 0) gives TTFT 11 ms."""
    flat = (0.010,) * 4097
    late = StepTimes(flat, flat, (0.0,) * 4097, 0.0, 10**7, 1e-6, 1.0, 0.001, first_token_s=0.002,
                     first_token_steps=1)
    run = simulate(late, MIXED, [0.0], [100], [10])
    assert run.ttft_s[0] == pytest.approx(0.014)
    assert run.tpot_s[0] == pytest.approx(0.011)
    assert run.e2e_s[0] == pytest.approx(0.110)
    on_time = simulate(replace(late, first_token_steps=0), MIXED, [0.0], [100], [10])
    assert on_time.ttft_s[0] == pytest.approx(0.011)


def test_a_v0_scheduler_hands_its_eager_prefill_to_the_step_model():
    """scheduler_efficiency carries the generation's eager prefill dispatch into the efficiencies that time the
    simulated steps, and step_times its first-token wait: 1 step x 1,712 us."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 100, 10), "bf16", runtime="vllm")
    sched = replace(load_schedulers().get("vllm").on(GPU.id, GPU.vram_gib), prefill_host_us_per_kernel=20.0,
                    step_host_us=1712.0, host_us_per_seq=78.0, first_token_steps=1)
    _, eff = scheduler_efficiency(plan, GPU, load_facts(), sched)
    assert eff.prefill_host_us_per_kernel == 20.0
    st = step_times(plan, GPU, load_facts(), sched, 1, 100)
    assert (st.first_token_s, st.first_token_steps) == (pytest.approx(1712e-6), 1)
    assert st.first_token_wait(1) == pytest.approx(1790e-6)
