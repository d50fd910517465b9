"""Fit a runtime's bandwidth fraction and fixed cost per layer to one model's batch-1 decode at several TP degrees.

An analysis of validation rows, not part of the planner (nothing here is read by the engine). Each row is a whole
generate job at batch 1 over `gpus` GPUs in tensor parallel; per generated token it is modelled as

    seconds / gen_tokens = W / (n x B) + L x k + collectives(n)

(a row's seconds per token: its whole job's seconds / gen_tokens, or 1 / its tokens per second)
W = the bytes a decode step reads (layer matrices and LM head, ModelProfile.matmul_params x the precision's bytes),
n = the TP degree, L = layers, collectives(n) = one decode step's collectives as the planner plans the row
(ModelProfile.tensor_parallel_comm: two all-reduces of the hidden state per layer, and the logits all-gather where
the runtime splits the LM head), timed with its NCCL model over the GPU's link (planner.engine.collectives,
data/interconnects.yaml). The two unknowns, 1/B and k, come from a
least-squares fit; the prompt's prefill is inside `seconds` and is ignored (one pass over the prompt against
gen_tokens decode steps). Prints B as a fraction of the GPU's datasheet bandwidth, k in us per layer, and each row
against the fit.

Run: python3 validation/fit_fixed_cost.py [row id ...]   (default: FasterTransformer's GPT-20B, 200 + 200 tokens;
rows of several models may be fitted together, e.g. LMDeploy's Llama-2-7B, 13B and 70B TP4 at batch 1)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dataclasses import replace  # noqa: E402

from planner.engine.collectives import comm_seconds, ring_traffic  # noqa: E402
from planner.engine.plan import resolve_setup  # noqa: E402
from planner.inputs.catalog import load_catalog  # noqa: E402
from planner.inputs.precisions import load_rules  # noqa: E402
from planner.inputs.runtimes import load_runtimes  # noqa: E402
from planner.validation.measured import load_measurements, plan_for, validation_models  # noqa: E402

DEFAULT_ROWS = ("ft-gpt20b-fp16-a100sxm80-in200-out200-b1", "ft-gpt20b-fp16-a100sxm80x2-tp2-in200-out200-b1",
                "ft-gpt20b-fp16-a100sxm80x4-tp4-in200-out200-b1", "ft-gpt20b-fp16-a100sxm80x8-tp8-in200-out200-b1")
# seconds per generated token from a row's metric: the whole job's seconds over its tokens, or 1 / tokens per second
PER_TOKEN = {"step_seconds": lambda r: r.value / r.gen_tokens, "tokens_per_s": lambda r: 1.0 / r.value}


def least_squares(a: list[tuple[float, float]], y: list[float]) -> tuple[float, float]:
    """(x0, x1) minimising sum (a_i . x - y_i)^2, by the 2 x 2 normal equations."""
    s00 = sum(p * p for p, _ in a)
    s01 = sum(p * q for p, q in a)
    s11 = sum(q * q for _, q in a)
    t0 = sum(p * v for (p, _), v in zip(a, y))
    t1 = sum(q * v for (_, q), v in zip(a, y))
    det = s00 * s11 - s01 * s01
    if not det:
        raise ValueError("the rows do not separate bandwidth from fixed cost: give two or more TP degrees")
    return (t0 * s11 - t1 * s01) / det, (s00 * t1 - s01 * t0) / det


def fit(rows, catalog, models, rules) -> tuple[float, float, list[tuple]]:
    """(1 / bandwidth in s/B, fixed cost in s per layer, [(row, gpu, measured s/token, fitted s/token, collective s)])
    for batch-1 decode rows (validation Measurements)."""
    if any(r.batch != 1 or r.metric not in PER_TOKEN for r in rows):
        raise ValueError(f"the fit takes batch-1 rows whose metric is one of {', '.join(PER_TOKEN)}")
    a, y, terms = [], [], []
    runtimes = load_runtimes()
    for r in rows:
        m, gpu, n = models.get(r.model), catalog.get(r.gpu), r.gpus
        plan, plan_rules, _ = plan_for(r, models, rules)
        s = replace(resolve_setup(plan, plan_rules, runtimes), tp=n)
        p = s.precision
        comm = sum(comm_seconds(*ring_traffic(c, n), gpu.link_for(n)) for c in m.tensor_parallel_comm(s, 1, 1))
        per_token = PER_TOKEN[r.metric](r)
        a.append((m.matmul_params * p.weight_bytes / n, float(m.layers)))
        y.append(per_token - comm)
        terms.append((r, gpu, per_token, comm))
    inv_bw, k = least_squares(a, y)
    return inv_bw, k, [(r, gpu, t, w * inv_bw + layers * k + comm, comm)
                       for (w, layers), (r, gpu, t, comm) in zip(a, terms)]


def main(ids: list[str]) -> None:
    rows = {r.id: r for r in load_measurements()}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise SystemExit(f"not in validation/measurements.yaml: {', '.join(missing)}")
    try:
        inv_bw, k, fitted = fit([rows[i] for i in ids], load_catalog(), validation_models(), load_rules())
    except ValueError as e:
        raise SystemExit(str(e)) from None
    gpu = fitted[0][1]
    fraction = 1 / inv_bw / (gpu.mem_bw_gbps * 1e9) if inv_bw > 0 else float("inf")
    print(f"bandwidth {1 / inv_bw / 1e9:,.0f} GB/s = {fraction:.2f} of {gpu.name}'s "
          f"{gpu.mem_bw_gbps:,.0f} GB/s; fixed cost {k * 1e6:.0f} us per layer")
    if not 0 < fraction <= 1 or k < 0:
        print("not physical (a bandwidth above the datasheet's, or a negative cost): these rows do not follow one "
              "bandwidth and one fixed cost per layer")
    for r, _, measured, fitted_s, comm in fitted:
        print(f"{r.id}: measured {measured * 1e3:.2f} ms/token, fit {fitted_s * 1e3:.2f} "
              f"({(fitted_s - measured) / measured:+.1%}; collectives {comm * 1e3:.2f} ms)")

if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT_ROWS))
