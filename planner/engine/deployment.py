"""Deployment search: replicas x GPU x tensor-parallel degree x serving engine that serve a request rate within a
latency SLO (p95 TTFT and p95 TPOT) for the least $ per hour, with the runner-ups and why each loses. Pure.

Every candidate gets a cheap estimate first: the requests per second one replica completes (each request's prefill
at the step budget plus its decode tokens at the largest batch that fits, from the engine). It is not a bound: a
simulated replica, whose steps share one weight read between prompt chunks and decodes, completed up to 1.26x as many
(Llama-3-8B and Mistral-7B, four GPUs, three length mixes, measured 2026-11-27), so the least $/h a candidate could
cost is taken at CEILING_MARGIN x the estimate. Candidates are then simulated (planner.engine.serving_sim) cheapest
ceiling first, each at the target rate split over r replicas (r from its fewest up), until the next ceiling costs
more than the best found. A replica's share of the rate must also stay below its simulated saturation rate (the
queue grows without bound above it, whatever a finite run's percentiles say).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from planner.engine.estimate import efficiency_on, setup_on
from planner.engine.memory import usable_gb
from planner.engine.phases import generate_phases
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.engine.serving_sim import (DEFAULT_REQUESTS, RatePoint, Requests, Slo, StepTimes, kv_split,
                                        saturation_rate, serve_rate, step_times)
from planner.inputs.catalog import GPU
from planner.inputs.facts import Facts
from planner.inputs.jobs import Generate
from planner.inputs.serving_runtimes import Scheduler, Schedulers

TP_DEGREES = (1, 2, 4, 8)
MAX_REPLICAS = 1024
RUNNER_UPS = 5  # runner-ups simulated beyond the best (when their ceilings allow them to compete)
MAX_SIMULATED = 40  # candidates simulated at most (each a few runs)
CEILING_MARGIN = 1.5  # the estimate's headroom when pruning (see the module docstring: 1.26x measured)
REPLICA_STEPS = (1.0, 1.25, 1.5, 2.0, 3.0)  # replica counts tried, as multiples of the fewest (then one more each)


@dataclass(frozen=True)
class Candidate:
    """One way to serve: `replicas` copies of `tp` x `gpu` running `sched`; `point` is one replica at its share of the
    rate (None: not simulated); `why` says why it fails or loses ('' for the best)."""

    gpu: GPU
    sched: Scheduler
    tp: int
    usd_per_hour_replica: float | None
    ceiling_rps: float  # requests/s one replica completes, estimated (0: it can't serve); see the module docstring
    replicas: int | None = None
    point: RatePoint | None = None
    steps: StepTimes | None = None
    why: str = ""
    floor_usd_per_hour: float = math.inf  # the least it could cost at the target (CEILING_MARGIN x the estimate)
    saturation_rps: float | None = None  # requests/s one replica completes with its queue never empty (simulated)

    @property
    def usd_per_hour(self) -> float | None:
        if self.replicas is None or self.usd_per_hour_replica is None:
            return None
        return self.replicas * self.usd_per_hour_replica

    @property
    def label(self) -> str:
        return f"{self.replicas or '?'} x {self.tp} x {self.gpu.name}, {self.sched.name}"


@dataclass(frozen=True)
class Deployment:
    """The search's answer: the best candidate (None: none meets the SLO), the simulated runner-ups in order and the
    rest with why they were left out."""

    best: Candidate | None
    runner_ups: tuple[Candidate, ...]
    left_out: tuple[Candidate, ...]
    rate: float
    slo: Slo


def _heads_split(plan: Plan, tp: int) -> str:
    heads = plan.model.tensor_parallel_heads
    if tp == 1:
        return ""
    if heads is None:
        return f"{plan.model.name} has no tensor-parallel split modelled"
    return f"its {heads} KV heads don't split over {tp} GPUs" if heads % tp else ""


def ceiling(plan: Plan, gpu: GPU, facts: Facts, sched: Scheduler, tp: int, reqs: Requests) -> tuple[float, str]:
    """(requests/s one replica completes, estimated, or 0 and why it can't serve at all): per request, its prompt
    prefilled in steps of the token budget and its output decoded at the largest batch the KV cache and the request
    cap allow, both at the engine's step times; no queueing; a mixed step's shared weight read not counted."""
    why = _heads_split(plan, tp)
    if why:
        return 0.0, why
    p = replace(plan, runtime=sched.efficiency_of)
    eff = efficiency_on(p, gpu, facts)
    if eff.unsupported:
        return 0.0, eff.unsupported
    if tp > 1 and gpu.link_for(tp) is None:
        return 0.0, f"no link joins {tp} {gpu.name} GPUs"
    s = replace(setup_on(p, gpu, facts), tp=tp)
    kv_gb, fixed_gb = kv_split(plan, s, sched, eff.cuda_context_gb)
    free = usable_gb(gpu, sched.memory_fraction) - fixed_gb
    if free <= 0:
        planned = usable_gb(gpu, sched.memory_fraction)
        return 0.0, (f"the weights and activations take {fixed_gb:,.1f} GB of the {planned:,.1f} GB "
                     f"{sched.name} plans for on each GPU")
    kv_tokens = int(free / kv_gb) if kv_gb > 0 else 10**9
    if kv_tokens < reqs.longest:
        return 0.0, f"its KV cache holds {kv_tokens:,} tokens, a request needs up to {reqs.longest:,}"
    if not sched.chunked_prefill and max(reqs.prompts) > sched.token_budget:
        return 0.0, (f"a {max(reqs.prompts):,}-token prompt exceeds {sched.name}'s step budget of "
                     f"{sched.token_budget:,} tokens without chunked prefill")
    mean_p = sum(reqs.prompts) / len(reqs.prompts)
    mean_o = sum(reqs.outputs) / len(reqs.outputs)
    batch = max(1, min(sched.max_num_seqs, int(kv_tokens / (mean_p + mean_o))))
    chunk = min(sched.token_budget, max(reqs.prompts))
    prefill = phase_seconds(generate_phases(plan.model, Generate(1, chunk, 1), s, 1, 1.0)[0], gpu, eff) / chunk
    decode = generate_phases(plan.model, Generate(batch, 1, 2), s, batch, 1.0)[-1]
    per_token = phase_seconds(decode._replace(p0=max(reqs.mean_context, 1)), gpu, eff) / batch
    per_request = prefill * mean_p + per_token * max(mean_o - 1, 0)
    if not math.isfinite(per_request) or per_request <= 0:
        return 0.0, f"no link joins {tp} {gpu.name} GPUs for tensor parallel"
    return 1.0 / per_request, ""


def _prefilter(plan: Plan, facts: Facts, gpus: list[GPU], schedulers: list, reqs: Requests, rate: float,
               tps: tuple[int, ...]) -> list[Candidate]:
    """Every candidate with its price and ceiling (why it can't serve when it can't)."""
    out = []
    for gpu in gpus:
        price = facts.prices.for_gpu(gpu).get(plan.price_tier)
        for prof in schedulers:
            sched = prof.on(gpu.id, gpu.vram_gib)
            for tp in tps:
                usd = price.usd_hr * tp if price else None
                rps, why = ceiling(plan, gpu, facts, sched, tp, reqs)
                if not why and usd is None:
                    why = f"no {plan.price_tier} price for {gpu.name}"
                c = Candidate(gpu, sched, tp, usd, rps if not why else 0.0, why=why)
                if not why:
                    fewest = max(1, math.ceil(rate / (rps * CEILING_MARGIN)))
                    c = replace(c, floor_usd_per_hour=fewest * usd)
                out.append(c)
    return out


def _simulate(plan: Plan, facts: Facts, c: Candidate, reqs: Requests, rate: float, slo: Slo, n: int,
              seed: int) -> Candidate:
    """The fewest replicas of `c` whose one replica at its share of the rate meets the SLO (or why none does)."""
    try:
        st = step_times(plan, c.gpu, facts, c.sched, c.tp, reqs.mean_context)
    except ValueError as exc:
        return replace(c, why=str(exc))
    one = step_times_floor(st, reqs)
    if one[1] > slo.tpot_s:
        return replace(c, steps=st, why=f"one decode step alone takes {one[1] * 1e3:,.1f} ms, above the p95 TPOT "
                                        f"target of {slo.tpot_s * 1e3:,.1f} ms")
    if one[0] > slo.ttft_s:
        return replace(c, steps=st, why=f"a prompt alone takes {one[0] * 1e3:,.0f} ms to its first token, above the "
                                        f"p95 TTFT target of {slo.ttft_s * 1e3:,.0f} ms")
    sat = saturation_rate(st, c.sched, reqs, seed)
    if sat <= 0:
        return replace(c, steps=st, why="it completes no request in the simulation")
    fewest = max(1, math.ceil(rate / sat))
    tried, last = set(), None
    for k in REPLICA_STEPS:
        r = min(MAX_REPLICAS, math.ceil(fewest * k))
        for replicas in (r, r + 1):
            if replicas in tried:
                continue
            tried.add(replicas)
            last = serve_rate(st, c.sched, reqs, rate / replicas, slo, c.usd_per_hour_replica, n, seed, sat)
            if last.meets_slo:
                return replace(c, replicas=replicas, point=last, steps=st, saturation_rps=sat)
    why = (f"misses the SLO even at {max(tried)} replicas ({rate / max(tried):.3g} requests/s each): p95 TTFT "
           f"{last.ttft[95] * 1e3:,.0f} ms, p95 TPOT {last.tpot[95] * 1e3:,.1f} ms")
    return replace(c, steps=st, point=last, why=why, saturation_rps=sat)


def step_times_floor(st: StepTimes, reqs: Requests) -> tuple[float, float]:
    """(TTFT of the longest prompt alone, one decode step alone at the mean context): no load gets below them."""
    p = max(reqs.prompts)
    budget = st.max_tokens
    chunks, rest = divmod(p, budget)
    ttft = chunks * st.seconds(0, budget, 0, budget * (budget + 1) / 2, 0) + \
        (st.seconds(0, rest, 0, rest * (rest + 1) / 2 + rest * chunks * budget, 1) if rest else 0.0)
    return ttft, st.seconds(1, 0, reqs.mean_context, 0.0, 1)


def search(plan: Plan, facts: Facts, schedulers: Schedulers, gpus: list[GPU], reqs: Requests, rate: float, slo: Slo,
           runtimes: tuple[str, ...] = (), tps: tuple[int, ...] = TP_DEGREES, n: int = DEFAULT_REQUESTS,
           seed: int = 0) -> Deployment:
    """The cheapest deployment of `plan`'s model serving `rate` requests/s of `reqs` within `slo` on `gpus` (every
    serving engine of `schedulers`, or those named in `runtimes`), its runner-ups and the rest with why."""
    if not plan.model.can_generate:
        raise ValueError(f"serving needs a decoder model; {plan.model.name} is a {plan.model.kind} profile")
    profs = [schedulers.get(r) for r in runtimes] if runtimes else list(schedulers.profiles)
    cands = sorted(_prefilter(plan, facts, [g for g in gpus if g.kind != "cpu"], profs, reqs, rate, tps),
                   key=lambda c: (c.floor_usd_per_hour, -c.ceiling_rps, c.gpu.id, c.sched.id, c.tp))
    done: list[Candidate] = []
    best: Candidate | None = None
    met = stop = 0
    for c in cands:
        if not math.isfinite(c.floor_usd_per_hour) or len(done) >= MAX_SIMULATED or \
                (best is not None and c.floor_usd_per_hour > best.usd_per_hour and met > RUNNER_UPS):
            break
        stop += 1
        r = _simulate(plan, facts, c, reqs, rate, slo, n, seed)
        done.append(r)
        if not r.why:
            met += 1
            if best is None or r.usd_per_hour < best.usd_per_hour:
                best = r
    ok = sorted((c for c in done if not c.why), key=lambda c: (c.usd_per_hour, c.gpu.id, c.sched.id, c.tp))
    runner_ups = [replace(c, why=_loses(c, best)) for c in ok if c is not best]
    failed = [c for c in done if c.why]
    skipped = [replace(c, why=c.why or (f"about {c.ceiling_rps:.3g} requests/s per replica (at most "
                                        f"{c.ceiling_rps * CEILING_MARGIN:.3g}), so at least "
                                        f"${c.floor_usd_per_hour:,.2f}/h, above the best")) for c in cands[stop:]]
    return Deployment(best, tuple(runner_ups + failed), tuple(skipped), rate, slo)


def _loses(c: Candidate, best: Candidate | None) -> str:
    if best is None:
        return ""
    more = c.usd_per_hour - best.usd_per_hour
    if more > 0:
        return (f"meets the SLO but costs ${more:,.2f}/h more ({c.replicas} replicas at "
                f"${c.usd_per_hour_replica:,.2f}/h)")
    return "meets the SLO at the same cost; ordered after by GPU, runtime and TP degree"
