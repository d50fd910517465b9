"""Benchmark: the whole GPU catalog x every precision for 1M cfDNA-Gen sequences with batch=auto.

Prints the best and median wall and CPU time of one full sweep (every runtime-independent precision x every GPU)
over repeated runs, after one warm-up sweep (data files loaded and parsed once, as in the app). Each timed sweep plans
a job of a different size, as when a user changes the sequence count: the memory fits and every job-size-dependent
result miss, while the work of one pass at an unchanged batch is reused. A third line times cold sweeps: every engine
and model cache cleared first, as when the user picks another model or precision and nothing can be reused.
Run: python3 benchmarks/engine_catalog.py
"""

import inspect
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.engine.estimate import estimate_all  # noqa: E402
from planner.engine.plan import Plan  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.jobs import Generate  # noqa: E402
from planner.inputs.models import load_models  # noqa: E402


def sweep(facts, model, precisions, sequences: int = 1_000_000) -> int:
    n = 0
    for p in precisions:
        plan = Plan(model, Generate(sequences, 1, 165), p, batch=None, price_tier="community")
        n += len(estimate_all(plan, facts))
    return n


def clear_engine_caches() -> int:
    """Empty every lru_cache of the engine's and the model profiles' modules (functions and methods); returns how
    many."""
    cleared = 0
    for name, module in list(sys.modules.items()):
        if not name.startswith(("planner.engine", "planner.inputs.models")):
            continue
        for obj in vars(module).values():
            owners = [obj] + (list(vars(obj).values()) if inspect.isclass(obj) else [])
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


def main(repeats: int = 30) -> None:
    facts, model = load_facts(), load_models().get("cfdna-gen")
    catalog = facts.catalog
    # every precision that runs on any runtime: the GGUF formats (llama.cpp's only) and the library kernels
    # (bitsandbytes, exllama: PyTorch eager only) go through the same code paths as int8/int4 and are left out
    precisions = [p.id for p in facts.rules.precisions if not p.runtimes]
    estimates = sweep(facts, model, precisions)  # warm-up
    # a new job each time: no cached memory fit or job-size result
    times, cpu = timed(lambda i: sweep(facts, model, precisions, 1_000_001 + i), repeats)
    print(f"{len(catalog.gpus)} GPUs x {len(precisions)} precisions = {estimates} estimates, batch=auto")
    print(f"full sweep wall time: best {min(times) * 1e3:.1f} ms, median {statistics.median(times) * 1e3:.1f} ms "
          f"over {repeats} runs ({min(times) / estimates * 1e6:.0f} us per estimate)")
    print(f"full sweep CPU time:  best {min(cpu) * 1e3:.1f} ms, median {statistics.median(cpu) * 1e3:.1f} ms "
          "(process time: excludes time the machine gave to other work)")

    cold_times, _ = timed(lambda i: sweep(facts, model, precisions, 2_000_001 + i), repeats, clear_engine_caches)
    print(f"cold sweep wall time: best {min(cold_times) * 1e3:.1f} ms, median "
          f"{statistics.median(cold_times) * 1e3:.1f} ms (every engine cache cleared first: another model or "
          f"precision; {clear_engine_caches()} caches)")


if __name__ == "__main__":
    main()
