"""Round 6's early tensor-parallel misses broken down: MuxServe's vLLM 0.2.0 prefill, GLM-130B's FT decode.

An analysis of validation rows, POST HOC (issue 37), not part of the planner: nothing here is read by the engine. With
the values estimates use (data/runtimes_tuned.yaml) it prints three tables:

1. MuxServe's short prefills (batch 1, 32 and 64 tokens): measured and planned milliseconds per decoder layer, by
   model and tensor-parallel size. A step dispatched from Python that the GPU outruns costs a fixed time per layer.
2. MuxServe's largest prefills (batch 64, every prompt), TP 1: the matmul rate the measurement implies (the planner's
   own FLOPs of the step over the measured seconds) against the rate the planner runs them at.
3. GLM-130B's decode rows (FasterTransformer and SAT at TP 8): milliseconds per output token against the mean context
   (prompt + half the output), measured and planned, and the slope between the shortest and the longest generation.

Run: python3 validation/early_tp_breakdown.py
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.validation.measured import load_measurements, predict_row, validation_models  # noqa: E402

MUXSERVE = "muxserve-"
GLM_DECODE = ("glm130b-ft-fp16-a100sxm40x8-tp8", "glm130b-sat-fp16-a100sxm40x8-tp8")


def per_layer_ms(step_seconds: float, layers: int) -> float:
    """Milliseconds per decoder layer of one step."""
    return step_seconds * 1e3 / layers


def mean_context(prompt_tokens: int, gen_tokens: int) -> float:
    """Mean tokens attended over a generation: the prompt plus, on average, half the output (each step adds one)."""
    return prompt_tokens + gen_tokens / 2


def slope_us_per_token(points: list[tuple[float, float]]) -> float:
    """Microseconds more per output token for each token more of mean context, between the first and the last of
    (mean context, ms per output token) points sorted by context."""
    (c0, t0), (c1, t1) = points[0], points[-1]
    return (t1 - t0) * 1e3 / (c1 - c0)


def short_prefills(rows, models) -> None:
    print("1. MuxServe prefill, batch 1, 32-64 tokens: ms per layer (median over the two lengths)")
    print(f"{'model':14s} {'layers':>6s} {'TP':>3s} {'measured':>9s} {'planned':>8s} {'host':>6s} {'comm':>6s}")
    groups = defaultdict(list)
    for r in rows:
        if r.id.startswith(MUXSERVE) and r.batch == 1 and r.prompt_tokens in (32, 64):
            groups[(r.model, r.gpus)].append(r)
    for (model, gpus), group in sorted(groups.items(), key=lambda kv: (models.get(kv[0][0]).layers, kv[0][1])):
        layers = models.get(model).layers
        meas, plan, host, comm = [], [], [], []
        for r in group:
            p = predict_row(r)
            ph = p.estimate.phases[0]
            meas.append(per_layer_ms(r.value, layers))
            plan.append(per_layer_ms(p.predicted, layers))
            host.append(per_layer_ms(ph.host_s + ph.step_host_s, layers))
            comm.append(per_layer_ms(ph.comm_s, layers))
        m = statistics.median
        print(f"{model:14s} {layers:6d} {gpus:3d} {m(meas):9.3f} {m(plan):8.3f} {m(host):6.3f} {m(comm):6.3f}")


def large_prefills(rows) -> None:
    print("\n2. MuxServe prefill, batch 64, TP 1: matmul TFLOPS the measurement implies vs the planner's rate")
    print(f"{'row':56s} {'implied':>8s} {'planned':>8s}")
    for r in rows:
        if r.id.startswith(MUXSERVE) and r.batch == 64 and r.gpus == 1:
            ph = predict_row(r).estimate.phases[0]
            linear = next(g for g in ph.groups if g.name == "linear layers")
            flops = sum(g.flops for g in ph.groups)
            print(f"{r.id:56s} {flops / r.value / 1e12:8.1f} {linear.achieved_tflops:8.1f}")


def glm_decode(rows) -> None:
    print("\n3. GLM-130B decode at TP 8, batch 1: ms per output token against the mean context")
    for prefix in GLM_DECODE:
        measured, planned = [], []
        for r in rows:
            if r.id.startswith(prefix) and r.regime == "decode":
                ctx = mean_context(r.prompt_tokens, r.gen_tokens)
                measured.append((ctx, r.value * 1e3 / r.gen_tokens))
                planned.append((ctx, predict_row(r).predicted * 1e3 / r.gen_tokens))
        measured.sort()
        planned.sort()
        for (ctx, t), (_, p) in zip(measured, planned):
            print(f"{prefix:36s} context {ctx:6.0f}: measured {t:6.2f} ms, planned {p:6.2f} ms")
        print(f"{prefix:36s} slope: measured {slope_us_per_token(measured):.2f} us, planned "
              f"{slope_us_per_token(planned):.2f} us per output token per context token")


def main() -> None:
    rows = [r for r in load_measurements() if r.value is not None]
    models = validation_models()
    short_prefills(rows, models)
    large_prefills(rows)
    glm_decode(rows)


if __name__ == "__main__":
    main()
