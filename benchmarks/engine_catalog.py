"""Benchmark: the whole GPU catalog x every precision for 1M cfDNA-Gen sequences with batch=auto, here and at another
commit, alternating so both see the same load.

    python3 benchmarks/engine_catalog.py                   # this tree alone
    python3 benchmarks/engine_catalog.py --base fc37635    # and fc37635's engine, in turns

One sweep = every runtime-independent precision x every GPU of the catalog (the GGUF formats and the library kernels
go through the same code paths as int8/int4 and are left out). Per tree, after one warm-up sweep (data files loaded
and parsed once, as in the app), it prints the median wall and CPU time of:
- `new size`: each sweep plans a job of another size (the page's sequence count changed), at 1x, 4x and 16x the
  catalog (the catalog's GPUs repeated under other ids), and the cost per estimate;
- `same plan`: the same plan again;
- `cold`: every engine and model cache cleared first (another model or precision: nothing can be reused);
and the new-size sweep as a share of the cold one. The other commit runs this same script from a temporary worktree
(`--tree`), so both trees are measured by one piece of code.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from base_tree import add_compare_arguments, alternated, run_in_tree

ROOT = Path(__file__).resolve().parent.parent
SCALES = (1, 4, 16)


def tree_argument(argv: list[str]) -> str | None:
    """The --tree PATH of a command line (the tree this process imports planner from), read before the imports."""
    return argv[argv.index("--tree") + 1] if "--tree" in argv[:-1] else None


sys.path.insert(0, tree_argument(sys.argv) or str(ROOT))
from planner.engine.estimate import estimate_all  # noqa: E402
try:  # the sweep's array arithmetic, as the page runs the catalog (planner/engine/sweep.py; older trees have none)
    from planner.engine import sweep as arrays  # noqa: E402
except ImportError:
    arrays = None
from planner.engine.plan import Plan  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.jobs import Generate  # noqa: E402
from planner.inputs.models import load_models  # noqa: E402


def sweep(facts, model, precisions, sequences: int = 1_000_000) -> int:
    n = 0
    for p in precisions:
        plan = Plan(model, Generate(sequences, 1, 165), p, batch=None, price_tier="community")
        n += len(estimate_all(plan, facts, arrays=arrays) if arrays else estimate_all(plan, facts))
    return n


def clear_engine_caches() -> int:
    """Empty every cache of the engine's and the model profiles' modules (functions, methods and module-level memos
    with a cache_clear); returns how many."""
    cleared = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith(("planner.engine", "planner.inputs.models")):
            continue
        for obj in vars(module).values():
            owners = list(vars(obj).values()) if inspect.isclass(obj) else [obj]  # a class: its cached methods
            for f in owners:
                if callable(getattr(f, "cache_clear", None)):
                    f.cache_clear()
                    cleared += 1
    return cleared


def timed(run, repeats: int, before=None) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of run(i) for i in range(repeats); before() (untimed) runs ahead of each."""
    times, cpu = [], []
    for i in range(repeats):
        if before:
            before()
        t0, c0 = time.perf_counter(), time.process_time()
        run(i)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return times, cpu


def scaled(facts, k: int):
    """The facts with the catalog's GPUs k times over (copies under other ids, priced as their originals are)."""
    if k == 1:
        return facts
    copies = tuple(replace(g, id=f"{g.id}~{i}") for i in range(1, k) for g in facts.catalog.gpus)
    prices = replace(facts.prices, prices={**facts.prices.prices,
                                           **{c.id: facts.prices.for_gpu(g) for c, g in
                                              zip(copies, facts.catalog.gpus * (k - 1))}})
    return replace(facts, catalog=replace(facts.catalog, gpus=facts.catalog.gpus + copies), prices=prices)


def measure(repeats: int) -> dict:
    """This process's planner: {figure: [median wall ms, median CPU ms]} and the sweep's size."""
    facts, model = load_facts(), load_models().get("cfdna-gen")
    # every precision a dense decoder's generate job runs on any runtime: not the runtime-only formats (GGUF, the
    # library kernels), nor a training-only recipe (fp8-te) or an experts-only format (mxfp4), which add estimates
    # that refuse or repeat bf16; getattr: the base tree of --base may predate those fields
    precisions = [p.id for p in facts.rules.precisions if not p.runtimes and getattr(p, "fp8_training", None) is None
                  and getattr(p, "quantized_weights", "all") != "experts"]
    out = {"gpus": len(facts.catalog.gpus), "precisions": len(precisions)}
    for k in SCALES:
        f = scaled(facts, k)
        out[f"estimates {k}x"] = sweep(f, model, precisions)  # warm-up
        out[f"new size {k}x"] = timed(lambda i, f=f: sweep(f, model, precisions, 1_000_001 + i),
                                      max(3, repeats // k))
    out["same plan"] = timed(lambda i: sweep(facts, model, precisions), repeats)
    out["cold"] = timed(lambda i: sweep(facts, model, precisions, 2_000_001 + i), repeats, clear_engine_caches)
    return {k: [statistics.median(v[0]) * 1e3, statistics.median(v[1]) * 1e3] if isinstance(v, tuple) else v
            for k, v in out.items()}


def report(name: str, rounds: list[dict]) -> None:
    """Median over rounds of each figure's median."""
    med = lambda key, i: statistics.median(r[key][i] for r in rounds)  # noqa: E731
    first = rounds[0]
    print(f"{name}: {first['gpus']} GPUs x {first['precisions']} precisions, batch=auto "
          f"({len(rounds)} round{'s' if len(rounds) > 1 else ''})")
    for k in SCALES:
        n = first[f"estimates {k}x"]
        wall, cpu = med(f"new size {k}x", 0), med(f"new size {k}x", 1)
        print(f"  new size {k:>2}x ({n:>5} estimates): wall {wall:7.1f} ms, CPU {cpu:7.1f} ms, "
              f"{cpu / n * 1e3:5.1f} us per estimate")
    for key in ("same plan", "cold"):
        print(f"  {key:9} ( 1x):                 wall {med(key, 0):7.1f} ms, CPU {med(key, 1):7.1f} ms")
    print(f"  new size / cold (1x, CPU): {med('new size 1x', 1) / med('cold', 1):.0%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30, help="sweeps per figure at 1x (fewer at 4x and 16x)")
    add_compare_arguments(ap)
    a = ap.parse_args()
    if a.json:
        print(json.dumps(measure(a.repeats)))
        return
    if not a.base:
        report("this tree", [measure(a.repeats)])
        return
    rounds: dict[str, list[dict]] = {}
    again = ["--repeats", str(a.repeats)]
    for name, figures in alternated(a.base, a.rounds, lambda t: run_in_tree(__file__, t, again)):
        rounds.setdefault(name, []).append(figures)
    for name, rs in rounds.items():
        report(name, rs)


if __name__ == "__main__":
    main()
