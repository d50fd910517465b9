"""Serving an LLM: time to first token, time per output token, throughput and $/1M tokens at a concurrency, and the
largest concurrency that meets a latency target. Pure, from the same phases and roofline as every estimate.

Model (continuous batching, as vLLM and TensorRT-LLM serve): `concurrency` sequences decode together, one token each
per step. A new request passes the server's front end (front_end_s: HTTP, the hop to the engine, the prompt's
tokenisation; planner.inputs.serving_runtimes.front_end_seconds, the formula the simulation charges too), then its
prompt is prefilled on its own (batch 1), after the decode step in flight, so TTFT = front end + prefill(prompt) +
one decode step (at concurrency 1 no step is in flight: front end + prefill, as the simulation has it for a request
reaching an idle engine, unless the scheduler's overlapped loop hands the first token out after the next step:
SGLang, serving_sim.first_token_late_s); a decode step is the mean at that concurrency over the positions a
sequence passes through (prompt + 1 .. prompt + output - 1). Every finished sequence is replaced by a new one whose
prompt the GPU must prefill too: while one sequence decodes, the other concurrency - 1 are each replaced once, and
their prefills take GPU time the decodes wait for (or share a step with, which costs the same work). So a sequence
takes TTFT + (output - 1) x decode step + (concurrency - 1) x prefill, its TPOT is what follows its first token over
output - 1 tokens, and the GPU serves concurrency / that many requests per second: throughput and $/1M tokens charge
the new requests' prefills. Queueing beyond the concurrency, tail latency and the KV limit under load are the
simulation's (planner.engine.serving_sim), which agrees with this at a steady concurrency.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.base.units import SECONDS_PER_HOUR
from planner.engine.estimate import efficiency_on, setup_on
from planner.engine.host_speed import host_seconds
from planner.engine.memory import breakdown, usable_gb
from planner.engine.phases import generate_phases
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.inputs.catalog import GPU
from planner.inputs.facts import Facts
from planner.inputs.jobs import Generate
from planner.inputs.serving_runtimes import Scheduler

MAX_CONCURRENCY = 4096  # the search for the largest concurrency stops here (vLLM's default max_num_seqs is 256)


@dataclass(frozen=True)
class ServingPoint:
    """One GPU (plan.gpus of them, tensor parallel not modelled here) serving `concurrency` sequences at once."""

    concurrency: int
    ttft_s: float
    tpot_s: float  # seconds between a sequence's tokens after its first, the other sequences' prefills included
    tokens_per_s: float  # output tokens per second, all sequences
    requests_per_s: float
    usd_per_m_tokens: float | None  # at the plan's price tier
    memory_gb: float
    fits: bool  # within the plan's usable memory (its memory target of what the GPU reports)
    decode_step_s: float = 0.0  # one decode step at this concurrency, without prefills
    prefill_s: float = 0.0  # one prompt's prefill, alone
    front_end_s: float = 0.0  # the server's front end's work on one request before it is scheduled


def _decode_step_s(plan: Plan, gpu: GPU, facts: Facts, concurrency: int, prompt: int, output: int) -> float:
    m, s = plan.model, setup_on(plan, gpu, facts)
    eff = efficiency_on(plan, gpu, facts)
    phases = generate_phases(m, Generate(concurrency, prompt, output), s, concurrency, 1.0)
    decode = next(ph for ph in phases if ph.name == "decode")
    return phase_seconds(decode, gpu, eff) / decode.steps


def _prefill_s(plan: Plan, gpu: GPU, facts: Facts, prompt: int) -> float:
    m, s = plan.model, setup_on(plan, gpu, facts)
    phases = generate_phases(m, Generate(1, prompt, 1), s, 1, 1.0)
    return phase_seconds(next(ph for ph in phases if ph.name == "prefill"), gpu, efficiency_on(plan, gpu, facts))


def serving_point(plan: Plan, gpu: GPU, facts: Facts, concurrency: int, prompt: int, output: int,
                  sched: Scheduler | None = None) -> ServingPoint:
    """TTFT, TPOT, throughput and cost of serving `concurrency` sequences of `prompt` + `output` tokens on `gpu`
    under `sched` (its front end, Scheduler.front_end_s of the prompt, and whether its overlapped loop hands the
    first token out a step late; None: no front end, a loop in series)."""
    if not plan.model.can_generate:
        raise ValueError(f"serving needs a decoder model; {plan.model.name} is a {plan.model.kind} profile")
    if concurrency < 1 or prompt < 1 or output < 2:
        raise ValueError("serving needs concurrency >= 1, prompt tokens >= 1 and output tokens >= 2")
    unsupported = efficiency_on(plan, gpu, facts).unsupported
    if unsupported:
        raise ValueError(f"{gpu.name}: {unsupported}")
    step = _decode_step_s(plan, gpu, facts, concurrency, prompt, output)
    prefill = _prefill_s(plan, gpu, facts, prompt)
    front_end_s = host_seconds(sched.front_end_s(prompt), plan.host_speed) if sched else 0.0  # CPU work
    # the decode step in flight (none when it runs alone), or an overlapped loop's first token a step late
    # (serving_sim.first_token_late_s): one step either way, the late step being the one in flight under load
    late = concurrency > 1 or (sched is not None and sched.host_overlapped)
    ttft = front_end_s + prefill + (step if late else 0.0)
    per_sequence_s = ttft + (output - 1) * step + (concurrency - 1) * prefill
    tpot = (per_sequence_s - ttft) / (output - 1)
    requests_per_s = concurrency / per_sequence_s
    tokens_per_s = requests_per_s * output
    price = facts.prices.for_gpu(gpu).get(plan.price_tier)
    usd = price.usd_hr * plan.gpus / SECONDS_PER_HOUR / tokens_per_s * 1e6 if price else None
    context_gb = efficiency_on(plan, gpu, facts).cuda_context_gb
    s = setup_on(plan, gpu, facts)
    mem = breakdown(plan.model, Generate(concurrency, prompt, output), s, concurrency, context_gb).total_gb
    return ServingPoint(concurrency, ttft, tpot, tokens_per_s, requests_per_s, usd, mem,
                        mem <= usable_gb(gpu, plan.memory_target), step, prefill, front_end_s)


def max_concurrency(plan: Plan, gpu: GPU, facts: Facts, prompt: int, output: int, ttft_target_s: float | None,
                    tpot_target_s: float | None, sched: Scheduler | None = None) -> ServingPoint | None:
    """The largest concurrency whose TTFT and TPOT meet the targets and whose KV cache fits; None if even one
    sequence misses. TPOT, TTFT and memory only grow with concurrency, so a doubling then bisection finds it."""
    def ok(c: int) -> bool:
        p = serving_point(plan, gpu, facts, c, prompt, output, sched)
        return p.fits and (ttft_target_s is None or p.ttft_s <= ttft_target_s) and \
            (tpot_target_s is None or p.tpot_s <= tpot_target_s)

    if not ok(1):
        return None
    lo, hi = 1, 2
    while hi <= MAX_CONCURRENCY and ok(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, MAX_CONCURRENCY + 1)
    while hi - lo > 1:  # ok(lo), not ok(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return serving_point(plan, gpu, facts, lo, prompt, output, sched)
