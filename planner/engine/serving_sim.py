"""Serving under load: a discrete-event simulation of a serving engine's scheduler (continuous batching) driven by
the engine's own step times. Pure: no I/O; deterministic for a seed.

Step time. A step carries `b` decoding requests (one token each, attending `ctx` cached keys in all) and `p` prompt
tokens (chunks of one or more prompts, each chunk attending its own prefix: `pairs` query-key pairs in all), and
samples `rows` tokens (the decodes and the prompts it finishes). From the engine, once per deployment:
  dense(T, rows) = the work of a T = b + p token step without its attention scores: the weights are read once for all
    T rows (what a mixed step shares), its linear layers compute T rows, its LM head `rows` rows. Interpolated
    between the engine's prefill of T tokens (1 logits row, its causal attention taken out) and its decode step of
    T sequences at position 1 (T logits rows), at the same token count.
  + key_s(b) x ctx: a decode row's attention per cached key (the engine's decode step at two positions).
  + pair_s x pairs: prefill attention per query-key pair (the second difference of the engine's prefill time).
A decode step of more sequences than the engine generation's largest captured CUDA graph (Scheduler
eager_decode_above: vLLM V0's 256) is the engine's decode step dispatched eagerly, kernel by kernel.
So a step that mixes prompt chunks and decodes costs their combined work (prefill/decode interference), runtime
per-step costs included (launch gaps, host work, tensor-parallel collectives: the engine's phases carry them).

Scheduler (planner.inputs.serving_runtimes.Scheduler): FCFS; a step takes every decoding request first, then
continues prompts being prefilled, then admits waiting ones while the token budget, the request cap and the KV cache
allow (a prompt may be split over steps with chunked prefill; otherwise it enters whole). A runtime that does not mix
(SGLang's default) runs a prefill-only step whenever a prompt can be admitted, and the decodes wait for it. When the
decodes outgrow the KV cache, the most recently admitted request is preempted and recomputed later (its prompt and
the tokens it produced prefilled again), as vLLM and SGLang do. In a mixed step that is a prompt still being
prefilled when there is one (vLLM V1's running list holds the requests mid-prefill too, in admission order, and on a
failed allocation it preempts `self.running.pop()`, the newest, resetting its computed tokens to 0:
vllm/v1/core/sched/scheduler.py, read 2026-11-27): it loses only the chunks it had, not a decoding request's whole
prompt; a runtime that does not mix retracts a decoding request (SGLang's ScheduleBatch.retract_decode, in
python/sglang/srt/managers/schedule_batch.py, pops from its decode batch, which holds no prompt, the request with the
fewest output tokens: the newest).

Disaggregated serving (Pools): a prefill server runs the prompts to their first token, a decode server receives
them with their KV cache (simulate's `prefilled` mode: no prefill steps, so decode-only TPOT); combine_pools adds
the prompt's KV transfer over kv_link (NVLink inside a node, the fabric between nodes) to each request's TTFT.
An older engine generation's CPU work per sequence (vLLM V0: Scheduler.host_us_per_seq) adds to each step in
series with the GPU's, per sequence the step carries (seq_host_seconds), beside the runtime's per-step host time:
host(b) = Efficiency.step_host_seconds(b), the definition the decode estimate (roofline) charges too.
A scheduler whose CPU work overlaps the GPU's (SGLang since v0.4) adds no per-step host time but sees a new request a
step later (simulate), one that schedules
once per round of k steps (vLLM's multi-step scheduling) a k-th of it (scheduler_efficiency); such a scheduler admits
new requests only between rounds, and every request reaches it after the front end's time (simulate).

Arrivals: Poisson at a request rate, all at once (a burst), or a benchmark client's finite closed loop (closed_loop:
n requests, c in flight, each sent as an earlier one completes; the first c arrive together).

Cheap: between arrivals, completions and KV exhaustion a decode-only stretch of k steps is summed in closed form
(each step's time is affine in the step index), so the loop runs per event, not per step.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from planner.base.units import SECONDS_PER_HOUR
from planner.engine.estimate import efficiency_on, setup_on
from planner.engine.host_speed import REFERENCE_HOST_SPEED, host_seconds, on_host
from planner.engine.memory import breakdown, usable_gb
from planner.engine.phases import generate_phases
from planner.engine.plan import Plan
from planner.engine.roofline import phase_seconds
from planner.inputs.catalog import BITS_PER_BYTE, GPU
from planner.inputs.facts import Facts
from planner.inputs.jobs import Generate
from planner.inputs.runtimes import Efficiency
from planner.inputs.work import ATTENTION_GROUP
from planner.inputs.serving_runtimes import Scheduler
from planner.inputs.serving_trace import LENGTH_SPREADS

PAIR_PROBE_TOKENS = 2048  # prefill lengths N, 2N, 3N whose second difference gives the attention per pair
WARMUP_SHARE = 0.1  # the first requests of a run, left out of its latency statistics (the system starts empty)
MAX_REQUESTS = 20_000  # per simulated run (a trace is sampled down to it)
MAX_EVENTS_PER_REQUEST = 64  # loop iterations per request before a run is called unsettled (preemption storms)
PREFILLS_PER_REQUEST = 4  # of a chunked prompt's steps, within the same allowance (its first and recomputes)
DEFAULT_REQUESTS = 600
PERCENTILES = (50, 90, 95, 99)
OVERLOAD = 3.0  # offered load over a full batch's rate when measuring saturation (saturation_rate)
SATURATION_WAVES = 5  # full batches' worth of requests in that run
# ShareGPT as the serving benchmarks sample it (vLLM benchmarks/benchmark_serving.py sample_sharegpt_requests, and
# SGLang's bench_serving, read 2026-11-27): a conversation's first turn is the prompt, the reply's length the output;
# 'prune too short' (prompt or output < 4 tokens) and 'prune too long' (prompt > 1024 or both > 2048) are dropped
SHAREGPT_MIN_TOKENS = 4
SHAREGPT_MAX_PROMPT = 1024
SHAREGPT_MAX_TOTAL = 2048
SPREAD_ROWS = 512  # lengths drawn for a spread (Requests.sharegpt_like)


@dataclass(frozen=True)
class StepTimes:
    """A deployment's step seconds as functions of a step's contents (module docstring), tabulated per token count
    0..max_tokens, and its KV cache in tokens."""

    dense_one: tuple[float, ...]  # seconds of a T-token step with 1 logits row, no attention scores
    dense_all: tuple[float, ...]  # the same with T logits rows (T decodes at position 1)
    key_s: tuple[float, ...]  # seconds per (decode row x cached key) at b decode rows
    pair_s: float  # seconds per prefill query-key pair
    kv_tokens: int  # tokens the KV cache holds
    kv_gb_per_token: float
    fixed_gb: float  # weights, activations at the step budget, CUDA context: what the KV cache cannot use
    seq_host_s: float = 0.0  # serial CPU seconds per sequence in a step (seq_host_seconds)
    # serial CPU seconds a first token waits after its prefill step: the next step's host work without its
    # per-sequence part (Scheduler.first_token_steps x the per-step host time; first_token_wait adds that part)
    first_token_s: float = 0.0
    first_token_steps: int = 0
    # the plan's host CPU speed (Plan.host_speed): the front end's work on a request is host work too (host_seconds)
    host_speed: float = REFERENCE_HOST_SPEED

    def first_token_wait(self, b: int) -> float:
        """Seconds a first token waits after its prefill step with `b` sequences running (Scheduler.first_token_steps
        steps of host work: the per-step part and b x seq_host_s); 0 where the engine emits it with its step."""
        return self.first_token_s + self.first_token_steps * self.seq_host_s * b if self.first_token_steps else 0.0

    @property
    def max_tokens(self) -> int:
        return len(self.dense_one) - 1

    def dense(self, tokens: int, rows: int, decodes: int = 0) -> float:
        """A step of `tokens` tokens sampling `rows` of them, `decodes` of the tokens decode rows, without attention
        scores. A step of decodes only is the engine's decode step of that many sequences (dense_all), a lone
        sequence's included: it is not a one-token prefill (vLLM V0 replays its decode graph for it, where a prefill
        step runs eagerly)."""
        one, every = self.dense_one[tokens], self.dense_all[tokens]
        if decodes >= tokens > 0:
            return every
        if tokens <= 1 or rows <= 1:
            return one
        return one + (every - one) * (rows - 1) / (tokens - 1)

    def seconds(self, b: int, p: int, ctx: int, pairs: float, rows: int, prompts: int = 0) -> float:
        """One step: b decode rows attending ctx keys in all, p prompt tokens (of `prompts` requests) with `pairs`
        query-key pairs; the engine's CPU work for its b + prompts sequences in series."""
        return (self.dense(b + p, rows, b) + (self.key_s[b] * ctx if b else 0.0) + self.pair_s * pairs
                + self.seq_host_s * (b + prompts))


def _grid(top: int) -> np.ndarray:
    """Token counts the engine is asked about: every count to 16, then ~8 per doubling, and `top`."""
    pts = set(range(1, min(top, 16) + 1))
    x = 16.0
    while x < top:
        pts.add(int(x))
        x *= 2 ** 0.125
    pts.add(top)
    return np.array(sorted(pts))


def scheduler_efficiency(plan: Plan, gpu: GPU, facts: Facts, sched: Scheduler) -> tuple[Plan, Efficiency]:
    """`plan` on `sched`'s runtime profile and that profile's efficiencies on `gpu`, with the engine generation's
    CPU work per sequence (Scheduler.host_us_per_seq: vLLM V0's scheduler, input preparation and output
    processing, each a Python loop over the step's sequences) beside the per-step part (the generation's own,
    Scheduler.step_host_us, where it names one), so that a step's host time is Efficiency.step_host_seconds, as in
    the decode estimate. A scheduler whose CPU work overlaps the GPU's
    (Scheduler.host_overlapped) adds neither, and one that schedules once per round of k steps
    (Scheduler.steps_per_round: multi-step scheduling prepares the round's later steps on the GPU and processes
    their outputs once) pays both once per round: a k-th of each a step."""
    p = replace(plan, runtime=sched.efficiency_of)
    eff = replace(efficiency_on(replace(p, host_speed=REFERENCE_HOST_SPEED), gpu, facts),
                  host_us_per_seq=sched.host_us_per_seq, prefill_host_us_per_kernel=sched.prefill_host_us_per_kernel)
    if sched.eager_decode_from:  # a run without graphs (--enforce-eager): its decode steps dispatched eagerly too
        eff = replace(eff, eager_decode_from=sched.eager_decode_from)
    if sched.step_host_us is not None:  # an engine generation's own loop (vLLM V0), not the current one's
        eff = replace(eff, step_host_us=sched.step_host_us)
    eff = on_host(eff, plan.host_speed)  # the scheduler's host times as well as the runtime's, once
    if sched.host_overlapped:
        return p, replace(eff, step_host_us=0.0, host_us_per_seq=0.0)
    k = sched.steps_per_round
    return p, replace(eff, step_host_us=eff.step_host_us / k, host_us_per_seq=eff.host_us_per_seq / k)


def seq_host_seconds(eff: Efficiency) -> float:
    """Serial CPU seconds per sequence per step under `eff` (scheduler_efficiency's): the per-sequence part of
    Efficiency.step_host_seconds (its slope in the sequences), which the simulation charges for the sequences each
    step carries (decodes and prompt chunks: StepTimes.seconds)."""
    return eff.host_us_per_seq * 1e-6


def step_times(plan: Plan, gpu: GPU, facts: Facts, sched: Scheduler, tp: int, ctx_ref: int) -> StepTimes:
    """The step model of `plan`'s model on `tp` of `gpu` under `sched` (its runtime's efficiencies), asked of the
    engine at a grid of token counts; `ctx_ref` is a typical context (keys) for the decode attention's slope.
    ValueError naming the cause when the runtime can't run there."""
    p, host_eff = scheduler_efficiency(plan, gpu, facts, sched)
    if host_eff.unsupported:
        raise ValueError(f"{gpu.name}: {host_eff.unsupported}")
    # the engine's phases time the per-step part; the per-sequence part is charged per sequence the simulated
    # step carries (StepTimes.seconds), which counts prompt chunks the phases can't tell from finished prompts
    eff = replace(host_eff, host_us_per_seq=0.0)
    s = replace(setup_on(p, gpu, facts), tp=tp)
    m = plan.model
    top = max(sched.token_budget, sched.max_num_seqs) + 1
    grid = _grid(top)
    sizes = grid.tolist()  # Python ints: the engine's GEMM model takes ints
    ctx_ref = max(ctx_ref, 2)

    def decode(b: int, pos: int, run: Efficiency = eff) -> float:
        ph = generate_phases(m, Generate(b, 1, 2), s, b, 1.0)[-1]
        return phase_seconds(ph._replace(p0=pos), gpu, run)

    def prefill(n: int) -> float:
        return phase_seconds(generate_phases(m, Generate(1, n, 1), s, 1, 1.0)[0], gpu, eff)

    n = PAIR_PROBE_TOKENS
    pair_s = max(0.0, _second_difference(lambda t: attention_seconds(m, s, gpu, eff, t), n) / (n * n))
    one = np.array([max(prefill(t) - pair_s * t * (t + 1) / 2, 0.0) for t in sizes])
    every = np.array([decode(t, 1) for t in sizes])
    key = np.array([max(0.0, (decode(t, ctx_ref) - decode(t, 1)) / (t * (ctx_ref - 1))) for t in sizes])
    if not (np.isfinite(one).all() and np.isfinite(every).all()):
        raise ValueError(f"{gpu.name}: no link joins {tp} of them for tensor parallel")
    counts = np.arange(top + 1)
    interp = lambda v: tuple(np.interp(counts, grid, v).tolist())  # noqa: E731
    every_t = interp(every)
    above = sched.eager_decode_above
    if 0 < above < top and eff.prefill_host_us_per_kernel:
        # past the largest captured batch a decode step runs eagerly, each kernel dispatched from the host (vLLM V0:
        # 256); tabulated on its own grid from the edge on, so neither side's interpolation crosses it. The
        # attention's slope per key (key) stays the graphed step's: it adds in series
        eager = replace(eff, eager_decode_from=1)
        past = [above + 1] + [t for t in sizes if t > above + 1]
        tail = np.interp(counts[above + 1:], past, [decode(t, 1, eager) for t in past])
        every_t = every_t[:above + 1] + tuple(tail.tolist())
    kv_gb, fixed_gb = kv_split(plan, s, sched, eff.cuda_context_gb)
    free = usable_gb(gpu, sched.memory_fraction) - fixed_gb
    kv_tokens = int(free / kv_gb) if free > 0 and kv_gb > 0 else 0
    one_t = interp(one)
    first_s = sched.first_token_steps * host_eff.step_host_us * 1e-6
    return StepTimes(one_t, every_t, interp(key), pair_s, kv_tokens, kv_gb, fixed_gb, seq_host_seconds(host_eff),
                     first_s, sched.first_token_steps, plan.host_speed)


def _second_difference(f, n: int) -> float:
    return f(3 * n) - 2 * f(2 * n) + f(n)


def attention_seconds(model, s, gpu: GPU, eff: Efficiency, tokens: int) -> float:
    """Seconds of one prompt's prefill of `tokens` tokens counting only its attention op group (ATTENTION_GROUP),
    or the whole prefill when the model's phases name none. Its second difference over N, 2N, 3N is the attention's
    quadratic part: the whole prefill's also carries the other groups' curvature (a mixture of experts' GEMMs
    change shape with the tokens, through tile and wave quantization and the experts read, and a pass turning from
    memory- to compute-bound bends the sum), which read as attention made gpt-oss's prompts cost more attention
    than their whole prefill and left the rest at zero."""
    ph = generate_phases(model, Generate(1, tokens, 1), s, 1, 1.0)[0]
    attn = tuple(g for g in ph.groups if g.name == ATTENTION_GROUP)
    if attn:
        ph = ph._replace(groups=attn, comm=())
    return phase_seconds(ph, gpu, eff)


def kv_split(plan: Plan, s, sched: Scheduler, context_gb: float) -> tuple[float, float]:
    """(KV cache GB per token, the rest of the memory model: weights, activations of a step of the token budget,
    CUDA context) for one GPU of the deployment, from the memory model."""
    m, t = plan.model, sched.token_budget
    mem = breakdown(m, Generate(1, t, 1), s, 1, context_gb)
    kv = mem.get("kv_cache")
    return kv / (t + 1), mem.total_gb - kv


# ----------------------------------------------------------------------------------------------- the event loop


@dataclass(frozen=True)
class Run:
    """One simulated run: per measured request (after the warm-up share) TTFT, TPOT and end-to-end seconds; the
    inter-token gaps as (seconds, tokens) pairs; output tokens and the span they were served in."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    itl_s: np.ndarray
    itl_weight: np.ndarray
    output_tokens: int
    span_s: float
    preemptions: int
    settled: bool  # False: the loop gave up (preemption storm) and the statistics cover what finished
    done_times: np.ndarray  # completion time of every request, in completion order


def cached_prompt_tokens(prompt: int, cached_prefix: int, block: int) -> int:
    """Tokens of a `prompt`-token prompt whose first `cached_prefix` tokens are in an engine's prefix cache of
    `block`-token blocks that it reuses: whole blocks only, and never the prompt's last token, which is computed to
    give the first output's logits (data/serving.yaml vllm prefix_cache_source). 0 without a prefix cache (block 0)."""
    if block <= 0 or cached_prefix <= 0:
        return 0
    return min(cached_prefix, prompt - 1) // block * block


def first_token_late_s(st: StepTimes, b: int, ctx: int) -> float:
    """Seconds an overlapped scheduler's first token waits past its prefill step: SGLang's event_loop_overlap
    processes a step's results only after it has launched the next step and waited for that launch (sglang PR
    #2067, 2024-11-18: median TTFT 80 -> 86 ms with overlap on, 'we delayed the processing of the first batch in
    favor of launching the kernels for the next batch first'; issue #10514, 2025-09-16: resolve_last_batch_result
    waits for the current batch's launch_done before the previous batch's output; PR #25772, 2026-05-19: a single
    request's TTFT 'includes an additional decode latency'), so the token reaches its caller one decode step later:
    the step of `b` sequences attending `ctx` keys that follows (taken decode-only)."""
    return st.seconds(b, 0, ctx, 0.0, b)


def front_end_entries(arrivals: list[float], overheads_s: list[float]) -> list[float]:
    """When requests arriving at `arrivals` (seconds, ascending) reach the scheduler through a front end that works
    `overheads_s[i]` on request i (Scheduler.front_end_s: the per-request part and the prompt's tokenisation), one
    request at a time (a FIFO single server): the OpenAI server's front end is one process whose request
    preprocessing runs on a single thread (vLLM's serving_engine.py `ThreadPoolExecutor(max_workers=1)` for
    tokenisation, vllm-project/vllm issue #25301, 2025-09-20, read 2026-11-27: 'requests are forced to wait in a
    serialized queue for preprocessing'). Below a rate of 1 / overhead a request rarely waits (at 32 requests/s and
    4 ms, a 13 % busy server); a burst of n requests sent at once enters over the sum of their overheads (1,000
    requests of 4 ms: 4 s)."""
    if not any(overheads_s):
        return list(arrivals)
    out, free_at = [], -math.inf
    for a, work in zip(arrivals, overheads_s, strict=True):
        free_at = max(a, free_at) + work
        out.append(free_at)
    return out


def simulate(st: StepTimes, sched: Scheduler, arrivals: list[float], prompts: list[int], outputs: list[int],
             prefilled: bool = False, closed: int = 0, cached_prefix: int = 0) -> Run:
    """Serve requests arriving at `arrivals` (seconds, ascending) with `prompts` input and `outputs` output tokens
    under `sched`, each step timed by `st` (module docstring). `prefilled`: a disaggregated decode server; requests
    arrive with their prompt's KV cache (moved from a prefill server) and join the decoding batch as soon as the
    cache and the request cap allow, with no prefill step; their TTFT is that wait. A request preempted there
    rejoins the same way (its recompute on the prefill servers is not modelled).

    A request reaches the scheduler after the front end's work (front_end_entries: sched.front_end_s of its
    prompt on the plan's host, host_seconds of st.host_speed, one request at a time), and its
    latencies count from its arrival; a first token reaches it st.first_token_wait later than its step ends (vLLM
    V0's outputs processed during the next step; an overlapped scheduler's a decode step later, first_token_late_s). A
    scheduler of k > 1 steps per round (multi-step scheduling) admits
    requests only between rounds: once a decode round starts, its k steps run (or until no request is left), whatever
    arrives meanwhile; a step that carries prompt tokens is a round of its own, as vLLM's multi-step scheduler
    forces a single step when a batch has prefills (vLLM issue #7528). An overlapped scheduler (host_overlapped:
    SGLang's event_loop_overlap) receives requests as it launches a step, while the GPU still runs the previous
    one: a request arriving during step i is received as step i+1 launches and rides step i+2, a step later than
    a scheduler that receives at step boundaries (an idle engine receives it at once).

    `closed` = c > 0: a client's closed loop of c requests in flight (closed_loop): requests 0..c-1 arrive at
    `arrivals`' first c times, and each later one the moment an earlier one completes (its arrival ignored); every
    request's latencies are measured (a finite benchmark reports them all: no warm-up share left out).

    `cached_prefix`: tokens at the start of every prompt that the engine's prefix cache holds (cached_prompt_tokens:
    whole blocks of it, never the prompt's last token); a request prefills only the rest, attending to the cached
    tokens, and decodes over its whole context. The cached blocks are shared, so they take no KV room of their own
    (counted in each sequence's context, they overstate its KV use by that much), and the first request is taken to
    find them cached too (one prompt's prefix of work)."""
    n = len(arrivals)
    work_s = [host_seconds(sched.front_end_s(p), st.host_speed) for p in prompts]
    if closed:
        arrivals = list(arrivals[:closed]) + [math.inf] * (n - closed)
        enter = front_end_entries(arrivals[:closed], work_s[:closed]) + [math.inf] * (n - closed)
    else:
        enter = front_end_entries(arrivals, work_s)
    # the closed loop's next request to send, and when the front end is next free (front_end_entries' FIFO)
    to_send, fe_free = min(closed, n), max(enter[:closed], default=-math.inf)
    per_round, round_left = sched.steps_per_round, 0
    ttft, first, done = [math.nan] * n, [0.0] * n, [math.nan] * n
    block = sched.prefix_cache_block_tokens
    cached = [cached_prompt_tokens(p, cached_prefix, block) for p in prompts]  # 0 each without a cached prefix
    # tokens to prefill (a recomputed request: its prompt and what it produced), less its cached prefix
    target = [p - c for p, c in zip(prompts, cached)]
    produced = [0] * n  # output tokens so far
    join_g, ctx0, epoch = [0] * n, [0] * n, [0] * n
    cap, budget, seqs = st.kv_tokens, sched.token_budget, sched.max_num_seqs
    key_s = st.key_s
    now, nxt, g, s_ctx, b = 0.0, 0, 0, 0, 0
    # an overlapped scheduler receives requests as it launches a step, one step ahead of the GPU (simulate's
    # docstring): a request is seen at the start of the step that just ended, not at its end
    late = sched.host_overlapped
    seen = 0.0  # when the scheduler last received requests
    waiting: deque[int] = deque()
    prefilling: list[list[int]] = []  # [rid, tokens done]
    kv_pref = 0  # KV tokens held by prompts being prefilled
    # output tokens the running requests still owe (decoding: r_join - b x g; prefilling: r_pref), of which the
    # scheduler keeps sched.reserve_output_share free in the KV cache when it admits a request
    r_join = r_pref = 0
    reserve = sched.reserve_output_share
    heap: list[tuple[int, int, int]] = []  # (decode step count at which it finishes, rid, epoch)
    order: list[int] = []  # decoding requests in join order (the last is preempted first)
    itl, itl_w = [], []
    gap = 0.0  # prefill-only time the decoding requests waited through since their last token
    preempt = events = 0
    # a step that preempted admits no waiting request (vLLM V1's scheduler: 'if not preempted_reqs:' guards the
    # waiting queue), so a preempted prompt is not re-admitted into the step that just evicted it
    held = False
    # loop iterations allowed: MAX_EVENTS_PER_REQUEST a request beside the steps its chunked prompt takes, prefilled up
    # to PREFILLS_PER_REQUEST times (a 32K prompt in 512-token chunks is 64 steps of its own: no storm, yet it alone
    # used to exhaust the allowance, and a run of them was called unsettled at 0 tokens/s)
    chunks = sum(-(-x // budget) for x in prompts) if sched.chunked_prefill and budget > 0 else 0
    limit = MAX_EVENTS_PER_REQUEST * n + PREFILLS_PER_REQUEST * chunks + 1000
    finished = 0

    def release() -> None:  # a completion: a closed loop's client sends its next request at once
        nonlocal to_send, fe_free
        if closed and to_send < n:
            arrivals[to_send] = now
            fe_free = enter[to_send] = max(now, fe_free) + work_s[to_send]
            to_send += 1

    def finish_decodes() -> None:
        nonlocal b, s_ctx, finished, r_join
        while heap and heap[0][0] <= g:
            _, rid, ep = heapq.heappop(heap)
            if ep != epoch[rid]:
                continue
            done[rid] = now
            finished += 1
            release()
            b -= 1
            s_ctx -= ctx0[rid] - join_g[rid]
            r_join -= outputs[rid] - produced[rid] + join_g[rid]
            ctx0[rid] = 0

    def join(rid: int) -> None:
        nonlocal b, s_ctx, finished, r_join
        produced[rid] += 1
        if ttft[rid] != ttft[rid]:  # nan: its first token (emitted a step late where the engine does so)
            ttft[rid] = now - arrivals[rid] + st.first_token_wait(b + 1)  # b + 1: the next step carries it too
            if late and (b or outputs[rid] > 1):  # an overlapped loop hands a step's tokens out after the next
                # step (first_token_late_s); with nothing left to run it launches none and hands them out at once
                ttft[rid] += first_token_late_s(st, b + 1, s_ctx + b * g + cached[rid] + target[rid] + 1)
            first[rid] = now
        if produced[rid] >= outputs[rid]:
            done[rid] = now
            finished += 1
            release()
            return
        join_g[rid], ctx0[rid] = g, cached[rid] + target[rid] + 1
        s_ctx += ctx0[rid] - g
        r_join += outputs[rid] - produced[rid] + g
        b += 1
        order.append(rid)
        heapq.heappush(heap, (g + outputs[rid] - produced[rid], rid, epoch[rid]))

    def preempt_last() -> None:
        nonlocal b, s_ctx, preempt, r_join, kv_pref, r_pref, held
        held = sched.mixed_batches
        if prefilling and sched.mixed_batches:  # the newest admission is a prompt mid-prefill: it loses its chunks
            entry = prefilling.pop()
            rid = entry[0]
            kv_pref -= entry[1]
            r_pref -= outputs[rid] - produced[rid]
            waiting.appendleft(rid)
            preempt += 1
            return
        while order:
            rid = order.pop()
            if ctx0[rid]:  # still decoding (0 once finished or preempted)
                ran = g - join_g[rid]
                r_join -= outputs[rid] - produced[rid] + join_g[rid]
                produced[rid] += ran
                target[rid] = ctx0[rid] + ran - 1 - cached[rid]
                s_ctx -= ctx0[rid] - join_g[rid]
                ctx0[rid] = 0
                b -= 1
                epoch[rid] += 1
                waiting.appendleft(rid)
                preempt += 1
                return

    while finished < n and events < limit:
        events += 1
        # with nothing left to run, the overlapped loop launched no step ahead: it receives at the step's end
        horizon = seen if late and (b or prefilling or waiting) else now
        while nxt < n and enter[nxt] <= horizon:
            waiting.append(nxt)
            nxt += 1
        if not b:
            round_left = 0  # a round ends when no request is left in it
        if not (b or prefilling or waiting):
            now = seen = enter[nxt]
            continue
        ctx = s_ctx + b * g
        if b and ctx + b + kv_pref > cap:
            preempt_last()
            continue
        if prefilled and waiting and not round_left:
            owed = r_join - b * g
            while waiting and b < seqs:
                rid = waiting[0]
                rest = outputs[rid] - produced[rid]
                if s_ctx + b * g + b + target[rid] + 1 + int(reserve * (owed + rest)) > cap:
                    break
                owed += rest
                waiting.popleft()
                join(rid)
            if not b:
                if waiting:  # one that can never fit the cache (the callers check lengths first)
                    break
                continue
            ctx = s_ctx + b * g
        # the prompt tokens this step can take
        room = 0 if round_left else budget - (b if sched.mixed_batches else 0)
        pieces, p, pairs, kv_new = [], 0, 0.0, 0
        free = cap - ctx - b - kv_pref
        for entry in prefilling:
            rid, did = entry
            x = min(target[rid] - did, room - p, free - kv_new)
            if x <= 0:
                break
            pieces.append((entry, x))
            p += x
            kv_new += x
        owed = r_join - b * g + r_pref
        while not prefilled and not held and waiting and room - p > 0 and b + len(prefilling) < seqs:
            rid = waiting[0]
            want = target[rid]
            rest = outputs[rid] - produced[rid]
            avail = free - kv_new - int(reserve * (owed + rest))
            x = min(want, room - p, avail) if sched.chunked_prefill else want
            if x <= 0 or (not sched.chunked_prefill and (want > room - p or want > avail)):
                break
            owed += rest
            r_pref += rest
            waiting.popleft()
            entry = [rid, 0]
            prefilling.append(entry)
            pieces.append((entry, x))
            p += x
            kv_new += x
        if p:
            rows = 0
            for entry, x in pieces:
                rows += entry[1] + x >= target[entry[0]]
                pairs += x * (entry[1] + cached[entry[0]]) + x * (x + 1) / 2
            n_in = len(pieces)
            dt = (st.seconds(b, p, ctx, pairs, b + rows, n_in) if sched.mixed_batches
                  else st.seconds(0, p, 0, pairs, rows, n_in))
            seen = now
            now += dt
            held = False
            if sched.mixed_batches and b:
                itl.append(dt + gap)
                itl_w.append(b)
                gap = 0.0
                g += 1
                finish_decodes()
            elif b:
                gap += dt
            for entry, x in pieces:
                entry[1] += x
                kv_pref += x
            for entry in [e for e, _ in pieces if e[1] >= target[e[0]]]:
                prefilling.remove(entry)
                kv_pref -= entry[1]
                r_pref -= outputs[entry[0]] - produced[entry[0]]
                join(entry[0])
            continue
        if not b:  # prompts wait and none can start with nothing running: one that can never fit (the callers
            break      # check lengths against the cache and the budget first)
        # a decode-only stretch of k steps: up to the next completion, arrival that can enter, or the KV limit
        k = heap[0][0] - g
        k = min(k, (cap - ctx - kv_pref) // b)
        d0 = st.dense(b, b, b) + key_s[b] * ctx + st.seq_host_s * b
        slope = key_s[b] * b  # each step's keys grow by b
        can_admit = b + len(prefilling) < seqs
        if per_round > 1:  # a round runs its k steps whatever arrives (simulate's docstring)
            round_left = round_left or per_round
            k = min(k, round_left)
        elif nxt < n and can_admit and not waiting and enter[nxt] < math.inf:  # (a closed loop's unsent: none)
            dt_arr = enter[nxt] - now
            if dt_arr <= 0:  # arrived during the last step, unseen (late): the next step's start receives it
                k = 1
            else:  # it arrives during step ceil(k_arr); an overlapped scheduler sees it a step later
                if slope > 0:
                    a2 = slope / 2
                    lin = d0 - slope / 2
                    k_arr = (-lin + math.sqrt(lin * lin + 4 * a2 * dt_arr)) / (2 * a2)
                else:
                    k_arr = dt_arr / d0
                k = min(k, max(1, math.ceil(k_arr) + late))
        if held:  # the step after a preemption admits nothing; the one after it may (simulate's loop)
            k, held = 1, False
        k = max(k, 1)
        total = k * d0 + slope * k * (k - 1) / 2
        if gap:
            itl.append(d0 + gap)
            itl_w.append(b)
            gap = 0.0
            if k > 1:
                itl.append((total - d0) / (k - 1))
                itl_w.append(b * (k - 1))
        else:
            itl.append(total / k)
            itl_w.append(b * k)
        seen = now + total - (d0 + slope * (k - 1))  # the start of the stretch's last step
        now += total
        g += k
        if per_round > 1:
            round_left -= k
        finish_decodes()

    measured = [i for i in range(0 if closed else int(n * WARMUP_SHARE), n) if done[i] == done[i]]
    tt = np.array([ttft[i] for i in measured])
    e2e = np.array([done[i] - arrivals[i] for i in measured])
    tpot = np.array([(done[i] - first[i]) / (outputs[i] - 1) if outputs[i] > 1 else 0.0 for i in measured])
    finished_ids = [i for i in range(n) if done[i] == done[i]]
    out_tokens = sum(outputs[i] for i in finished_ids)
    span = (max(done[i] for i in finished_ids) - arrivals[0]) if finished_ids else 0.0
    return Run(tt, tpot, e2e, np.array(itl), np.array(itl_w, dtype=float), out_tokens, span, preempt,
               finished == n, np.sort(np.array([done[i] for i in finished_ids])))


# ----------------------------------------------------------------------------------------------- rates and summaries


@dataclass(frozen=True)
class Requests:
    """What requests ask for: each request's prompt and output tokens, cycled (a trace's rows, or one pair)."""

    prompts: tuple[int, ...]
    outputs: tuple[int, ...]
    # tokens at the start of every prompt the engine's prefix cache holds (simulate's cached_prefix): identical
    # prompts, or a shared system prompt; 0: none
    cached_prefix: int = 0

    @property
    def mean_context(self) -> int:
        return int(sum(self.prompts) / len(self.prompts) + sum(self.outputs) / len(self.outputs) / 2)

    @property
    def longest(self) -> int:
        return max(p + o for p, o in zip(self.prompts, self.outputs))

    @classmethod
    def spread(cls, prompt: int, output: int, lengths: str, rows: int = SPREAD_ROWS,
               max_output: int | None = None) -> Requests:
        """Requests at `prompt`/`output` tokens (LENGTH_SPREADS: 'fixed', each request at them; 'sharegpt',
        spread around them as sharegpt_like draws `rows` of them, no output past the client's `max_output` (its
        max_tokens; None: no cap but the dataset's); 'uniform', as uniform draws); ValueError naming `lengths`
        otherwise."""
        if lengths == "sharegpt":
            return cls.sharegpt_like(prompt, output, rows, max_output)
        if lengths == "uniform":
            return cls.uniform(prompt, output, rows)
        if lengths != "fixed":
            raise ValueError(f"lengths: expected one of {', '.join(LENGTH_SPREADS)}")
        return cls((prompt,), (output,))

    @classmethod
    def sharegpt_like(cls, mean_prompt: float, mean_output: float, rows: int = SPREAD_ROWS,
                      max_output: int | None = None) -> Requests:
        """`rows` requests whose lengths spread as a ShareGPT sample's do in the serving benchmarks, around the given
        means (tokens): each length exponential (an assumed shape: many short turns, a long tail), cut as vLLM's
        and SGLang's benchmarks cut ShareGPT (SHAREGPT_* constants) and rescaled until the cut lengths keep the
        means; prompt and output lengths independent (paired by a fixed shuffle). A client that caps each reply at
        `max_output` tokens (its max_tokens) cuts the outputs there too: the engine stops a sequence at max_tokens
        (vLLM SamplingParams.max_tokens, 'Maximum number of tokens to generate per output sequence'), so no reply
        of the run is longer, and a finite burst ends when its longest reply does. A mean at the cap puts every
        output at it. Deterministic. ValueError when a mean is too close to the cut for any scale to keep it."""
        q = (np.arange(rows) + 0.5) / rows
        tail = -np.log1p(-q)  # the unit exponential's quantiles

        def cut(scale: float, hi: int) -> np.ndarray:
            return np.clip(np.rint(scale * tail), SHAREGPT_MIN_TOKENS, hi)

        def refused(mean: float, hi: int, name: str) -> ValueError:
            return ValueError(f"a ShareGPT-like spread cut at {SHAREGPT_MIN_TOKENS}..{hi:,} tokens can't keep a mean "
                              f"of {mean:,.0f} {name} tokens; give lengths within the cut or a trace")

        def spread(mean: float, hi: int, name: str) -> np.ndarray:
            if mean > hi:
                raise refused(mean, hi, name)
            if mean >= hi - 0.5:  # every length at the cap (the cut mean only nears it as the scale grows)
                return np.full(rows, hi, dtype=int)
            scale = float(mean)
            for _ in range(50):  # the cut moves the mean; the scale that keeps it, by fixed point
                x = cut(scale, hi)
                if abs(x.mean() - mean) < 0.5:
                    return x.astype(int)
                scale *= mean / x.mean()
            lo, up = float(mean), float(mean) * 2.0 ** 20  # near the cap the fixed point crawls: bisect the scale
            for _ in range(80):  # the cut mean grows with the scale
                mid = (lo * up) ** 0.5
                x = cut(mid, hi)
                if abs(x.mean() - mean) < 0.5:
                    return x.astype(int)
                lo, up = (mid, up) if x.mean() < mean else (lo, mid)
            raise refused(mean, hi, name)

        prompts = spread(mean_prompt, SHAREGPT_MAX_PROMPT, "prompt")
        prompts = np.random.default_rng(0).permutation(prompts)
        hi = SHAREGPT_MAX_TOTAL - SHAREGPT_MAX_PROMPT
        outputs = spread(mean_output, hi if max_output is None else min(hi, max_output), "output")
        outputs = np.minimum(outputs, SHAREGPT_MAX_TOTAL - prompts)
        return cls(tuple(prompts.tolist()), tuple(outputs.tolist()))

    @classmethod
    def uniform(cls, mean_prompt: float, mean_output: float, rows: int = SPREAD_ROWS) -> Requests:
        """`rows` requests whose lengths are spread evenly from 1 to twice the given means (tokens), as the serving
        benchmarks' random dataset draws them at its default range ratio 0 (SGLang bench_serving
        sample_random_requests, --random-range-ratio 0.0: np.random.randint(max(int(L x ratio), 1), L + 1) for the
        prompt, from int(L x ratio) for the output; read 2026-11-27): a mean m is a length L = 2m. An output is at
        least 1 token (a request is served to its first token). Prompt and output lengths independent (paired by a
        fixed shuffle). Deterministic."""
        q = (np.arange(rows) + 0.5) / rows  # the uniform's quantiles

        def spread(mean: float) -> np.ndarray:
            return np.maximum(1, np.rint(q * 2 * mean)).astype(int)

        prompts = np.random.default_rng(0).permutation(spread(mean_prompt))
        return cls(tuple(prompts.tolist()), tuple(spread(mean_output).tolist()))

    def take(self, n: int, seed: int = 0) -> tuple[list[int], list[int]]:
        """n requests' (prompts, outputs): the rows drawn at random with `seed` (a trace's order, often sorted or
        by time of day, says nothing here), or the one pair n times. n equal to the rows: each row once, in a random
        order (a benchmark's own requests served whole, so their mean lengths are the stated ones)."""
        k = len(self.prompts)
        rng = np.random.default_rng(seed)
        if k == n > 1:
            idx = rng.permutation(k).tolist()
        else:
            idx = rng.integers(0, k, n).tolist() if k > 1 else [0] * n
        return [self.prompts[i] for i in idx], [self.outputs[i] for i in idx]


@dataclass(frozen=True)
class Slo:
    """Latency targets at the 95th percentile, seconds."""

    ttft_s: float
    tpot_s: float


@dataclass(frozen=True)
class RatePoint:
    """One request rate served by one replica: latency percentiles (seconds, PERCENTILES), throughput, goodput."""

    rate: float  # requests per second offered
    ttft: dict[int, float]
    tpot: dict[int, float]
    itl: dict[int, float]
    e2e: dict[int, float]
    tokens_per_s: float  # output tokens per second served
    requests_per_s: float
    goodput: float | None  # requests per second within both SLO targets (None without an SLO)
    meets_slo: bool | None  # p95 TTFT and p95 TPOT within the targets
    preemptions: int
    settled: bool
    usd_per_m_tokens: float | None  # per million output tokens, at the price given
    # above the saturation rate (when given): the queue grows without bound, so no SLO holds in steady state
    # however a finite run's percentiles look
    over_saturation: bool = False


def poisson_arrivals(rate: float, n: int, seed: int) -> list[float]:
    """n arrival times (seconds) of a Poisson process of `rate` requests/s, the first at 0; deterministic for a seed."""
    gaps = np.random.default_rng(seed).exponential(1.0 / rate, n)
    gaps[0] = 0.0
    return np.cumsum(gaps).tolist()


def benchmark_arrivals(rate: float, n: int, seed: int) -> list[float]:
    """poisson_arrivals rescaled so the last comes at (n - 1) / rate, the expected span of a benchmark's n requests
    at `rate`: a finite run's throughput is its tokens over that span, and one draw's span is off by about
    1/sqrt(n) (7 % at 200 requests), a noise the planner can't know the sign of."""
    t = poisson_arrivals(rate, n, seed)
    if n < 2 or t[-1] <= 0:
        return t
    k = (n - 1) / rate / t[-1]
    return [x * k for x in t]


def _pcts(values: np.ndarray) -> dict[int, float]:
    if not len(values):
        return {q: math.nan for q in PERCENTILES}
    return dict(zip(PERCENTILES, np.percentile(values, PERCENTILES).tolist()))


def _weighted_pcts(values: np.ndarray, weights: np.ndarray) -> dict[int, float]:
    if not len(values) or not weights.sum():
        return {q: math.nan for q in PERCENTILES}
    idx = np.argsort(values)
    cum = np.cumsum(weights[idx]) / weights.sum()
    return {q: float(values[idx][min(np.searchsorted(cum, q / 100), len(idx) - 1)]) for q in PERCENTILES}


def summarize(run: Run, rate: float, slo: Slo | None, usd_per_hour: float | None,
              saturation: float | None = None) -> RatePoint:
    """A run's percentiles, throughput, goodput under `slo` and $ per million output tokens at `usd_per_hour`; a
    rate above `saturation` (requests/s) meets no SLO."""
    tokens_s = run.output_tokens / run.span_s if run.span_s > 0 else 0.0
    over = saturation is not None and rate > saturation
    req_s = len(run.done_times) / run.span_s if run.span_s > 0 else 0.0
    ttft, tpot = _pcts(run.ttft_s), _pcts(run.tpot_s)
    goodput = meets = None
    if slo is not None and len(run.ttft_s):
        ok = (run.ttft_s <= slo.ttft_s) & (run.tpot_s <= slo.tpot_s)
        goodput = rate * float(ok.mean()) * len(run.ttft_s) / max(len(run.ttft_s), 1)
        meets = run.settled and ttft[95] <= slo.ttft_s and tpot[95] <= slo.tpot_s and not over
    usd = usd_per_hour / SECONDS_PER_HOUR / tokens_s * 1e6 if usd_per_hour is not None and tokens_s else None
    return RatePoint(rate, ttft, tpot, _weighted_pcts(run.itl_s, run.itl_weight), _pcts(run.e2e_s), tokens_s, req_s,
                     goodput, meets, run.preemptions, run.settled, usd, over)


def serve_rate(st: StepTimes, sched: Scheduler, reqs: Requests, rate: float, slo: Slo | None = None,
               usd_per_hour: float | None = None, n: int = DEFAULT_REQUESTS, seed: int = 0,
               saturation: float | None = None) -> RatePoint:
    """`n` requests arriving at `rate` per second (Poisson, `seed`), served and summarized (summarize)."""
    prompts, outputs = reqs.take(n, seed)
    run = simulate(st, sched, poisson_arrivals(rate, n, seed), prompts, outputs, cached_prefix=reqs.cached_prefix)
    return summarize(run, rate, slo, usd_per_hour, saturation)


# ----------------------------------------------------------------------------------------------- disaggregation


@dataclass(frozen=True)
class KvLink:
    """The path a prompt's KV cache takes from a prefill server to a decode server: GB/s per GPU (each GPU of a
    tensor-parallel server sends its own shard of the cache at once, to its peer on the other server) and what it
    is."""

    gbps: float
    name: str


def kv_link(gpu: GPU, tp: int, servers: int) -> KvLink | None:
    """The link between the prefill and the decode servers of a deployment of `servers` servers of `tp` GPUs: the
    GPUs' link inside a node when all of them fit one node (NVLink or PCIe; its large-transfer bus bandwidth), else
    the network fabric between nodes (its NIC per GPU x its bus share; data/interconnects.yaml `fabrics`). None:
    neither is known (no link between the GPUs, or more than a node and no fabric)."""
    n = servers * tp
    if gpu.node_gpus and n <= gpu.node_gpus:
        link = gpu.link_for(n)
        if link is not None and not link.fabric:
            return KvLink(link.bus_gbps, link.kind.name)
    fabric = next((k.fabric for k in gpu.links if k.fabric), None)
    if fabric is None:
        return None
    return KvLink(fabric.gbits_per_gpu / BITS_PER_BYTE * fabric.busbw_fraction, fabric.name)


def kv_transfer_seconds(st: StepTimes, prompt_tokens: int, link: KvLink) -> float:
    """Seconds to move a prompt's KV cache (prompt_tokens x the memory model's GB per token on one GPU) over
    `link`; every GPU of the server sends its shard in parallel."""
    return prompt_tokens * st.kv_gb_per_token / link.gbps


@dataclass(frozen=True)
class Pools:
    """A disaggregated deployment: `prefill` servers that only prefill (each request leaves after its first token)
    and `decode` servers that only decode, the rate split evenly over each pool, the cache moved over `link`."""

    prefill: int
    decode: int
    link: KvLink


def prefill_requests(reqs: Requests) -> Requests:
    """The same prompts with one output token: what a prefill server serves."""
    return Requests(reqs.prompts, (1,) * len(reqs.prompts))


def pool_runs(st: StepTimes, sched: Scheduler, reqs: Requests, rate: float, servers: int, prefill: bool,
              n: int, seed: int) -> Run:
    """One server of a pool of `servers` at its share of `rate` (Poisson, `seed`): a prefill server serving each
    prompt to its first token, or a decode server receiving prefilled requests."""
    prompts, outputs = (prefill_requests(reqs) if prefill else reqs).take(n, seed)
    return simulate(st, sched, poisson_arrivals(rate / servers, n, seed), prompts, outputs, prefilled=not prefill)


def combine_pools(st: StepTimes, reqs: Requests, pools: Pools, pre: Run, dec: Run, rate: float, slo: Slo | None,
                  usd_per_hour: float | None, n: int, seed: int,
                  saturation: tuple[float, float] | None = None) -> RatePoint:
    """A request's path through both pools: TTFT = its prefill server's TTFT (queue + prefill) + the KV transfer of
    its prompt + its wait at the decode server; TPOT, ITL from the decode server's decode-only steps; end-to-end the
    prefill part and the decode server's. The same `seed` gives request i the same lengths in both runs. The point is
    per decode server (rate, tokens/s); `usd_per_hour` is the whole deployment's, spread over its decode servers'
    tokens. `saturation`: (prefill, decode) requests/s per server; a pool above it meets no SLO."""
    prompts, _ = reqs.take(n, seed)
    k = min(len(pre.ttft_s), len(dec.ttft_s))
    start = int(n * WARMUP_SHARE)
    move = np.array([kv_transfer_seconds(st, prompts[i], pools.link) for i in range(start, start + k)])
    before = pre.ttft_s[:k] + move
    run = replace(dec, ttft_s=before + dec.ttft_s[:k], tpot_s=dec.tpot_s[:k], e2e_s=before + dec.e2e_s[:k],
                  settled=pre.settled and dec.settled and k == len(dec.ttft_s) == len(pre.ttft_s))
    over = saturation is not None and (rate / pools.prefill > saturation[0] or rate / pools.decode > saturation[1])
    usd = usd_per_hour / pools.decode if usd_per_hour is not None else None
    point = summarize(run, rate / pools.decode, slo, usd)
    if over and point.meets_slo:
        point = replace(point, meets_slo=False)
    return replace(point, over_saturation=over)


def burst_tokens_per_s(st: StepTimes, sched: Scheduler, reqs: Requests, n: int, seed: int = 0) -> float:
    """Output tokens per second of `n` requests all sent at once (a benchmark's request rate inf), as vLLM's
    benchmark_serving / `vllm bench serve` reports 'Output token throughput': every output token over the time from
    the first request to the last completion, so the fill (every prompt prefilled first) and the drain (the longest
    requests decoding in a shrinking batch) count. A finite run's figure, below saturation_rate's steady state.
    ValueError when n is outside 1..MAX_REQUESTS."""
    if not 1 <= n <= MAX_REQUESTS:
        raise ValueError(f"requests: {n:,} outside 1..{MAX_REQUESTS:,}")
    prompts, outputs = reqs.take(n, seed)
    run = simulate(st, sched, [0.0] * n, prompts, outputs, cached_prefix=reqs.cached_prefix)
    return run.output_tokens / run.span_s if run.span_s > 0 else 0.0


def closed_loop(st: StepTimes, sched: Scheduler, reqs: Requests, concurrency: int, n: int, seed: int = 0) -> RatePoint:
    """closed_loop_run summarized (summarize; the rate given is the requests per second it completed)."""
    run = closed_loop_run(st, sched, reqs, concurrency, n, seed)
    return summarize(run, len(run.done_times) / run.span_s if run.span_s > 0 else 0.0, None, None)


def closed_loop_run(st: StepTimes, sched: Scheduler, reqs: Requests, concurrency: int, n: int, seed: int = 0) -> Run:
    """A benchmark client's finite closed loop: `n` requests, `concurrency` of them in flight, the first
    `concurrency` sent at once and each later one as an earlier one completes (vLLM's benchmark_serving and SGLang's
    bench_serving at --request-rate inf with --max-concurrency c: limited_request_func holds an
    asyncio.Semaphore(max_concurrency) around each request, all n tasks created at once, each request's clock
    started once it holds the semaphore; vllm-project/vllm benchmarks/benchmark_serving.py and sgl-project/sglang
    python/sglang/bench_serving.py, read 2026-11-28). So the run starts with a burst of `concurrency` prompts (the fill,
    whose TTFTs queue behind each other's prefills), the server queues what its request cap (max_num_seqs) leaves
    waiting when concurrency exceeds it, and the last requests drain in a shrinking batch; its figures are over
    every request, the output tokens over the time from the first request to the last completion. ValueError when
    n or concurrency is outside 1..MAX_REQUESTS."""
    if not 1 <= n <= MAX_REQUESTS or not 1 <= concurrency <= MAX_REQUESTS:
        raise ValueError(f"requests {n:,} and concurrency {concurrency:,}: each within 1..{MAX_REQUESTS:,}")
    prompts, outputs = reqs.take(n, seed)
    return simulate(st, sched, [0.0] * n, prompts, outputs, closed=min(concurrency, n),
                    cached_prefix=reqs.cached_prefix)


def concurrency_limit(st: StepTimes, sched: Scheduler, reqs: Requests) -> int:
    """Requests that can run at once: the scheduler's cap, or what the KV cache holds of the longest request."""
    return max(1, min(sched.max_num_seqs, st.kv_tokens // max(reqs.longest, 1)))


def saturation_rate(st: StepTimes, sched: Scheduler, reqs: Requests, seed: int = 0, prefilled: bool = False) -> float:
    """Requests per second the deployment completes when its queue never empties. One full batch at once (the
    concurrency limit's worth) gives a first rate; Poisson arrivals at OVERLOAD x that rate, SATURATION_WAVES batches'
    worth of them, keep the queue full, and the completions between the first and last quarter of that run over the
    time they took are the rate (the fill and the drain left out, equal requests' waves broken up). `prefilled`: a
    disaggregated decode server's (simulate)."""
    c = concurrency_limit(st, sched, reqs)
    prompts, outputs = reqs.take(c, seed)
    burst = simulate(st, sched, [0.0] * c, prompts, outputs, prefilled, cached_prefix=reqs.cached_prefix).done_times
    if not len(burst) or burst[-1] <= 0:
        return 0.0
    first = len(burst) / float(burst[-1])
    n = min(MAX_REQUESTS, max(DEFAULT_REQUESTS, SATURATION_WAVES * c))
    prompts, outputs = reqs.take(n, seed)
    t = simulate(st, sched, poisson_arrivals(OVERLOAD * first, n, seed), prompts, outputs, prefilled,
                 cached_prefix=reqs.cached_prefix).done_times
    lo, hi = int(len(t) * 0.25), int(len(t) * 0.75) - 1
    if hi <= lo or t[hi] <= t[lo]:
        return first
    return (hi - lo) / float(t[hi] - t[lo])


def sweep(st: StepTimes, sched: Scheduler, reqs: Requests, rates: list[float], slo: Slo | None = None,
          usd_per_hour: float | None = None, n: int = DEFAULT_REQUESTS, seed: int = 0,
          saturation: float | None = None) -> list[RatePoint]:
    """serve_rate at each of `rates` (the same seed: common random numbers, so the points compare)."""
    return [serve_rate(st, sched, reqs, r, slo, usd_per_hour, n, seed, saturation) for r in rates]
