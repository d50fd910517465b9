"""A rate sweep of the serving simulation, timed: Llama-3-8B bf16 on one H100 SXM under vLLM (or another engine),
512 + 256 tokens per request, 8 rates (fractions of the simulated saturation rate), 600 requests each; the step model
built once.
Prints the median of `runs` repetitions of (step model, saturation, 8-point sweep) in milliseconds, and the sweep;
then the same 8 rates served disaggregated (1 prefill + 1 decode server: both pools simulated and combined).

    python3 benchmarks/serving_sweep.py [runs] [runtime] [engine]   (runtime: a serving engine of data/serving.yaml,
    vllm; engine: one of its older generations, e.g. vLLM's v0, whose steps pay CPU work per sequence)
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.engine.plan import Plan  # noqa: E402
from planner.engine.serving_sim import (Pools, Requests, Slo, combine_pools, kv_link, pool_runs,  # noqa: E402
                                        saturation_rate, step_times, sweep)
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.jobs import Generate  # noqa: E402
from planner.inputs.models import load_models  # noqa: E402
from planner.inputs.serving_runtimes import load_schedulers  # noqa: E402

SHARES = (0.1, 0.25, 0.4, 0.55, 0.7, 0.8, 0.9, 1.0)


def main(runs: int, runtime: str = "vllm", engine: str | None = None) -> None:
    facts = load_facts()
    prof = load_schedulers().get(runtime)
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime=prof.efficiency_of)
    gpu = facts.catalog.get("h100-sxm")
    sched = prof.on(gpu.id, gpu.vram_gib)
    if engine:
        sched = replace(sched, host_us_per_seq=prof.host_us_per_seq(engine))
    reqs, slo = Requests((512,), (256,)), Slo(0.5, 0.05)
    build, sat_ms, sweep_ms = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        st = step_times(plan, gpu, facts, sched, 1, reqs.mean_context)
        t1 = time.perf_counter()
        sat = saturation_rate(st, sched, reqs)
        t2 = time.perf_counter()
        points = sweep(st, sched, reqs, [sat * k for k in SHARES], slo, saturation=sat)
        t3 = time.perf_counter()
        build.append((t1 - t0) * 1e3)
        sat_ms.append((t2 - t1) * 1e3)
        sweep_ms.append((t3 - t2) * 1e3)
    split_ms = []
    pools = Pools(1, 1, kv_link(gpu, 1, 2))
    for _ in range(runs):
        t0 = time.perf_counter()
        for k in SHARES:
            rate = sat * k
            combine_pools(st, reqs, pools, pool_runs(st, sched, reqs, rate, 1, True, 600, 0),
                          pool_runs(st, sched, reqs, rate, 1, False, 600, 0), rate, slo, None, 600, 0)
        split_ms.append((time.perf_counter() - t0) * 1e3)
    print(f"step model {statistics.median(build):.1f} ms, saturation {statistics.median(sat_ms):.1f} ms, "
          f"8-rate sweep {statistics.median(sweep_ms):.1f} ms (median of {runs})")
    print(f"disaggregated 8-rate sweep (1 prefill + 1 decode) {statistics.median(split_ms):.1f} ms")
    print(f"saturation {sat:.2f} requests/s")
    for p in points:
        print(f"  rate {p.rate:7.2f}/s  TTFT p50 {p.ttft[50] * 1e3:7.1f} p95 {p.ttft[95] * 1e3:7.1f} ms  TPOT p95 "
              f"{p.tpot[95] * 1e3:6.2f} ms  ITL p50 {p.itl[50] * 1e3:6.2f} ms  {p.tokens_per_s:7.0f} tok/s  "
              f"SLO {'met' if p.meets_slo else 'missed'}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7, sys.argv[2] if len(sys.argv) > 2 else "vllm",
         sys.argv[3] if len(sys.argv) > 3 else None)
