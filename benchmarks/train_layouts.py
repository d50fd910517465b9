"""Benchmark: a training plan's catalog sweep with layout auto (every tp x pp x cp x sharding candidate per GPU)
against the same plan with one fixed layout and with none, CPU time per sweep (median of the repeats).

    python3 benchmarks/train_layouts.py [--repeats 5]

Each figure is a cold sweep (the engine's caches cleared first: a page change of the layout or model) and a warm one
(the same plan again)."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_catalog import clear_engine_caches  # noqa: E402
from planner.engine.estimate import estimate_all  # noqa: E402
from planner.engine.plan import Plan  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.jobs import Train  # noqa: E402
from planner.inputs.layouts import parse_layout  # noqa: E402
from planner.inputs.models import load_models  # noqa: E402

CASES = (("none, fsdp", "", "fsdp"), ("tp=2,pp=2,v=2, zero1", "tp=2,pp=2,v=2", "zero1"),
         ("auto, auto", "auto", "auto"))


def _cpu_ms(plan: Plan, facts, cold: bool) -> float:
    if cold:
        clear_engine_caches()
    t = time.process_time()
    estimate_all(plan, facts)
    return (time.process_time() - t) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    facts = load_facts()
    m = load_models().get("llama-3-70b")
    base = Plan(m, Train(100_000, 4096, 1.0, checkpointing=True, global_batch=512), "bf16", gpus=64)
    n = len(list(facts.catalog.selection(False)))
    print(f"Llama-3-70B, 64 GPUs, 4,096 tokens, global batch 512, {n} GPUs of the catalog; CPU ms per sweep")
    for name, lay, shard in CASES:
        plan = replace(base, workload=replace(base.workload, layout=parse_layout(lay), sharding=shard))
        estimate_all(plan, facts)  # data files loaded once
        cold = [_cpu_ms(plan, facts, True) for _ in range(args.repeats)]
        warm = [_cpu_ms(plan, facts, False) for _ in range(args.repeats)]
        print(f"  layout {name:22s} cold {statistics.median(cold):8.1f}  warm {statistics.median(warm):8.1f}")


if __name__ == "__main__":
    main()
