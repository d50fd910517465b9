"""Benchmark: the Batch size tab's sweep (planner.views.charts.batch_sweep: each compared GPU at every batch of its
grid) for the default plan and four GPUs, here and at another commit, alternating so both see the same load.

    python3 benchmarks/batch_chart.py                      # this tree alone
    python3 benchmarks/batch_chart.py --base 667fc7e       # and 667fc7e's, in turns

Prints the median CPU ms of a sweep for a job of another size (the sequence count changed: what the fixed parts
and the columns are reused for) and of a cold one (every engine and model cache cleared first, untimed). The other
commit runs this same script from a temporary worktree (`--tree`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace

from base_tree import add_compare_arguments, alternated, run_in_tree
# engine_catalog puts the --tree on sys.path before importing planner
from engine_catalog import clear_engine_caches
from planner.inputs.facts import load_facts  # noqa: E402
from planner.views import charts, plan_inputs  # noqa: E402

GPUS = ("h100-sxm", "a100-sxm-80gb", "rtx-4090", "l40s")


def measure(repeats: int) -> dict[str, float]:
    """{'new size': median CPU ms, 'cold': median CPU ms, 'points': points per sweep}."""
    facts = load_facts()
    inputs = plan_inputs.DEFAULTS
    plan = plan_inputs.to_plan(inputs, plan_inputs.resolve_model(inputs))
    gpus = [facts.catalog.get(g) for g in GPUS]
    points = len(charts.batch_sweep(plan, gpus, facts, None))  # warm-up
    out: dict[str, float] = {"points": points}
    for name, clear in (("new size", False), ("cold", True)):
        cpu = []
        for i in range(repeats):
            p = replace(plan, workload=replace(plan.workload, n_sequences=plan.workload.n_sequences + 1 + i))
            if clear:
                clear_engine_caches()
            c0 = time.process_time()
            charts.batch_sweep(p, gpus, facts, None)
            cpu.append(time.process_time() - c0)
        out[name] = statistics.median(cpu) * 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20, help="sweeps per figure")
    add_compare_arguments(ap)
    a = ap.parse_args()
    if a.json:
        print(json.dumps(measure(a.repeats)))
        return
    rounds: dict[str, list[dict]] = {}
    for name, figures in alternated(a.base, a.rounds,
                                    lambda t: run_in_tree(__file__, t, ["--repeats", str(a.repeats)])):
        rounds.setdefault(name, []).append(figures)
    for name, rs in rounds.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("new size", "cold")}
        print(f"{name}: batch chart, {rs[0]['points']:.0f} points of {len(GPUS)} GPUs ({len(rs)} rounds): "
              f"new size {med['new size']:.1f} ms CPU, cold {med['cold']:.1f} ms CPU")


if __name__ == "__main__":
    main()
