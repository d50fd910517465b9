"""POST HOC breakdown of Spare Cores' vLLM time-to-first-token rows (issue 37, round 9): where the re-predicted
prefill is too fast, split by what the engine does differently (a CUDA graph replayed or not, tensor parallelism,
the L4 servers), the floor a small model's short prompt shows, and the all-reduce rate the L4 rows imply.

Usage: python3 validation/sparecores_vllm_ttft_breakdown.py
Reads validation rows only (no /tmp/values); prints tables for validation/REPORT.md. No engine change."""
from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.validation.measured import as_known_now, load_measurements, predict_row, validation_models  # noqa: E402
from planner.validation.predict_first import PREDICTION_SPLIT, score_predictions  # noqa: E402

# vLLM V1 replays a CUDA graph for a step of at most this many tokens with the OpenAI server's defaults
# (planner/data/serving.yaml vllm graph_max_tokens, with its source); longer prompts run the compiled model ungraphed.
GRAPH_MAX_TOKENS = 512
SMALL_MODELS = ("smollm-135m", "qwen2-0.5b")  # GPU work of a 256-token prompt well under the front end's
BF16_BYTES = 2


def speed_bias(measured_s: float, predicted_s: float) -> float:
    """+ = the prediction is faster than measured, in % (a time metric)."""
    return 100.0 * (measured_s / predicted_s - 1.0)


def allreduce_gbps(model, tokens: int, tp: int, added_s: float) -> float:
    """Bus bandwidth (GB/s) an all-reduce would need to take `added_s`: two all-reduces a layer of tokens x hidden
    bf16 activations (attention output and MLP output, Megatron-style tensor parallelism), ring factor 2(n-1)/n."""
    data = model.layers * 2 * tokens * model.hidden * BF16_BYTES
    return data * 2 * (tp - 1) / tp / added_s / 1e9


def main() -> None:
    catalog, models = load_catalog(), validation_models()
    rows = {r.id: r for r in load_measurements()}
    committed = {}
    for scored in score_predictions():
        for r in scored.results:
            if r.split == PREDICTION_SPLIT and r.row_id.startswith("scv-") and r.regime == "prefill":
                committed[r.row_id] = r.speed_bias_pct
    pred = {i: predict_row(rows[i], catalog, models).predicted for i in committed}

    groups = defaultdict(list)
    for i in committed:
        row = rows[i]
        key = ("graphed" if row.prompt_tokens <= GRAPH_MAX_TOKENS else "ungraphed",
               "TP 1" if row.gpus == 1 else "TP > 1", "L4" if row.gpu == "l4" else "other GPUs")
        groups[key].append((committed[i], speed_bias(row.value, pred[i]), (row.value - pred[i]) * 1e3))
    med = statistics.median
    print("| step | TP | GPU | rows | committed | now | measured - now, ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for k in sorted(groups):
        v = groups[k]
        print(f"| {k[0]} | {k[1]} | {k[2]} | {len(v)} | {med(a for a, _, _ in v):+.1f} % | "
              f"{med(b for _, b, _ in v):+.1f} % | {med(c for _, _, c in v):+.1f} |")

    print("\nSmall models, TP 1: measured / re-predicted ms at 256 and 1,024 tokens, and the step between them")
    print("| GPU | host speed | 256 tok | 1,024 tok | 256 -> 1,024 measured / planned |")
    print("|---|---:|---:|---:|---:|")
    cell = defaultdict(dict)
    for i in committed:
        row = rows[i]
        if row.model in SMALL_MODELS and row.gpus == 1:
            cell[(row.gpu, as_known_now(row).host_speed)].setdefault(row.prompt_tokens, []).append((row.value, pred[i]))
    for (gpu, host), by_p in sorted(cell.items()):
        if 256 not in by_p or 1024 not in by_p:
            continue
        m256, p256 = (med(x[j] for x in by_p[256]) * 1e3 for j in (0, 1))
        m1k, p1k = (med(x[j] for x in by_p[1024]) * 1e3 for j in (0, 1))
        print(f"| {gpu} | {host or 1:.2f} | {m256:.1f} / {p256:.1f} | {m1k:.1f} / {p1k:.1f} | "
              f"{m1k - m256:+.1f} / {p1k - p256:+.1f} |")

    print("\nL4 (GCP g2), 4,096 tokens: measured ms at TP 1 / 2 / 4, and the all-reduce rate the added time implies")
    print("| model | TP 1 | TP 2 | TP 4 | implied GB/s at TP 2 / 4 | planned TP 2 / 4 |")
    print("|---|---:|---:|---:|---:|---:|")
    l4 = defaultdict(dict)
    for i in committed:
        row = rows[i]
        if row.gpu == "l4" and row.prompt_tokens == 4096:
            l4[row.model][row.gpus] = (row.value, pred[i])
    for name, by_tp in sorted(l4.items()):
        if 1 not in by_tp:
            continue
        model = models.get(name)
        t1 = by_tp[1][0]
        implied = " / ".join(f"{allreduce_gbps(model, 4096, n, by_tp[n][0] - t1 / n):.1f}"
                             if n in by_tp and by_tp[n][0] > t1 / n else "-" for n in (2, 4))
        planned = " / ".join(f"{by_tp[n][1] * 1e3:.0f}" if n in by_tp else "-" for n in (2, 4))
        cells = " | ".join(f"{by_tp[n][0] * 1e3:.0f}" if n in by_tp else "-" for n in (1, 2, 4))
        print(f"| {name} | {cells} | {implied} | {planned} |")


if __name__ == "__main__":
    main()
