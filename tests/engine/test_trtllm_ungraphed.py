"""TensorRT-LLM's GptSession of releases up to 0.9-0.10 replays its generation phase as a CUDA graph only with
--enable_cuda_graph (GptSession::Config cudaGraphMode false by default): a run that states that release and harness
(a row's cuda_graphs: false) launches every kernel of a step from its C++ host loop, at the profile's `ungraphed` costs
(data/runtimes.yaml tensorrt-llm: 2.1 us of GPU gap per kernel on a stream, 3.8 us of host per launch). Expected
figures are derived by hand from flat phases and the data file."""

import pytest

from planner.engine.phases import Phase
from planner.engine.roofline import pass_seconds
from planner.inputs.catalog import load_catalog
from planner.inputs.runtimes import Efficiency, load_runtimes, with_ungraphed
from planner.inputs.work import OpGroup
from planner.validation.measured import as_known_now, load_measurements, predict_row

GPU = load_catalog().get("h200-sxm")
KERNELS = 300.0  # kernels a decode step launches (a 32-layer model at ~9 a layer, plus the head)
STEPS = 10


def efficiency(launch_us: float, host_us: float) -> Efficiency:
    """A flat profile: 85 % of the bandwidth, the whole compute roof, one kernel per counted kernel."""
    return Efficiency(0.85, 1.0, launch_us, 1.0, 1.0, "test", host_us)


def test_the_data_file_gives_tensorrt_llm_its_stream_launch_costs_and_keeps_the_graphed_default():
    """The profile as loaded keeps its graphed 1 us gap and no host term; with_ungraphed swaps in 2.1 and 3.8 us."""
    runtimes = load_runtimes()
    graphed = runtimes.get("tensorrt-llm").efficiency("hbm")
    assert (graphed.launch_overhead_us, graphed.host_us_per_kernel) == (1.0, 0.0)
    ungraphed = with_ungraphed(runtimes, "tensorrt-llm").get("tensorrt-llm").efficiency("hbm")
    assert (ungraphed.launch_overhead_us, ungraphed.host_us_per_kernel) == (2.1, 3.8)
    assert ungraphed.mem_bw_efficiency == graphed.mem_bw_efficiency


def test_a_runtime_without_ungraphed_costs_refuses_the_condition():
    with pytest.raises(ValueError, match="cuda_graphs"):
        with_ungraphed(load_runtimes(), "vllm")


def test_a_step_of_short_kernels_is_launch_bound_without_graphs():
    """No GPU work but the launches: 10 steps x 300 kernels. Ungraphed, the GPU idles 2.1 us a kernel (6.3 ms) while
    the host needs 3.8 us to launch each (11.4 ms): the host binds, 11.4 ms. Graphed, 10 x 300 x 1.0 us = 3 ms."""
    phase = Phase("decode", (), KERNELS, STEPS, 128, 1.0)
    assert pass_seconds(phase, GPU, efficiency(2.1, 3.8)) == pytest.approx(STEPS * KERNELS * 3.8e-6)
    assert pass_seconds(phase, GPU, efficiency(1.0, 0.0)) == pytest.approx(STEPS * KERNELS * 1.0e-6)


def test_a_bandwidth_bound_step_pays_the_longer_gap_and_hides_the_host():
    """Each step streams 8 GB (a 7B model in fp8 and its cache) from HBM: 8e9 / (4.8e12 x 0.85) = 1.96 ms on an
    H200, far above the host's 300 x 3.8 us = 1.14 ms, so the launches hide under it; only the GPU gap grows, by
    300 x (2.1 - 1.0) us = 0.33 ms a step."""
    weights = OpGroup("weights", flops=0.0, bytes=8e9, compute_path="fp8", formula="")
    phase = Phase("decode", (weights,), KERNELS, STEPS, 128, 1.0)
    graphed = pass_seconds(phase, GPU, efficiency(1.0, 0.0))
    ungraphed = pass_seconds(phase, GPU, efficiency(2.1, 3.8))
    assert graphed / STEPS > KERNELS * 3.8e-6  # the GPU's step outlasts the host's launches
    assert ungraphed - graphed == pytest.approx(STEPS * KERNELS * (2.1 - 1.0) * 1e-6)


def test_the_rows_whose_sources_state_the_release_run_ungraphed_and_newer_ones_do_not():
    """The DLI sweep (v0.9.0's harness settings) and the v0.6.1 page's rows run ungraphed; a trtllm-bench row of
    v0.15 (Model Optimizer's) keeps the profile's graphed launches."""
    rows = {r.id: r for r in load_measurements()}
    dli = rows["dli-trtllm090-mistral7b-fp8-l40s-tp1-b1-p128-g2048"]
    assert dli.cuda_graphs is None and as_known_now(dli).cuda_graphs is False
    assert rows["trt-llama2-7b-fp8-h100sxm-tp1-bs768-128-128"].cuda_graphs is False
    newer = rows["modelopt021-trtllm015-llama-3-8b-bf16-h200-tp1-b1-p2048-g128"]
    assert as_known_now(newer).cuda_graphs is None
    assert predict_row(dli).estimate.efficiency.launch_overhead_us == 2.1
    assert predict_row(newer).estimate.efficiency.launch_overhead_us == 1.0
