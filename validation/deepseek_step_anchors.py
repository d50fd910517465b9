"""DeepSeek-R1's decode step on early-2025 engines: the planner against published runs OUTSIDE the scored rows.

An analysis, not part of the planner (nothing here is read by the engine, and no scored row's value is read). dstack's
51 DeepSeek-R1 rows (validation/serving/to_predict/dstack-deepseek-r1-offline.yaml) are +28 to +410 % too fast. This
script asks where in the step that miss lies, using only figures other sources published about the same engines:

1. vLLM PR #13747 ('[Kernel] FlashMLA integration', LucasWilkinson, comment of 2025-02-25, read 2026-11-28): on
   8 x H200, DeepSeek-R1 at tensor parallel 8, vLLM's benchmark_throughput.py --input-len 3000 --output-len 1000
   --num-prompts 100 (vLLM 0.7.x, V0): 634.90 output tokens/s with VLLM_ATTENTION_BACKEND=TRITON_MLA, 692.34 with
   FLASHMLA. The same harness, engine generation and GPUs as dstack's vLLM rows, at other lengths and counts.
2. SGLang's fused_moe tuning script on 8 x H200 for Qwen3-235B-A22B-FP8 at TP 8, before tuning (sgl-project/sglang
   PR #11730, its date not read; read 2026-11-28): the whole fused_moe call of one layer (routing alignment, both
   expert GEMMs, activation) 31.70 us at batch 1 and 124.99 us at batch 32: the Triton expert kernel at 1-2 tokens an
   expert.

For (1) the planner's own fill time (the run with 1 output token) is taken off both the published and the predicted
run, so what is left is 1,000 decode steps of 100 sequences: published / predicted = how much slower the real step is.
The FlashMLA - Triton MLA difference bounds what the MLA decode kernel adds. For (2) the layer's weight bytes over the
GPU's bandwidth (the planner's memory-bound time for it, derived by hand here) against the published kernel time.

    python3 validation/deepseek_step_anchors.py
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.engine.estimate import efficiency_on, setup_on  # noqa: E402
from planner.engine.phases import generate_phases  # noqa: E402
from planner.engine.plan import Plan  # noqa: E402
from planner.engine.roofline import time_phase  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.jobs import Generate  # noqa: E402
from planner.validation.serving_first import SERVING_DIR, load_rows, load_schedulers, predict, validation_models  # noqa: E402,E501

# (1) vLLM PR #13747, 2025-02-25: 8 x H200, DeepSeek-R1, TP 8, benchmark_throughput.py
VLLM_13747 = {"input": 3000, "output": 1000, "prompts": 100, "TRITON_MLA": 634.90, "FLASHMLA": 692.34}
# (2) sglang PR #11730: H200, Qwen3-235B-A22B-FP8 (hidden 4096, 128 experts of moe_intermediate 1536, top 8), TP 8
QWEN3_MOE = {"hidden": 4096, "ffn": 1536, "experts": 128, "top_k": 8, "tp": 8}
SGLANG_11730_US = {1: 31.70, 32: 124.99}


def r1_split(gpu_id: str, runtime: str, batch: int, context: int) -> None:
    """The planner's R1 decode step at `batch` sequences of `context` keys, per op group: the GPU's work and launch
    gaps (the runtime's efficiencies; without the scheduler's host time, which the simulated step above adds)."""
    facts = load_facts()
    sched = load_schedulers().get(runtime)
    gpu = facts.catalog.get(gpu_id)
    plan = Plan(validation_models().get("deepseek-v3"), Generate(1, 3000, 1000), "fp8", runtime=sched.efficiency_of,
                gpus=8, parallel="tensor")
    eff = efficiency_on(plan, gpu, facts)
    s = replace(setup_on(plan, gpu, facts), tp=8)
    t = time_phase(generate_phases(plan.model, Generate(batch, 1, 2), s, batch, 1.0)[-1]._replace(p0=context), gpu, eff)
    groups = ", ".join(f"{g.name} {g.time_s * 1e3:.1f} ms ({g.bytes / 1e9:.1f} GB)" for g in t.groups)
    print(f"  planner, {gpu_id} {runtime} batch {batch} at {context} keys: step {t.total_s * 1e3:.1f} ms = {groups}, "
          f"launch gaps {t.overhead_s * 1e3:.1f} ms, collectives {t.comm_s * 1e3:.1f} ms")


def vllm_13747() -> None:
    """The anchor predicted as a dstack vLLM H200 row is (serving_first.predict: V0's host costs, no front end), at
    the anchor's lengths and count; the fill is the same run with 1 output token a request."""
    facts = load_facts()
    a, n = VLLM_13747, VLLM_13747["prompts"]
    row = next(r for r in load_rows(SERVING_DIR / "to_predict" / "dstack-deepseek-r1-offline.yaml")
               if r.gpu == "h200-sxm" and r.runtime == "vllm")
    row = replace(row, id="vllm-pr-13747", input_tokens=a["input"], output_tokens=a["output"], requests=n)
    predicted = predict(row, facts)
    fill_s = n / predict(replace(row, output_tokens=1), facts)
    print(f"(1) vLLM PR #13747, 8 x H200, R1, {a['input']} in / {a['output']} out x {n}: planner {predicted:.0f} "
          f"output tok/s; published {a['TRITON_MLA']} (Triton MLA), {a['FLASHMLA']} (FlashMLA)")
    step = {k: (n * a["output"] / v - fill_s) / a["output"] for k, v in
            (("planner", predicted), ("TRITON_MLA", a["TRITON_MLA"]), ("FLASHMLA", a["FLASHMLA"]))}
    print(f"  the planner's fill (1 output token each): {fill_s:.1f} s; a decode step of {n} then: planner "
          f"{step['planner'] * 1e3:.0f} ms, published {step['TRITON_MLA'] * 1e3:.0f} ms (Triton MLA, "
          f"{step['TRITON_MLA'] / step['planner']:.1f}x), {step['FLASHMLA'] * 1e3:.0f} ms (FlashMLA, "
          f"{step['FLASHMLA'] / step['planner']:.1f}x); the MLA kernel swap moves "
          f"{(step['TRITON_MLA'] - step['FLASHMLA']) * 1e3:.0f} ms")
    r1_split("h200-sxm", "vllm", n, a["input"] + a["output"] // 2)


def sglang_11730() -> None:
    """The planner's memory-bound time for one Qwen3-235B MoE layer's experts on H200 at TP 8, by hand: expert
    weights (3 x hidden x ffn / tp FP8 bytes each) of the experts the batch reaches over the bandwidth."""
    q = QWEN3_MOE
    gpu = load_facts().catalog.get("h200-sxm")
    expert_bytes = 3 * q["hidden"] * q["ffn"] / q["tp"]  # FP8: one byte a weight
    print("(2) sglang PR #11730, H200, Qwen3-235B-A22B-FP8 TP 8, one layer's fused_moe before tuning:")
    for batch, us in SGLANG_11730_US.items():
        reached = q["experts"] * (1 - (1 - q["top_k"] / q["experts"]) ** batch)  # experts_read's occupancy
        bound_us = reached * expert_bytes / (gpu.mem_bw_gbps * 1e9) * 1e6
        print(f"  batch {batch}: {reached:.1f} experts x {expert_bytes / 1e6:.2f} MB at {gpu.mem_bw_gbps:.0f} GB/s = "
              f"{bound_us:.1f} us, published {us} us ({us / bound_us:.1f}x)")


def main() -> None:
    vllm_13747()
    sglang_11730()


if __name__ == "__main__":
    main()
