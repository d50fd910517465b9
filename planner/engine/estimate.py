"""Per-GPU estimates for a plan: batch choice, parallelism, time, throughput, cost, memory, feasibility."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Iterable, Mapping

from planner.inputs.catalog import GPU, PRICE_TIERS, Catalog, load_catalog
from planner.engine.cost import Price, job_cost_usd, per_million, snapshot_prices
from planner.engine.feasibility import Reason, context_reason, memory_reason, support_reasons
from planner.engine.memory import MemoryBreakdown, breakdown, max_batch
from planner.inputs.models import DecoderProfile, ModelProfile
from planner.inputs.precisions import PrecisionRules, load_rules
from planner.tools.prices import snapshot_table
from planner.engine.roofline import PhaseTime, phase_seconds, time_phase
from planner.inputs.runtimes import Efficiency, load_runtimes
from planner.engine.workloads import OPTIMIZERS, SHARDINGS, Generate, Infer, Phase, Setup, Train, Workload, generate_phases, infer_phases, train_phases

EfficiencyAdjust = Callable[[GPU, Efficiency], Efficiency]


@dataclass(frozen=True)
class Plan:
    """Everything a user chooses: model, job, precision and how it runs. batch None = auto."""

    model: ModelProfile
    workload: Workload
    precision: str = "bf16"
    kv_dtype: str | None = None
    attention: str = "sdpa"
    runtime: str = "pytorch-eager"
    batch: int | None = None
    gpus: int = 1
    price_tier: str = "secure"


@dataclass(frozen=True, eq=False)
class Estimate:
    gpu: GPU
    plan: Plan
    setup: Setup
    feasible: bool
    reasons: tuple[Reason, ...]
    batch: int
    max_batch: int
    parallelism: str  # 'single', 'data', 'tensor', 'fsdp'
    seconds: float | None
    work: tuple[Phase, ...]  # what the job does per GPU (timed lazily into `phases`)
    memory: MemoryBreakdown
    efficiency: Efficiency
    prices: Mapping[str, Price | None]
    cost_usd: Mapping[str, float | None] = field(default_factory=dict)
    items_per_s: float | None = None
    tokens_per_s: float | None = None

    @cached_property
    def phases(self) -> tuple[PhaseTime, ...]:
        """Step-time breakdown per phase and op group (the explanation behind `seconds`)."""
        return tuple(time_phase(ph, self.gpu, self.efficiency) for ph in self.work)

    @property
    def bound(self) -> str:
        if not self.phases:
            return "-"
        split: dict[str, float] = {}
        for ph in self.phases:
            for k, v in ph.split().items():
                split[k] = split.get(k, 0.0) + v
        return max(split, key=split.get)

    def cost(self, tier: str | None = None) -> float | None:
        return self.cost_usd.get(tier or self.plan.price_tier)

    def cost_per_million(self, tier: str | None = None) -> float | None:
        return per_million(self.cost(tier), self.plan.workload.items)

    @property
    def price(self) -> Price | None:
        return self.prices.get(self.plan.price_tier)


def _setup(plan: Plan, rules: PrecisionRules, tp: int = 1) -> Setup:
    precision = rules.precision(plan.precision)
    kv = rules.kv_dtype(plan.kv_dtype) if plan.kv_dtype else rules.default_kv_dtype(precision)
    return Setup(precision, kv, rules.attention(plan.attention), tp)


def check_plan(plan: Plan) -> None:
    """Reject plans no GPU could run, with a message naming the input (raises ValueError)."""
    w, m = plan.workload, plan.model
    if isinstance(w, Generate) and not isinstance(m, DecoderProfile):
        raise ValueError(f"generate needs a decoder model; {m.name} is a generic profile (use infer or train)")
    if plan.gpus < 1:
        raise ValueError("gpus must be at least 1")
    if plan.batch is not None and plan.batch < 1:
        raise ValueError("batch must be at least 1 (or auto)")
    if plan.price_tier not in PRICE_TIERS:
        raise ValueError(f"price tier must be one of {', '.join(PRICE_TIERS)}")
    if isinstance(w, Generate) and (w.prompt_tokens < 1 or w.gen_tokens < 1 or w.n_sequences < 1):
        raise ValueError("generate needs sequences >= 1, prompt tokens >= 1 (a BOS token counts) and generated tokens >= 1")
    if isinstance(w, Train):
        if w.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        if w.sharding not in SHARDINGS:
            raise ValueError(f"sharding must be one of {', '.join(SHARDINGS)}")
        if w.grad_accum < 1 or w.epochs <= 0 or w.samples_per_epoch < 1:
            raise ValueError("train needs samples >= 1, epochs > 0 and gradient accumulation >= 1")
    if isinstance(w, (Infer, Train)) and w.input_size < 1:
        raise ValueError("input size must be at least 1")
    if isinstance(w, Infer) and w.n_samples < 1:
        raise ValueError("infer needs samples >= 1")


def _phases(plan: Plan, s: Setup, batch: int, items_per_gpu: int, n_dp: int) -> tuple:
    m, w = plan.model, plan.workload
    if isinstance(w, Train):
        micro = math.ceil(items_per_gpu / batch)  # per epoch
        return train_phases(m, w, s, batch, micro * w.epochs, n_dp)
    full, rest = divmod(items_per_gpu, batch)
    build = (lambda b, n: generate_phases(m, w, s, b, n)) if isinstance(w, Generate) else \
        (lambda b, n: infer_phases(m, w, s, b, n))
    phases = build(batch, float(full)) if full else ()
    return phases + (build(rest, 1.0) if rest else ())


def _items_per_gpu(w: Workload, n_dp: int) -> int:
    per_epoch = w.samples_per_epoch if isinstance(w, Train) else w.items
    return math.ceil(per_epoch / n_dp)


def _tokens(plan: Plan) -> float | None:
    m, w = plan.model, plan.workload
    if not isinstance(m, DecoderProfile):
        return None
    if isinstance(w, Generate):
        return float(w.n_sequences) * w.gen_tokens
    if isinstance(w, Infer):
        return float(w.n_samples) * w.input_size
    return w.samples_per_epoch * w.epochs * w.input_size


def auto_batch(fit: int, items: int) -> int:
    """The cheapest batch for `items` items when the largest feasible batch is `fit`.

    A pass's time T(B) is a sum of max(a + b*B, c + d*B) terms (a, c >= 0): convex in B, and T(B)/B
    never rises with B. So the fewest passes, k = ceil(items / fit), are best, and for k passes
    Jensen's inequality (sum of T(B_i) >= k * T(items / k)) makes equal passes best:
    the balanced batch ceil(items / k). tests/test_estimate.py checks it against fixed batches.
    """
    return math.ceil(items / math.ceil(items / fit))


def estimate_gpu(plan: Plan, gpu: GPU, rules: PrecisionRules | None = None,
                 prices: Mapping[str, Price | None] | None = None, adjust: EfficiencyAdjust | None = None,
                 _memo: Callable | None = None, _setup_: Setup | None = None) -> Estimate:
    """Estimate `plan` on `gpu` (plan.gpus of them). `_memo(key, make)` shares GPU-independent work
    (memory fits per VRAM size) across the GPUs of one ranking."""
    rules = rules or load_rules()
    runtime = load_runtimes().get(plan.runtime)
    eff = runtime.efficiency(gpu.memory_class)
    if adjust:
        eff = adjust(gpu, eff)
    if prices is None:  # the committed snapshot (gpus.yaml + data/prices/); a GPU outside the catalog: its own
        prices = snapshot_table().prices.get(gpu.id) or snapshot_prices(gpu)
    prices = dict(prices)
    m, w, n = plan.model, plan.workload, plan.gpus
    s = _setup_ or _setup(plan, rules)
    reasons = support_reasons(gpu, s, rules)
    ctx = context_reason(m, w)
    reasons += [ctx] if ctx else []
    parallelism = "single" if n == 1 else "data"
    memo = _memo if _memo is not None else (lambda key, make: make())
    at_one = memo(("mem", id(s), 1, eff.cuda_context_gb), lambda: breakdown(m, w, s, 1, eff.cuda_context_gb))
    fits_one = at_one.total_gb <= gpu.vram_capacity_gb
    if n > 1 and not fits_one and not isinstance(w, Train) and isinstance(m, DecoderProfile):
        s = replace(s, tp=n)
        at_one = breakdown(m, w, s, 1, eff.cuda_context_gb)
        parallelism = "tensor"
        reasons.append(Reason("parallelism", False, f"weights don't fit one GPU: tensor parallel over {n} GPUs, "
                              f"2 all-reduces per layer over {gpu.interconnect_unidir_gbps or 0:g} GB/s links"))
        if m.kv_heads % n:
            reasons.append(Reason("parallelism", False, f"{m.kv_heads} KV heads don't split evenly over {n} GPUs"))
    elif n > 1 and isinstance(w, Train) and w.sharding == "fsdp":
        s = replace(s, shard=n)
        at_one = breakdown(m, w, s, 1, eff.cuda_context_gb)
        parallelism = "fsdp"
        reasons.append(Reason("parallelism", False, f"FSDP (ZeRO-3) over {n} GPUs: weights, gradients and optimizer "
                              f"states sharded; all-gathers and a reduce-scatter per micro-step over "
                              f"{gpu.interconnect_unidir_gbps or 0:g} GB/s links"))
    elif n > 1:
        reasons.append(Reason("parallelism", False, f"data parallel: each of {n} GPUs runs its share independently"
                              + (" with a gradient all-reduce per optimizer step" if isinstance(w, Train) else "")))
    n_dp = 1 if parallelism == "tensor" else n
    limit = _items_per_gpu(w, n_dp)
    fit = memo(("fit", id(s), gpu.vram_gb, eff.cuda_context_gb, limit),
               lambda: max_batch(m, w, s, gpu.vram_capacity_gb, eff.cuda_context_gb, limit, at_one))
    batch = min(plan.batch, limit) if plan.batch else max(fit, 1)
    mem = memo(("mem", id(s), batch, eff.cuda_context_gb), lambda: breakdown(m, w, s, batch, eff.cuda_context_gb))
    oom = memory_reason(gpu, mem, batch, n)
    if oom:
        reasons.append(oom)
        if isinstance(w, Train) and parallelism == "data":
            reasons.append(Reason("parallelism", False, "try sharding=fsdp: weights, gradients and optimizer states "
                                  "split over the GPUs"))
    feasible = not any(r.blocking for r in reasons)
    base = dict(gpu=gpu, plan=plan, setup=s, reasons=tuple(reasons), max_batch=fit, parallelism=parallelism,
                memory=mem, efficiency=eff, prices=prices)
    if not feasible:
        return Estimate(feasible=False, batch=batch, seconds=None, work=(), **base)
    per_gpu = _items_per_gpu(w, n_dp)
    if plan.batch is None and auto_batch(fit, per_gpu) != batch:
        batch = auto_batch(fit, per_gpu)
        base["memory"] = memo(("mem", id(s), batch, eff.cuda_context_gb), lambda: breakdown(m, w, s, batch, eff.cuda_context_gb))
    work = _phases(plan, s, batch, per_gpu, n_dp)
    seconds = sum(phase_seconds(ph, gpu, eff) for ph in work)
    tier_price = prices.get(plan.price_tier)
    if tier_price is None:
        reasons.append(Reason("price", False, f"no {plan.price_tier} price for {gpu.name}: enter your own $/h"))
        base["reasons"] = tuple(reasons)
    tokens = _tokens(plan)
    return Estimate(feasible=True, batch=batch, seconds=seconds, work=work,
                    cost_usd={t: job_cost_usd(seconds, n, prices.get(t)) for t in PRICE_TIERS},
                    items_per_s=w.items / seconds if seconds else None,
                    tokens_per_s=tokens / seconds if tokens and seconds else None, **base)


def rank_key(e: Estimate) -> tuple:
    cost = e.cost()
    return (not e.feasible, cost is None, cost if cost is not None else 0.0,
            e.seconds if e.seconds is not None else math.inf, e.gpu.id)


def estimate_all(plan: Plan, catalog: Catalog | None = None, gpu_names: Iterable[str] | None = None,
                 prices: Mapping[str, Mapping[str, Price | None]] | None = None,
                 adjust: EfficiencyAdjust | None = None) -> list[Estimate]:
    """Estimates for every GPU (or the named ones), ranked: feasible first, then by cost, then by time."""
    check_plan(plan)
    catalog = catalog or load_catalog()
    if prices is None:
        prices = snapshot_table(catalog).prices
    gpus = [catalog.get(n) for n in gpu_names] if gpu_names else list(catalog.gpus)
    rules = load_rules()
    setup = _setup(plan, rules)  # shared by every GPU (tensor parallel or FSDP derive their own)
    cache: dict = {}

    def memo(key, make):  # keys use id() of setups, each kept alive by its estimate in `out`
        if key not in cache:
            cache[key] = make()
        return cache[key]

    out = [estimate_gpu(plan, g, rules, prices.get(g.id), adjust, memo, setup) for g in gpus]
    return sorted(out, key=rank_key)
