"""Derive llama.cpp's MMQ int8 tensor-core fraction (data/runtimes.yaml, llama.cpp prompt_gemm path mmq-int8) from
PR #7676's RTX 4090 figure: Llama-3-8B Q4_0, llama-bench pp512 at micro-batch 512, 10358.75 t/s with MMQ
(ggml-org/llama.cpp PR #7676, JohannesGaessler, 2024-06). Prints the engine's groups for that pass and the fraction of
the int8 matmul ceiling at which the linear group's time makes the pass take 512 / 10358.75 s, every other group as
modelled (the MMQ's CUDA-core scaling, the group "prompt GEMM scaling", among them: PromptPath.scale_flops). Run:
python3 validation/derive_mmq_fraction.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.engine.gemm import OVERLAP_EXPONENT  # noqa: E402
from planner.inputs.runtimes import load_runtimes  # noqa: E402
from planner.validation.measured import Measurement, predict_row  # noqa: E402

SOURCE_TOKENS_PER_S = 10358.75  # PR #7676, 'RTX 4090 | llama 8B Q4_0 | 512 | pp512', MMQ column
ROW = Measurement(id="derive-pr7676-llama3-8b-q4_0-rtx4090-pp512", gpu="rtx-4090", gpus=1, model="llama-3-8b",
                  regime="prefill", framework="llama.cpp", precision="q4_0", weight_bits=4.5, batch=1,
                  prompt_tokens=512, gen_tokens=0, seq_len=None, metric="tokens_per_s", value=SOURCE_TOKENS_PER_S,
                  source="ggml-org/llama.cpp PR #7676", conditions="pp512, ub 512, no FA", attention="manual")


def main() -> None:
    p = predict_row(ROW)
    target_s = ROW.prompt_tokens / SOURCE_TOKENS_PER_S
    total_s = ROW.prompt_tokens / p.predicted
    (phase,) = [ph for ph in p.estimate.phases if ph.name == "prefill"]
    lin = next(g for g in phase.groups if g.name == "linear layers")
    others = total_s - lin.time_s
    print(f"engine now: {p.predicted:,.0f} t/s ({total_s * 1e3:.2f} ms a pass); source {SOURCE_TOKENS_PER_S} t/s "
          f"({target_s * 1e3:.2f} ms)")
    for g in phase.groups:
        print(f"  {g.name:28s} {g.time_s * 1e3:8.3f} ms  compute {g.compute_s * 1e3:8.3f}  "
              f"memory {g.memory_s * 1e3:8.3f}  {g.achieved_tflops:7.1f} TFLOPS  path {g.compute_path}")
    # the linear group's compute time scales as 1 / fraction; its memory time stays: solve
    # ((c x f0 / f)^p + m^p)^(1/p) = target - others for f
    want = target_s - others
    c_needed = (want ** OVERLAP_EXPONENT - lin.memory_s ** OVERLAP_EXPONENT) ** (1 / OVERLAP_EXPONENT)
    era = load_runtimes().get("llama.cpp").prompt_era
    f0 = era.path_on((8, 9), "quantized").fraction
    print(f"others {others * 1e3:.3f} ms; the linear group must take {want * 1e3:.3f} ms, its compute "
          f"{c_needed * 1e3:.3f} ms against {lin.compute_s * 1e3:.3f} ms now")
    print(f"fraction = {f0} x {lin.compute_s / c_needed:.4f} = {f0 * lin.compute_s / c_needed:.3f}")


if __name__ == "__main__":
    main()
