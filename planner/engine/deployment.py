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

Disaggregated candidates (a runtime whose data/serving.yaml says it splits prefill and decode): P prefill servers and
D decode servers of the same GPU and TP degree, each pool at its share of the rate (serving_sim.Pools): TTFT is the
prefill server's queue and prefill, the KV transfer of the prompt's cache (serving_sim.kv_link: NVLink inside a node,
the fabric between nodes) and the wait for a decode slot; TPOT comes from decode-only steps, with no prompt chunk in
them. Cost is (P + D) x TP x $/GPU-hour. Their least cost is estimated from the same per-request prefill and decode
seconds (each pool at CEILING_MARGIN x its estimate), and they are simulated beside the aggregated ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from planner.engine.estimate import setup_on
from planner.engine.memory import usable_gb
from planner.engine.phases import generate_phases
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.engine.serving_sim import (DEFAULT_REQUESTS, Pools, RatePoint, Requests, Run, Slo, StepTimes,
                                        combine_pools, kv_link, kv_split, kv_transfer_seconds, pool_runs,
                                        prefill_requests, saturation_rate, scheduler_efficiency, serve_rate,
                                        step_times)
from planner.inputs.catalog import GPU
from planner.inputs.facts import Facts
from planner.inputs.jobs import Generate
from planner.inputs.serving_runtimes import Scheduler, SchedulerProfile, Schedulers

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
    # disaggregated: prefill and decode on separate servers (then `replicas` counts both pools, `point` is per decode
    # server, `ceiling_rps` the two pools' combined estimate and `saturation_rps` a decode server's)
    disaggregated: bool = False
    pools: Pools | None = None
    prefill_saturation_rps: float | None = None
    kv_transfer_s: float | None = None  # the longest prompt's KV cache over the pools' link, seconds
    kv_flags: str = ""  # the engine's flags for the plan's KV-cache dtype ('' for the model's own)

    @property
    def usd_per_hour(self) -> float | None:
        if self.replicas is None or self.usd_per_hour_replica is None:
            return None
        return self.replicas * self.usd_per_hour_replica

    @property
    def label(self) -> str:
        if self.disaggregated:
            pools = f"{self.pools.prefill} prefill + {self.pools.decode} decode" if self.pools else "? + ?"
            return f"{pools} x {self.tp} x {self.gpu.name}, {self.sched.name} (disaggregated)"
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
    prefill, decode, why = request_seconds(plan, gpu, facts, sched, tp, reqs)
    return (0.0, why) if why else (1.0 / (prefill + decode), "")


def request_seconds(plan: Plan, gpu: GPU, facts: Facts, sched: Scheduler, tp: int,
                    reqs: Requests) -> tuple[float, float, str]:
    """(a mean request's prefill seconds, its decode seconds, '') on one replica as `ceiling` estimates them, or
    (0, 0, why it can't serve at all)."""
    why = _heads_split(plan, tp)
    if why:
        return 0.0, 0.0, why
    p, eff = scheduler_efficiency(plan, gpu, facts, sched)
    if eff.unsupported:
        return 0.0, 0.0, eff.unsupported
    if tp > 1 and gpu.link_for(tp) is None:
        return 0.0, 0.0, f"no link joins {tp} {gpu.name} GPUs"
    s = replace(setup_on(p, gpu, facts), tp=tp)
    kv_gb, fixed_gb = kv_split(plan, s, sched, eff.cuda_context_gb)
    free = usable_gb(gpu, sched.memory_fraction) - fixed_gb
    if free <= 0:
        planned = usable_gb(gpu, sched.memory_fraction)
        return 0.0, 0.0, (f"the weights and activations take {fixed_gb:,.1f} GB of the {planned:,.1f} GB "
                          f"{sched.name} plans for on each GPU")
    kv_tokens = int(free / kv_gb) if kv_gb > 0 else 10**9
    if kv_tokens < reqs.longest:
        return 0.0, 0.0, f"its KV cache holds {kv_tokens:,} tokens, a request needs up to {reqs.longest:,}"
    if not sched.chunked_prefill and max(reqs.prompts) > sched.token_budget:
        return 0.0, 0.0, (f"a {max(reqs.prompts):,}-token prompt exceeds {sched.name}'s step budget of "
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
        return 0.0, 0.0, f"no link joins {tp} {gpu.name} GPUs for tensor parallel"
    return prefill * mean_p, per_token * max(mean_o - 1, 0), ""


def _prefilter(plan: Plan, facts: Facts, gpus: list[GPU], schedulers: list, reqs: Requests, rate: float,
               tps: tuple[int, ...]) -> list[Candidate]:
    """Every candidate with its price and ceiling (why it can't serve when it can't)."""
    out = []
    for gpu in gpus:
        price = facts.prices.for_gpu(gpu).get(plan.price_tier)
        for prof in schedulers:
            sched = prof.on(gpu.id, gpu.vram_gib)
            flags, kv_why = kv_cache_flags(plan, facts, prof)
            for tp in tps:
                usd = price.usd_hr * tp if price else None
                pre_s, dec_s, why = (0.0, 0.0, kv_why) if kv_why else request_seconds(plan, gpu, facts, sched, tp,
                                                                                       reqs)
                if not why and usd is None:
                    why = f"no {plan.price_tier} price for {gpu.name}"
                rps = 1.0 / (pre_s + dec_s) if not why else 0.0
                c = Candidate(gpu, sched, tp, usd, rps, why=why, kv_flags=flags)
                if not why:
                    fewest = max(1, math.ceil(rate / (rps * CEILING_MARGIN)))
                    c = replace(c, floor_usd_per_hour=fewest * usd)
                out.append(c)
                if sched.disaggregated:
                    out.append(_disaggregated(c, pre_s, dec_s, rate))
    return out


def kv_cache_flags(plan: Plan, facts: Facts, prof: SchedulerProfile) -> tuple[str, str]:
    """(the engine's launch flags for the plan's KV-cache dtype, '') or ('', why it has no such cache); the model's
    own dtype (no --kv-dtype, or the one the precision keeps) needs no flag."""
    kv = (plan.kv_dtype or "").lower()
    if not kv or kv == facts.rules.default_kv_dtype(facts.rules.precision(plan.precision)).id:
        return "", ""
    flags = prof.kv_flags(kv)
    if flags is None:
        return "", f"{prof.name} has no {kv} KV cache (data/serving.yaml kv_cache_dtypes)"
    return flags, ""


def _disaggregated(c: Candidate, prefill_s: float, decode_s: float, rate: float) -> Candidate:
    """`c` split into a prefill pool and a decode pool: its least cost from each pool's estimate (a decode-only
    server's requests/s counted as the aggregated estimate's decode part alone)."""
    d = replace(c, disaggregated=True)
    if c.why:
        return d
    fewest = max(1, math.ceil(rate * prefill_s / CEILING_MARGIN)) + max(1, math.ceil(rate * decode_s / CEILING_MARGIN))
    return replace(d, floor_usd_per_hour=fewest * c.usd_per_hour_replica)


def _simulate(plan: Plan, facts: Facts, c: Candidate, reqs: Requests, rate: float, slo: Slo, n: int,
              seed: int) -> Candidate:
    """The fewest replicas of `c` whose one replica at its share of the rate meets the SLO (or why none does)."""
    try:
        st = step_times(plan, c.gpu, facts, c.sched, c.tp, reqs.mean_context)
    except ValueError as exc:
        return replace(c, why=str(exc))
    if c.disaggregated:
        return _simulate_pools(st, c, reqs, rate, slo, n, seed)
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


def _pool_sizes(rate: float, saturation: float) -> list[int]:
    """Server counts tried for one pool: multiples of the fewest below saturation (REPLICA_STEPS), and one more."""
    fewest = max(1, math.ceil(rate / saturation))
    return sorted({min(MAX_REPLICAS, math.ceil(fewest * k) + extra) for k in REPLICA_STEPS for extra in (0, 1)})


def _simulate_pools(st: StepTimes, c: Candidate, reqs: Requests, rate: float, slo: Slo, n: int,
                    seed: int) -> Candidate:
    """The cheapest P prefill + D decode servers of `c` meeting the SLO (or why none does): every pair of the pools'
    tried sizes in order of P + D, each pool's one server simulated once per size."""
    c = replace(c, steps=st)
    one = step_times_floor(st, reqs)
    if one[1] > slo.tpot_s:
        return replace(c, why=f"one decode step alone takes {one[1] * 1e3:,.1f} ms, above the p95 TPOT target of "
                              f"{slo.tpot_s * 1e3:,.1f} ms")
    near = kv_link(c.gpu, c.tp, 2)
    if near is None:
        return replace(c, why=f"no link is known between two servers of {c.tp} {c.gpu.name} to move the KV cache")
    move = kv_transfer_seconds(st, max(reqs.prompts), near)
    if one[0] + move > slo.ttft_s:
        return replace(c, why=f"a prompt alone takes {one[0] * 1e3:,.0f} ms to prefill and {move * 1e3:,.1f} ms to "
                              f"move its KV cache, above the p95 TTFT target of {slo.ttft_s * 1e3:,.0f} ms")
    sat_p = saturation_rate(st, c.sched, prefill_requests(reqs), seed)
    sat_d = saturation_rate(st, c.sched, reqs, seed, prefilled=True)
    if sat_p <= 0 or sat_d <= 0:
        return replace(c, why="it completes no request in the simulation")
    c = replace(c, saturation_rps=sat_d, prefill_saturation_rps=sat_p)
    runs: dict[tuple[bool, int], Run] = {}

    def run(prefill: bool, servers: int) -> Run:
        if (prefill, servers) not in runs:
            runs[prefill, servers] = pool_runs(st, c.sched, reqs, rate, servers, prefill, n, seed)
        return runs[prefill, servers]

    pairs = sorted(((p, d) for p in _pool_sizes(rate, sat_p) for d in _pool_sizes(rate, sat_d)),
                   key=lambda pd: (pd[0] + pd[1], pd[1]))
    last = None
    for p, d in pairs:
        link = kv_link(c.gpu, c.tp, p + d)
        if link is None:
            continue
        pools = Pools(p, d, link)
        last = combine_pools(st, reqs, pools, run(True, p), run(False, d), rate, slo,
                             (p + d) * c.usd_per_hour_replica, n, seed, (sat_p, sat_d))
        if last.meets_slo:
            return replace(c, replicas=p + d, pools=pools, point=last,
                           kv_transfer_s=kv_transfer_seconds(st, max(reqs.prompts), link))
    if last is None:
        return replace(c, why=f"no link is known between {pairs[0][0] + pairs[0][1]} servers of {c.tp} {c.gpu.name}")
    p, d = pairs[-1]
    return replace(c, point=last, why=f"misses the SLO even at {p} prefill + {d} decode servers: p95 TTFT "
                                      f"{last.ttft[95] * 1e3:,.0f} ms, p95 TPOT {last.tpot[95] * 1e3:,.1f} ms")


def step_times_floor(st: StepTimes, reqs: Requests) -> tuple[float, float]:
    """(TTFT of the longest prompt alone, one decode step alone at the mean context): no load gets below them."""
    p = max(reqs.prompts)
    budget = st.max_tokens
    chunks, rest = divmod(p, budget)
    ttft = chunks * st.seconds(0, budget, 0, budget * (budget + 1) / 2, 0, 1) + \
        (st.seconds(0, rest, 0, rest * (rest + 1) / 2 + rest * chunks * budget, 1, 1) if rest else 0.0)
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
                   key=lambda c: (c.floor_usd_per_hour, -c.ceiling_rps, c.disaggregated, c.gpu.id, c.sched.id, c.tp))
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
    ok = sorted((c for c in done if not c.why),
                key=lambda c: (c.usd_per_hour, c.disaggregated, c.gpu.id, c.sched.id, c.tp))
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
    servers = (f"{c.pools.prefill} prefill + {c.pools.decode} decode servers" if c.disaggregated and c.pools
               else f"{c.replicas} replicas")
    if more > 0:
        return f"meets the SLO but costs ${more:,.2f}/h more ({servers} at ${c.usd_per_hour_replica:,.2f}/h)"
    return "meets the SLO at the same cost; ordered after by GPU, runtime and TP degree"


def disaggregation_verdict(dep: Deployment) -> str:
    """Which wins, aggregated or disaggregated serving, and why, in a sentence ('' when no runtime tried can split
    prefill from decode)."""
    done = ([dep.best] if dep.best else []) + list(dep.runner_ups)
    split = [c for c in done + list(dep.left_out) if c.disaggregated]
    if not split:
        return ""
    met = {kind: min((c for c in done if c.disaggregated == kind and c.usd_per_hour is not None),
                     key=lambda c: c.usd_per_hour, default=None) for kind in (False, True)}
    agg, dis = met[False], met[True]
    if agg and dis and abs(agg.usd_per_hour - dis.usd_per_hour) < 0.005:
        return (f"a tie at ${agg.usd_per_hour:,.2f}/h: aggregated serving ({agg.label}) is preferred, one kind of "
                f"server and no KV transfer; disaggregated ({dis.label}) has the lower p95 TPOT, "
                f"{dis.point.tpot[95] * 1e3:,.1f} against {agg.point.tpot[95] * 1e3:,.1f} ms")
    if agg and dis:
        win, lose = (dis, agg) if dis.usd_per_hour < agg.usd_per_hour else (agg, dis)
        kind = "disaggregated" if win is dis else "aggregated"
        return (f"{kind} serving wins: {win.label} at ${win.usd_per_hour:,.2f}/h against {lose.label} at "
                f"${lose.usd_per_hour:,.2f}/h (p95 TPOT {win.point.tpot[95] * 1e3:,.1f} against "
                f"{lose.point.tpot[95] * 1e3:,.1f} ms)")
    if dis:
        tried = next((c for c in done if not c.disaggregated), None)
        return (f"disaggregated serving wins: {dis.label} meets the SLO at ${dis.usd_per_hour:,.2f}/h, its decode "
                f"steps carry no prompt chunks; no aggregated deployment tried meets it"
                + (f" ({tried.label}: {tried.why})" if tried is not None and tried.why else ""))
    if agg:
        tried = next((c for c in done + list(dep.left_out) if c.disaggregated), None)
        return (f"aggregated serving wins: {agg.label} at ${agg.usd_per_hour:,.2f}/h; the cheapest disaggregated "
                f"try, {tried.label}: {tried.why or 'not simulated'}")
    return "neither aggregated nor disaggregated serving meets the SLO with the GPUs and runtimes tried"
