"""Per-GPU estimates for a plan: parallelism, batch, time, throughput, cost, memory, feasibility.

Pure: every input arrives resolved (GPU, plan with its model profile, Setup, Efficiency, prices); nothing here
reads a file or the network. `estimate_gpu` and `estimate_all` take the loaded data as one Facts object.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache, partial
from typing import NamedTuple
from collections.abc import Callable, Iterable, Mapping

from planner.engine.gemm import ALIGNMENT_BYTES, TENSOR_CORE_PATHS, misaligned_dims
from planner.engine.cost import job_cost_usd, per_million
from planner.engine.feasibility import (Reason, attention_on, build_reasons, context_reason, memory_reason,
                                        precision_on, support_reasons)
from planner.engine.memory import MemoryBreakdown, breakdown, usable_gb
from planner.engine.phases import Phase, job_passes
from planner.engine.plan import DEFAULT_ATTENTION, Plan, check_plan, check_runtime, pinned_builds, resolve_setup
from planner.engine.roofline import LIMITS, PhaseTime, pass_seconds, phase_split, time_phase, work_split
from planner.inputs.builds import Build, BuildMatrix
from planner.inputs.catalog import GPU, PRICE_TIERS, Price
from planner.inputs.facts import Facts
from planner.inputs.jobs import AUTO_SHARDING, ZERO_STAGES, Generate, Infer, Train, Workload
from planner.inputs.precisions import EXPERTS_SCOPE, AttentionBackend
from planner.inputs.runtimes import Efficiency, Training
from planner.inputs.work import Setup

EfficiencyAdjust = Callable[[GPU, Efficiency], Efficiency]
PARALLELISMS = ("single", "data", "tensor", "zero1", "zero2", "fsdp")


@dataclass(frozen=True, eq=False)
class Estimate:
    gpu: GPU
    plan: Plan
    setup: Setup
    feasible: bool
    reasons: tuple[Reason, ...]
    batch: int
    max_batch: int
    parallelism: str  # one of PARALLELISMS
    seconds: float | None
    passes: tuple[tuple[Phase, float], ...]  # the job per GPU: each phase's one pass and how many (phases.job_passes)
    efficiency: Efficiency
    prices: Mapping[str, Price | None]
    cost_usd: Mapping[str, float | None] = field(default_factory=dict)
    items_per_s: float | None = None
    tokens_per_s: float | None = None

    @cached_property
    def memory(self) -> MemoryBreakdown:
        """Memory per GPU at the estimate's batch (built when asked: the ranking's order does not need it)."""
        return breakdown(self.plan.model, self.plan.workload, self.setup, self.batch, self.efficiency.cuda_context_gb)

    @cached_property
    def work(self) -> tuple[Phase, ...]:
        """What the job does per GPU: its phases, each repeated its passes (timed lazily into `phases`)."""
        return tuple(ph.repeated(n) for ph, n in self.passes)

    @cached_property
    def phases(self) -> tuple[PhaseTime, ...]:
        """Step-time breakdown per phase and op group (the explanation behind `seconds`)."""
        return tuple(time_phase(ph, self.gpu, self.efficiency) for ph in self.work)

    @cached_property
    def split(self) -> dict[str, float]:
        """Seconds of the whole job by what limits them: compute, memory, overhead, communication (time_split of
        `phases` to the last digit, without building them: the ranking asks it of every row). A sweep's estimate
        reads its passes' remembered splits (_split_of)."""
        remembered = self.__dict__.get("_split_of")
        return remembered() if remembered else work_split(self.work, self.gpu, self.efficiency)

    @property
    def bound(self) -> str:
        if not self.work:
            return "-"
        return max(self.split, key=self.split.get)

    def cost(self, tier: str | None = None) -> float | None:
        return self.cost_usd.get(tier or self.plan.price_tier)

    def cost_per_million(self, tier: str | None = None) -> float | None:
        return per_million(self.cost(tier), self.plan.workload.items)

    @property
    def price(self) -> Price | None:
        return self.prices.get(self.plan.price_tier)

    @property
    def usable_gb(self) -> float:
        """Memory per GPU the plan may fill (decimal GB): the memory target of what the GPU reports."""
        return usable_gb(self.gpu, self.plan.memory_target)

    @property
    def headroom_gb(self) -> float:
        """Usable memory left per GPU at the planned batch (negative: short by that much)."""
        return self.usable_gb - self.memory.total_gb


def items_per_gpu(w: Workload, n_dp: int) -> int:
    """Items each data-parallel rank batches per epoch (a training job's samples per epoch, else the job's items)."""
    per_epoch = w.samples_per_epoch if isinstance(w, Train) else w.items
    return math.ceil(per_epoch / n_dp)


def _tokens(plan: Plan) -> float | None:
    """Tokens the job processes (generated tokens for generate), or None for models not counted in tokens."""
    m, w = plan.model, plan.workload
    if not m.counts_tokens:
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
    the balanced batch ceil(items / k). tests/engine/test_estimate.py checks it against fixed batches.
    The proof holds for the roofline's affine terms; tile and wave quantization of GEMMs (planner.engine.gemm) make
    the compute part a staircase in B, so on a GPU with a known SM count a fixed batch can be a few percent faster
    (up to ~6 % in a scan of cfDNA-Gen decode on an RTX 3090); the search does not chase the staircase.
    """
    return math.ceil(items / math.ceil(items / fit))


def _link(gpu: GPU, n: int) -> str:
    link = gpu.link_for(n)
    return link.describe() if link else "no known link between GPUs"


def _unlinked(gpu: GPU, n: int) -> list[Reason]:
    """A blocking reason when a plan's collectives need a link between n GPUs that the catalog does not know: more
    GPUs than one node holds, with no network fabric between its nodes (data/gpus.yaml interconnect)."""
    if gpu.link_for(n) is not None:
        return []
    if gpu.node_gpus and n > gpu.node_gpus:
        nodes = -(-n // gpu.node_gpus)
        return [Reason("parallelism", True, f"{n} GPUs span {nodes} nodes of at most {gpu.node_gpus}, and no network "
                       f"between nodes of {gpu.name} is known: use at most {gpu.node_gpus} GPUs, or a GPU whose "
                       "clusters are in the catalog")]
    return [Reason("parallelism", True, f"no link between {gpu.name}s is known: use 1 GPU")]


def _parallelism(plan: Plan, gpu: GPU, s: Setup, context_gb: float) -> tuple[Setup, str, list[Reason]]:
    """How plan.gpus GPUs share the job: (setup with its TP/FSDP degree, parallelism, notes).

    One GPU: single. Training: the plan's sharding (a concrete layout: `auto` is resolved by _auto_layout before):
    FSDP (ZeRO-3), ZeRO-1/2 or DDP. Inference: tensor parallel when the user asks for it, or (auto) when the weights
    don't fit one GPU and the model splits; otherwise data parallel.
    """
    m, w, n = plan.model, plan.workload, plan.gpus
    if n == 1:
        return s, "single", []
    if isinstance(w, Train):
        stage = ZERO_STAGES.get(w.sharding, 0)
        if stage in (1, 2):
            what = "optimizer states" if stage == 1 else "optimizer states and gradients"
            return replace(s, zero_stage=stage, zero_gpus=n), w.sharding, [Reason(
                "parallelism", False, f"ZeRO-{stage} over {n} GPUs: {what} partitioned, the weights whole on every "
                f"GPU; a reduce-scatter of the gradients per {'micro-step' if stage == 2 else 'optimizer step'} and "
                f"an all-gather of the updated weights per optimizer step over {_link(gpu, n)}")] + _unlinked(gpu, n)
        if w.sharding == "fsdp":
            return replace(s, shard=n), "fsdp", [Reason(
                "parallelism", False, f"FSDP (ZeRO-3) over {n} GPUs: weights, gradients and optimizer states "
                f"sharded; all-gathers and a reduce-scatter per micro-step over {_link(gpu, n)}")] + _unlinked(gpu, n)
        return s, "data", [Reason("parallelism", False, f"data parallel (DDP) over {n} GPUs: a gradient all-reduce "
                                  f"per optimizer step over {_link(gpu, n)}")] + _unlinked(gpu, n)
    heads = m.tensor_parallel_heads
    fits = breakdown(m, w, s, 1, context_gb).total_gb <= usable_gb(gpu, plan.memory_target)
    if plan.parallel == "tensor" or (plan.parallel == "auto" and heads is not None and not fits):
        why = ("as asked" + (" (the model would fit one GPU)" if fits else "") if plan.parallel == "tensor"
               else "auto: the weights don't fit one GPU")
        notes = [Reason("parallelism", False, f"tensor parallel over {n} GPUs, {why}: 2 all-reduces per layer over "
                        f"{_link(gpu, n)}; they never overlap compute (each layer waits for the last)")]
        if heads and heads % n:
            notes.append(Reason("parallelism", False, f"{heads} KV heads don't split evenly over {n} GPUs"))
        return replace(s, tp=n), "tensor", notes + _unlinked(gpu, n)
    why = "as asked" if plan.parallel == "data" else "auto: the model fits one GPU; choose tensor parallel to split it"
    return s, "data", [Reason("parallelism", False, f"data parallel ({why}): each of {n} GPUs runs its share "
                              "independently")]


def alignment_reason(work: tuple, gpu: GPU, s: Setup) -> Reason | None:
    """A note when the plan's 16- or 8-bit tensor-core GEMMs have weight dimensions that are not 16-byte aligned on an
    NVIDIA GPU (gemm.misaligned_dims): they run slower kernels than the matmul ceiling the estimate assumes."""
    p = s.precision
    if gpu.compute_capability is None or p.compute_path not in TENSOR_CORE_PATHS or p.weight_bytes != p.act_bytes \
            or not work:
        return None
    dims = sorted({d for g in work[0].groups if g.gemms for d in misaligned_dims(g.gemms, p.act_bytes)})
    if not dims:
        return None
    step, many = int(ALIGNMENT_BYTES // p.act_bytes), len(dims) > 1
    return Reason("alignment", False, f"weight dimension{'s' if many else ''} "
                  f"{', '.join(f'{d:,}' for d in dims[:3])} not a multiple of {step}: in {p.id} those matrices' rows "
                  f"are not {ALIGNMENT_BYTES}-byte aligned, so their GEMMs run slower tensor-core kernels than this "
                  f"estimate assumes (an H200 ran GPT-2's 50,257-wide LM head at ~125 TFLOP/s); pad "
                  f"{'them' if many else 'it'} to a multiple of 64, as nanoGPT pads GPT-2's vocabulary to 50,304")


@lru_cache(maxsize=1024)
def _on_kernel(s: Setup, kernel: AttentionBackend) -> Setup:
    """The setup with its attention choice replaced by the kernel it runs as (one object per pair: a cache key)."""
    return s if s.attention is kernel else replace(s, attention=kernel)


class _Fixed(NamedTuple):
    """What an estimate of a plan on one GPU decides before the job's size matters: the same for a job of any size,
    so estimate_all keeps it per plan shape (a page change of the sequence count reuses it)."""

    gpu: GPU
    efficiency: Efficiency
    reasons: tuple[Reason, ...]  # hardware, attention kernel, builds, runtime, precision, context, parallelism
    blocked: bool  # one of them blocks
    setup: Setup  # attention resolved to the kernel it runs as, TP/FSDP degree set
    parallelism: str
    n_dp: int  # data-parallel ranks the items are split over
    usable_gb: float
    gb_at_1: float  # memory per GPU at batch 1 (decimal GB)
    gb_per_item: float  # memory per extra item in the batch (0.0 when batch 1 does not fit)
    memo: dict  # one pass's seconds and alignment note per phase (_pass_memo)


def _fixed(plan: Plan, gpu: GPU, setup: Setup, efficiency: Efficiency, builds: BuildMatrix | None,
           fallback: AttentionBackend | None, pinned: tuple[Build, ...]) -> _Fixed:
    """estimate_on's decisions that do not depend on the job's size: feasibility on the hardware, the attention
    kernel, the builds, the parallelism, and memory as an affine function of the batch (memory.max_batch's two
    evaluations)."""
    m, w, eff = plan.model, plan.workload, efficiency
    setup = precision_on(gpu, setup, plan.runtime)  # FP8 under vLLM on Ampere: weight-only FP8-Marlin
    reasons = support_reasons(gpu, setup, w, m)
    if gpu.kind == "cpu":  # any x86 PyTorch build runs there, and the CPU kernels are PyTorch's own (cpu_reasons)
        if plan.gpus > 1:
            reasons.append(Reason("parallelism", True, f"a CPU device is one host: the planner does not split a job "
                                  f"over {plan.gpus} of them; set GPUs per job to 1"))
    else:
        att = attention_on(gpu, setup, m.attention_head_dim, fallback or setup.attention, pinned)
        reasons.append(att.reason)
        if att.kernel is not None:
            setup = _on_kernel(setup, att.kernel)
        if builds is not None:
            reasons += build_reasons(builds, gpu, pinned)
    if eff.unsupported:
        reasons.append(Reason("runtime", True, f"{eff.unsupported}: choose PyTorch eager, torch.compile or llama.cpp"))
    only = setup.precision.runtimes
    if only and plan.runtime not in only:
        what = ("runs its library's kernels only under" if setup.precision.kernel else "is a file format only")
        tail = "" if setup.precision.kernel else " runs"
        reasons.append(Reason("precision", True, f"{setup.precision.id} {what} {', '.join(only)}{tail}: "
                              f"choose that runtime, or int4/int8 for {plan.runtime}"))
    if setup.precision.quantized_weights == EXPERTS_SCOPE and not m.quantized_params(EXPERTS_SCOPE):
        reasons.append(Reason("precision", False, f"{setup.precision.id} stores a mixture of experts' expert "
                              f"matrices only (gpt-oss's checkpoints); {m.name} has none, so all its weights are "
                              f"counted at {setup.precision.act_bytes:g} B: for 4-bit layers choose int4"))
    ctx = context_reason(m, w)
    reasons += [ctx] if ctx else []
    s, parallelism, notes = _parallelism(plan, gpu, setup, eff.cuda_context_gb)
    reasons += notes
    if isinstance(w, Train) and plan.gpus > 1:  # the runtime's own overlap for this layout (its training block)
        eff = eff.for_layout(w.sharding, m.shard_units)
    usable = usable_gb(gpu, plan.memory_target)
    at_1 = breakdown(m, w, s, 1, eff.cuda_context_gb).total_gb
    per_item = breakdown(m, w, s, 2, eff.cuda_context_gb).total_gb - at_1 if at_1 <= usable else 0.0
    return _Fixed(gpu, eff, tuple(reasons), any(r.blocking for r in reasons), s, parallelism,
                  1 if parallelism == "tensor" else plan.gpus, usable, at_1, per_item, {})


def _fit(f: _Fixed, limit: int) -> int:
    """memory.max_batch from the fixed part's two evaluations: the largest batch (<= limit) that fits, 0 if none."""
    if f.gb_at_1 > f.usable_gb:
        return 0
    if f.gb_per_item <= 0:
        return limit
    return int(max(1, min(limit, 1 + (f.usable_gb - f.gb_at_1) // f.gb_per_item)))


_MEMO_LIMIT = 64  # passes remembered per GPU and plan shape: a few dozen job sizes' worth


def _pass_memo(f: _Fixed, ph: Phase) -> list:
    """[the phase, seconds of one pass, its alignment note and its split (None until asked)] for one pass `ph` of
    phases.job_passes (a cached object, the same for a job of any size) on the fixed part's GPU: a job of another
    size at the same batch times nothing again. Keyed by the phase's identity; the entry holds the phase, so the
    identity is never reused while the entry lives."""
    entry = f.memo.get(id(ph))
    if entry is None or entry[0] is not ph:
        if len(f.memo) >= _MEMO_LIMIT:
            f.memo.clear()
        entry = f.memo[id(ph)] = [ph, pass_seconds(ph, f.gpu, f.efficiency), None, None]
    return entry


def _split_of(f: _Fixed, entries: list[list], passes: tuple[tuple[Phase, float], ...]) -> dict[str, float]:
    """work_split of the passes from each pass's remembered split (phase_split of one pass: each value is its terms
    x 1.0, so x the passes it is the same product phase_split makes), summed in the same order."""
    split = dict.fromkeys(LIMITS, 0.0) if passes else {}
    for entry, (_, n) in zip(entries, passes):
        if entry[3] is None:
            entry[3] = phase_split(entry[0], f.gpu, f.efficiency)
        for k, v in entry[3].items():
            split[k] += v * n
    return split


def _alignment(f: _Fixed, passes: tuple[tuple[Phase, float], ...]) -> Reason | None:
    """alignment_reason of the work (it reads the first phase's op groups), remembered with that phase."""
    if not passes:
        return None
    entry = _pass_memo(f, passes[0][0])
    if entry[2] is None:
        entry[2] = (alignment_reason((entry[0],), f.gpu, f.setup),)
    return entry[2][0]


def _estimate(**fields) -> Estimate:
    """An Estimate from its fields without the frozen dataclass's per-field object.__setattr__ (built hundreds of
    times per ranking): exactly Estimate's fields, and optionally _split_of (Estimate.split from remembered
    passes; dataclasses.replace, which knows only the fields, drops it)."""
    e = object.__new__(Estimate)
    e.__dict__.update(fields)
    return e


def _sized(plan: Plan, f: _Fixed, prices: Mapping[str, Price | None]) -> Estimate:
    """The estimate of `plan` from its fixed part: the batch for the job's size, the work and its time, the cost."""
    m, w, s, gpu, eff = plan.model, plan.workload, f.setup, f.gpu, f.efficiency
    per_gpu = items_per_gpu(w, f.n_dp)
    fit = _fit(f, per_gpu)
    batch = min(plan.batch, per_gpu) if plan.batch else max(fit, 1)
    reasons, blocked = f.reasons, f.blocked
    # batch=auto fills the usable memory by design (the target is its margin): only a batch the user fixed, or one
    # that does not fit at all, gets a memory reason
    if plan.batch or not fit:
        oom = memory_reason(gpu, breakdown(m, w, s, batch, eff.cuda_context_gb), batch, plan.gpus, f.usable_gb,
                            plan.memory_target)
        if oom:
            reasons += (oom,)
        if oom and oom.blocking:
            blocked = True
            if isinstance(w, Train) and f.parallelism in ("data", "zero1", "zero2"):
                reasons += (Reason("parallelism", False, "try sharding=auto, or a higher ZeRO stage (zero1, zero2, "
                                   "fsdp): optimizer states, then gradients, then weights split over the GPUs"),)
            elif f.parallelism == "data" and plan.gpus > 1 and m.tensor_parallel_heads is not None:
                reasons += (Reason("parallelism", False, "try tensor parallel: each GPU then holds 1/"
                                   f"{plan.gpus} of the weights"),)
    if blocked:
        return _estimate(gpu=gpu, plan=plan, setup=s, feasible=False, reasons=reasons, batch=batch, max_batch=fit,
                         parallelism=f.parallelism, seconds=None, passes=(), efficiency=eff, prices=prices,
                         cost_usd={}, items_per_s=None, tokens_per_s=None)
    if plan.batch is None:
        batch = auto_batch(fit, per_gpu)
    passes = job_passes(m, w, s, batch, per_gpu, f.n_dp)
    entries = [_pass_memo(f, ph) for ph, _ in passes]
    seconds = sum([entry[1] * n for entry, (_, n) in zip(entries, passes)])  # phase_seconds of each phase, in order
    align = _alignment(f, passes)
    if align:
        reasons += (align,)
    if prices.get(plan.price_tier) is None:
        reasons += (Reason("price", False, f"no {plan.price_tier} price for {gpu.name}: enter your own $/h"),)
    tokens = _tokens(plan)
    return _estimate(gpu=gpu, plan=plan, setup=s, feasible=True, reasons=reasons, batch=batch, max_batch=fit,
                     parallelism=f.parallelism, seconds=seconds, passes=passes, efficiency=eff, prices=prices,
                     cost_usd={t: job_cost_usd(seconds, plan.gpus, prices.get(t)) for t in PRICE_TIERS},
                     items_per_s=w.items / seconds if seconds else None,
                     tokens_per_s=tokens / seconds if tokens and seconds else None,
                     _split_of=partial(_split_of, f, entries, passes))


def _layouts(plan: Plan, training: Training | None) -> tuple[Plan, ...]:
    """The plans an auto-sharded training plan chooses among: each concrete layout of jobs.ZERO_STAGES that the
    runtime runs (its `training` block; every one without it), in order of stage (DDP on one GPU, where nothing is
    partitioned); () for any other plan."""
    w = plan.workload
    if not isinstance(w, Train) or w.sharding != AUTO_SHARDING:
        return ()
    names = (training.shardings() if training else tuple(ZERO_STAGES)) if plan.gpus > 1 else ("ddp",)
    return tuple(replace(plan, workload=replace(w, sharding=name)) for name in names)


def _layout_text(e: Estimate) -> str:
    cost = e.cost()
    money = f"${cost:,.2f}, " if cost is not None else ""
    return f"{e.plan.workload.sharding} ({money}{e.seconds / 3600:,.3g} h)"


def _pick_layout(plan: Plan, candidates: list[Estimate]) -> Estimate:
    """Of one GPU's estimates under each layout (_layouts), the cheapest that runs (rank_key: cost in the plan's
    tier, then time; a tie keeps the lower stage, which partitions less), else the one needing the least memory: the
    estimate of the auto plan, with a reason naming what did not fit and what fit but cost more."""
    if len(candidates) == 1:
        return _estimate(**{**candidates[0].__dict__, "plan": plan})
    runs = [e for e in candidates if e.feasible]
    best = min(runs, key=rank_key) if runs else min(candidates, key=lambda e: e.memory.total_gb)
    unfit = [f"{e.plan.workload.sharding} ({e.memory.total_gb:,.1f} GB per GPU at batch {e.batch}, "
             f"{e.usable_gb:,.1f} GB usable)"
             for e in candidates if not e.feasible and e.memory.total_gb > e.usable_gb]
    costlier = [_layout_text(e) for e in runs if e is not best]
    if runs:
        why = f"sharding auto: {_layout_text(best)} is the cheapest layout that fits"
    else:
        why = (f"sharding auto: no layout runs here; {best.plan.workload.sharding}, the one that needs the least "
               "memory, shown")
    why += (f"; did not fit: {', '.join(unfit)}" if unfit else "") + (
        f"; fit but cost more: {', '.join(costlier)}" if costlier else "")
    fields = {**best.__dict__, "plan": plan, "reasons": (Reason("parallelism", False, why), *best.reasons)}
    fields.pop("memory", None)  # a cached_property of the layout's plan: rebuilt from the auto plan when asked
    return _estimate(**fields)


def estimate_on(plan: Plan, gpu: GPU, setup: Setup, efficiency: Efficiency, prices: Mapping[str, Price | None],
                builds: BuildMatrix | None = None, fallback: AttentionBackend | None = None,
                pinned: tuple[Build, ...] = ()) -> Estimate:
    """Estimate `plan` on `gpu` (plan.gpus of them) from resolved inputs: the plan's Setup (its attention choice is
    resolved here, per GPU, to the kernel it runs as; `fallback` is what a blocked choice suggests instead), the
    runtime's efficiency on this GPU, its prices per tier, and the PyTorch build matrix with the plan's pinned
    builds (the GPU's build notes; none without a matrix). Training with sharding auto: each layout, the cheapest
    that fits (_pick_layout)."""
    layouts = _layouts(plan, efficiency.training)
    if layouts:
        return _pick_layout(plan, [estimate_on(p, gpu, setup, efficiency, prices, builds, fallback, pinned)
                                   for p in layouts])
    return _sized(plan, _fixed(plan, gpu, setup, efficiency, builds, fallback, pinned), dict(prices))


def efficiency_on(plan: Plan, gpu: GPU, facts: Facts, adjust: EfficiencyAdjust | None = None) -> Efficiency:
    """The plan's runtime efficiency on `gpu` (its memory class's prior), adjusted by a calibration if given."""
    eff = facts.runtimes.get(plan.runtime).efficiency(gpu.memory_class)
    return adjust(gpu, eff) if adjust else eff


def estimate_gpu(plan: Plan, gpu: GPU, facts: Facts, adjust: EfficiencyAdjust | None = None,
                 setup: Setup | None = None) -> Estimate:
    """Estimate `plan` on `gpu` with the loaded facts (its prices from facts.prices, or its catalog listing)."""
    return estimate_on(plan, gpu, setup or resolve_setup(plan, facts.rules, facts.runtimes),
                       efficiency_on(plan, gpu, facts, adjust), facts.prices.for_gpu(gpu), facts.builds,
                       facts.rules.attention(DEFAULT_ATTENTION), pinned_builds(plan, facts.builds))


def setup_on(plan: Plan, gpu: GPU, facts: Facts) -> Setup:
    """The plan's Setup on `gpu`, its attention resolved to the kernel it runs as there (unresolved when none runs:
    estimate_gpu says why)."""
    s = precision_on(gpu, resolve_setup(plan, facts.rules, facts.runtimes), plan.runtime)
    att = attention_on(gpu, s, plan.model.attention_head_dim, facts.rules.attention(DEFAULT_ATTENTION),
                       pinned_builds(plan, facts.builds))
    return _on_kernel(s, att.kernel) if att.kernel else s


def rank_key(e: Estimate) -> tuple:
    cost = e.cost()
    return (not e.feasible, cost is None, cost if cost is not None else 0.0,
            e.seconds if e.seconds is not None else math.inf, e.gpu.id)


def job_shape(w: Workload) -> Workload:
    """The workload without its size (one item, one epoch): what an estimate's fixed part and the work of one pass
    depend on. Two jobs of the same shape differ only in how many passes they take."""
    if isinstance(w, Generate):
        return replace(w, n_sequences=1)
    if isinstance(w, Infer):
        return replace(w, n_samples=1)
    if isinstance(w, Train):
        return replace(w, samples_per_epoch=1, epochs=1.0, train_tokens=0.0)
    return w  # a kind of job this does not know: its size stays in the key (nothing shared, nothing wrong)


class _PlanMemo(dict):
    """The fixed parts of recent plan shapes, for every GPU they were asked of: {key: (its data objects,
    {id(gpu): fixed})}; cache_clear empties it, as functools' caches (benchmarks/engine_catalog.py's cold sweep)."""

    def cache_clear(self) -> None:
        self.clear()


_FIXED_PARTS = _PlanMemo()
_FIXED_PLANS = 16  # plan shapes remembered (a page session changes one input at a time)
_GPUS_PER_PLAN = 1024  # devices per plan shape (each described GPU is one more): then it starts anew


def _fixed_parts(plan: Plan, shape: Workload, facts: Facts) -> dict[int, _Fixed]:
    """The fixed parts of `plan` by id(gpu), shared by every plan of the same shape (any job size, batch and price
    tier) on the same data objects (the rules, runtimes and build matrix; prices are not part of it)."""
    held = (facts.rules, facts.runtimes, facts.builds)
    key = (replace(plan, workload=shape, batch=None, price_tier=PRICE_TIERS[0]), *map(id, held))  # what _fixed reads
    found = _FIXED_PARTS.get(key)
    if found is None or any(a is not b for a, b in zip(found[0], held)) or len(found[1]) > _GPUS_PER_PLAN:
        if len(_FIXED_PARTS) >= _FIXED_PLANS:
            _FIXED_PARTS.clear()  # not one evicted: sessions' threads share the memo, and a clear is one step
        found = _FIXED_PARTS[key] = (held, {})
    return found[1]


def estimate_all(plan: Plan, facts: Facts, gpu_names: Iterable[str] | None = None,
                 adjust: EfficiencyAdjust | None = None, include_cpus: bool = False) -> list[Estimate]:
    """Estimates for every GPU of facts.catalog (and its CPU devices with include_cpus), or for the named devices
    (GPUs or CPUs), ranked: feasible first, then by cost in the plan's tier, then by time."""
    gpus = [facts.catalog.get(n) for n in gpu_names] if gpu_names else list(facts.catalog.selection(include_cpus))
    return sorted(estimate_many(plan, gpus, facts, adjust), key=rank_key)


def estimate_many(plan: Plan, gpus: Iterable[GPU], facts: Facts, adjust: EfficiencyAdjust | None = None
                  ) -> list[Estimate]:
    """The plan on each of `gpus` (catalog devices), in their order: the catalog sweep and the batch sweep.

    What does not depend on the job's size is kept per plan shape and GPU (_Fixed), and each pass's time per phase,
    so a second sweep with another job size or batch only sizes the batch and times the passes it has not timed.
    With a calibration (`adjust`, a function the cache could not key on) every GPU is estimated anew. Each estimate
    equals estimate_gpu's (tests/engine/test_sweep_equality.py)."""
    check_plan(plan)
    check_runtime(plan, facts.runtimes)
    layouts = _layouts(plan, facts.runtimes.get(plan.runtime).training)
    if layouts:  # sharding auto: each layout swept, the cheapest that fits per GPU (as estimate_on)
        gpus = list(gpus)
        per_layout = [estimate_many(p, gpus, facts, adjust) for p in layouts]
        return [_pick_layout(plan, list(es)) for es in zip(*per_layout)]
    pinned = pinned_builds(plan, facts.builds)  # an unknown pinned version fails here, before any GPU
    setup = resolve_setup(plan, facts.rules, facts.runtimes)  # shared by every GPU (each resolves its attention kernel)
    if adjust is not None:
        return [estimate_gpu(plan, g, facts, adjust, setup) for g in gpus]
    shape = job_shape(plan.workload)
    fixed = _fixed_parts(plan, shape, facts)
    fallback, prices = facts.rules.attention(DEFAULT_ATTENTION), facts.prices
    out = []
    for g in gpus:
        f = fixed.get(id(g))
        if f is None or f.gpu is not g:
            f = fixed[id(g)] = _fixed(plan, g, setup, efficiency_on(plan, g, facts), facts.builds, fallback, pinned)
        out.append(_sized(plan, f, prices.for_gpu(g)))
    return out
