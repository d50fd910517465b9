"""`planner gpus`, `planner models`, `planner runtimes` and `planner backends`: the catalog, the model presets, the
runtimes and the attention backends per GPU architecture."""

from __future__ import annotations

import argparse
import json

from planner.inputs.catalog import COMPUTE_PATHS, PRICE_TIERS
from planner.inputs.facts import load_facts
from planner.inputs.models import load_models
from planner.views.report import attention_dtype_of, backend_matrix_rows, backend_rows, csv_text, emit, sig, text_table


def cmd_gpus(a: argparse.Namespace) -> int:
    rows = []
    for g in load_facts().catalog.selection(a.include_cpu):
        rows.append({"id": g.id, "name": g.name, "vendor": g.vendor, "sm": g.sm, "vram_gib": g.vram_gib,
                     "vram_gb": round(g.vram_gb, 2), "mem_bw_gbps": g.mem_bw_gbps,
                     **{p: sig(g.peak_tflops(p)) for p in COMPUTE_PATHS}, "sms": g.sm_count or None,
                     "bf16_ceiling": round(g.ceiling_tflops("bf16"), 1) if g.bf16_tflops else None,
                     "ceiling": ("measured" if g.ceiling("bf16").measured else "derived") if g.bf16_tflops else None,
                     **{f"{t}_usd_hr": (g.price(t).usd_hr if g.price(t) else None) for t in PRICE_TIERS}})
    print(emit(rows, a.format))
    return 0


def cmd_backends(a: argparse.Namespace) -> int:
    """Attention backends per GPU architecture: what sdpa (auto) and xformers pick, which kernels run, the oldest
    PyTorch build; then what each backend needs and costs."""
    facts = load_facts()
    dtype = attention_dtype_of(facts.rules, a.precision)
    pinned = facts.builds.pin(a.pytorch) if a.pytorch else ()
    matrix = backend_matrix_rows(facts.rules, facts.catalog, facts.builds, dtype, a.head_dim, pinned)
    backends = backend_rows(facts.rules)
    if a.format == "json":
        print(json.dumps({"attention_dtype": dtype, "head_dim": a.head_dim, "pytorch": a.pytorch,
                          "matrix": matrix, "backends": backends}, indent=2))
    elif a.format == "csv":
        print(csv_text(matrix), end="")
    else:
        print(f"Attention in {dtype}, head dim {a.head_dim}" + (f", PyTorch {a.pytorch}" if a.pytorch else "")
              + ": the kernel sdpa (auto) and xformers pick on each architecture, and which kernels run there\n")
        print(text_table(matrix) + "\n")
        print(text_table(backends))
    return 0


def cmd_models(a: argparse.Namespace) -> int:
    rows = [{"id": m.id, "name": m.name, "kind": m.kind, "params": m.params, "active_params": m.active_params,
             **m.listing()}
            for m in load_models().models]
    print(emit(rows, a.format))
    return 0


def cmd_runtimes(a: argparse.Namespace) -> int:
    """Each runtime: the jobs it runs, whether it fuses elementwise chains, and for training its layouts and the
    share of each layout's data-parallel collectives its documented schedule overlaps."""
    rows = []
    for r in load_facts().runtimes.runtimes:
        t = r.training
        rows.append({"id": r.id, "name": r.name.split(" (")[0], "jobs": ",".join(r.jobs),
                     "fuses_elementwise": r.fuses_elementwise,
                     "layouts": ",".join(t.layouts) if t else None,
                     "overlap": ",".join(f"{k} {v:g}" for k, v in t.overlap) if t else None,
                     "exposed_layers": t.exposed_layers if t and t.exposed_layers else None})
    print(emit(rows, a.format))
    return 0
