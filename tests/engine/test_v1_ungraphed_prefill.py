"""vLLM V1's prefill past its largest CUDA graph (data/serving.yaml vllm graph_max_tokens, compiled_dispatch_us): a
step of more tokens than max_cudagraph_capture_size (512 by default) runs the compiled model without a graph, each
kernel dispatched from the compiled Python wrapper beside the GPU's work. Expected figures are derived by hand from
flat phases, or from the data file's sourced constants (512 tokens, 9 us a kernel)."""

from dataclasses import replace

import pytest

from planner.engine.phases import PREFILL, Phase
from planner.engine.roofline import pass_seconds
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.runtimes import Efficiency, with_engine_generation
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import engine_prefill_chunk, load_measurements, predict_row, ungraphed_prefill

GPU = load_catalog().get("h100-sxm")
# 1.5 us of GPU gap a kernel, no serial step time; a prefill step of more than 512 tokens dispatched at 9 us a kernel
EFF = Efficiency(0.8, 0.9, 1.5, 1.0, 1.0, "test", prefill_host_us_per_kernel=9.0, prefill_graph_max_tokens=512)


def test_only_a_prefill_step_past_the_largest_graph_is_dispatched_kernel_by_kernel():
    """300 kernels and no GPU work beyond their gaps: busy 300 x 1.5 us = 0.45 ms. A 513-token prefill step has no
    graph: the host's 300 x 9 us = 2.7 ms is the longer; a 512-token one replays its graph: 0.45 ms; a decode step
    (graphed, a full graph) 0.45 ms too. Without the limit (vLLM V0's eager prefill) every prefill step pays 2.7 ms."""
    def prefill(tokens):
        return Phase(PREFILL, (), 300.0, 1, 0, 1.0, tokens=tokens)
    assert pass_seconds(prefill(513), GPU, EFF) == pytest.approx(300 * 9e-6)
    assert pass_seconds(prefill(512), GPU, EFF) == pytest.approx(300 * 1.5e-6)
    assert pass_seconds(Phase("decode", (), 300.0, 1, 1, 1.0, tokens=1), GPU, EFF) == pytest.approx(300 * 1.5e-6)
    v0 = replace(EFF, prefill_graph_max_tokens=0)
    assert pass_seconds(prefill(16), GPU, v0) == pytest.approx(300 * 9e-6)


def test_the_data_file_gives_v1_a_512_token_graph_limit_and_v0_none():
    """V1: min(max_num_seqs x 2, 512) with max_num_seqs 256 or 1,024 = 512 tokens, 9 us a kernel (tritonbench
    #1017); V0 dispatches every prefill eagerly (eager_prefill), no size limit."""
    vllm = load_schedulers().get("vllm")
    assert vllm.ungraphed_prefill("v1") == (512, 9.0)
    assert vllm.ungraphed_prefill("v0") == (0, 0.0)
    assert ungraphed_prefill("vllm", "v1") == (512, 9.0)
    with pytest.raises(ValueError, match="no engine generation"):
        vllm.ungraphed_prefill("v9")


def test_with_engine_generation_hands_the_limit_to_the_named_runtime_only():
    runtimes = with_engine_generation(load_facts().runtimes, "vllm", 0.0, None, 9.0, 0, 512)
    eff = runtimes.get("vllm").efficiency("hbm")
    assert (eff.prefill_host_us_per_kernel, eff.prefill_graph_max_tokens) == (9.0, 512)
    assert runtimes.get("tensorrt-llm").efficiency("hbm").prefill_graph_max_tokens == 0


def test_a_v1_row_pays_the_dispatch_only_past_512_prompt_tokens():
    """A Spare Cores V1 row (SmolLM2-135M, one streamed request through the OpenAI server, H100 SXM): beyond the
    front end's 4 ms + 1.5 us a prompt token, its 1,024-token prefill has no graph and takes at least its kernels
    (SmolLM's 30 layers: over 300) x 9 us of host time; at 256 tokens it replays a graph: its GPU work (2 x 135 M
    parameters x 256 tokens = 69 GFLOP, well under a millisecond) is less than half that dispatch time. Host times
    on the row's host, GCP's a3-highgpu-1g: host_speed 1.04 (read after, validation/sparecores_hosts.py)."""
    row = next(r for r in load_measurements() if r.id == "scv-smollm2-135m-bf16-h100-sxm-rag1024-ttft")
    assert (row.engine, row.prompt_tokens) == ("v1", 1024)
    p = predict_row(row)
    host = p.plan.host_speed
    assert host == 1.04
    kernels = p.estimate.work[0].kernels
    assert kernels > 300
    assert p.predicted - (4e-3 + 1024 * 1.5e-6) / host >= kernels * 9e-6 / host
    short = predict_row(replace(row, prompt_tokens=256))
    assert short.predicted - (4e-3 + 256 * 1.5e-6) / host < kernels * 9e-6 / host / 2


def test_v1_chunks_a_prompt_at_the_servers_token_budget():
    """vLLM's OpenAI server schedules 2,048 tokens a step, or 8,192 on a GPU of 70 GiB or more other than an A100
    (data/serving.yaml vllm tiers): an L4 and an A100 80GB take 2,048 prompt tokens a step, an H100 8,192; four
    sequences share 2,048 as 512 each."""
    row = next(r for r in load_measurements() if r.id == "scv-smollm2-135m-bf16-a100-sxm-80gb-long4096-ttft")
    catalog = load_catalog()
    assert engine_prefill_chunk(row, catalog.get("l4")) == 2048
    assert engine_prefill_chunk(row, catalog.get("a100-sxm-80gb")) == 2048
    assert engine_prefill_chunk(row, catalog.get("h100-sxm")) == 8192
    assert engine_prefill_chunk(replace(row, batch=4), catalog.get("l4")) == 512


def test_a_4096_token_v1_prompt_on_an_a100_runs_two_ungraphed_steps():
    """4,096 tokens at 2,048 a step: two prefill steps (the model's kernels twice, two host rounds), each of 2,048
    tokens, past the 512-token graph: both dispatched kernel by kernel. On an H100 (8,192 a step): one step."""
    row = next(r for r in load_measurements() if r.id == "scv-smollm2-135m-bf16-a100-sxm-80gb-long4096-ttft")
    p = predict_row(row)
    prefill = p.estimate.work[0]
    per_forward = p.plan.model.kernels_per_forward
    assert (prefill.kernels, prefill.host_rounds, prefill.tokens) == (2 * per_forward, 2, 2048)
    h100 = predict_row(replace(row, gpu="h100-sxm")).estimate.work[0]
    assert (h100.kernels, h100.host_rounds, h100.tokens) == (per_forward, 1, 4096)
