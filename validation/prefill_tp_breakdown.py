"""POST HOC breakdown of tensor-parallel prefill rows (issue 37, round 9): what the rows' own TP 1 times leave for
the all-reduces at TP > 1, against what the planner charges; and the matmul rate the TP 1 rows imply.

Usage: python3 validation/prefill_tp_breakdown.py
Reads validation rows only (no /tmp/values); prints tables for validation/REPORT.md. No engine change."""
from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.validation.measured import load_measurements, predict_row  # noqa: E402


# Llama-2-70B's matmul weights in its 80 decoder layers: 80 x (8192 x (8192 + 2 x 1024) + 8192 x 8192
# + 3 x 8192 x 28672) = 68.45e9 (config.json: hidden 8192, 8 KV heads of 128, intermediate 28672)
LLAMA2_70B_MATMUL_PARAMS = 80 * (8192 * (8192 + 2 * 1024) + 8192 * 8192 + 3 * 8192 * 28672)


def added_seconds(t_tp: float, t_tp1: float, n: int) -> float:
    """Seconds a TP n step takes beyond its TP 1 twin split n ways (t_TP - t_TP1 / n)."""
    return t_tp - t_tp1 / n


def ring_split(t2: float, t8: float) -> tuple[float, float]:
    """(C, a) solving t = C / n + a (n - 1) / n from the times at TP 2 and TP 8 (any one unit): C the work one GPU
    would do alone, a the ring term at n -> infinity (2 x bytes / bus bandwidth)."""
    a = (t8 - t2 / 4) / (7 / 8 - 1 / 8)  # t2 / 4 = C/8 + a/8; t8 - that = a (7/8 - 1/8)
    return 2 * t2 - a, a


def _comm_bytes(p) -> float:
    """Bytes each GPU moves in the prefill step's all-reduces (ring factor 2(n-1)/n included), as planned."""
    ph = p.estimate.passes[0][0]
    return sum(b for b, _calls, _stride in ph.comm)


def muxserve_allreduce() -> None:
    """MuxServe (vLLM 0.2.0 fork, A100 SXM 80GB): extra time at TP n over the same shape's TP 1 row / n."""
    rows = [r for r in load_measurements() if r.source.startswith("hao-ai-lab/MuxServe") and r.regime == "prefill"]
    tp1 = {(r.model, r.batch, r.prompt_tokens): (r, predict_row(r)) for r in rows if r.gpus == 1}
    out = defaultdict(list)
    for r in rows:
        base = tp1.get((r.model, r.batch, r.prompt_tokens))
        tokens = r.batch * r.prompt_tokens
        if r.gpus == 1 or base is None or tokens < 2048:
            continue
        p = predict_row(r)
        nbytes = _comm_bytes(p)
        measured_extra = added_seconds(r.value, base[0].value, r.gpus)
        planned_extra = added_seconds(p.predicted, base[1].predicted, r.gpus)
        out[(r.model, r.gpus)].append((tokens, nbytes / measured_extra / 1e9, nbytes / planned_extra / 1e9,
                                       measured_extra * 1e3, planned_extra * 1e3))
    print("MuxServe, prefills of 2,048-16,384 tokens a step: the time TP n adds over the same shape's TP 1 row / n "
          "(t_TP - t_TP1 / n), and the all-reduce bus bandwidth that leaves (planner's bytes / it), median over "
          "shapes; then the 32,768-token step alone")
    print(f"{'model':12s} {'TP':>3s} {'n':>3s} {'implied GB/s':>13s} {'planner GB/s':>13s} "
          f"{'32k: extra ms measured / planned':>34s}")
    for (model, tp), v in sorted(out.items()):
        mid = [x for x in v if x[0] < 32768]
        big = [x for x in v if x[0] == 32768]
        print(f"{model:12s} {tp:3d} {len(mid):3d} {statistics.median(x[1] for x in mid):13.0f} "
              f"{statistics.median(x[2] for x in mid):13.0f} {big[0][3]:20.1f} / {big[0][4]:.1f}")


def splitwise_scaling() -> None:
    """Splitwise (A100 / H100 DGX, Llama-2-70B): time per 1,000 tokens at TP 2 / 4 / 8 over the same token counts,
    solved for t = C / n + a (n - 1) / n (C: the GPU work of one GPU doing it all; a: the all-reduces' ring term)."""
    rows = [r for r in load_measurements() if r.source.startswith("Mutinifni/splitwise-sim")
            and r.regime == "prefill" and r.model == "llama-2-70b" and r.batch * r.prompt_tokens >= 4096]
    per = defaultdict(list)
    for r in rows:
        p = predict_row(r)
        tokens = r.batch * r.prompt_tokens
        per[(r.gpu, r.gpus)].append((r.value / tokens * 1e6, p.predicted / tokens * 1e6, _comm_bytes(p) / tokens * 1e3))
    print("\nSplitwise, Llama-2-70B prefills of 4,096-32,768 tokens: ms per 1,000 tokens (median over shapes)")
    print(f"{'gpu':14s} {'TP':>3s} {'n':>3s} {'measured':>9s} {'planned':>9s}")
    med = {}
    for (gpu, tp), v in sorted(per.items()):
        med[(gpu, tp)] = (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v),
                          statistics.median(x[2] for x in v) / ((2 * (tp - 1) / tp) or 1))
        print(f"{gpu:14s} {tp:3d} {len(v):3d} {med[(gpu, tp)][0]:9.1f} {med[(gpu, tp)][1]:9.1f}")
    for gpu in sorted({g for g, _ in med}):
        if (gpu, 2) not in med or (gpu, 8) not in med:
            continue
        (t2, _, s), (t8, _, _) = med[(gpu, 2)], med[(gpu, 8)]
        c, a = ring_split(t2, t8)
        tflops = 2 * LLAMA2_70B_MATMUL_PARAMS * 1e3 / (c / 1e3) / 1e12
        print(f"{gpu:14s}: C = {c:.0f} ms/ktok of GPU work ({tflops:.0f} TFLOPS on the layers' matmul FLOPs), "
              f"a = {a:.0f} ms/ktok -> all-reduce bus bandwidth {2 * s / (a / 1e3) / 1e9:.0f} GB/s")


def tp1_matmul_rate() -> None:
    """TP 1 A100 SXM 80GB fp16 rows (MuxServe's vLLM 0.2.0, optimum-benchmark's transformers with SDPA): the linear
    layers' FLOPs (the planner's) over the measured and over the planned step time, by tokens a step."""
    out = defaultdict(list)
    for r in load_measurements():
        if r.regime != "prefill" or r.gpus != 1 or r.gpu != "a100-sxm-80gb" or r.precision != "fp16":
            continue
        opt = r.source.startswith("huggingface/optimum-benchmark") and r.attention == "sdpa"
        if not (r.source.startswith("hao-ai-lab/MuxServe") or opt):
            continue
        p = predict_row(r)
        lin = next(g for g in p.estimate.passes[0][0].groups if g.name == "linear layers")
        out[(r.framework, r.model, r.batch * r.prompt_tokens)].append(
            (lin.flops / r.value / 1e12, lin.flops / p.predicted / 1e12, r.value / p.predicted))
    print("\nTP 1, A100 SXM 80GB, fp16: the linear layers' TFLOPS over the whole step, measured / planned "
          "(median over rows of that token count)")
    print(f"{'framework':16s} {'model':12s} {'tokens':>6s} {'n':>2s} {'measured':>9s} {'planned':>8s} {'t ratio':>8s}")
    for (fw, model, tok), v in sorted(out.items()):
        print(f"{fw:16s} {model:12s} {tok:6d} {len(v):2d} {statistics.median(x[0] for x in v):9.0f} "
              f"{statistics.median(x[1] for x in v):8.0f} {statistics.median(x[2] for x in v):8.2f}")


if __name__ == "__main__":
    muxserve_allreduce()
    splitwise_scaling()
    tp1_matmul_rate()
