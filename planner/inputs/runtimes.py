"""Runtime (framework) efficiency profiles from data/runtimes.yaml: fractions of peak a stack reaches on each
device class (HBM GPUs, GDDR GPUs, and CPUs with host DRAM, where a runtime may not run at all).

data/runtimes.yaml holds each runtime's priors, every one with its source. data/runtimes_tuned.yaml (written by
`python -m planner validate --write-tuned`) holds the values tuned on published measurements, for the runtimes and
parameters that rows of at least two sources inform: they replace the priors in every estimate, so the app shows what
leave-one-source-out validation scores (the same search, run on every source), not the untuned priors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.safe_parse import shown
from planner.base.schema import DataFileError, Record, UnknownNameError, load_yaml, suggest, unique_ids
from planner.inputs.custom_allreduce import CUSTOM_ALLREDUCE_FILE, CustomAllReduce, load_custom_allreduce
from planner.inputs.jobs import ZERO_STAGES
from planner.inputs.prompt_gemm import PromptEra, era_at, parse_prompt_gemm
from planner.inputs.rotary_sync import RotarySync, parse_rotary_sync

RUNTIMES_FILE = DATA_DIR / "runtimes.yaml"
TUNED_FILE = DATA_DIR / "runtimes_tuned.yaml"
MEMORY_CLASSES = ("hbm", "gddr")  # GPU classes every runtime gives fractions for
CPU_CLASS = "cpu"  # a CPU device: the runtime's optional `cpu` block
FRACTION_BOUNDS = (0.01, 1.0)  # a fraction of a peak that a data file may give
PER_KERNEL_US_BOUNDS = (0.0, 1000.0)  # microseconds per kernel (gap or dispatch) that a data file may give
# Physical bounds of the values tuning may set (a prior may lie outside them; a tuned value never does: a parameter
# that only fits outside its bounds stands in for a missing mechanism, named in validation/REPORT.md).
# DRAM fraction of the datasheet rate a memory-bound kernel reaches: at most 0.95 (no DRAM streams its datasheet rate:
# refresh and read/write turnarounds; the best decode kernels measured here reach 0.85-0.93), at least 0.40 (the
# lowest measured for a mature runtime's decode: llama.cpp F16 on HBM, 42-54 %, data/runtimes.yaml).
TUNED_BW_BOUNDS = (0.40, 0.95)
# GPU idle between two kernels when the host is ahead: 1.3 us inside a CUDA graph, 2.1 us launched one by one on a
# stream, measured on an H100 (Hazy Research, 'Look Ma, No Bubbles!', 2025-05-27, data/runtimes.yaml
# fastertransformer); NVIDIA's CUDA Graphs post measured the same order on a V100 (0.9 us beyond a 2.9 us kernel).
LAUNCH_GAP_US_BOUNDS = (1.3, 2.1)
# CPU time per kernel as data/runtimes.yaml counts kernels: no faster than a C++ launch loop (3.8 us a launch, NVIDIA's
# CUDA Graphs post, 2019), no slower than eager Python on gpt-fast's A100 host (39 ms a Llama-2-7B token over its
# 965 kernels = 40 us, PyTorch's gpt-fast post, 2023-11-30; data/runtimes.yaml pytorch-eager).
HOST_US_BOUNDS = (3.8, 40.0)
# The parameters validation tunes (planner.validation.measured.TUNABLE), each with the physical bounds a tuned value
# must lie in: the DRAM bandwidth fraction per memory class, the GPU-side gap per kernel (us) and the CPU dispatch
# per kernel (us).
TUNABLE_PARAMS = {"mem_bw_efficiency.hbm": TUNED_BW_BOUNDS, "mem_bw_efficiency.gddr": TUNED_BW_BOUNDS,
                  "launch_overhead_us": LAUNCH_GAP_US_BOUNDS, "host_us_per_kernel": HOST_US_BOUNDS}
# What a runtime's launch path sets (the gap per kernel, the host's dispatch per kernel): a runtime that launches its
# kernels the way another does (launch_family) takes these from it, as tuned there.
# the runtime whose per-kernel CPU dispatch is eager PyTorch's (data/runtimes.yaml): what an engine that graphs only
# its decode steps pays per kernel of a prefill step (eager_dispatch_us)
EAGER_RUNTIME = "pytorch-eager"
LAUNCH_PARAMS = ("launch_overhead_us", "host_us_per_kernel")
MAX_TUNED_SOURCES = 200  # cap on a tuned record's list of sources (a parser cap, far above what validation/ holds)
# The jobs a runtime may run (Workload.kind); a record without `jobs` runs all of them.
JOB_KINDS = ("generate", "infer", "train")
# Training layouts a runtime's `training.layouts` may declare: data parallel (ddp), ZeRO stages 1-3 (zero3 is what
# DeepSpeed calls FSDP's full sharding), PyTorch-style FSDP, tensor (+ sequence), pipeline and context parallel. The
# planner times ddp, zero1, zero2 and fsdp (jobs.ZERO_STAGES); tp, pp and cp are declared for the layouts other
# parts of the planner add.
TRAIN_LAYOUTS = ("ddp", "zero1", "zero2", "zero3", "fsdp", "tp", "pp", "cp")
# A plan's sharding (jobs.ZERO_STAGES) and the declared layouts that run it: FSDP's full sharding is ZeRO stage 3.
# (one entry per timed sharding: tests/inputs/test_training_runtimes.py keeps the two in step)
SHARDING_LAYOUTS = {"ddp": ("ddp",), "zero1": ("zero1",), "zero2": ("zero2",), "fsdp": ("fsdp", "zero3")}
# A training block's grad_reduce_dtype (FSDP's MixedPrecisionPolicy.reduce_dtype) as bytes per gradient element
GRAD_REDUCE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}
TP_GATHERS = ("per-module", "per-projection")
SP_SHARD_DIMS = (0, 1)  # Training.sp_shard_dim: sequence-first or batch-first activations
# How a runtime's optimizer runs (Training.optimizer_kernels)
OPTIMIZER_KERNELS = ("fused", "foreach")
# Communication a training stack overlaps with compute beyond its data-parallel gradients (Training.comm_overlap):
# tensor parallel's gathers and reduce-scatters chunked under their GEMMs (Transformer Engine's userbuffers), context
# parallel's K/V ring under attention, the interleaved schedule's pipeline sends in its 1F1B phase, and the
# distributed optimizer's parameter all-gather under the next step's forward (planner.engine.train_layout)
COMM_OVERLAPS = ("tp", "cp", "pp-interleaved", "param-gather")


@dataclass(frozen=True)
class Training:
    """How a runtime trains (its `training` block): the layouts it supports, and per timed sharding the fraction of
    its data-parallel collectives that may run under compute (its documented default schedule, not a fit), less the
    `exposed_layers` layers' worth of collectives the schedule leaves exposed (the first gather or last reduce that
    has no compute beside it)."""

    layouts: tuple[str, ...]
    layouts_source: str
    overlap: tuple[tuple[str, float], ...]
    overlap_source: str
    exposed_layers: float = 0.0
    # bytes per gradient element FSDP's reduce-scatter sends (GRAD_REDUCE_BYTES of the block's grad_reduce_dtype);
    # 0: the compute dtype's, FSDP's default when the mixed-precision policy names no reduce dtype
    grad_reduce_bytes: float = 0.0
    grad_reduce_source: str = ""
    # how its tensor parallel (with sequence parallel) gathers a layer's inputs (TP_GATHERS): once per module, its
    # projections reading the one copy (per-module), or once for each column-parallel projection (per-projection)
    tp_gather: str = "per-module"
    tp_gather_source: str = ""
    # the activation dimension its sequence parallel shards (SP_SHARD_DIMS): 0, sequence-first activations (Megatron's
    # [s, b, h]): NCCL gathers and reduce-scatters along dim 0 in place; 1, batch-first ones sharded on their
    # sequence (PyTorch DTensor's Shard(1) on [b, s, h]): each gather and reduce-scatter also rearranges the tensor
    # (planner.engine.train_layout.sp_rearranging_copies)
    sp_shard_dim: int = 0
    sp_shard_source: str = ""
    # Mixed precision as torch.autocast over float32 weights (eager PyTorch's default recipe, torch.amp docs): the
    # ops on autocast's float32 list (layer_norm, softmax, cross_entropy, pow, ...) keep float32 activations and each
    # 16-bit matmul casts its float32 input (planner/inputs/models/autocast_chains.py). False: the runtime holds
    # 16-bit weights (FSDP/DeepSpeed mixed precision) or fuses its kernels, so no such activations.
    autocast_fp32_weights: bool = False
    # The optimizer's kernels: 'fused' (one kernel per parameter chunk: read weights, grads, states once) or
    # 'foreach' (torch.optim's default on CUDA: one multi-tensor kernel per arithmetic step, jobs.FOREACH_TRAFFIC)
    optimizer_kernels: str = "fused"
    precision_source: str = ""
    # FP8 training with FP8 primary weights (NeMo's fp8_params, Megatron-LM's --fp8-param-gather; off by default in
    # both): the layers' weights are held as Transformer Engine FP8 tensors, not BF16 copies cast each step
    fp8_weights: bool = False
    fp8_weights_source: str = ""
    # which of COMM_OVERLAPS its documented default (recipe) schedule runs, and where that is written
    comm_overlap: tuple[str, ...] = ()
    comm_overlap_source: str = ""
    # ZeRO-1 as a broadcast per owning rank (InternLM's HybridZeroOptimizer): the parameter tensors per layer each
    # owned whole by one rank (0: reduce-scatter + all-gather, Setup.zero1_tensors_per_layer)
    zero1_tensors_per_layer: int = 0
    zero1_sync_source: str = ""

    def runs(self, sharding: str) -> bool:
        """Whether a plan's sharding (jobs.ZERO_STAGES) is among the declared layouts."""
        return any(layout in self.layouts for layout in SHARDING_LAYOUTS.get(sharding, (sharding,)))

    def shardings(self) -> tuple[str, ...]:
        """The timed shardings this runtime runs, in ZeRO-stage order (what sharding auto chooses among)."""
        return tuple(name for name in ZERO_STAGES if self.runs(name))

    def overlap_fraction(self, sharding: str, layers: int) -> float:
        """Fraction of `sharding`'s data-parallel collectives that may hide under compute for a model of `layers`
        layers (0-1): the documented fraction less the exposed layers' share."""
        frac = dict(self.overlap).get(sharding, 0.0)
        return max(0.0, frac * (1.0 - self.exposed_layers / max(layers, 1)))


MAX_IDLE_EXPERT_OPS = 64  # parser cap on the ops one expert no token was routed to dispatches per visit
MAX_SYNC_US = 10_000.0  # parser cap on one device-to-host round trip, us
MAX_GRAPHED_TOKENS = 4096  # parser cap on a prompt's tokens a runtime replays as a CUDA graph


@dataclass(frozen=True)
class ExpertLoop:
    """A mixture-of-experts layer run as a Python loop over every expert of the layer, each visit asking the GPU
    which tokens were routed to it (torch.where on the expert's mask: a device-to-host copy, so the host waits for
    the GPU to drain): Hugging Face transformers' sparse MoE blocks before they skipped unrouted experts.

    idle_ops: operators one visit dispatches on an expert no token was routed to (zero-size tensors: dispatched,
      no kernel launched). idle_op_us: host time of one such dispatch. Each visit's round trip costs the runtime's
      host_sync_us (RuntimeProfile)."""

    idle_ops: float
    idle_op_us: float
    source: str


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions and overheads for one GPU under one runtime.

    mem_bw_efficiency: achieved / datasheet DRAM bandwidth in memory-bound kernels.
    compute_efficiency: achieved / the GPU's matmul ceiling (GPU.ceiling: measured MAMF or derived) in matrix
      multiplies of a shape that fills the GPU; the engine multiplies in the shape efficiency (planner.engine.gemm).
    launch_overhead_us: GPU time added per kernel launch (the gap between kernels; CUDA graphs keep only this).
    kernels_per_layer_factor: kernels launched per layer relative to a fused block.
    source: where the numbers come from ('prior: ...' or 'calibrated: ...').
    host_us_per_kernel: CPU time to dispatch one kernel from Python (eager frameworks). It overlaps the GPU's work:
      a step takes the longer of the two, so a small-batch decode in eager PyTorch is host-bound.
    step_host_us: CPU time on the critical path of every step (building the step's graph, scheduling, sampling):
      the GPU waits for it, so it adds to the step whatever the GPU does.
    host_us_per_seq: serial CPU time per sequence a step carries, on top of step_host_us: an older engine
      generation's Python loop over the step's sequences (vLLM V0; data/serving.yaml `engines`, picked by
      with_engine_generation); 0 for the current generations. A step's host time is step_host_seconds.
    dp_comm_overlap: fraction of a data-parallel collective (DDP gradient all-reduce, FSDP gathers) that may run
      under the step's compute (capped at that compute); tensor-parallel collectives overlap only as the training
      block's comm_overlap says (train_layout.tp_hidden_share).
    """

    mem_bw_efficiency: float
    compute_efficiency: float
    launch_overhead_us: float
    kernels_per_layer_factor: float
    cuda_context_gb: float
    source: str
    host_us_per_kernel: float = 0.0
    dp_comm_overlap: float = 0.0
    unsupported: str = ""  # why the runtime can't run on this device class ('' = it can); nothing is timed then
    step_host_us: float = 0.0  # serial CPU time per step (see the class docstring)
    runtime: str = ""  # the id of the runtime profile these come from ('' when built by hand)
    precisions: tuple[str, ...] = ()  # the only precisions the runtime runs (RuntimeProfile.precisions); () = any
    training: Training | None = None  # the runtime's training block (None: dp_comm_overlap for every layout)
    host_us_per_seq: float = 0.0  # serial CPU time per sequence per step (see the class docstring)
    # CPU time to dispatch one kernel of a prefill step from Python, where an engine generation runs its prefills
    # eagerly and only its decode steps in CUDA graphs (vLLM V0: with_engine_generation; llama.cpp, whose graphs
    # hold single-token steps only: data/runtimes.yaml); it overlaps the GPU's
    # work as host_us_per_kernel does, in prefill phases only; 0: prefills launched as the runtime launches decode
    prefill_host_us_per_kernel: float = 0.0
    # the most tokens a prefill step replays a CUDA graph for, where the generation captures its graphs only up to a
    # size (vLLM V1's max_cudagraph_capture_size): only a prefill step with more is charged prefill_host_us_per_kernel
    # a kernel; 0: every prefill step is (vLLM V0's eager prefill)
    prefill_graph_max_tokens: int = 0
    # the KV position from which decode steps are dispatched eagerly too, at prefill_host_us_per_kernel a kernel: an
    # engine generation that captures its decode CUDA graphs only up to a context (vLLM V0's max_seq_len_to_capture,
    # 8,192: with_engine_generation); 0: decode steps launched as the runtime launches them at any context
    eager_decode_from: int = 0
    # its scheduler admits a generate job's sequences as its paged KV cache frees (RuntimeProfile.batch_waves): a
    # batch that does not fit runs as waves of the largest batch that does; False: it runs whole or not at all
    batch_waves: bool = False
    # host time of one operator on an idle expert in a mixture of experts' Python loop over every expert
    # (RuntimeProfile.expert_loop; 0: no such loop) and of one device-to-host round trip (RuntimeProfile.host_sync_us:
    # a torch.where's count, a torch.cuda.synchronize), us; both serial with the GPU (roofline.host_wait_seconds)
    idle_op_us: float = 0.0
    sync_us: float = 0.0

    def step_host_seconds(self, sequences: float) -> float:
        """Serial CPU seconds of one step carrying `sequences` sequences, in series with its GPU work: the
        runtime's per-step work plus its engine generation's per sequence, step_host_us + sequences x
        host_us_per_seq (vLLM V0 at batch 200: 1.9 ms + 200 x 90 us, RFC #6801's '20ms'). The one definition
        the decode estimate (roofline.step_host_seconds) and the serving simulation (serving_sim) both use."""
        return (self.step_host_us + sequences * self.host_us_per_seq) * 1e-6

    def for_layout(self, sharding: str, layers: int) -> Efficiency:
        """These efficiencies with the data-parallel overlap of `sharding` (a jobs.ZERO_STAGES name) for a model of
        `layers` layers, when the runtime declares one (Training.overlap_fraction); else unchanged."""
        t = self.training
        if t is None or sharding not in dict(t.overlap):
            return self
        return replace(self, dp_comm_overlap=t.overlap_fraction(sharding, layers))


@dataclass(frozen=True)
class CpuProfile:
    """A runtime on a CPU: fractions of the CPU's peak DRAM bandwidth and base-clock matmul peak, the time per
    operator dispatch (serial with the compute: on a CPU the host is the device, so there is no separate
    host_us_per_kernel to overlap), and the runtime's own host memory (in place of a CUDA context)."""

    mem_bw_efficiency: float
    compute_efficiency: float
    launch_overhead_us: float
    host_memory_gb: float
    source: str


@dataclass(frozen=True)
class QuantizedGemv:
    """A runtime's CUDA-core GEMV for quantized weights: used for passes of at most `max_tokens` tokens, it spends
    `ops_per_weight_token` 32-bit integer instructions per weight per token (unpack and dot product, repeated for
    every token), measured where `source` says; `pipelined`: those instructions run under its weight loads
    (the slower of the two, not their sum: planner/inputs/precisions.py, above UNPACK_MODES)."""

    max_tokens: int
    ops_per_weight_token: float
    source: str
    pipelined: bool = False


@dataclass(frozen=True)
class Tuned:
    """Values of TUNABLE_PARAMS tuned on `rows` published measurements from `sources`, on `day`."""

    values: tuple[tuple[str, float], ...]
    rows: int
    sources: tuple[str, ...]
    day: date
    runtime: str = ""  # the runtime whose rows they were tuned on, when it is another (a launch family's)

    def get(self, name: str, prior: float) -> float:
        return dict(self.values).get(name, prior)

    def without(self, names: tuple[str, ...]) -> Tuned:
        """The same tuning less the values of `names` (their priors then apply)."""
        return replace(self, values=tuple((n, v) for n, v in self.values if n not in names))

    def describe(self, priors: dict[str, float], memory_class: str) -> str:
        """'tuned on N rows from K sources (...): name v (prior p), ...' for the explanation, with the values that
        apply on `memory_class` (not the other class's bandwidth fraction)."""
        other = tuple(f"mem_bw_efficiency.{c}" for c in MEMORY_CLASSES if c != memory_class)
        parts = ", ".join(f"{name} {v:g} (prior {priors[name]:g})" for name, v in self.values if name not in other)
        whose = f" of {self.runtime} (whose launch path it shares)" if self.runtime else ""
        return (f"tuned on {self.rows} published rows{whose} from {len(self.sources)} sources ({TUNED_FILE.name}, "
                f"{self.day.isoformat()}): {parts}")


@dataclass(frozen=True)
class RuntimeProfile:
    id: str
    name: str
    mem_bw_efficiency: tuple[tuple[str, float], ...]
    compute_efficiency: tuple[tuple[str, float], ...]
    launch_overhead_us: float
    kernels_per_layer_factor: float
    cuda_context_gb: float
    source: str
    host_us_per_kernel: float = 0.0
    prefill_chunk_tokens: int = 0  # prompt tokens per prefill pass (llama.cpp's n_ubatch); 0 = the whole prompt
    # the runtime's own CUDA-core GEMV for quantized weights (None: tensor-core kernels)
    gemv: QuantizedGemv | None = None
    dp_comm_overlap: float = 0.0  # see Efficiency
    dp_comm_overlap_source: str = ""
    cpu: CpuProfile | None = None
    cpu_unsupported: str = ""  # why it doesn't run on a CPU (when cpu is None)
    step_host_us: float = 0.0  # serial CPU time per step (see Efficiency)
    step_host_source: str = ""
    # chains of elementwise ops (score scaling, mask and softmax; SwiGLU's silu and product; dropout into its neighbour)
    # run as one kernel; False: every op is its own kernel reading and writing its tensors, as eager PyTorch runs them
    fuses_elementwise: bool = False
    fuses_elementwise_source: str = ""
    tp_lm_head_split: bool = True  # tensor parallel splits the LM head's vocabulary too (False: every GPU holds all)
    tp_source: str = ""  # where the runtime's tensor-parallel split is described
    # each decode step appends the new K and V by concatenating them to a copy of the whole cache (Hugging Face's
    # DynamicCache: torch.cat), reading and writing every cached element once more; False: written in place
    kv_cache_concat: bool = False
    kv_cache_concat_source: str = ""
    tuned: Tuned | None = None  # values tuned on published rows (data/runtimes_tuned.yaml); None: priors only
    # TUNABLE_PARAMS whose prior is a measurement of this runtime's own mechanism (its source says which): held at it
    held: tuple[str, ...] = ()
    launch_family: str = ""  # the runtime whose launch path this one shares: its LAUNCH_PARAMS come from there
    launch_family_source: str = ""
    # attention backends (data/precisions.yaml ids) on which the runtime's attention module materializes the KV heads
    # repeated to the query heads (Hugging Face's repeat_kv) before attending: a GQA decode step then writes and
    # reads the cache `heads / kv_heads` times over (Setup.kv_repeat); empty: the kernel reads the KV heads as cached
    kv_heads_repeated_on: tuple[str, ...] = ()
    kv_heads_repeated_source: str = ""
    # the only precisions (data/precisions.yaml ids) it runs, with why; () = any (AutoAWQ: its own checkpoints)
    precisions: tuple[str, ...] = ()
    precisions_source: str = ""
    # its 16-bit (fp16) GEMMs on unquantized weights accumulate in fp16 (llama.cpp's cuBLAS path), which GeForce cards
    # run at GPU.fp16_accumulate_speedup x the catalog's fp32-accumulate rate
    fp16_accumulate: bool = False
    fp16_accumulate_source: str = ""
    # the runtime's own all-reduce kernels for small tensor-parallel messages over NVLink (data/custom_allreduce.yaml);
    # None: every collective through NCCL
    custom_allreduce: CustomAllReduce | None = None
    jobs: tuple[str, ...] = JOB_KINDS  # the jobs it runs (JOB_KINDS); the others are refused, naming the runtime
    jobs_source: str = ""
    training: Training | None = None  # how it trains (None: it does not, or trains as DDP/FSDP with dp_comm_overlap)
    # serial CPU time per sequence per step of an older engine generation a run names (with_engine_generation;
    # see Efficiency): never in data/runtimes.yaml, whose profiles are the current generations'
    host_us_per_seq: float = 0.0
    # CPU per kernel of an eager prefill: an older generation's (with_engine_generation), or, from data/runtimes.yaml,
    # a runtime that graphs only its single-token decode steps (llama.cpp), with its source
    prefill_host_us_per_kernel: float = 0.0
    prefill_host_source: str = ""
    # Efficiency.prefill_graph_max_tokens: from data/runtimes.yaml (llama.cpp: 1) or an older generation's
    # (with_engine_generation: vLLM V1's 512)
    prefill_graph_max_tokens: int = 0
    eager_decode_from: int = 0  # and the context past which its decode steps run eagerly (0: none), likewise
    # its scheduler admits a generate job's sequences while its paged KV cache has room and starts the rest as others
    # finish (vLLM, TensorRT-LLM's in-flight batching); False: a batch runs whole or not at all, as Hugging Face's
    # static batch and llama.cpp's do
    batch_waves: bool = False
    batch_waves_source: str = ""
    # its mixture-of-experts layers loop over every expert in Python, one device-to-host sync each (ExpertLoop);
    # None: they run the routed experts only, or a fused MoE kernel
    expert_loop: ExpertLoop | None = None
    # the releases whose FlashAttention-2 classes sync once a layer, per model family (planner.inputs.rotary_sync);
    # None: none of its releases does
    rotary_sync: RotarySync | None = None
    # one device-to-host round trip from its Python (the host waits for the GPU to drain and reads a value back), us
    host_sync_us: float = 0.0
    host_sync_source: str = ""
    # attention backends (data/precisions.yaml ids) whose decode step the runtime runs as batched GEMMs of one query
    # row (eager PyTorch's torch.matmul over the cache: QK^T and AV), which read the KV cache at score_gemm_kv_read
    # of its streaming DRAM rate (Setup.kv_read_fraction); empty: its decode attention streams the cache
    score_gemms_on: tuple[str, ...] = ()
    score_gemm_kv_read: float = 1.0
    score_gemm_source: str = ""
    # attention backends (data/precisions.yaml ids) whose decode kernel launches one thread block per sequence and
    # query head and none along the keys (no split-KV / flash-decoding): a step with fewer of them than the GPU has
    # SMs reads the cache on that many SMs only (Setup.heads_grid); empty: the decode kernel fills the GPU
    decode_heads_grid_on: tuple[str, ...] = ()
    decode_heads_grid_source: str = ""
    # the GEMM a pass above the quantized GEMV's tokens runs, by build and GPU (data/runtimes.yaml `prompt_gemm`:
    # llama.cpp), oldest era first; estimates take the newest, a row naming its build that build's (at_build)
    prompt_eras: tuple[PromptEra, ...] = ()
    # a run of an older release or harness that launched each decode step's kernels one by one from its C++ host
    # loop, with no CUDA graph (TensorRT-LLM's GptSession without --enable_cuda_graph: with_ungraphed): the GPU's gap
    # per kernel launched on a stream and the host's time per launch, us (data/runtimes.yaml `ungraphed`); 0: none
    ungraphed_launch_us: float = 0.0
    ungraphed_host_us: float = 0.0
    ungraphed_source: str = ""

    def at_build(self, build: int) -> RuntimeProfile:
        """This runtime as its build `build` ran (its prompt_gemm era at that build); itself without eras."""
        era = era_at(self.prompt_eras, build)
        return replace(self, prompt_eras=(era,)) if era is not None else replace(self, prompt_eras=())

    @property
    def prompt_era(self) -> PromptEra | None:
        """The era estimates take: the newest (or the one at_build kept)."""
        return self.prompt_eras[-1] if self.prompt_eras else None

    @property
    def planned_allreduce(self) -> CustomAllReduce | None:
        """The custom all-reduce a plan on this runtime runs: its own kernel unless that is opt-in (then NCCL)."""
        ar = self.custom_allreduce
        return ar if ar is not None and not ar.opt_in else None

    def refuses(self, job: str, sharding: str | None = None, gpus: int = 1, model_parallel: tuple[str, ...] = ()
                ) -> str:
        """Why this runtime cannot run a `job` (with `sharding` over `gpus` GPUs when training, splitting the model
        along `model_parallel`: names among tp, pp, cp), '' when it can."""
        if job not in self.jobs:
            return f"runtime {self.id}: {self.name} runs {' and '.join(self.jobs)} jobs, not {job}"
        t = self.training
        lacking = [name for name in model_parallel if t and name not in t.layouts]
        if job == "train" and lacking:
            return (f"layout: runtime {self.id} has no {' or '.join(lacking)} parallelism (its layouts: "
                    f"{', '.join(t.layouts)}); choose a runtime that has, or a layout without it")
        if job == "train" and sharding and gpus > 1 and t and sharding in SHARDING_LAYOUTS and not t.runs(sharding):
            return (f"sharding {sharding}: runtime {self.id} does not run it (its layouts: {', '.join(t.layouts)}); "
                    f"choose sharding {', '.join(t.shardings() + ('auto',))}")
        return ""

    def fixed(self) -> tuple[str, ...]:
        """The TUNABLE_PARAMS its own rows never tune: the held ones and those its launch family sets."""
        return self.held + (LAUNCH_PARAMS if self.launch_family else ())

    def priors(self) -> dict[str, float]:
        """The TUNABLE_PARAMS as data/runtimes.yaml gives them (what tuning starts from)."""
        p = {f"mem_bw_efficiency.{c}": v for c, v in self.mem_bw_efficiency}
        return p | {"launch_overhead_us": self.launch_overhead_us, "host_us_per_kernel": self.host_us_per_kernel}

    @lru_cache(maxsize=64)  # noqa: B019 (profiles are immutable and few)
    def efficiency(self, memory_class: str) -> Efficiency:
        """What estimates use on a device class: 'hbm', 'gddr' or 'cpu' (on a CPU the runtime may be unsupported):
        the tuned values where data/runtimes_tuned.yaml has them, else the priors."""
        if memory_class == CPU_CLASS:
            return self._cpu_efficiency()
        priors, t = self.priors(), self.tuned
        value = (lambda name: t.get(name, priors[name])) if t else priors.__getitem__  # noqa: E731
        where = f"{self.name} on {memory_class.upper()} GPUs"
        source = (f"{where}: {t.describe(priors, memory_class)}; the rest prior (data/runtimes.yaml)" if t
                  else f"prior for {where} (data/runtimes.yaml)")
        return Efficiency(value(f"mem_bw_efficiency.{memory_class}"), dict(self.compute_efficiency)[memory_class],
                          value("launch_overhead_us"), self.kernels_per_layer_factor, self.cuda_context_gb, source,
                          value("host_us_per_kernel"), self.dp_comm_overlap, step_host_us=self.step_host_us,
                          runtime=self.id, precisions=self.precisions, training=self.training,
                          host_us_per_seq=self.host_us_per_seq, batch_waves=self.batch_waves,
                          prefill_host_us_per_kernel=self.prefill_host_us_per_kernel,
                          prefill_graph_max_tokens=self.prefill_graph_max_tokens,
                          eager_decode_from=self.eager_decode_from,
                          idle_op_us=self.expert_loop.idle_op_us if self.expert_loop else 0.0,
                          sync_us=self.host_sync_us)

    def _cpu_efficiency(self) -> Efficiency:
        c = self.cpu
        if c is None:
            why = self.cpu_unsupported or "data/runtimes.yaml has no CPU profile for it"
            return Efficiency(0.0, 0.0, 0.0, self.kernels_per_layer_factor, 0.0,
                              f"{self.name} does not run on a CPU",
                              unsupported=f"{self.name} does not run on a CPU: {why}", runtime=self.id)
        return Efficiency(c.mem_bw_efficiency, c.compute_efficiency, c.launch_overhead_us,
                          self.kernels_per_layer_factor, c.host_memory_gb,
                          f"prior for {self.name} on CPUs (data/runtimes.yaml)", step_host_us=self.step_host_us,
                          runtime=self.id, host_us_per_seq=self.host_us_per_seq)


def _by_class(rec: Record, field: str) -> tuple[tuple[str, float], ...]:
    sub = rec.child(field)
    sub.check_keys(MEMORY_CLASSES)
    lo, hi = FRACTION_BOUNDS
    return tuple((c, sub.number(c, lo=lo, hi=hi)) for c in MEMORY_CLASSES)


def _gemv(rec: Record) -> QuantizedGemv | None:
    """The optional `quantized_gemv` block: {max_tokens, ops_per_weight_token, source}."""
    sub = rec.child("quantized_gemv", required=False)
    if sub is None:
        return None
    sub.check_keys(("max_tokens", "ops_per_weight_token", "pipelined", "source"))
    return QuantizedGemv(int(sub.number("max_tokens", lo=1, hi=4096, integer=True)),
                         sub.number("ops_per_weight_token", lo=0.01, hi=64), sub.text("source"),
                         sub.flag("pipelined", False))


TP_LM_HEAD = ("split", "replicated")  # what a runtime's tensor parallelism does with the LM head


def _tensor_parallel(rec: Record) -> tuple[bool, str]:
    """The optional `tensor_parallel` block: {lm_head: split | replicated, source}; split when absent (Megatron-LM's
    vocabulary-parallel LM head, then an all-gather of the logits)."""
    sub = rec.child("tensor_parallel", required=False)
    if sub is None:
        return True, ""
    sub.check_keys(("lm_head", "source"))
    return sub.text("lm_head", choices=TP_LM_HEAD) == "split", " ".join(sub.text("source").split())


def _cpu(rec: Record) -> tuple[CpuProfile | None, str]:
    """The optional `cpu` block: the runtime's fractions on a CPU, or `unsupported: why it can't run there`."""
    sub = rec.child("cpu", required=False)
    if sub is None:
        return None, ""
    if "unsupported" in sub.data:
        sub.check_keys(("unsupported",))
        return None, " ".join(sub.text("unsupported").split())
    sub.check_keys(("mem_bw_efficiency", "compute_efficiency", "launch_overhead_us", "host_memory_gb", "source"))
    fraction = lambda field: sub.number(field, lo=FRACTION_BOUNDS[0], hi=FRACTION_BOUNDS[1])  # noqa: E731
    return CpuProfile(fraction("mem_bw_efficiency"), fraction("compute_efficiency"),
                      sub.number("launch_overhead_us", lo=PER_KERNEL_US_BOUNDS[0], hi=PER_KERNEL_US_BOUNDS[1]),
                      sub.number("host_memory_gb", lo=0, hi=64),
                      sub.text("source")), ""


def _batch_waves(rec: Record) -> dict:
    """The optional `batch_waves` flag with its `batch_waves_source` (required when true)."""
    waves = rec.flag("batch_waves", default=False)
    return dict(batch_waves=waves, batch_waves_source=rec.text("batch_waves_source", required=waves) or "")


def _expert_loop(rec: Record) -> ExpertLoop | None:
    """The optional `moe_expert_loop` block (ExpertLoop's fields)."""
    sub = rec.child("moe_expert_loop", required=False)
    if sub is None:
        return None
    sub.check_keys(("idle_ops", "idle_op_us", "source"))
    if not rec.number("host_sync_us", required=False):
        raise rec.fail("moe_expert_loop", "a loop that syncs once per expert needs the runtime's host_sync_us")
    return ExpertLoop(sub.number("idle_ops", lo=0, hi=MAX_IDLE_EXPERT_OPS),
                      sub.number("idle_op_us", lo=0, hi=PER_KERNEL_US_BOUNDS[1]), " ".join(sub.text("source").split()))


def _host_sync(rec: Record) -> dict:
    """The optional `host_sync_us` (one device-to-host round trip, us) with its `host_sync_source`."""
    us = rec.number("host_sync_us", required=False, lo=0, hi=MAX_SYNC_US)
    return dict(host_sync_us=us or 0.0, host_sync_source=rec.text("host_sync_source", required=us is not None) or "")


def _jobs(rec: Record) -> dict:
    """The optional `jobs` list (JOB_KINDS, with `jobs_source`) and `training` block; a runtime that trains on
    several GPUs declares its layouts there (a record without `jobs` runs every job)."""
    jobs = rec.strings("jobs", required=False)
    for job in jobs:
        if job not in JOB_KINDS:
            raise rec.fail("jobs", f"expected names among {', '.join(JOB_KINDS)}, got {shown(job)}")
    out = dict(jobs=jobs, jobs_source=" ".join(rec.text("jobs_source").split())) if jobs else {}
    training = _training(rec)
    if training is not None:
        if "train" not in (jobs or JOB_KINDS):
            raise rec.fail("training", "a training block on a runtime whose jobs do not include train")
        out["training"] = training
    return out


def _training_precision(sub: Record) -> tuple[bool, str, str]:
    """A training block's (autocast_fp32_weights, optimizer_kernels, precision_source); a source is required when
    either is given."""
    autocast = sub.flag("autocast_fp32_weights", default=False)
    kernels = sub.text("optimizer_kernels", required=False) or "fused"
    if kernels not in OPTIMIZER_KERNELS:
        raise sub.fail("optimizer_kernels", f"expected one of {', '.join(OPTIMIZER_KERNELS)}, got {shown(kernels)}")
    given = "autocast_fp32_weights" in sub.data or "optimizer_kernels" in sub.data
    source = sub.text("precision_source", required=given) or ""
    return autocast, kernels, " ".join(source.split())


def _training(rec: Record) -> Training | None:
    """The optional `training` block: {layouts, layouts_source, overlap: {sharding: fraction}, overlap_source,
    exposed_layers}."""
    sub = rec.child("training", required=False)
    if sub is None:
        return None
    sub.check_keys(("layouts", "layouts_source", "overlap", "overlap_source", "exposed_layers", "grad_reduce_dtype",
                    "grad_reduce_source", "tp_gather", "tp_gather_source", "sp_shard_dim", "sp_shard_source",
                    "autocast_fp32_weights", "optimizer_kernels", "precision_source", "fp8_weights",
                    "fp8_weights_source", "comm_overlap", "comm_overlap_source", "zero1_tensors_per_layer",
                    "zero1_sync_source"))
    layouts = sub.strings("layouts")
    if not layouts:
        raise sub.fail("layouts", f"expected at least one of {', '.join(TRAIN_LAYOUTS)}")
    for layout in layouts:
        if layout not in TRAIN_LAYOUTS:
            raise sub.fail("layouts", f"expected names among {', '.join(TRAIN_LAYOUTS)}, got {shown(layout)}")
    over = sub.child("overlap")
    over.check_keys(tuple(SHARDING_LAYOUTS))
    t = Training(tuple(layouts), " ".join(sub.text("layouts_source").split()),
                 tuple((name, over.number(name, lo=0, hi=1)) for name in SHARDING_LAYOUTS if name in over.data),
                 " ".join(sub.text("overlap_source").split()),
                 sub.number("exposed_layers", required=False, lo=0, hi=1000) or 0.0)
    reduce = sub.text("grad_reduce_dtype", required=False, choices=tuple(GRAD_REDUCE_BYTES))
    if reduce:
        t = replace(t, grad_reduce_bytes=GRAD_REDUCE_BYTES[reduce],
                    grad_reduce_source=" ".join(sub.text("grad_reduce_source").split()))
    gather = sub.text("tp_gather", required=False, choices=TP_GATHERS)
    if gather:
        t = replace(t, tp_gather=gather, tp_gather_source=" ".join(sub.text("tp_gather_source").split()))
    dim = sub.number("sp_shard_dim", required=False, lo=min(SP_SHARD_DIMS), hi=max(SP_SHARD_DIMS), integer=True)
    if dim is not None:
        t = replace(t, sp_shard_dim=int(dim), sp_shard_source=" ".join(sub.text("sp_shard_source").split()))
    if sub.flag("fp8_weights", default=False):
        t = replace(t, fp8_weights=True, fp8_weights_source=" ".join(sub.text("fp8_weights_source").split()))
    overlaps = sub.strings("comm_overlap", required=False) or ()
    for name in overlaps:
        if name not in COMM_OVERLAPS:
            raise sub.fail("comm_overlap", f"expected names among {', '.join(COMM_OVERLAPS)}, got {shown(name)}")
    if overlaps:
        t = replace(t, comm_overlap=tuple(overlaps),
                    comm_overlap_source=" ".join(sub.text("comm_overlap_source").split()))
    tensors = sub.number("zero1_tensors_per_layer", required=False, lo=1, hi=1000, integer=True)
    if tensors is not None:
        if "zero1" not in layouts:
            raise sub.fail("zero1_tensors_per_layer", "a ZeRO-1 synchronization for a runtime without the zero1 layout")
        t = replace(t, zero1_tensors_per_layer=int(tensors),
                    zero1_sync_source=" ".join(sub.text("zero1_sync_source").split()))
    autocast, kernels, precision_source = _training_precision(sub)
    t = replace(t, autocast_fp32_weights=autocast, optimizer_kernels=kernels, precision_source=precision_source)
    for name, _ in t.overlap:
        if not t.runs(name):
            raise over.fail(name, f"an overlap for a sharding the layouts do not list ({', '.join(t.layouts)})")
    missing = [name for name in t.shardings() if name not in over.data]
    if missing:
        raise sub.fail("overlap", f"expected a fraction for every sharding the layouts run; {', '.join(missing)} "
                                  "has none")
    return t


@dataclass(frozen=True)
class Runtimes:
    runtimes: tuple[RuntimeProfile, ...]

    def get(self, name: str) -> RuntimeProfile:
        for r in self.runtimes:
            if r.id == name.lower():
                return r
        raise UnknownNameError("runtime", name, suggest(name, [r.id for r in self.runtimes]))


@lru_cache(maxsize=4)
def nccl_only(runtimes: Runtimes) -> Runtimes:
    """The same runtimes with every collective through NCCL (no custom all-reduce): what a runtime's older versions,
    or one run with its custom all-reduce disabled, do."""
    return Runtimes(tuple(replace(r, custom_allreduce=None) for r in runtimes.runtimes))


def with_training(runtimes: Runtimes, runtime_id: str, **changes) -> Runtimes:
    """The same runtimes with `runtime_id`'s training block changed as `changes` say (Training's fields): a run whose
    code sets what its stack's default does not (a validation row's stated condition: FSDP's reduce dtype, its own
    tensor-parallel plan)."""
    out = []
    for r in runtimes.runtimes:
        if r.id == runtime_id:
            r = replace(r, training=replace(r.training or Training(TRAIN_LAYOUTS, "", (), ""), **changes))
        out.append(r)
    return Runtimes(tuple(out))
def with_engine_generation(runtimes: Runtimes, runtime_id: str, host_us_per_seq: float,
                           step_host_us: float | None = None, prefill_host_us_per_kernel: float = 0.0,
                           eager_decode_from: int = 0, prefill_graph_max_tokens: int = 0) -> Runtimes:
    """The same runtimes with `runtime_id` charging `host_us_per_seq` of serial CPU work per sequence per step,
    `step_host_us` per step in place of its profile's (None: the profile's) and `prefill_host_us_per_kernel` to
    dispatch each kernel of a prefill step (an eager prefill: eager_dispatch_us), and of each decode step at KV
    positions from `eager_decode_from` on (0: none; past its CUDA graphs' context), only of a prefill step of more
    than `prefill_graph_max_tokens` tokens where that is set (vLLM V1's largest CUDA graph): a generation of its
    engine (vLLM V0 or V1, data/serving.yaml `engines`: SchedulerProfile.host_us_per_seq, step_host_us,
    eager_prefill, eager_decode_from, ungraphed_prefill), which a run stated (a validation row's `engine`). The
    runtimes as loaded are the current generation's."""
    step = {} if step_host_us is None else {"step_host_us": step_host_us}
    generation = dict(host_us_per_seq=host_us_per_seq, prefill_host_us_per_kernel=prefill_host_us_per_kernel,
                      eager_decode_from=eager_decode_from, prefill_graph_max_tokens=prefill_graph_max_tokens, **step)
    return Runtimes(tuple(replace(r, **generation) if r.id == runtime_id else r for r in runtimes.runtimes))


def with_ungraphed(runtimes: Runtimes, runtime_id: str) -> Runtimes:
    """The same runtimes with `runtime_id` launching every kernel of its steps from its host loop, no CUDA graph, as
    a run stated (a validation row's `cuda_graphs: false`: TensorRT-LLM's GptSession of releases up to 0.9-0.10,
    whose benchmark graphs decode only with --enable_cuda_graph): its profile's `ungraphed` GPU gap per kernel and
    host time per kernel (us) in place of the graphed ones; ValueError naming the field where it has no such block.
    Tuned launch values are dropped with them: they were tuned on graphed runs."""
    profile = runtimes.get(runtime_id)
    if not profile.ungraphed_launch_us:
        raise ValueError(f"cuda_graphs: runtime {runtime_id} has no `ungraphed` launch costs in data/runtimes.yaml; "
                         "only a runtime that states them may run without CUDA graphs")
    tuned = profile.tuned.without(LAUNCH_PARAMS) if profile.tuned else None
    ungraphed = replace(profile, launch_overhead_us=profile.ungraphed_launch_us,
                        host_us_per_kernel=profile.ungraphed_host_us, tuned=tuned)
    return Runtimes(tuple(ungraphed if r.id == runtime_id else r for r in runtimes.runtimes))


def with_prefill_chunk(runtimes: Runtimes, runtime_id: str, tokens: int) -> Runtimes:
    """The same runtimes with `runtime_id` prefilling a prompt `tokens` tokens a step (0: whole), as a run's engine
    chunks it (a serving engine's token budget: a validation row that names vLLM V1)."""
    return Runtimes(tuple(replace(r, prefill_chunk_tokens=tokens) if r.id == runtime_id else r
                          for r in runtimes.runtimes))


def eager_dispatch_us(runtimes: Runtimes) -> float:
    """Microseconds of CPU to dispatch one kernel from eager PyTorch, as estimates use it (EAGER_RUNTIME's
    host_us_per_kernel: tuned where data/runtimes_tuned.yaml has it, else the prior): what a kernel of an eager
    prefill step costs the host in an engine that graphs only its decode steps (vLLM V0)."""
    profile = runtimes.get(EAGER_RUNTIME)
    prior = profile.priors()["host_us_per_kernel"]
    return profile.tuned.get("host_us_per_kernel", prior) if profile.tuned else prior


def with_build(runtimes: Runtimes, runtime_id: str, build: int) -> Runtimes:
    """The same runtimes with `runtime_id` as its build `build` ran (RuntimeProfile.at_build: llama.cpp's prompt
    GEMM of that build), which a run stated (a validation row's `build`)."""
    return Runtimes(tuple(r.at_build(build) if r.id == runtime_id else r for r in runtimes.runtimes))


@lru_cache(maxsize=4)
def opted_in(runtimes: Runtimes) -> Runtimes:
    """The same runtimes with every opt-in custom all-reduce switched on (a run that set the runtime's switch, e.g.
    gpt-fast's ENABLE_INTRA_NODE_COMM=1)."""
    return Runtimes(tuple(replace(r, custom_allreduce=replace(r.custom_allreduce, opt_in=""))
                          if r.custom_allreduce is not None else r for r in runtimes.runtimes))


def _tuned_record(rec: Record) -> Tuned:
    rec.check_keys(("id", "rows", "sources", "values", "day"))
    values = rec.child("values")
    values.check_keys(TUNABLE_PARAMS)
    if not values.data:
        raise rec.fail("values", "expected at least one tuned parameter")
    sources = rec.strings("sources")
    if len(sources) > MAX_TUNED_SOURCES:
        raise rec.fail("sources", f"{len(sources):,} entries, at most {MAX_TUNED_SOURCES} expected")
    return Tuned(tuple((name, values.number(name, lo=lo, hi=hi)) for name, (lo, hi) in TUNABLE_PARAMS.items()
                       if name in values.data),
                 int(rec.number("rows", lo=1, hi=10**6, integer=True)), sources, rec.day("day"))


def load_tuned(path: str | Path, known: list[str]) -> dict[str, Tuned]:
    """The tuned values per runtime id from `path` (data/runtimes_tuned.yaml); every id must be one of `known`."""
    records = [Record.of(path, i, raw) for i, raw in enumerate(load_yaml(path, "tuned", dated=True))]
    ids = [rec.text("id") for rec in records]
    unique_ids(path, ids)
    for rec, rid in zip(records, ids):
        if rid not in known:
            near = suggest(rid, known)
            raise rec.fail("id", f"no runtime of that id in {RUNTIMES_FILE.name}"
                           + (f" (did you mean '{near[0]}'?)" if near else ""))
    return {rid: _tuned_record(rec) for rec, rid in zip(records, ids)}


@lru_cache(maxsize=4)
def load_runtimes(path: str | Path = RUNTIMES_FILE, tuned_path: str | Path | None = None) -> Runtimes:
    """The runtime profiles of `path`, with the tuned values of `tuned_path` (data/runtimes_tuned.yaml when `path` is
    data/runtimes.yaml; none for another file unless given)."""
    if tuned_path is None and Path(path) == RUNTIMES_FILE:
        tuned_path = TUNED_FILE
    out = []
    for i, raw in enumerate(load_yaml(path, "runtimes", dated=True)):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "name", "mem_bw_efficiency", "compute_efficiency", "launch_overhead_us",
                        "host_us_per_kernel", "kernels_per_layer_factor", "cuda_context_gb", "prefill_chunk_tokens",
                        "quantized_gemv", "step_host_us", "step_host_source", "source", "cpu", "dp_comm_overlap",
                        "dp_comm_overlap_source", "fuses_elementwise", "fuses_elementwise_source",
                        "tensor_parallel", "kv_cache_concat", "kv_cache_concat_source", "held", "launch_family",
                        "launch_family_source", "kv_heads_repeated_on", "kv_heads_repeated_source", "precisions",
                        "precisions_source", "fp16_accumulate", "fp16_accumulate_source", "jobs", "jobs_source",
                        "training", "batch_waves", "batch_waves_source", "score_gemms_on", "score_gemm_kv_read",
                        "score_gemm_source", "prompt_gemm", "moe_expert_loop", "host_sync_us", "host_sync_source",
                        "prefill_host_us_per_kernel", "prefill_host_source", "prefill_graph_max_tokens",
                        "decode_heads_grid_on", "decode_heads_grid_source", "rotary_sync", "ungraphed"))
        held = rec.strings("held", required=False)
        for name in held:
            if name not in TUNABLE_PARAMS:
                raise rec.fail("held", f"expected names among {', '.join(TUNABLE_PARAMS)}, got {shown(name)}")
        concat = rec.flag("kv_cache_concat", default=False)
        repeated = rec.strings("kv_heads_repeated_on", required=False)
        only = rec.strings("precisions", required=False)
        acc16 = rec.flag("fp16_accumulate", default=False)
        overlap = rec.number("dp_comm_overlap", required=False, lo=0, hi=1)
        step_host = rec.number("step_host_us", required=False, lo=0, hi=10**6)
        out.append(RuntimeProfile(rec.text("id"), rec.text("name"), _by_class(rec, "mem_bw_efficiency"),
                                  _by_class(rec, "compute_efficiency"),
                                  rec.number("launch_overhead_us", lo=PER_KERNEL_US_BOUNDS[0],
                                             hi=PER_KERNEL_US_BOUNDS[1]),
                                  rec.number("kernels_per_layer_factor", lo=0.1, hi=20),
                                  rec.number("cuda_context_gb", lo=0, hi=16), rec.text("source"),
                                  rec.number("host_us_per_kernel", required=False, lo=PER_KERNEL_US_BOUNDS[0],
                                             hi=PER_KERNEL_US_BOUNDS[1]) or 0.0,
                                  rec.number("prefill_chunk_tokens", required=False, lo=1, hi=10**7, integer=True)
                                  or 0, _gemv(rec), overlap or 0.0,
                                  rec.text("dp_comm_overlap_source", required=overlap is not None) or "", *_cpu(rec),
                                  step_host or 0.0, rec.text("step_host_source", required=step_host is not None) or "",
                                  rec.flag("fuses_elementwise"), rec.text("fuses_elementwise_source"),
                                  *_tensor_parallel(rec), concat,
                                  rec.text("kv_cache_concat_source", required=concat) or "", None, held,
                                  rec.text("launch_family", required=False) or "",
                                  rec.text("launch_family_source", required="launch_family" in rec.data) or "",
                                  repeated, rec.text("kv_heads_repeated_source", required=bool(repeated)) or "",
                                  only, rec.text("precisions_source", required=bool(only)) or "",
                                  acc16, rec.text("fp16_accumulate_source", required=acc16) or ""))
        out[-1] = replace(out[-1], **_jobs(rec), **_batch_waves(rec), **_score_gemms(rec), **_heads_grid(rec),
                          prompt_eras=parse_prompt_gemm(rec), expert_loop=_expert_loop(rec), **_host_sync(rec),
                          **_eager_prefill(rec), rotary_sync=parse_rotary_sync(rec), **_ungraphed(rec))
    unique_ids(path, (r.id for r in out))
    _check_families(path, out)
    tuned = load_tuned(tuned_path, [r.id for r in out]) if tuned_path is not None else {}
    custom = _custom_allreduce([r.id for r in out]) if Path(path) == RUNTIMES_FILE else {}
    return Runtimes(tuple(replace(r, tuned=_with_family(r, tuned), custom_allreduce=custom.get(r.id)) for r in out))


def _ungraphed(rec: Record) -> dict:
    """The optional `ungraphed` block: {launch_overhead_us: GPU gap per kernel launched on a stream, us;
    host_us_per_kernel: host CPU per launch, us; source}, what a run without CUDA graphs costs (with_ungraphed)."""
    if rec.raw("ungraphed", required=False) is None:
        return {}
    sub = rec.child("ungraphed")
    sub.check_keys(("launch_overhead_us", "host_us_per_kernel", "source"))
    lo, hi = PER_KERNEL_US_BOUNDS
    return {"ungraphed_launch_us": sub.number("launch_overhead_us", lo=lo, hi=hi),
            "ungraphed_host_us": sub.number("host_us_per_kernel", lo=lo, hi=hi),
            "ungraphed_source": sub.text("source")}


def _eager_prefill(rec: Record) -> dict:
    """The optional `prefill_host_us_per_kernel` (CPU per counted kernel of a prompt pass the runtime launches
    eagerly while it replays its decode steps as CUDA graphs, us) with its `prefill_host_source`."""
    us = rec.number("prefill_host_us_per_kernel", required=False, lo=PER_KERNEL_US_BOUNDS[0],
                    hi=PER_KERNEL_US_BOUNDS[1])
    if us is None:
        return {}
    graphed = rec.number("prefill_graph_max_tokens", required=False, lo=0, hi=MAX_GRAPHED_TOKENS, integer=True)
    return {"prefill_host_us_per_kernel": us, "prefill_host_source": rec.text("prefill_host_source"),
            "prefill_graph_max_tokens": int(graphed or 0)}


def _score_gemms(rec: Record) -> dict:
    """The optional `score_gemms_on` (attention backend ids) with the rate their GEMMs read the cache at,
    `score_gemm_kv_read` (a fraction of the streaming rate), and `score_gemm_source`."""
    on = rec.strings("score_gemms_on", required=False)
    if not on:
        return {}
    return {"score_gemms_on": tuple(on), "score_gemm_kv_read": rec.number("score_gemm_kv_read", lo=0.05, hi=1.0),
            "score_gemm_source": rec.text("score_gemm_source")}


def _heads_grid(rec: Record) -> dict:
    """The optional `decode_heads_grid_on` (attention backend ids whose decode kernel has no split along the keys)
    with its `decode_heads_grid_source`."""
    on = rec.strings("decode_heads_grid_on", required=False)
    if not on:
        return {}
    return {"decode_heads_grid_on": tuple(on), "decode_heads_grid_source": rec.text("decode_heads_grid_source")}


def _custom_allreduce(ids: list[str], path: str | Path = CUSTOM_ALLREDUCE_FILE) -> dict[str, CustomAllReduce]:
    """data/custom_allreduce.yaml's runtimes, each naming a runtime of data/runtimes.yaml."""
    custom = load_custom_allreduce(path)
    for rid in custom:
        if rid not in ids:
            near = suggest(rid, ids, 1)
            raise DataFileError(path, f"'{rid}'", "id", "not a runtime of data/runtimes.yaml"
                                + (f" (did you mean '{near[0]}'?)" if near else ""))
    return custom


def _check_families(path: str | Path, profiles: list[RuntimeProfile]) -> None:
    """A launch family names another runtime that has none itself (one step, no chains)."""
    by_id = {r.id: r for r in profiles}
    for i, r in enumerate(profiles):
        fam = by_id.get(r.launch_family) if r.launch_family else None
        if r.launch_family and (fam is None or fam.launch_family or fam.id == r.id):
            raise Record.of(path, i, {"id": r.id}).fail(
                "launch_family", "expected the id of another runtime that has no launch_family itself")


def _with_family(r: RuntimeProfile, tuned: dict[str, Tuned]) -> Tuned | None:
    """The runtime's tuned values, its LAUNCH_PARAMS taken from its launch family's tuning (when that has them)."""
    own, fam = tuned.get(r.id), tuned.get(r.launch_family) if r.launch_family else None
    borrowed = tuple((n, v) for n, v in (fam.values if fam else ()) if n in LAUNCH_PARAMS)
    if not borrowed:
        return own
    kept = tuple((n, v) for n, v in (own.values if own else ()) if n not in LAUNCH_PARAMS)
    if kept:  # tuned on its own rows too: both sets of rows stand behind the values
        return Tuned(kept + borrowed, own.rows + fam.rows, tuple(sorted(set(own.sources) | set(fam.sources))),
                     own.day)
    return replace(fam, values=borrowed, runtime=r.launch_family)

