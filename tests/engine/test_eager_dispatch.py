"""Eager PyTorch's decode step as it runs: the host dispatches every kernel from Python while the GPU works, so a step
takes the slower of the two; the GPU pays a gap per kernel at its measured size (2.1 us launched on a stream), not a
fitted one; CUDA graphs remove the host term. Llama-3-8B bf16 at batch 1, by hand:
- weights streamed per token: 7.505e9 of its 8.030e9 parameters (the input embedding is looked up, not streamed) x 2 B
  = 15.01 GB;
- kernels per token as data/runtimes.yaml counts them: (12 per layer x 32 layers + 5) x eager's 2.5 = 972.5;
- each of the 32 layers' decode attention adds FlashAttention-2's fixed 16 us (data/precisions.yaml);
- the kernels that move one token's hidden vector (6 a layer: two norms, rotary, two adds, the activation; 4 outside
  the layers) x eager's 2.5 = 490 take at least 1.5 us each (a kernel's minimum duration, planner/inputs/work.py):
  0.735 ms a step, where their bytes take less.
Measured (bitsandbytes-foundation/bitsandbytes benchmarking/README.md @81e6345, 'Results (as of v0.45.0)', Llama 3.1 8B
BF16 batch 1, transformers 4.46.3): 47.46 tok/s on an RTX 4090 (0.0211 s a token), 40.99 on an H100 SXM (0.0244 s)."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models

FACTS = load_facts()
WEIGHT_BYTES = 7.505e9 * 2
KERNELS = (12 * 32 + 5) * 2.5  # 972.5
ATTENTION_S = 32 * 16e-6
GAP_US = 2.1  # GPU idle per kernel launched on a stream, H100 (Hazy Research, 2025-05-27)
SMALL_S = (6 * 32 + 4) * 2.5 * 1.5e-6  # small kernels at their minimum duration


def _decode_step_s(gpu_id: str, bw: float, host_us: float, batch: int = 1, runtime: str = "pytorch-eager"):
    """(seconds per decode step, the decode phase) of Llama-3-8B bf16, 64 + 100 tokens, with the given DRAM fraction
    and host dispatch per kernel and the gap per kernel at GAP_US."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(batch, 64, 100), "bf16", batch=batch, runtime=runtime)
    eff = lambda g, e: replace(e, mem_bw_efficiency=bw, launch_overhead_us=GAP_US,  # noqa: E731
                               host_us_per_kernel=host_us if e.host_us_per_kernel else 0.0)
    e = estimate_gpu(plan, load_catalog().get(gpu_id), FACTS, adjust=eff)
    decode = next(ph for ph in e.phases if ph.name == "decode")
    return decode.pass_s / decode.steps, decode


def test_an_rtx_4090_runs_ahead_of_a_fast_host_so_its_step_is_the_gpus_work_and_gaps():
    """At 0.85 of the 4090's 1008 GB/s and 20 us of host per kernel: GPU 15.01e9 / 856.8e9 = 17.52 ms + 972.5 x 2.1 us
    = 2.04 ms + 0.51 ms + 0.735 ms of small kernels = 20.80 ms; host 972.5 x 20 us = 19.45 ms: the GPU binds,
    48.1 tok/s, within 5 % of the measured 47.46 (the KV cache's reads and copies add ~1 %). With the 12 us gap tuned
    before 2026-11-27 the same step took 11.7 ms of gaps alone."""
    step, decode = _decode_step_s("rtx-4090", 0.85, 20.0)
    by_hand = WEIGHT_BYTES / (1008e9 * 0.85) + KERNELS * GAP_US * 1e-6 + ATTENTION_S + SMALL_S
    assert step == pytest.approx(by_hand, rel=0.02)
    assert decode.host_bound_s == 0 and decode.host_s / decode.steps == pytest.approx(KERNELS * 20e-6)
    assert decode.overhead_s / decode.steps == pytest.approx(KERNELS * GAP_US * 1e-6)
    assert 1 / step == pytest.approx(47.46, rel=0.05)


def test_an_h100_waits_for_its_host_so_its_step_is_the_hosts_dispatch():
    """At 25 us of host per kernel (the H100 machine's CPU is slower): host 972.5 x 25 us = 24.31 ms against a GPU step
    of 15.01e9 / (3350e9 x 0.85) = 5.27 ms + 2.04 + 0.51 + 0.735 = 8.56 ms: the host binds, 41.1 tok/s against
    40.99 measured; twice the bandwidth buys nothing."""
    step, decode = _decode_step_s("h100-sxm", 0.85, 25.0)
    assert step == pytest.approx(KERNELS * 25e-6, rel=1e-3)
    gpu_by_hand = WEIGHT_BYTES / (3350e9 * 0.85) + KERNELS * GAP_US * 1e-6 + ATTENTION_S + SMALL_S
    assert decode.gpu_s / decode.steps == pytest.approx(gpu_by_hand, rel=0.02)
    assert 1 / step == pytest.approx(40.99, rel=0.02)
    faster, _ = _decode_step_s("h100-sxm", 0.95, 25.0)
    assert faster == pytest.approx(step, rel=1e-3)


def test_cuda_graphs_remove_the_host_term_and_the_gap_stays_its_size_at_large_batch():
    """torch.compile's CUDA graphs replay the step without Python dispatch: its profile has no host time, so the same
    H100 step is the GPU's own work. At batch 64 eager's gaps stay 972.5 x 2.1 us = 2.04 ms a step: a host that runs
    ahead leaves a launch gap, not a fitted 12 us."""
    step, decode = _decode_step_s("h100-sxm", 0.85, 25.0, runtime="torch-compile")
    assert decode.host_s == 0 and decode.host_bound_s == 0
    assert step == pytest.approx(decode.gpu_s / decode.steps)
    assert step < 0.5 * KERNELS * 25e-6
    _, big = _decode_step_s("h100-sxm", 0.85, 25.0, batch=64)
    assert big.overhead_s / big.steps == pytest.approx(KERNELS * GAP_US * 1e-6)
