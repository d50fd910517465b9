"""vLLM's Triton fused-MoE kernel against the planner's pricing of a mixture of experts' expert GEMMs, at kernel level
and in one end-to-end table; POST HOC (issue 31/37, s47-m9, read 2026-11-28): no validation row is scored here and
nothing is fitted.

Three public tables, each timed by vLLM's own developers:

1. vLLM PR #24700 (mgoin, 2025-09-11, 'Improve default fused moe configs by analyzing tuned configs'), H100 80GB HBM3,
   `benchmarks/kernels/benchmark_moe.py --model=mistralai/Mixtral-8x7B-Instruct-v0.1 -tp=2`, the tuned config file
   E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json (in the tree since PR #2979, 2024-02-22; A100/H100 at TP 2/4/8
   since PR #3389, 2024-03-14): kernel time of one MoE layer (both expert GEMMs, the activation and the top-k sum) at
   batch 1-1536.
2. The same PR, `--model=Qwen/Qwen3-30B-A3B -tp=1 --dtype=fp8_w8a8`, its '# Main' column: no tuned file for that shape
   (E=128, N=768 FP8 on H100), vLLM's default config of September 2025, batch 1-4096.
3. vLLM PR #3240 (2024-03-06, 'adding fused moe kernel config for A100 TP2'), A100-SXM4-80GB TP 2,
   `benchmarks/benchmark_latency.py --model=mistralai/Mixtral-8x7B-Instruct-v0.1 --input-len 1000 --output-len 50 -tp 2`
   with its tuned config: one static batch's whole latency (a prefill of batch x 1,000 tokens, 50 decode steps).

For 1 and 2 the planner's side is its expert GEMMs alone, as the engine builds them (DecoderProfile.linear_gemms:
experts_read(B) experts, each on B x k / experts_read rows) and prices them (gemm.shape_efficiency, the catalog's
matmul ceiling x vLLM's compute_efficiency, the DRAM rate x its mem_bw_efficiency, gemm.overlapped_seconds); in the
engine they share the 'linear layers' group with the attention projections, so this is their price in isolation.
For 3 it is the engine's own phases (prefill and decode of the static batch) with vLLM V0's host time per step and
per sequence (data/serving.yaml engine v0-sync).

`python3 validation/moe_kernel_check.py` prints the three tables (measured / planner per batch)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.engine.estimate import setup_on  # noqa: E402
from planner.engine.gemm import overlapped_seconds, shape_efficiency  # noqa: E402
from planner.engine.phases import generate_phases  # noqa: E402
from planner.engine.plan import Plan  # noqa: E402
from planner.engine.roofline import phase_seconds  # noqa: E402
from planner.engine.serving_sim import scheduler_efficiency  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.jobs import Generate  # noqa: E402
from planner.inputs.serving_runtimes import load_schedulers  # noqa: E402
from planner.validation.measured import validation_models  # noqa: E402

US_PER_S = 1e6
# 1. PR #24700, Mixtral-8x7B bf16, H100 TP 2, tuned config: batch -> kernel microseconds per MoE layer
MIXTRAL_H100_TP2_TUNED_US = {1: 144.03, 2: 229.28, 4: 351.10, 8: 434.98, 16: 471.49, 24: 478.27, 32: 487.35,
                             48: 487.85, 64: 483.14, 96: 494.42, 128: 491.39, 256: 536.77, 512: 662.33,
                             1024: 833.72, 1536: 1122.93}
# 2. PR #24700, Qwen3-30B-A3B fp8_w8a8, H100 TP 1, '# Main' (the default config): batch -> microseconds
QWEN3_H100_FP8_DEFAULT_US = {1: 44.54, 2: 59.94, 4: 90.46, 8: 129.77, 16: 185.40, 24: 215.99, 32: 238.37,
                             48: 257.83, 64: 262.73, 96: 270.98, 128: 273.72, 256: 355.49, 512: 391.86,
                             1024: 536.33, 1536: 727.31, 2048: 911.64, 3072: 1279.17, 4096: 1647.57}
# 3. PR #3240, Mixtral-8x7B bf16, A100-80GB TP 2, tuned config, 1000 in / 50 out: batch -> seconds
MIXTRAL_A100_TP2_LATENCY_S = {1: 0.7621, 2: 1.0329, 4: 1.4490, 8: 2.0341, 16: 2.8934, 32: 4.5309, 64: 7.5374}


def expert_gemm_us(model_id: str, gpu_id: str, tp: int, path: str, weight_bytes: float, batch: int) -> tuple:
    """(planner microseconds, achieved-at-measured FLOPs) of one MoE layer's expert GEMMs at `batch` tokens on `tp`
    GPUs under vLLM's efficiencies: the engine's shapes and rates, outside its group."""
    facts = load_facts()
    gpu = facts.catalog.get(gpu_id)
    eff = facts.runtimes.get("vllm").efficiency(gpu.memory_class)
    m = validation_models().get(model_id)
    attention = m.attention_gemms(batch, tp)
    layers = m.moe_layers
    gemms = tuple((r, n, k, c / layers) for r, n, k, c in m.linear_gemms(batch, 0, tp)
                  if (r, n, k, c) not in attention and c != layers)  # the experts' (count = layers x experts read)
    flops = sum(2 * r * n * k * c for r, n, k, c in gemms)
    weights = sum(n * k * c for _, n, k, c in gemms) * weight_bytes
    compute_s = flops / (gpu.ceiling_tflops(path) * 1e12 * eff.compute_efficiency
                         * shape_efficiency(gemms, gpu.sm_count))
    memory_s = weights / (gpu.mem_bw_gbps * 1e9 * eff.mem_bw_efficiency)
    return overlapped_seconds(compute_s, memory_s) * US_PER_S, flops


def static_batch_s(batch: int, prompt: int, output: int) -> float:
    """The engine's seconds for PR #3240's static batch: Mixtral-8x7B bf16 on 2 A100-SXM4-80GB under vLLM V0 (engine
    v0-sync's host time per step and per sequence), prefill and decode phases."""
    facts = load_facts()
    gpu = facts.catalog.get("a100-sxm-80gb")
    sched_profile = load_schedulers().get("vllm")
    plan = Plan(validation_models().get("mixtral-8x7b"), Generate(1, prompt, output), "bf16",
                runtime=sched_profile.efficiency_of, gpus=2, parallel="tensor")
    sched = replace(sched_profile.on(gpu.id, gpu.vram_gib), host_us_per_seq=sched_profile.host_us_per_seq("v0-sync"),
                    step_host_us=sched_profile.step_host_us("v0-sync", 2))
    p, eff = scheduler_efficiency(plan, gpu, facts, sched)
    s = replace(setup_on(p, gpu, facts), tp=2)
    return sum(phase_seconds(ph, gpu, eff) for ph in generate_phases(plan.model, Generate(batch, prompt, output),
                                                                        s, batch, 1.0))


def main() -> None:
    for title, args, table in (
            ("Mixtral-8x7B bf16, H100 TP 2, tuned config (vLLM PR #24700)", ("mixtral-8x7b", "h100-sxm", 2, "bf16", 2),
             MIXTRAL_H100_TP2_TUNED_US),
            ("Qwen3-30B-A3B fp8_w8a8, H100 TP 1, default config (vLLM PR #24700 '# Main')",
             ("qwen3-30b-a3b", "h100-sxm", 1, "fp8", 1), QWEN3_H100_FP8_DEFAULT_US)):
        print(title)
        for batch, measured_us in table.items():
            planner_us, flops = expert_gemm_us(*args, batch)
            print(f"  batch {batch:5d}: measured {measured_us:8.1f} us, planner {planner_us:8.1f} us, "
                  f"measured / planner {measured_us / planner_us:4.2f}, measured rate {flops / measured_us / 1e6:5.0f} "
                  f"TFLOPS")
    print("Mixtral-8x7B bf16, A100-SXM4-80GB TP 2, benchmark_latency 1000 in / 50 out, tuned (vLLM PR #3240)")
    for batch, measured_s in MIXTRAL_A100_TP2_LATENCY_S.items():
        planner_s = static_batch_s(batch, 1000, 50)
        print(f"  batch {batch:3d}: measured {measured_s:6.3f} s, planner {planner_s:6.3f} s, "
              f"measured / planner {measured_s / planner_s:4.2f}")


if __name__ == "__main__":
    main()
