"""Serving an LLM: time to first token, time per output token, throughput and $/1M tokens at a concurrency, and the
largest concurrency that meets a latency target. Pure, from the same phases and roofline as every estimate.

Model (continuous batching, as vLLM and TensorRT-LLM serve): `concurrency` sequences decode together, one token each
per step. A new request's prompt is prefilled on its own (batch 1), after the decode step in flight, so
TTFT = prefill(prompt) + one decode step; TPOT = the mean decode step at that concurrency over the positions a
sequence passes through (prompt + 1 .. prompt + output - 1). A sequence takes TTFT + (output - 1) x TPOT, so the GPU
serves concurrency / that many requests per second. Queueing beyond the concurrency is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.base.units import SECONDS_PER_HOUR
from planner.engine.estimate import efficiency_on, setup_on
from planner.engine.memory import breakdown, usable_gb
from planner.engine.phases import generate_phases
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.inputs.catalog import GPU
from planner.inputs.facts import Facts
from planner.inputs.jobs import Generate

MAX_CONCURRENCY = 4096  # the search for the largest concurrency stops here (vLLM's default max_num_seqs is 256)


@dataclass(frozen=True)
class ServingPoint:
    """One GPU (plan.gpus of them, tensor parallel not modelled here) serving `concurrency` sequences at once."""

    concurrency: int
    ttft_s: float
    tpot_s: float
    tokens_per_s: float  # output tokens per second, all sequences
    requests_per_s: float
    usd_per_m_tokens: float | None  # at the plan's price tier
    memory_gb: float
    fits: bool  # within the plan's usable memory (its memory target of what the GPU reports)


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


def serving_point(plan: Plan, gpu: GPU, facts: Facts, concurrency: int, prompt: int, output: int) -> ServingPoint:
    """TTFT, TPOT, throughput and cost of serving `concurrency` sequences of `prompt` + `output` tokens on `gpu`."""
    if not plan.model.can_generate:
        raise ValueError(f"serving needs a decoder model; {plan.model.name} is a {plan.model.kind} profile")
    if concurrency < 1 or prompt < 1 or output < 2:
        raise ValueError("serving needs concurrency >= 1, prompt tokens >= 1 and output tokens >= 2")
    unsupported = efficiency_on(plan, gpu, facts).unsupported
    if unsupported:
        raise ValueError(f"{gpu.name}: {unsupported}")
    tpot = _decode_step_s(plan, gpu, facts, concurrency, prompt, output)
    ttft = _prefill_s(plan, gpu, facts, prompt) + tpot
    per_sequence_s = ttft + (output - 1) * tpot
    requests_per_s = concurrency / per_sequence_s
    tokens_per_s = requests_per_s * output
    price = facts.prices.for_gpu(gpu).get(plan.price_tier)
    usd = price.usd_hr * plan.gpus / SECONDS_PER_HOUR / tokens_per_s * 1e6 if price else None
    context_gb = efficiency_on(plan, gpu, facts).cuda_context_gb
    s = setup_on(plan, gpu, facts)
    mem = breakdown(plan.model, Generate(concurrency, prompt, output), s, concurrency, context_gb).total_gb
    return ServingPoint(concurrency, ttft, tpot, tokens_per_s, requests_per_s, usd, mem,
                        mem <= usable_gb(gpu, plan.memory_target))


def max_concurrency(plan: Plan, gpu: GPU, facts: Facts, prompt: int, output: int, ttft_target_s: float | None,
                    tpot_target_s: float | None) -> ServingPoint | None:
    """The largest concurrency whose TTFT and TPOT meet the targets and whose KV cache fits; None if even one
    sequence misses. TPOT, TTFT and memory only grow with concurrency, so a doubling then bisection finds it."""
    def ok(c: int) -> bool:
        p = serving_point(plan, gpu, facts, c, prompt, output)
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
    return serving_point(plan, gpu, facts, lo, prompt, output)
