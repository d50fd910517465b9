"""llama.cpp launches a prompt pass kernel by kernel: ggml's CUDA backend replays a CUDA graph only for single-token
steps (data/runtimes.yaml llama.cpp `prefill_host_us_per_kernel`). Expected figures are derived by hand from the
data file's sourced counts: 34 launches a LLaMA layer (20 graph nodes, 7 activation quantizations before MMQ and 7
stream-k fixups after it) at a C++ launch loop's 3.8 us, over the 12 x 1.2 kernels the planner counts a layer."""

import pytest

from planner.base.schema import DataFileError
from planner.engine import sweep
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.phases import PREFILL, Phase
from planner.engine.plan import Plan
from planner.engine.roofline import pass_seconds
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.runtimes import HOST_US_BOUNDS, load_runtimes
from planner.validation.measured import validation_models
from planner.views.explain_text import inputs_rows, step_time_rows

FACTS = load_facts()
H100 = FACTS.catalog.get("h100-sxm")
SMOLLM = validation_models().get("smollm-135m")  # 30 layers, hidden 576: kernels far shorter than their launches
LAUNCHES_PER_LAYER = 20 + 7 + 7  # graph nodes that launch a kernel + a q8_1 quantization and a fixup per MUL_MAT
COUNTED_PER_LAYER = 12 * 1.2  # the planner's LLaMA-layer kernels x llama.cpp's kernels_per_layer_factor


def test_the_per_kernel_cost_is_34_launches_at_a_cpp_launch_loops_cost_over_the_counted_kernels():
    """34 x 3.8 us / 14.4 = 8.972 us, written 8.97; the launch cost is HOST_US_BOUNDS' floor (3.8 us), one fact."""
    lcpp = load_runtimes().get("llama.cpp")
    assert HOST_US_BOUNDS[0] == 3.8
    assert lcpp.prefill_host_us_per_kernel == pytest.approx(LAUNCHES_PER_LAYER * 3.8 / COUNTED_PER_LAYER, abs=0.003)
    assert lcpp.kernels_per_layer_factor == 1.2
    assert "ne[1] > 1" in lcpp.prefill_host_source and "#7302" in lcpp.prefill_host_source
    assert "#8018" in lcpp.prefill_host_source and "mul_mat_q_stream_k_fixup" in lcpp.prefill_host_source
    assert lcpp.efficiency("hbm").prefill_host_us_per_kernel == lcpp.prefill_host_us_per_kernel
    assert lcpp.efficiency("gddr").prefill_host_us_per_kernel == lcpp.prefill_host_us_per_kernel


def test_a_prompt_pass_waits_for_its_launches_and_a_decode_step_replays_its_graph():
    """100 counted kernels, no GPU work beyond their gaps, llama.cpp's efficiency: a decode step takes its gaps and
    its serial host work; a prompt pass of the same kernels takes the host's 100 x 1.2 x 8.97 us = 1076.4 us of launches
    where that exceeds the gaps, plus the same serial work."""
    eff = load_runtimes().get("llama.cpp").efficiency("hbm")
    gaps = 100 * 1.2 * eff.launch_overhead_us * 1e-6
    serial = eff.step_host_us * 1e-6
    assert gaps < 1076.4e-6
    assert pass_seconds(Phase("decode", (), 100.0, 1, 1, 1.0), H100, eff) == pytest.approx(gaps + serial)
    assert pass_seconds(Phase(PREFILL, (), 100.0, 1, 0, 1.0), H100, eff) == pytest.approx(1076.4e-6 + serial)


def _plan(prompt: int) -> Plan:
    return Plan(SMOLLM, Generate(1, prompt, 1), "q4_k_m", attention="llama.cpp-fa", runtime="llama.cpp", batch=1)


def test_a_tiny_models_short_prompt_takes_at_least_its_launches():
    """SmolLM-135M, a 16-token prompt on an H100: its 30 layers launch at least 30 x 34 kernels at 3.8 us, 3.88 ms
    of CPU, whatever the GPU's own time; the planned prompt pass is no shorter."""
    e = estimate_gpu(_plan(16), H100, FACTS)
    prefill = next(ph for ph in e.phases if ph.name == PREFILL)
    assert prefill.host_s >= 30 * LAUNCHES_PER_LAYER * 3.8e-6 - 1e-9
    gpu_busy = sum(g.time_s for g in prefill.groups) + prefill.overhead_s
    assert gpu_busy < prefill.host_s  # host-bound: the launches, not the GPU, set the pass


def test_explain_names_the_prompt_pass_launches():
    e = estimate_gpu(_plan(16), H100, FACTS)
    waiting = [r for r in step_time_rows(e) if r["op group"].startswith("waiting for the CPU")]
    assert waiting and "8.97 us of CPU launching each kernel of the prompt pass" in waiting[0]["formula"]
    dispatch = dict((name, value) for name, value, _ in inputs_rows(e, False))["Host dispatch"]
    assert "prompt passes launched kernel by kernel" in dispatch


def test_the_sweep_times_the_eager_prompt_as_each_gpus_own_estimate():
    """The catalog sweep (arrays) and estimate_gpu agree on a llama.cpp plan whose prompt is host-bound on some GPUs."""
    plan = _plan(64)
    swept = estimate_all(plan, FACTS, arrays=sweep)
    for e in swept:
        own = estimate_gpu(plan, e.gpu, FACTS)
        assert e.feasible == own.feasible, e.gpu.id
        if e.feasible:
            assert e.seconds == pytest.approx(own.seconds, rel=1e-9), e.gpu.id


def test_a_one_token_prompt_is_a_single_token_step_and_replays_the_graph():
    """ggml disables graphs only where a step holds more than one token (ne[1] > 1): one sequence's one-token
    prompt (llama-bench's tg tests) is graphed, two sequences' one-token prompts or one two-token prompt are not.
    The same 100 counted kernels as above: 1076.4 us of launches when eager, none when graphed."""
    eff = load_runtimes().get("llama.cpp").efficiency("hbm")
    assert eff.prefill_graph_max_tokens == 1
    serial = eff.step_host_us * 1e-6
    gaps = 100 * 1.2 * eff.launch_overhead_us * 1e-6

    def prompt(sequences: int, tokens: int) -> Phase:
        return Phase(PREFILL, (), 100.0, 1, 0, 1.0, sequences=sequences, tokens=sequences * tokens)

    assert pass_seconds(prompt(1, 1), H100, eff) == pytest.approx(gaps + serial)
    assert pass_seconds(prompt(2, 1), H100, eff) == pytest.approx(1076.4e-6 + serial)
    assert pass_seconds(prompt(1, 2), H100, eff) == pytest.approx(1076.4e-6 + serial)


def test_the_sweep_graphs_a_one_token_prompt_at_batch_one_only():
    """One-token prompts: at batch 1 graphed, at batch 2 and more eager; the sweep and each GPU's own estimate agree
    at both."""
    for batch in (1, 2, 4, None):
        plan = Plan(SMOLLM, Generate(4, 1, 8), "q4_k_m", attention="llama.cpp-fa", runtime="llama.cpp", batch=batch)
        for e in estimate_all(plan, FACTS, arrays=sweep):
            own = estimate_gpu(plan, e.gpu, FACTS)
            if e.feasible:
                assert e.seconds == pytest.approx(own.seconds, rel=1e-9), (batch, e.gpu.id)
    one = estimate_gpu(Plan(SMOLLM, Generate(1, 1, 8), "q4_k_m", attention="llama.cpp-fa", runtime="llama.cpp",
                            batch=1), H100, FACTS)
    assert next(ph for ph in one.phases if ph.name == PREFILL).host_s == 0.0


RUNTIME_YAML = ("schema_version: 1\nread_on: 2026-11-28\nruntimes:\n  - id: x\n    name: X\n"
                "    mem_bw_efficiency: {hbm: 0.8, gddr: 0.8}\n"
                "    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n    launch_overhead_us: 1\n"
                "    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n    source: s\n"
                "    fuses_elementwise: false\n    fuses_elementwise_source: s\n")


@pytest.mark.parametrize("extra, field", [
    ("    prefill_host_us_per_kernel: 7\n", "prefill_host_source"),  # a figure without its source
    ("    prefill_host_us_per_kernel: 2000\n    prefill_host_source: s\n", "prefill_host_us_per_kernel"),
    ("    prefill_host_us_per_kernel: 7\n    prefill_host_source: s\n    prefill_graph_max_tokens: 1.5\n",
     "prefill_graph_max_tokens"),
])
def test_a_bad_eager_prefill_names_its_field(tmp_path, extra, field):
    path = tmp_path / "r.yaml"
    path.write_text(RUNTIME_YAML + extra)
    with pytest.raises(DataFileError, match=f"record 'x', field '{field}'"):
        load_runtimes(path)
