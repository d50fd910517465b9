"""`planner serve`: serving an LLM, TTFT, TPOT, tokens/s and $/1M tokens per concurrency."""

from __future__ import annotations

import argparse

from planner.cli.plans import device_names, facts_of, plan_from_args
from planner.engine.estimate import efficiency_on
from planner.engine.serving import max_concurrency, serving_point
from planner.views.report import emit


def _serving_row(gpu_id: str, p, note: str = "") -> dict:
    return {"gpu": gpu_id, "concurrency": p.concurrency, "ttft_ms": round(p.ttft_s * 1e3, 2),
            "tpot_ms": round(p.tpot_s * 1e3, 3), "tokens_per_s": round(p.tokens_per_s, 1),
            "usd_per_1m_tokens": None if p.usd_per_m_tokens is None else float(f"{p.usd_per_m_tokens:.4g}"),
            "memory_gb": round(p.memory_gb, 2), "fits": p.fits, "note": note}


def cmd_serve(a: argparse.Namespace) -> int:
    plan, facts = plan_from_args(a), facts_of(a)
    names = device_names(a)
    gpus = [facts.catalog.get(n) for n in names] if names else list(facts.catalog.selection(a.include_cpu))
    rows = []
    for gpu in gpus:
        unsupported = efficiency_on(plan, gpu, facts).unsupported
        if unsupported:  # a runtime that can't run on this device (a CPU): say so instead of timing it
            rows.append({"gpu": gpu.id, "concurrency": None, "note": unsupported})
            continue
        rows += [_serving_row(gpu.id, serving_point(plan, gpu, facts, c, a.prompt, a.gen))
                 for c in a.concurrency]
        if a.ttft_ms is None and a.tpot_ms is None:
            continue
        best = max_concurrency(plan, gpu, facts, a.prompt, a.gen, a.ttft_ms, a.tpot_ms)
        rows.append(_serving_row(gpu.id, best, "largest within the target") if best else
                    {"gpu": gpu.id, "concurrency": None, "note": "misses the latency target even alone"})
    print(emit(rows, a.format))
    return 0
