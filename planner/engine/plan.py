"""A plan (what the user chose) and its resolution into the engine's terms; rejects plans no GPU could run."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from planner.inputs.builds import Build, BuildMatrix
from planner.inputs.catalog import PRICE_TIERS
from planner.inputs.jobs import BOUNDS, OPTIMIZERS, SHARDINGS, ZERO_STAGES, Generate, Infer, Train, Workload
from planner.inputs.models import ModelProfile
from planner.inputs.precisions import PrecisionRules
from planner.inputs.runtimes import Runtimes
from planner.inputs.rotary_sync import parse_version
from planner.inputs.work import Setup

# Plan memory at 90 % of what the GPU reports, as vLLM does (gpu_memory_utilization defaults to 0.9: vLLM docs,
# engine arguments): the rest absorbs allocator fragmentation and transient workspaces. A setting, within
# BOUNDS["memory_target_pct"].
MEMORY_TARGET_DEFAULT_PCT = 90
MEMORY_TARGET_DEFAULT = MEMORY_TARGET_DEFAULT_PCT / 100

# How plan.gpus GPUs share a job: auto (tensor parallel only when the weights don't fit one GPU, else data parallel),
# data (every GPU a whole copy: DDP, or FSDP with sharding=fsdp, for training) or tensor (split every layer: inference).
PARALLEL_MODES = ("auto", "data", "tensor")

DEFAULT_ATTENTION = "sdpa"  # PyTorch's own choice per GPU; also what a blocked backend's reason suggests instead


@dataclass(frozen=True)
class Plan:
    """Everything a user chooses: model, job, precision and how it runs. batch None = auto; pytorch None = any
    build (the latest that runs each GPU), else a pinned build ('1.13.1+cu116') or version ('2.4.1')."""

    model: ModelProfile
    workload: Workload
    precision: str = "bf16"
    kv_dtype: str | None = None
    attention: str = DEFAULT_ATTENTION
    runtime: str = "pytorch-eager"
    batch: int | None = None
    gpus: int = 1
    price_tier: str = "secure"
    memory_target: float = MEMORY_TARGET_DEFAULT  # fraction of the reported memory a plan may fill
    pytorch: str | None = None
    parallel: str = "auto"  # one of PARALLEL_MODES
    node_gpus: int | None = None  # GPUs per node of the user's cluster (None: each GPU's catalog node)
    fabric_gbits_per_node: float | None = None  # network between nodes, Gb/s per node (None: the catalog's fabric)
    # the host CPU's single-thread speed over the hosts the runtimes' host constants were measured on
    # (planner.engine.host_speed): host-side time is divided by it
    host_speed: float = 1.0
    # the Hugging Face transformers release the runtime runs ('4.40.2'; planner.inputs.rotary_sync), where it matters:
    # some releases' FlashAttention-2 classes sync once a layer; None: a current release
    transformers: str | None = None


def resolve_setup(plan: Plan, rules: PrecisionRules, runtimes: Runtimes | None = None) -> Setup:
    """The plan's precision, KV-cache dtype and attention backend as rule objects (UnknownNameError if unknown), and
    the runtime's prefill chunk, quantized GEMV, elementwise fusion and tensor-parallel LM head when `runtimes` is
    given."""
    precision = rules.precision(plan.precision)
    if isinstance(plan.workload, Train) and precision.train_as:  # FP8 storage trains as Transformer Engine's recipe
        precision = rules.precision(precision.train_as)
    kv = rules.kv_dtype(plan.kv_dtype) if plan.kv_dtype else rules.default_kv_dtype(precision)
    if runtimes is None:
        return Setup(precision, kv, rules.attention(plan.attention))
    rt = runtimes.get(plan.runtime)
    gemv = rt.gemv
    return Setup(precision, kv, rules.attention(plan.attention), prefill_chunk=rt.prefill_chunk_tokens,
                 gemv_max_tokens=gemv.max_tokens if gemv else 0,
                 gemv_ops_per_weight_token=gemv.ops_per_weight_token if gemv else 0.0,
                 gemv_pipelined=gemv.pipelined if gemv else False,
                 unpack_pipelined=rt.id in precision.pipelined_on,
                 fused_elementwise=rt.fuses_elementwise, lm_head_split=rt.tp_lm_head_split,
                 kv_concat=rt.kv_cache_concat, kv_repeat=plan.attention in rt.kv_heads_repeated_on,
                 kv_read_fraction=rt.score_gemm_kv_read if plan.attention in rt.score_gemms_on else 1.0,
                 heads_grid=plan.attention in rt.decode_heads_grid_on,
                 custom_ar=rt.planned_allreduce,
                 mlp_gemv=precision.kernel is not None and rt.id in precision.kernel.mlp_gemv_on,
                 fp16_accumulate=rt.fp16_accumulate, prompt_era=rt.prompt_era,
                 grad_reduce_bytes=rt.training.grad_reduce_bytes if rt.training else 0.0,
                 tp_gather_per_projection=bool(rt.training and rt.training.tp_gather == "per-projection"),
                 sp_rearranges=bool(rt.training and rt.training.sp_shard_dim == 1),
                 autocast_fp32_weights=rt.training is not None and rt.training.autocast_fp32_weights,
                 foreach_optimizer=rt.training is not None and rt.training.optimizer_kernels == "foreach",
                 fp8_weights=bool(rt.training and rt.training.fp8_weights and precision.fp8_training),
                 comm_overlap=rt.training.comm_overlap if rt.training else (),
                 zero1_tensors_per_layer=rt.training.zero1_tensors_per_layer if rt.training else 0,
                 rotary_sync_types=rt.rotary_sync.model_types(plan.transformers, plan.attention) if rt.rotary_sync
                 else (),
                 expert_loop=rt.expert_loop is not None,
                 idle_expert_ops=rt.expert_loop.idle_ops if rt.expert_loop else 0.0)


def pinned_builds(plan: Plan, builds: BuildMatrix) -> tuple[Build, ...]:
    """The builds the plan pins (none: no pin); ValueError listing the known builds for an unknown version."""
    return _pin(builds, plan.pytorch) if plan.pytorch else ()


@lru_cache(maxsize=64)
def _pin(builds: BuildMatrix, text: str) -> tuple[Build, ...]:
    return builds.pin(text)


def attention_refusal(runtime: str, attention: str, rules: PrecisionRules) -> str:
    """Why `runtime` cannot run the attention backend `attention` whatever the GPU, '' when it can: a runtime's own
    kernel (llama.cpp-fa) runs under that runtime only, and a runtime with its own fused kernel runs it, not another
    stack's fused kernel (llama.cpp's -fa 1 is not FlashAttention-2). Selectors (sdpa, xformers) and kernels that
    write the scores (manual: llama.cpp's -fa 0) are left to the GPU checks."""
    chosen = rules.attention(attention)
    if chosen.runtimes and runtime not in chosen.runtimes:
        return (f"attention: {chosen.id} is {' and '.join(chosen.runtimes)}'s own kernel and runtime {runtime} does "
                f"not run it: choose sdpa, manual or a kernel {runtime} calls")
    own = [b.id for b in rules.attention_backends if runtime in b.runtimes]
    if own and chosen.id not in own and not chosen.is_selector and not chosen.scores_materialized:
        return (f"attention: runtime {runtime} runs its own fused attention, not {chosen.id}: choose "
                f"{' or '.join(own)} (or manual for unfused attention)")
    return ""


def attention_choices(runtime: str, rules: PrecisionRules, current: str = "") -> tuple[str, ...]:
    """The attention backends `runtime` runs (attention_refusal says none against them), in data/precisions.yaml's
    order; `current`, when refused, is kept last so a link that asked for it still shows it, with the refusal."""
    ids = tuple(b.id for b in rules.attention_backends if not attention_refusal(runtime, b.id, rules))
    return ids + (current,) if current and current not in ids else ids


def check_runtime(plan: Plan, runtimes: Runtimes, rules: PrecisionRules) -> None:
    """Reject a plan its runtime cannot run, whatever the GPU: a job the runtime does not run (a serving engine asked
    to train, a training stack asked to generate), a training sharding or model-parallel layout it does not
    support, or an attention backend it does not run (attention_refusal) (raises ValueError naming the field)."""
    w = plan.workload
    train = isinstance(w, Train)
    why = runtimes.get(plan.runtime).refuses(w.kind, w.sharding if train else None, plan.gpus,
                                             w.layout.parts() if train and not w.layout.auto else ())
    if why and w.kind not in runtimes.get(plan.runtime).jobs:
        others = [r.id for r in runtimes.runtimes if w.kind in r.jobs]
        why += f": choose one that does ({', '.join(others)})"
    if not why:
        why = attention_refusal(plan.runtime, plan.attention, rules)
    if why:
        raise ValueError(why)


def check_plan(plan: Plan) -> None:
    """Reject plans no GPU could run, with a message naming the input (raises ValueError)."""
    w, m = plan.workload, plan.model
    if isinstance(w, Generate) and not m.can_generate:
        raise ValueError(f"generate needs a model that decodes token by token; {m.name} cannot ({m.kind} profile): "
                         "use infer or train")
    if plan.gpus < 1:
        raise ValueError("gpus must be at least 1")
    if plan.parallel not in PARALLEL_MODES:
        raise ValueError(f"parallel must be one of {', '.join(PARALLEL_MODES)}")
    if plan.parallel == "tensor" and plan.gpus > 1:
        if isinstance(w, Train):
            raise ValueError("parallel tensor is for generate and infer; to split a model for training, give a "
                             "layout (e.g. tp=2,pp=4) or use sharding fsdp (ZeRO-3), zero1, zero2 or auto")
        if m.tensor_parallel_heads is None:
            raise ValueError(f"tensor parallel is not modelled for {m.name} (a {m.kind} profile): choose data "
                             "parallel or auto")
    if plan.batch is not None and plan.batch < 1:
        raise ValueError("batch must be at least 1 (or auto)")
    bound = BOUNDS["memory_target_pct"]
    if not bound.lo <= plan.memory_target * 100 <= bound.hi:
        raise ValueError(f"memory target must be between {bound.lo:g} % and {bound.hi:g} % of the memory the GPU "
                         "reports")
    check_cluster(plan)
    bound = BOUNDS["host_speed"]
    if not bound.lo <= plan.host_speed <= bound.hi:
        raise ValueError(f"host speed must be between {bound.lo:g} and {bound.hi:g} times the reference hosts' "
                         "single-thread speed (1 = the hosts the runtimes' constants were measured on)")
    if plan.transformers is not None:
        parse_version(plan.transformers)  # ValueError naming the field
    if plan.price_tier not in PRICE_TIERS:
        raise ValueError(f"price tier must be one of {', '.join(PRICE_TIERS)}")
    if isinstance(w, Generate) and (w.prompt_tokens < 1 or w.gen_tokens < 1 or w.n_sequences < 1):
        raise ValueError("generate needs sequences >= 1, prompt tokens >= 1 (a BOS token counts) and "
                         "generated tokens >= 1")
    if isinstance(w, Train):
        if w.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        if w.sharding not in SHARDINGS:
            raise ValueError(f"sharding must be one of {', '.join(SHARDINGS)} (got {w.sharding!r})")
        if ZERO_STAGES.get(w.sharding) in (1, 2) and plan.gpus < 2:
            raise ValueError(f"sharding {w.sharding} partitions training states over several GPUs: set GPUs per job "
                             "to 2 or more, or sharding ddp for one GPU")
        check_layout(plan)
        if w.grad_accum < 1 or w.epochs <= 0 or w.samples_per_epoch < 1:
            raise ValueError("train needs samples >= 1, epochs > 0 and gradient accumulation >= 1")
        if w.train_tokens and not m.counts_tokens:
            raise ValueError(f"train tokens: {m.name} counts its input in {m.input_size_name}, not tokens; give "
                             "samples and epochs instead (train tokens 0)")
    if isinstance(w, (Infer, Train)) and w.input_size < 1:
        raise ValueError("input size must be at least 1")
    if isinstance(w, Infer) and w.n_samples < 1:
        raise ValueError("infer needs samples >= 1")
    m.check_size(w.input_size)


def check_cluster(plan: Plan) -> None:
    """Reject cluster inputs outside their BOUNDS, naming the field (raises ValueError)."""
    for name, value, unit in (("node_gpus", plan.node_gpus, "GPUs per node"),
                              ("fabric_gbits_per_node", plan.fabric_gbits_per_node, "Gb/s per node")):
        b = BOUNDS[name]
        if value is not None and not (b.lo <= value <= b.hi and (not b.integer or value == int(value))):
            whole = "a whole number of " if b.integer else ""
            raise ValueError(f"{name}: {value:g} is not {whole}{unit} between {b.lo:g} and {b.hi:g} (or leave it out "
                             "for the catalog's)")


def check_layout(plan: Plan) -> None:
    """Reject a training layout or global batch that cannot run, naming the field (raises ValueError): degrees that
    do not divide the GPUs, the model's layers (pipeline stages) or KV heads (tensor parallel), a sequence context
    parallel cannot split evenly, a micro-batch above the global batch."""
    w, m, n = plan.workload, plan.model, plan.gpus
    lay = w.layout
    if lay.vpp > 1 and lay.pp < 2:
        raise ValueError("layout: v (virtual stages per GPU, interleaved 1F1B) needs pp=2 or more")
    if lay.splits:
        mp = lay.model_parallel
        if n % mp:
            raise ValueError(f"layout: tp {lay.tp} x pp {lay.pp} x cp {lay.cp} = {mp} GPUs per model copy does not "
                             f"divide the {n} GPUs per job: set GPUs per job to a multiple of {mp}, or change the "
                             "layout")
        dp = n // mp
        if ZERO_STAGES.get(w.sharding) in (1, 2) and dp < 2:
            raise ValueError(f"sharding {w.sharding} partitions states over the data-parallel ranks, and layout "
                             f"{lay.text()} on {n} GPUs leaves 1: use sharding ddp, or more GPUs")
        heads = m.tensor_parallel_heads
        if lay.tp > 1 and heads is None:
            raise ValueError(f"layout: tensor parallel is not modelled for {m.name} (a {m.kind} profile): use tp=1")
        if lay.tp > 1 and heads % lay.tp:
            raise ValueError(f"layout: tp={lay.tp} does not divide {m.name}'s {heads} KV heads (each GPU holds "
                             "whole heads): choose a tp that divides them")
        stages = lay.pp * lay.vpp
        if stages > 1 and m.shard_units % stages:
            raise ValueError(f"layout: pp {lay.pp} x v {lay.vpp} = {stages} pipeline chunks do not divide "
                             f"{m.name}'s {m.shard_units} layers: choose pp (and v) dividing them")
        chunks = 2 * lay.cp
        if lay.cp > 1 and w.input_size % chunks:
            raise ValueError(f"layout: cp={lay.cp} splits each sequence into 2 x cp = {chunks} chunks (causal load "
                             f"balancing); input size {w.input_size:,} is not a multiple of {chunks}")
    if w.global_batch and not lay.auto:  # layout auto: estimate._layouts keeps the candidates that divide it
        dp = max(1, n // lay.model_parallel)
        if w.grad_accum > 1:
            raise ValueError("global batch sets the gradient accumulation (global batch / (micro-batch x data-parallel "
                             "ranks)): leave grad accum at 1, or global batch at 0")
        if plan.batch and plan.batch * dp > w.global_batch:
            raise ValueError(f"batch: micro-batch {plan.batch:,} x {dp} data-parallel rank(s) = {plan.batch * dp:,} "
                             f"is above the global batch {w.global_batch:,}: lower the micro-batch or raise the "
                             "global batch")
        unit = (plan.batch or 1) * dp
        if w.global_batch % unit:
            raise ValueError(f"global batch {w.global_batch:,} is not a multiple of micro-batch {plan.batch or 1} x "
                             f"{dp} data-parallel rank(s) = {unit:,}: make it one")
