"""Tensor-parallel decode rows still too fast: which engine profile their time matches, and whether the miss is host.

An analysis of validation rows, POST HOC (issue 37, round 9), not part of the planner: nothing here is read by the
engine and no row or prediction is changed. Two questions, each answered from the planner's own predictions:

1. ROCm vLLM 0.10.0 on 8 x MI300X (entered as engine v1): is its measured decode step the V1 step the planner
   charges, or the V0 step (data/serving.yaml vllm engines: v0 1,712 us a step + 78 us a sequence a step, v1 none)?
   Each 0.10.0 row is predicted as entered and again with engine v0 (a what-if, not a condition), beside the same
   shape's vLLM 0.6.6 row (V0 as entered) from the same README family.

2. TensorRT-LLM static batches (Azure's Python-session benchmark.py, NeMo's Llama-2 table): is the miss a GPU rate
   or host work? The generation step is split off the planner's prediction:

       planned step = (seconds of g output tokens - seconds of 1 output token) / (g - 1)

   and the miss per step (measured - predicted seconds) / g is compared across GPU generations of one shape. A GPU
   rate scales with the GPU (A100 -> H100 -> H200: 2,039 -> 3,350 -> 4,800 GB/s); host work does not.

Run: python3 validation/tp_decode_engines.py   (about 10 s)
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import load_measurements, predict_row, validation_models  # noqa: E402


def generation_step_s(seconds_g: float, seconds_1: float, gen_tokens: int) -> float:
    """Seconds of one generation step: what g output tokens cost beyond 1 (the context step), over g - 1 steps."""
    if gen_tokens < 2:
        raise ValueError(f"gen_tokens must be >= 2 to split a generation step off the context step (got {gen_tokens})")
    return (seconds_g - seconds_1) / (gen_tokens - 1)


def speed_bias_pct(measured_s: float, predicted_s: float) -> float:
    """Signed speed error in %: + when the plan is faster than measured (measured seconds / predicted - 1)."""
    return (measured_s / predicted_s - 1.0) * 100.0


def generate_seconds(metric: str, value: float, batch: int, gen_tokens: int) -> float:
    """Seconds of one generate() of the batch: step_seconds as given, or batch x output tokens / tokens_per_s."""
    if metric == "step_seconds":
        return value
    if metric == "tokens_per_s":
        return batch * gen_tokens / value
    raise ValueError(f"metric {metric!r}: only step_seconds or tokens_per_s rows are generate() times")


def _seconds(row, catalog, models, **changes) -> float:
    r = dataclasses.replace(row, **changes) if changes else row
    p = predict_row(r, catalog, models).predicted
    return generate_seconds(r.metric, p, r.batch, r.gen_tokens)


def rocm_engines(rows: dict, catalog, models) -> None:
    print("1. ROCm vLLM 0.10.0 (engine v1 as entered) on 8 x MI300X: ms a step (the generate() / 2,048 tokens)")
    print(f"{'model':5s} {'prompt':>6s} {'batch':>5s} {'0.10.0':>7s} {'0.6.6':>7s} | {'as v1':>6s} {'bias':>6s}"
          f" | {'as v0':>6s} {'bias':>6s}")
    bias = defaultdict(list)
    for rid in sorted(r for r in rows if r.startswith("rocmvllm0100-")):
        row = rows[rid]
        old = rows.get(rid.replace("rocmvllm0100-", "rocmvllm066-"))
        g = row.gen_tokens
        v1 = _seconds(row, catalog, models)
        v0 = _seconds(row, catalog, models, engine="v0")
        b1, b0 = speed_bias_pct(row.value, v1), speed_bias_pct(row.value, v0)
        size = "405b" if "405b" in rid else "70b"
        bias[(size, "v1")].append(b1)
        bias[(size, "v0")].append(b0)
        print(f"{size:5s} {row.prompt_tokens:6d} {row.batch:5d} {row.value / g * 1e3:7.2f} "
              f"{(old.value / g * 1e3 if old else float('nan')):7.2f} | {v1 / g * 1e3:6.2f} {b1:+6.1f}"
              f" | {v0 / g * 1e3:6.2f} {b0:+6.1f}")
    for key in sorted(bias):
        v = bias[key]
        print(f"  {key[0]} as {key[1]}: {len(v)} rows, median speed bias {statistics.median(v):+.1f} %, "
              f"median |error| {statistics.median(abs(100 * (1 / (1 + b / 100) - 1)) for b in v):.1f} %")


def trtllm_host(rows: dict, catalog, models) -> None:
    print("\n2. TensorRT-LLM static batches: the miss per forward step, by GPU (same model, TP, batch, lengths)")
    groups = defaultdict(dict)
    for rid, row in rows.items():
        if not (rid.startswith("azure-trtllm-") or rid.startswith("nemo-llama2-7b-")):
            continue
        measured = generate_seconds(row.metric, row.value, row.batch, row.gen_tokens)
        planned = _seconds(row, catalog, models)
        step = generation_step_s(planned, _seconds(row, catalog, models, gen_tokens=1), row.gen_tokens)
        miss = (measured - planned) / row.gen_tokens
        key = (rid.split("-")[0], row.model, row.gpus, row.batch, row.prompt_tokens, row.gen_tokens)
        groups[key][row.gpu] = (miss * 1e3, step * 1e3)
    gpus = ("a100-sxm-80gb", "h100-sxm", "h200-sxm")
    print(f"{'source':6s} {'model':12s} {'GPUs':>4s} {'batch':>5s} | miss ms a step (planned step ms) "
          + " ".join(f"{g:>16s}" for g in gpus) + " | A100 / H100 miss")
    for key in sorted(groups):
        cells = groups[key]
        text = " ".join(f"{cells[g][0]:7.2f} ({cells[g][1]:5.2f})" if g in cells else f"{'-':>16s}" for g in gpus)
        ratio = cells["a100-sxm-80gb"][0] / cells["h100-sxm"][0] if {"a100-sxm-80gb", "h100-sxm"} <= cells.keys() else 0
        print(f"{key[0]:6s} {key[1]:12s} {key[2]:4d} {key[3]:5d} | {text} | {ratio:5.2f}")


def main() -> None:
    catalog, models = load_catalog(), validation_models()
    rows = {r.id: r for r in load_measurements()}
    rocm_engines(rows, catalog, models)
    trtllm_host(rows, catalog, models)


if __name__ == "__main__":
    main()
