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
from types import ModuleType

from planner.engine.cluster import asks_cluster, cluster_note, on_cluster
from planner.engine.collectives import custom_link
from planner.engine.host_speed import on_host
from planner.engine.gemm import ALIGNMENT_BYTES, TENSOR_CORE_PATHS, misaligned_dims
from planner.engine.cost import job_cost_usd, per_million
from planner.engine.collectives import group_link
from planner.engine.feasibility import (Reason, attention_on, build_reasons, capacity_text, context_reason,
                                        memory_reason, precision_on, support_reasons)
from planner.engine.memory import MemoryBreakdown, breakdown, usable_gb
from planner.engine.phases import Phase, job_passes
from planner.engine.plan import DEFAULT_ATTENTION, Plan, check_plan, check_runtime, pinned_builds, resolve_setup
from planner.engine.roofline import LIMITS, PhaseTime, pass_seconds, phase_split, time_phase, work_split
from planner.engine.train_layout import SPLIT_SHARDINGS, layout_candidates, layout_words
from planner.inputs.builds import Build, BuildMatrix
from planner.inputs.catalog import GPU, PRICE_TIERS, Price
from planner.inputs.facts import Facts
from planner.inputs.jobs import AUTO_SHARDING, ZERO_STAGES, Generate, Infer, Train, Workload
from planner.inputs.precisions import EXPERTS_SCOPE, AttentionBackend
from planner.inputs.runtimes import Efficiency, Training
from planner.inputs.work import Setup

EfficiencyAdjust = Callable[[GPU, Efficiency], Efficiency]
PARALLELISMS = ("single", "data", "tensor", "zero1", "zero2", "fsdp")  # a training layout adds ' with tp=2,...'
AUTO_LISTED = 6  # candidates an auto pick names, each list (a layout auto on 64 GPUs weighs dozens)


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
    efficiency: Efficiency
    prices: Mapping[str, Price | None]
    cost_usd: Mapping[str, float | None] = field(default_factory=dict)
    items_per_s: float | None = None
    tokens_per_s: float | None = None

    @cached_property
    def passes(self) -> tuple[tuple[Phase, float], ...]:
        """The job per GPU: each phase's one pass and how many (phases.job_passes). Set when the estimate is built,
        or built when asked (_passes_of) where the sweep timed the passes from their terms (planner.engine.sweep)."""
        return self.__dict__["_passes_of"]()

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
        """What limits most of the job's seconds ("-" without work: the split is empty exactly then). Read from the
        split, so that a sweep's estimate does not build its phases for the ranking's column."""
        split = self.split
        return max(split, key=split.get) if split else "-"

    def cost(self, tier: str | None = None) -> float | None:
        return self.cost_usd.get(tier or self.plan.price_tier)

    def cost_per_million(self, tier: str | None = None) -> float | None:
        return per_million(self.cost(tier), self.plan.workload.items)

    @property
    def price(self) -> Price | None:
        return self.prices.get(self.plan.price_tier)

    @property
    def data_ranks(self) -> int:
        """Data-parallel ranks the job's items are split over: the GPUs / (tp x pp x cp) of its setup (1 for
        tensor-parallel inference, every GPU for data parallel)."""
        s = self.setup
        return max(1, self.plan.gpus // (s.tp * s.pp * s.cp))

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


def micro_batches(fit: int, per_rank: int) -> list[int]:
    """The micro-batches (<= fit) that divide a global batch's `per_rank` samples per data-parallel rank, ascending:
    the gradient accumulation is then per_rank / micro-batch micro-batches, exactly."""
    cap = min(fit, per_rank)
    found = {1}
    for d in range(1, math.isqrt(per_rank) + 1):  # divisors in pairs: a global batch of 10^8 takes 10^4 steps
        if per_rank % d == 0:
            found.update(x for x in (d, per_rank // d) if x <= cap)
    return sorted(found)


def _global_batch_micro(plan: Plan, f: _Fixed, per_gpu: int, fit: int) -> int:
    """batch=auto with a global batch: the largest micro-batch that divides it; with a pipeline, the one of those
    whose job takes least time (a smaller micro-batch runs more micro-batches per step, and the bubble, (p-1)/v
    micro-steps, is then a smaller share: Narayanan et al. 2021 sec. 3.2)."""
    w = plan.workload
    sizes = micro_batches(fit, w.global_batch // f.n_dp)
    if f.setup.pp == 1:
        return sizes[-1]

    def seconds(b: int) -> float:
        passes = job_passes(plan.model, w, f.setup, b, per_gpu, f.n_dp)
        return sum(_pass_memo(f, ph)[1] * n for ph, n in passes)
    return min(sizes, key=seconds)


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


def data_ranks(plan: Plan) -> int:
    """Data-parallel ranks the job's items are split over: a training layout's GPUs / (tp x pp x cp); every GPU
    otherwise (tensor-parallel inference: _fixed's n_dp)."""
    w = plan.workload
    return max(1, plan.gpus // w.layout.model_parallel) if isinstance(w, Train) else plan.gpus


def _layout_parallelism(plan: Plan, gpu: GPU, s: Setup) -> tuple[Setup, str, list[Reason]]:
    """A training plan with a model-parallel layout (tp x pp x cp > 1): the setup with its degrees and the
    data-parallel ranks' sharding, its name ('fsdp with tp=2,pp=4'), and what the layout runs over."""
    m, w, n = plan.model, plan.workload, plan.gpus
    lay = w.layout
    dp = n // lay.model_parallel
    stage = ZERO_STAGES.get(w.sharding, 0) if dp > 1 else 0
    s = replace(s, tp=lay.tp, pp=lay.pp, cp=lay.cp, vpp=lay.vpp,
                shard=dp if stage == 3 else 1, zero_stage=stage if stage in (1, 2) else 0,
                zero_gpus=dp if stage in (1, 2) else 1)
    base = {0: "data", 1: "zero1", 2: "zero2", 3: "fsdp"}[stage] if dp > 1 else ""
    name = f"{base} with {lay.text()}" if base else lay.text()
    notes = [Reason("parallelism", False, f"training layout {layout_words(s, dp)}, {n} GPUs: TP within a node over "
                    f"{_link(gpu, lay.tp)}" + (f"; the {dp} data-parallel ranks' collectives "
                                               f"({base if base != 'data' else 'DDP'}) over "
                                               f"{_group_link_words(gpu, dp, lay.tp * lay.cp)}" if dp > 1 else ""))]
    node = gpu.node_gpus
    if lay.tp > 1 and node and lay.tp > node:
        notes.append(Reason("parallelism", True, f"layout: tp={lay.tp} is more than the {node} GPUs one "
                            f"{gpu.name} node holds: tensor parallel runs inside a node; use tp={node} or less"))
    if lay.cp > 1 and not m.context_parallel_comm(s, 1):
        notes.append(Reason("parallelism", True, f"layout: context parallel is not modelled for {m.name} (a "
                            f"{m.kind} profile): use cp=1"))
    return s, name, notes + _unlinked(gpu, n)


def _group_link_words(gpu: GPU, n: int, stride: int) -> str:
    link = group_link(gpu, n, stride)
    return link.describe() if link else "no known link between GPUs"


def _parallelism(plan: Plan, gpu: GPU, s: Setup, context_gb: float) -> tuple[Setup, str, list[Reason]]:
    """How plan.gpus GPUs share the job: (setup with its TP/FSDP degree, parallelism, notes).

    One GPU: single. Training: the plan's sharding (a concrete layout: `auto` is resolved by _auto_layout before):
    FSDP (ZeRO-3), ZeRO-1/2 or DDP. Inference: tensor parallel when the user asks for it, or (auto) when the weights
    don't fit one GPU and the model splits; otherwise data parallel.
    """
    m, w, n = plan.model, plan.workload, plan.gpus
    if n == 1:
        return s, "single", []
    if isinstance(w, Train) and w.layout.splits:
        return _layout_parallelism(plan, gpu, s)
    if isinstance(w, Train):
        stage = ZERO_STAGES.get(w.sharding, 0)
        if stage in (1, 2):
            what = "optimizer states" if stage == 1 else "optimizer states and gradients"
            sync = (f"a reduce-scatter of the gradients per {'micro-step' if stage == 2 else 'optimizer step'} and "
                    "an all-gather of the updated weights per optimizer step")
            if stage == 1 and s.zero1_tensors_per_layer:
                sync = ("an all-reduce of the gradients per optimizer step and, after it, a broadcast of the updated "
                        "weights from each rank that owns some (the runtime's Hybrid ZeRO)")
            return replace(s, zero_stage=stage, zero_gpus=n), w.sharding, [Reason(
                "parallelism", False, f"ZeRO-{stage} over {n} GPUs: {what} partitioned, the weights whole on every "
                f"GPU; {sync} over {_link(gpu, n)}")] + _unlinked(gpu, n)
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
                        f"{_link(gpu, n)}{_custom_words(s, gpu, n)}; they never overlap compute (each layer waits "
                        "for the last)")]
        if heads and heads % n:
            notes.append(Reason("parallelism", False, f"{heads} KV heads don't split evenly over {n} GPUs"))
        return replace(s, tp=n), "tensor", notes + _unlinked(gpu, n)
    why = "as asked" if plan.parallel == "data" else "auto: the model fits one GPU; choose tensor parallel to split it"
    return s, "data", [Reason("parallelism", False, f"data parallel ({why}): each of {n} GPUs runs its share "
                              "independently")]


def _custom_words(s: Setup, gpu: GPU, n: int) -> str:
    """', in the runtime's own kernel below N MiB' when the runtime's custom all-reduce runs on these n GPUs' link
    (data/custom_allreduce.yaml), else ''."""
    ar, link = s.custom_ar, gpu.link_for(n)
    if ar is None or link is None or n not in ar.gpus or not custom_link(link):
        return ""
    return f", in the runtime's own one-shot/two-shot kernel below {ar.max_bytes / 2**20:.3g} MiB (NCCL's ring above)"


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
    fits: int  # the largest batch the memory holds, whatever the job's size (0: none; NO_LIMIT: memory sets none)
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
    if eff.precisions and setup.precision.id.split("@")[0] not in eff.precisions:  # '@': a validation row's bits
        reasons.append(Reason("runtime", True, f"{plan.runtime} runs only {', '.join(eff.precisions)} (its own "
                              f"checkpoints): choose one of them, or PyTorch eager for {setup.precision.id}"))
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
    shape = cluster_note(plan, gpu)
    reasons += notes + ([shape] if shape else [])
    if isinstance(w, Train) and plan.gpus > 1:  # the runtime's own overlap for this layout (its training block)
        eff = eff.for_layout(w.sharding, m.shard_units)
    usable = usable_gb(gpu, plan.memory_target)
    at_1 = breakdown(m, w, s, 1, eff.cuda_context_gb).total_gb
    per_item = breakdown(m, w, s, 2, eff.cuda_context_gb).total_gb - at_1 if at_1 <= usable else 0.0
    return _Fixed(gpu, eff, tuple(reasons), any(r.blocking for r in reasons), s, parallelism,
                  1 if parallelism == "tensor" else data_ranks(plan), usable, at_1, per_item,
                  _fits(usable, at_1, per_item), {})


def waves_reason(plan: Plan, f: _Fixed, wanted: int, fit: int, per_gpu: int) -> Reason:
    """The note that a generate batch of `wanted` sequences (of `per_gpu` on each GPU) runs `fit` at a time: its
    runtime's scheduler starts the others as running ones finish (the KV cache of the whole batch would not fit)."""
    m, w, s, eff = plan.model, plan.workload, f.setup, f.efficiency
    # a sequence's cache is the same in a job of any size (breakdown of the job's shape: cached across sizes)
    kv_gb = wanted * breakdown(m, job_shape(w), s, 1, eff.cuda_context_gb).get("kv_cache")
    full, rest = divmod(per_gpu, fit)
    waves = ", ".join([str(fit)] * full + ([str(rest)] if rest else []))
    per = " per GPU" if plan.gpus > 1 else ""
    return Reason("waves", False, f"runs {fit} sequences at a time: the KV cache of {wanted} needs {kv_gb:.1f} GB"
                  f"{per}, and {plan.runtime}'s scheduler admits sequences while its paged KV cache has room in the "
                  f"usable {f.usable_gb:.1f} GB{per} ({capacity_text(f.gpu, plan.memory_target)}; with the weights "
                  f"and activations), starting the others as running ones finish: {full + bool(rest)} waves of "
                  f"{waves} sequences, timed one after another")


NO_LIMIT = 2 ** 62  # _Fixed.fits where memory sets no limit (a whole number the sweep's int64 arrays hold)


def _fits(usable: float, at_1: float, per_item: float) -> int:
    """memory.max_batch from two evaluations (GB at batch 1, GB per extra item) without the job's limit: the
    largest batch that fits in `usable` GB, 0 if none, NO_LIMIT if the batch costs no memory."""
    if at_1 > usable:
        return 0
    if per_item <= 0:
        return NO_LIMIT
    return int(min(NO_LIMIT, 1 + (usable - at_1) // per_item))


def _fit(f: _Fixed, limit: int) -> int:
    """memory.max_batch from the fixed part's two evaluations: the largest batch (<= limit) that fits, 0 if none."""
    if not f.fits:
        return 0
    return limit if f.fits == NO_LIMIT else max(1, min(limit, f.fits))


_TERMS = "terms"  # the fixed part's memo key of its pass as terms of the batch (_terms_memo)
_MEMO_LIMIT = 64  # passes timed one by one remembered per GPU and plan shape: a few dozen job sizes' worth


def _make_room(memo: dict) -> None:
    """Empty a full pass memo, keeping its terms (_terms_memo: built once per GPU and plan shape)."""
    if len(memo) >= _MEMO_LIMIT:
        terms = memo.get(_TERMS)
        memo.clear()
        if terms is not None:
            memo[_TERMS] = terms


def _pass_memo(f: _Fixed, ph: Phase) -> list:
    """[the phase, seconds of one pass, its alignment note and its split (None until asked)] for one pass `ph` of
    phases.job_passes (a cached object, the same for a job of any size) on the fixed part's GPU: a job of another
    size at the same batch times nothing again. Keyed by the phase's identity; the entry holds the phase, so the
    identity is never reused while the entry lives."""
    entry = f.memo.get(id(ph))
    if entry is None or entry[0] is not ph:
        _make_room(f.memo)
        entry = f.memo[id(ph)] = [ph, pass_seconds(ph, f.gpu, f.efficiency), None, None]
    return entry


def _split_of(f: _Fixed, entries: list[list], counts: list[float]) -> dict[str, float]:
    """work_split of the passes (`counts` of each) from each pass's remembered split (phase_split of one pass: each
    value is its terms x 1.0, so x the passes it is the same product phase_split makes), summed in the same order. A
    pass the sweep timed from its terms (planner.engine.sweep) holds its split as values in LIMITS' order."""
    split = dict.fromkeys(LIMITS, 0.0) if entries else {}
    for entry, n in zip(entries, counts):
        if entry[3] is None:
            entry[3] = phase_split(entry[0], f.gpu, f.efficiency)
        for k, v in entry[3].items() if isinstance(entry[3], dict) else zip(LIMITS, entry[3]):
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
    times per ranking): exactly Estimate's fields, its passes or _passes_of (what builds them when asked), and
    optionally _split_of (Estimate.split from remembered passes; dataclasses.replace, which knows only the fields,
    drops them)."""
    e = object.__new__(Estimate)
    e.__dict__.update(fields)
    return e


class _Sizing(NamedTuple):
    """An estimate's decisions for the job's size: the items per GPU, the largest batch that fits, the batch, the
    reasons (the fixed part's and the memory's), whether one blocks."""

    per_gpu: int
    fit: int
    batch: int
    reasons: tuple[Reason, ...]
    blocked: bool


def _sizing(plan: Plan, f: _Fixed) -> _Sizing:
    """The batch for the job's size (auto: the balanced batch of the fewest passes) and the memory's reasons."""
    m, w, s, gpu, eff = plan.model, plan.workload, f.setup, f.gpu, f.efficiency
    per_gpu = items_per_gpu(w, f.n_dp)
    fit = _fit(f, per_gpu)
    batch = min(plan.batch, per_gpu) if plan.batch else max(fit, 1)
    reasons, blocked = f.reasons, f.blocked
    if plan.batch and 0 < fit < batch and f.efficiency.batch_waves and isinstance(w, Generate):
        # its scheduler runs the batch a cacheful at a time (RuntimeProfile.batch_waves): passes of the largest batch
        # that fits, the last one partial (phases.job_passes), as batch=auto runs them
        reasons += (waves_reason(plan, f, batch, fit, per_gpu),)
        batch = fit
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
    if not blocked and plan.batch is None:
        batch = (_global_batch_micro(plan, f, per_gpu, fit) if isinstance(w, Train) and w.global_batch
                 else auto_batch(fit, per_gpu))
    return _Sizing(per_gpu, fit, batch, reasons, blocked)


def _blocked(plan: Plan, f: _Fixed, prices: Mapping[str, Price | None], z: _Sizing) -> Estimate:
    return _estimate(gpu=f.gpu, plan=plan, setup=f.setup, feasible=False, reasons=z.reasons, batch=z.batch,
                     max_batch=z.fit, parallelism=f.parallelism, seconds=None, passes=(), efficiency=f.efficiency,
                     prices=prices, cost_usd={}, items_per_s=None, tokens_per_s=None)


def _timed(plan: Plan, f: _Fixed, prices: Mapping[str, Price | None], z: tuple[tuple[Reason, ...], int, int],
           seconds: float, align: Reason | None, tokens: float | None, passes: tuple | partial, split_of: partial,
           cost_usd: Mapping[str, float | None] | None = None) -> Estimate:
    """A feasible estimate from its sizing `z` (its reasons, batch and largest batch that fits), its seconds and the
    job's tokens (_tokens); `passes`: the passes, or what builds them when asked (_passes_of); `split_of`: what
    computes its split when asked (_split_of); `cost_usd`: job_cost_usd per tier where the sweep computed it on
    arrays. Built as _estimate does, from a dict: the sweep builds hundreds."""
    reasons, batch, fit = z
    tier = plan.price_tier
    if align:
        reasons += (align,)
    if prices.get(tier) is None:
        reasons += (Reason("price", False, f"no {tier} price for {f.gpu.name}: enter your own $/h"),)
    if cost_usd is None:
        cost_usd = {t: job_cost_usd(seconds, plan.gpus, prices.get(t)) for t in PRICE_TIERS}
    e = object.__new__(Estimate)
    object.__setattr__(e, "__dict__", {
        "gpu": f.gpu, "plan": plan, "setup": f.setup, "feasible": True, "reasons": reasons, "batch": batch,
        "max_batch": fit, "parallelism": f.parallelism, "seconds": seconds, "efficiency": f.efficiency,
        "prices": prices, "cost_usd": cost_usd,
        "items_per_s": plan.workload.items / seconds if seconds else None,
        "tokens_per_s": tokens / seconds if tokens and seconds else None,
        "passes" if isinstance(passes, tuple) else "_passes_of": passes, "_split_of": split_of})
    return e


def _sized(plan: Plan, f: _Fixed, prices: Mapping[str, Price | None]) -> Estimate:
    """The estimate of `plan` from its fixed part: the batch for the job's size, the work and its time, the cost."""
    z = _sizing(plan, f)
    if z.blocked:
        return _blocked(plan, f, prices, z)
    passes = job_passes(plan.model, plan.workload, f.setup, z.batch, z.per_gpu, f.n_dp)
    entries = [_pass_memo(f, ph) for ph, _ in passes]
    seconds = sum([entry[1] * n for entry, (_, n) in zip(entries, passes)])  # phase_seconds of each phase, in order
    return _timed(plan, f, prices, (z.reasons, z.batch, z.fit), seconds, _alignment(f, passes), _tokens(plan), passes,
                  partial(_split_of, f, entries, [n for _, n in passes]))


def _layouts(plan: Plan, training: Training | None) -> tuple[Plan, ...]:
    """The plans an auto training plan chooses among, among what the runtime runs (its `training` block; every one
    without it): with sharding auto each concrete sharding of jobs.ZERO_STAGES in order of stage (DDP where nothing
    is partitioned); with layout auto each model-parallel layout of train_layout.layout_candidates whose parts the
    runtime has, split ones only with zero1 or fsdp when the sharding is auto too (Megatron-LM's distributed
    optimizer, TorchTitan's FSDP); () for any other plan."""
    w = plan.workload
    if not isinstance(w, Train) or (w.sharding != AUTO_SHARDING and not w.layout.auto):
        return ()
    runs = training.shardings() if training else tuple(ZERO_STAGES)
    out = []
    for lay in layout_candidates(plan.model, w.input_size, plan.gpus) if w.layout.auto else (w.layout,):
        if w.layout.auto and training and any(p not in training.layouts for p in lay.parts()):
            continue  # the runtime has no such parallelism (check_runtime names it for a layout the user gave)
        dp = plan.gpus // lay.model_parallel
        if w.sharding != AUTO_SHARDING:
            names = (w.sharding,) if dp > 1 or ZERO_STAGES.get(w.sharding) not in (1, 2) else ()
        else:
            names = ("ddp",) if dp == 1 else tuple(
                n for n in (SPLIT_SHARDINGS if lay.splits and w.layout.auto else tuple(ZERO_STAGES)) if n in runs)
        if w.global_batch and w.global_batch % ((plan.batch or 1) * dp):
            continue  # its data-parallel ranks do not divide the global batch (check_layout would refuse it)
        out += [replace(plan, workload=replace(w, sharding=name, layout=lay)) for name in names]
    if not out:
        raise ValueError(f"global batch {w.global_batch:,} is not a multiple of micro-batch {plan.batch or 1} x the "
                         "data-parallel ranks of any layout the runtime runs: make it a multiple of the GPUs per job")
    return tuple(out)


def _choice(e: Estimate) -> str:
    """The sharding and layout an auto plan's candidate runs with: 'fsdp', 'zero1 with tp=2,pp=4'."""
    w = e.plan.workload
    return w.sharding + (f" with {w.layout.text()}" if w.layout.splits else "")


def _layout_text(e: Estimate) -> str:
    cost = e.cost()
    money = f"${cost:,.2f}, " if cost is not None else ""
    return f"{_choice(e)} ({money}{e.seconds / 3600:,.3g} h)"


def _listed(texts: list[str]) -> str:
    """At most AUTO_LISTED of the texts, then how many more."""
    more = len(texts) - AUTO_LISTED
    return ", ".join(texts[:AUTO_LISTED]) + (f" and {more} more" if more > 0 else "")


def _pick_layout(plan: Plan, candidates: list[Estimate]) -> Estimate:
    """Of one GPU's estimates under each layout (_layouts), the cheapest that runs (rank_key: cost in the plan's
    tier, then time; a tie keeps the lower stage, which partitions less), else the one needing the least memory: the
    estimate of the auto plan, with a reason naming what did not fit and what fit but cost more."""
    if len(candidates) == 1:
        return _estimate(**{**candidates[0].__dict__, "plan": plan})
    runs = [e for e in candidates if e.feasible]
    best = min(runs, key=rank_key) if runs else min(candidates, key=lambda e: e.memory.total_gb)
    unfit = [f"{_choice(e)} ({e.memory.total_gb:,.1f} GB per GPU at batch {e.batch}, "
             f"{e.usable_gb:,.1f} GB usable)"
             for e in candidates if not e.feasible and e.memory.total_gb > e.usable_gb]
    costlier = [_layout_text(e) for e in sorted(runs, key=rank_key) if e is not best]
    what = "layout auto" if plan.workload.layout.auto else "sharding auto"
    if runs:
        why = f"{what}: {_layout_text(best)} is the cheapest layout that fits"
    else:
        why = f"{what}: no layout runs here; {_choice(best)}, the one that needs the least memory, shown"
    why += (f"; did not fit: {_listed(unfit)}" if unfit else "") + (
        f"; fit but cost more: {_listed(costlier)}" if costlier else "")
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
    """The plan's runtime efficiency on `gpu` (its memory class's prior) on the plan's host (Plan.host_speed),
    adjusted by a calibration if given (a calibration's host times are its own host's)."""
    eff = on_host(facts.runtimes.get(plan.runtime).efficiency(gpu.memory_class), plan.host_speed)
    return adjust(gpu, eff) if adjust else eff


def estimate_gpu(plan: Plan, gpu: GPU, facts: Facts, adjust: EfficiencyAdjust | None = None,
                 setup: Setup | None = None) -> Estimate:
    """Estimate `plan` on `gpu` with the loaded facts (its prices from facts.prices, or its catalog listing), in the
    plan's cluster (planner.engine.cluster.on_cluster)."""
    gpu = on_cluster(plan, gpu)
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
_FIXED_PLANS = 128  # plan shapes remembered: a page session changes one input at a time, but layout auto weighs
# dozens of candidate plans (64 GPUs: ~60 layouts x shardings) per change
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
                 adjust: EfficiencyAdjust | None = None, include_cpus: bool = False,
                 arrays: ModuleType | None = None) -> list[Estimate]:
    """Estimates for every GPU of facts.catalog (and its CPU devices with include_cpus), or for the named devices
    (GPUs or CPUs), ranked: feasible first, then by cost in the plan's tier, then by time. `arrays`: as
    estimate_many."""
    gpus = [facts.catalog.get(n) for n in gpu_names] if gpu_names else list(facts.catalog.selection(include_cpus))
    return sorted(estimate_many(plan, gpus, facts, adjust, arrays), key=rank_key)


def estimate_many(plan: Plan, gpus: Iterable[GPU], facts: Facts, adjust: EfficiencyAdjust | None = None,
                  arrays: ModuleType | None = None, batches: list[int] | None = None) -> list[Estimate]:
    """The plan on each of `gpus` (catalog devices), in their order: the catalog sweep and the batch sweep.

    What does not depend on the job's size is kept per plan shape and GPU (_Fixed), and each pass's time per phase,
    so a second sweep with another job size or batch only sizes the batch and times the passes it has not timed.
    With a calibration (`adjust`, a function the cache could not key on) every GPU is estimated anew. `arrays`: the
    sweep's array arithmetic (the module planner.engine.sweep, which imports numpy: the page passes it, a one-off
    CLI estimate does not), timing every pass it covers on arrays (_swept); None: every pass timed one by one. Each
    estimate equals estimate_gpu's, exactly without `arrays`, within 1e-9 with (tests/engine/test_sweep_equality.py).
    `batches`: a batch for each GPU (a GPU may come more than once), each estimate then the plan's with its batch
    (the batch chart's points: one sweep on arrays for all of them)."""
    if batches is not None:
        return _at_batches(plan, list(gpus), facts, adjust, arrays, batches)
    check_plan(plan)
    check_runtime(plan, facts.runtimes, facts.rules)
    layouts = _layouts(plan, facts.runtimes.get(plan.runtime).training)
    if layouts:  # sharding auto: each layout swept, the cheapest that fits per GPU (as estimate_on)
        gpus = list(gpus)
        per_layout = [estimate_many(p, gpus, facts, adjust, arrays) for p in layouts]
        return [_pick_layout(plan, list(es)) for es in zip(*per_layout)]
    if adjust is not None:
        setup = resolve_setup(plan, facts.rules, facts.runtimes)
        return [estimate_gpu(plan, g, facts, adjust, setup) for g in gpus]
    shape, fixed, parts = _parts(plan, gpus, facts)
    if arrays is None or arrays.uncovered(plan.model, plan.workload):  # pass by pass (sweep.uncovered says why)
        return [_sized(plan, f, p) for f, p in parts]
    return _swept(plan, shape, parts, arrays, fixed)


_PARTS = "parts"  # a plan shape's fixed parts' key of its GPU lists' parts (_parts)
_COLUMNS = "columns"  # a plan shape's fixed parts' key of its sweeps' columns (_columns)
_COLUMN_SETS = 16  # lists of devices whose columns are kept per plan shape (the catalog, the batch chart's GPUs)


def _parts(plan: Plan, gpus: Iterable[GPU], facts: Facts) -> tuple[Workload, dict, list[tuple]]:
    """(the plan's shape, its fixed parts by GPU (_fixed_parts), each GPU's fixed part and prices), the last kept
    per list of GPUs and price table (read-only: the same objects give the same parts)."""
    pinned = pinned_builds(plan, facts.builds)  # an unknown pinned version fails here, before any GPU
    if asks_cluster(plan):  # the plan's nodes and network between them, on every GPU
        gpus = [on_cluster(plan, g) for g in gpus]
    setup = resolve_setup(plan, facts.rules, facts.runtimes)  # shared by every GPU (each resolves its attention kernel)
    shape = job_shape(plan.workload)
    fixed = _fixed_parts(plan, shape, facts)
    gpus, prices = list(gpus), facts.prices
    kept = fixed.get(_PARTS)
    if kept is None:
        kept = fixed[_PARTS] = {}
    key = (*map(id, gpus), id(prices))
    found = kept.get(key)
    if found is not None and found[1] is prices and all(f.gpu is g for (f, _), g in zip(found[0], gpus)):
        return shape, fixed, found[0]
    fallback = facts.rules.attention(DEFAULT_ATTENTION)
    parts = []
    for g in gpus:
        f = fixed.get(id(g))
        if f is None or f.gpu is not g:
            f = fixed[id(g)] = _fixed(plan, g, setup, efficiency_on(plan, g, facts), facts.builds, fallback, pinned)
        parts.append((f, prices.for_gpu(g)))
    if len(kept) >= _COLUMN_SETS:
        kept.pop(next(iter(kept), None), None)  # the oldest (sessions' threads share it: one step)
    kept[key] = (parts, prices)
    return shape, fixed, parts


def _at_batches(plan: Plan, gpus: list[GPU], facts: Facts, adjust: EfficiencyAdjust | None,
                arrays: ModuleType | None, batches: list[int]) -> list[Estimate]:
    """estimate_many with a batch per GPU: one sweep on arrays where they cover the plan (_swept), else one sweep per
    batch of the GPUs at it."""
    plans = {b: replace(plan, batch=b) for b in batches}
    for p in plans.values():
        check_plan(p)
    check_runtime(plan, facts.runtimes, facts.rules)
    if arrays is None or adjust is not None or _layouts(plan, facts.runtimes.get(plan.runtime).training) \
            or arrays.uncovered(plan.model, plan.workload):
        at: dict[int, list[int]] = {}
        for i, b in enumerate(batches):
            at.setdefault(b, []).append(i)
        out: list = [None] * len(gpus)
        for b, idx in at.items():
            for i, e in zip(idx, estimate_many(plans[b], [gpus[i] for i in idx], facts, adjust, arrays)):
                out[i] = e
        return out
    shape, fixed, parts = _parts(plan, gpus, facts)
    return _swept(plan, shape, parts, arrays, fixed, [plans[b] for b in batches])


def _terms_memo(f: _Fixed, m, shape: Workload, arrays: ModuleType) -> list:
    """[the fixed part's one pass as terms of the batch (sweep.affine_work: the same for its plan shape and setup),
    its GPU constants on the fixed part's GPU (sweep.gpu_constants), its alignment note (None until asked)], kept
    with the fixed part's pass memo."""
    entry = f.memo.get(_TERMS)
    if entry is None:
        _make_room(f.memo)
        work = arrays.affine_work(m, shape, f.setup, f.n_dp)
        consts = arrays.gpu_constants(work, f.gpu, f.efficiency) if not work.refused else None
        entry = f.memo[_TERMS] = [work, consts, None]
    return entry


def _swept_split(f: _Fixed, pieces: list[tuple]) -> dict[str, float]:
    """_split_of of a swept estimate's passes: each piece (memo entries, None, n) or (None, its split per phase as
    sweep.timed_passes gives it, n)."""
    entries, counts = [], []
    for found, split, n in pieces:
        found = found or [[None, None, None, values] for values in split.tolist()]
        entries += found
        counts += [n] * len(found)
    return _split_of(f, entries, counts)




_SIZES_KEPT = 8  # job sizes (and fixed batches) whose timed passes a sweep's columns keep


class _Sweep(NamedTuple):
    """A sweep's devices, their job sized and timed (_timed_sweep): each one's largest batch that fits, batch,
    reasons (None: blocked, or nothing fits), the passes timed on arrays (sweep.Timed), those timed one by one
    ({device: the pieces of its split, as _swept_split reads them}), seconds and alignment note."""

    fit: list[int]
    batch: list[int]
    sized: list[tuple[Reason, ...] | None]
    timed: tuple  # sweep.Timed
    by_pass: dict[int, list]
    seconds: object  # the sweep's array of seconds per device
    align: list[Reason | None]


def _work_alignment(f: _Fixed, terms: list | None) -> Reason | None:
    """The alignment note of the fixed part's work past its floor (_terms_memo's, the same at every such batch),
    remembered with its terms."""
    if terms is None or terms[0].refused:
        return None
    if terms[2] is None:
        terms[2] = (alignment_reason((terms[0].phases[0].phase,), f.gpu, f.setup),)
    return terms[2][0]


def _columns(fixed: dict, fs: list[_Fixed], m, shape: Workload, arrays: ModuleType) -> tuple:
    """(sweep.Columns of these fixed parts (their terms: _terms_memo, none where blocked), the alignment note of
    each one's work past its floor, {(items, batch): _Sweep}), built once per plan shape and list of devices and kept
    with the plan shape's fixed parts while they are the same objects."""
    held = fixed.get(_COLUMNS)
    if held is None:
        held = fixed[_COLUMNS] = {}
    key = tuple(map(id, fs))
    found = held.get(key)
    if found is None or any(a is not b for a, b in zip(found[0], fs)):
        if len(held) >= _COLUMN_SETS:
            held.pop(next(iter(held), None), None)  # the oldest (sessions' threads share it: one step)
        terms = [None if f.blocked else _terms_memo(f, m, shape, arrays) for f in fs]
        cols = arrays.columns([f.n_dp for f in fs], [f.fits for f in fs], [t and (t[0], t[1]) for t in terms])
        found = held[key] = (list(fs), cols, [_work_alignment(f, t) for f, t in zip(fs, terms)], {})
    return found[1:]


def _timed_sweep(plan: Plan, fs: list[_Fixed], cols, aligns: list, arrays: ModuleType,
                 plans: list[Plan] | None = None) -> _Sweep:
    """The devices' batches (batch=auto on arrays: sweep.auto_batches; a batch the user fixed sized per device, with
    its memory reasons), every pass past its work's floor (sweep.affine_work) timed at once per group of works
    (sweep.timed_passes), the other passes one by one as _sized does (_pass_memo). `plans`: each device's plan (its
    own batch), else `plan` for every device."""
    m, w = plan.model, plan.workload
    per_rank = [items_per_gpu(w, n) for n in cols.ranks]
    if plans is None and plan.batch is None and min(per_rank) >= 1:
        fit_l, batch_l = arrays.auto_batches(cols, per_rank)
        sized = [f.reasons if not f.blocked and b else None for f, b in zip(fs, fit_l)]
    else:  # a fixed batch: its memory reasons per device
        zs = [_sizing(p, f) for p, f in zip(plans or [plan] * len(fs), fs)]
        fit_l, batch_l = [z.fit for z in zs], [z.batch for z in zs]
        sized = [None if z.blocked else z.reasons for z in zs]
    timed = arrays.timed_passes(cols, per_rank, batch_l, [r is not None for r in sized])
    seconds, aligns, by_pass = timed.seconds, list(aligns), {}
    for i in timed.by_pass:
        f = fs[i]
        pieces, total = [], 0.0
        for b, n, rest in ((batch_l[i], timed.full[i], False), (timed.rest[i], 1, True)):
            split = arrays.split_of(timed, i, rest)
            if split is not None:
                pieces.append((None, split, float(n)))
            elif b:  # at or below the work's floor, or its work refused: pass by pass
                entries = [_pass_memo(f, ph) for ph, _ in job_passes(m, w, f.setup, b, b, f.n_dp)]
                total += sum([e[1] * n for e in entries])
                pieces.append((entries, None, float(n)))
        by_pass[i] = pieces
        seconds[i] += total
        if not timed.on_batch[i]:
            aligns[i] = _alignment(f, job_passes(m, w, f.setup, batch_l[i], batch_l[i], f.n_dp))
    return _Sweep(fit_l, batch_l, sized, timed, by_pass, seconds, aligns)


def _sweep_split(f: _Fixed, z: _Sweep, i: int, arrays: ModuleType) -> dict[str, float]:
    """Estimate.split of device i of sweep `z` (_swept_split of its pieces)."""
    pieces = z.by_pass.get(i)
    if pieces is None:  # both its passes timed on arrays
        t = z.timed
        pieces = [(None, arrays.split_of(t, i, False), float(t.full[i]))]
        if t.rest[i]:
            pieces.append((None, arrays.split_of(t, i, True), 1.0))
    return _swept_split(f, pieces)


def _swept(plan: Plan, shape: Workload, parts: list[tuple[_Fixed, Mapping[str, Price | None]]], arrays: ModuleType,
           fixed: dict, plans: list[Plan] | None = None) -> list[Estimate]:
    """estimate_many's sweep of a plan the arithmetic covers (sweep.uncovered), on arrays where it is arithmetic over
    the devices (_timed_sweep, kept for the last few job sizes: a view's change times nothing again), then the cost
    per tier (sweep.job_costs_usd). Each estimate's phases are built when asked (Explain, JSON). `plans`: each
    device's plan (_at_batches: the same plan at a batch per device)."""
    m, w = plan.model, plan.workload
    fs = [f for f, _ in parts]
    cols, aligns, sweeps = _columns(fixed, fs, m, shape, arrays)
    key = (w.items, plan.batch if plans is None else tuple(p.batch for p in plans))
    z = sweeps.get(key)
    if z is None:
        if len(sweeps) >= _SIZES_KEPT:
            sweeps.pop(next(iter(sweeps), None), None)  # the oldest
        z = sweeps[key] = _timed_sweep(plan, fs, cols, aligns, arrays, plans)
    costs = list(zip(*arrays.job_costs_usd(z.seconds, plan.gpus,
                                           arrays.usd_per_hour(cols, [p for _, p in parts], PRICE_TIERS))))
    seconds, tokens, per_gpu = z.seconds.tolist(), _tokens(plan), z.timed.per_gpu
    out = []
    for i, f in enumerate(fs):
        reasons, b, p = z.sized[i], z.batch[i], plans[i] if plans else plan
        if reasons is None:  # blocked, or nothing fits: as _sized (memory's reasons)
            out.append(_sized(p, *parts[i]))
            continue
        out.append(_timed(p, f, parts[i][1], (reasons, b, z.fit[i]), seconds[i], z.align[i], tokens,
                          partial(job_passes, m, w, f.setup, b, per_gpu[i], f.n_dp),
                          partial(_sweep_split, f, z, i, arrays), dict(zip(PRICE_TIERS, costs[i]))))
    return out
