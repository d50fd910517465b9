"""`planner serve`: serving an LLM, TTFT, TPOT, tokens/s and $/1M tokens per concurrency; with --rate, the cheapest
deployment (replicas x GPU x tensor parallel x runtime) meeting a p95 latency SLO, and its hand-off."""

from __future__ import annotations

import argparse

import json
import sys

from planner.cli.plans import device_names, facts_of, plan_from_args
from planner.engine.deployment import disaggregation_verdict, search
from planner.engine.estimate import efficiency_on
from planner.engine.serving import max_concurrency, serving_point
from planner.engine.serving_sim import Requests, Slo, sweep
from planner.inputs.serving_runtimes import load_schedulers
from planner.inputs.serving_trace import load_trace
from planner.views.deployment_view import deployment_doc, summary_rows
from planner.views.report import emit

SWEEP_SHARES = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5)  # the best's sweep: its per-replica rate times these


def _serving_row(gpu_id: str, p, note: str = "") -> dict:
    return {"gpu": gpu_id, "concurrency": p.concurrency, "ttft_ms": round(p.ttft_s * 1e3, 2),
            "front_end_ms": round(p.front_end_s * 1e3, 3),
            "tpot_ms": round(p.tpot_s * 1e3, 3), "tokens_per_s": round(p.tokens_per_s, 1),
            "usd_per_1m_tokens": None if p.usd_per_m_tokens is None else float(f"{p.usd_per_m_tokens:.4g}"),
            "memory_gb": round(p.memory_gb, 2), "fits": p.fits, "note": note}


def cmd_serve(a: argparse.Namespace) -> int:
    plan, facts = plan_from_args(a), facts_of(a)
    names = device_names(a)
    gpus = [facts.catalog.get(n) for n in names] if names else list(facts.catalog.selection(a.include_cpu))
    if a.rate is not None:
        return _deploy(a, plan, facts, gpus)
    rows = []
    for gpu in gpus:
        unsupported = efficiency_on(plan, gpu, facts).unsupported
        if unsupported:  # a runtime that can't run on this device (a CPU): say so instead of timing it
            rows.append({"gpu": gpu.id, "concurrency": None, "note": unsupported})
            continue
        sched = load_schedulers().serving(plan.runtime, gpu.id, gpu.vram_gib)
        rows += [_serving_row(gpu.id, serving_point(plan, gpu, facts, c, a.prompt, a.gen, sched))
                 for c in a.concurrency]
        if a.ttft_ms is None and a.tpot_ms is None:
            continue
        best = max_concurrency(plan, gpu, facts, a.prompt, a.gen, a.ttft_ms, a.tpot_ms, sched)
        rows.append(_serving_row(gpu.id, best, "largest within the target") if best else
                    {"gpu": gpu.id, "concurrency": None, "note": "misses the latency target even alone"})
    print(emit(rows, a.format))
    return 0


def _requests(a: argparse.Namespace) -> Requests:
    if a.trace and a.lengths != "fixed":
        raise ValueError("--lengths: a trace gives each request's lengths; leave --lengths out with --trace")
    if a.lengths != "fixed":
        try:
            return Requests.spread(int(a.input_tokens), int(a.output_tokens), a.lengths)
        except ValueError as exc:
            raise ValueError(f"--lengths {a.lengths}: {exc}") from None
    if a.trace:
        try:
            prompts, outputs = load_trace(a.trace)
        except ValueError as exc:
            raise ValueError(f"--trace: {exc}") from None
        return Requests(prompts, outputs)
    return Requests((int(a.input_tokens),), (int(a.output_tokens),))


def _deploy(a: argparse.Namespace, plan, facts, gpus) -> int:
    """The cheapest deployment meeting the SLO at --rate, its runner-ups, a sweep and the hand-off."""
    if not plan.model.can_generate:
        raise ValueError(f"--model: serving needs a decoder model; {plan.model.name} is a {plan.model.kind} profile")
    schedulers = load_schedulers()
    runtimes = tuple(r.strip() for r in a.runtimes.split(",") if r.strip()) if a.runtimes else ()
    for r in runtimes:
        try:
            schedulers.get(r)
        except KeyError as exc:
            raise ValueError(f"--runtimes: {exc}") from None
    reqs, slo = _requests(a), Slo(a.slo_ttft_p95, a.slo_tpot_p95)
    dep = search(plan, facts, schedulers, gpus, reqs, a.rate, slo, runtimes, n=a.requests, seed=a.seed)
    points = []
    if dep.best is not None and not dep.best.disaggregated:  # a split deployment's pools: no one-replica sweep
        share = a.rate / dep.best.replicas
        points = sweep(dep.best.steps, dep.best.sched, reqs, [share * k for k in SWEEP_SHARES], slo,
                       dep.best.usd_per_hour_replica, a.requests, a.seed, dep.best.saturation_rps)
    header = (f"planner serve --rate {a.rate:g}: {plan.model.name}, p95 TTFT <= {a.slo_ttft_p95 * 1e3:g} ms, "
              f"p95 TPOT <= {a.slo_tpot_p95 * 1e3:g} ms")
    if a.format == "json":
        doc = deployment_doc(dep, schedulers, plan.model.id, reqs.longest, points, header)
        print(json.dumps(doc, indent=2, default=str))
    else:
        print(emit(summary_rows(dep), a.format))
        verdict = disaggregation_verdict(dep)
        if verdict:
            print(verdict, file=sys.stderr)
        if dep.best is None:
            print("no deployment meets the SLO at this rate (the rows say why each misses)", file=sys.stderr)
    return 0
