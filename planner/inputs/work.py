"""What a model does in one step, in the terms the engine times and sizes it by.

OpGroup: FLOPs and DRAM bytes of one kind of work (linear layers, attention, elementwise) in one step, affine in
the KV position p of a decode step (work(p) = a + b * p; b = 0 outside decode), or capped at a position (a + b *
min(p, cap_pos): a sliding window). MemoryItem: one consumer of GPU
memory with its formula. Setup: how the model runs (precision, KV-cache dtype, attention backend, tensor-parallel
and FSDP degrees, whether the runtime fuses elementwise ops). Model profiles (planner.inputs.models) produce these;
the engine consumes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from planner.base.schema import CachedHash
from planner.base.units import BYTES_PER_GB
from planner.inputs.catalog import ALU_PATH
from planner.inputs.custom_allreduce import CustomAllReduce
from planner.inputs.precisions import PARTIAL_SCOPES, AttentionBackend, KVDtype, Precision, QuantKernel
from planner.inputs.prompt_gemm import AttentionKernel, PromptEra, PromptPath

# The least GPU time a kernel that moves a few kB takes from its first block's start to its last block's end (a
# norm or residual add over one token's hidden vector: launch of its blocks, a DRAM round trip or two for its
# inputs, a block reduction, the write; the gap to the next kernel is apart: the runtime's launch_overhead_us).
# Decode-path durations measured in Nsight/CUDA-event profiles: a residual add ~1.5 us and a Transformer Engine
# RMSNorm ~2.9 us per decode step (NVIDIA/Megatron-LM PR #6463, 2026-08-11), a gated RMSNorm at batch 1 1.90 us
# (lightseekorg/tokenspeed PR #1154, 2026-08-19), RMSNorm kernels over 4 tokens 0.86-1.54 us (Neroued/ninfer PR
# #150, 2026): 0.9-2.9 us, 1.5 us taken. The excerpts read do not all name the GPU (engines of the Hopper and
# Blackwell era); no A100 figure was found, so one value stands for every NVIDIA generation (not sized per one).
SMALL_KERNEL_US = 1.5
ACTIVATION_PATHS = ("fp32", "tf32", "fp16", "bf16")  # dtypes activations (and attention) can run in
# A backward pass costs about two forwards: gradients w.r.t. inputs and w.r.t. weights (Kaplan et al. 2020: 6N
# training FLOPs per token vs 2N forward).
BACKWARD_FORWARD_RATIO = 2.0
# Eager PyTorch launches 2.5 kernels for each kernel of a fused block (data/runtimes.yaml, pytorch-eager's
# kernels_per_layer_factor; tests/inputs/test_runtimes.py keeps the two equal). Profiles that count eager ATen ops
# (generic formulas, traces) divide by it to state kernels in the fused units every runtime's factor multiplies.
EAGER_KERNELS_PER_FUSED = 2.5


def forward_equivalents(checkpointing: bool) -> float:
    """Forward passes' worth of work in one training micro-step: forward + backward (+ recomputed forward)."""
    return 1.0 + BACKWARD_FORWARD_RATIO + (1.0 if checkpointing else 0.0)


def grid_rate_factor(bw_factor, grid_read, share):
    """The fraction of the DRAM rate a group's bytes move at when its kernel's read (weight grid_read in 1 /
    bw_factor) runs on `share` of the SMs (OpGroup.grid_blocks / SMs, at most 1): 1 / (1 / bw_factor + grid_read x
    (1 / share - 1)). Floats or numpy arrays alike (the catalog sweep)."""
    return 1.0 / (1.0 / bw_factor + grid_read * (1.0 / share - 1.0))


class OpGroup(NamedTuple):
    """Work of one kind in one step: FLOPs and bytes as a + b * p (p = KV position; b = 0 outside decode).

    A NamedTuple rather than a frozen dataclass: as immutable, and built ~5x faster (a frozen dataclass sets each
    field through object.__setattr__), which the catalog sweep does a thousand times per page change."""

    name: str
    flops: float
    bytes: float
    compute_path: str
    formula: str
    flops_per_pos: float = 0.0
    bytes_per_pos: float = 0.0
    rate_factor: float = 1.0  # x the achieved FLOP/s: an attention kernel's speed vs FlashAttention-2 (the reference)
    # (compute-capability major, fraction): on a GPU of that generation the group's FLOP rate is this fraction of the
    # datasheet peak (a fused attention kernel, where FlashAttention-2's rate is published), in place of the matmul
    # ceiling x runtime factor x rate_factor; () or another generation: the ceiling applies
    peak_fractions: tuple[tuple[int, float], ...] = ()
    # The GEMMs the FLOPs run as, (M, N, K, count) each: M rows (tokens), N x K weights, `count` times per step. The
    # engine's shape efficiency (planner.engine.gemm) weighs them by FLOPs; () = shapes unknown or not GEMMs
    # (attention kernels, elementwise work, formula-only profiles): the GPU's matmul ceiling applies as it is.
    gemms: tuple[tuple[int, int, int, float], ...] = ()
    # A quantized kernel library's own work per step beyond the model's kernels_per_forward (QuantKernel): kernel
    # launches, and host dispatches in eager kernel units (its launches plus its Python glue)
    launches: float = 0.0
    host_kernels: float = 0.0
    # GPU seconds per step the group's kernels take beyond their FLOPs and bytes (a decode step's attention calls:
    # AttentionBackend.decode_latency_us each); added to the step's GPU time, not overlapped (a kernel's own latency)
    latency_s: float = 0.0
    # Instructions of a pipelined quantized kernel (precisions.py, above UNPACK_MODES) that unpack this group's
    # weights inside the same kernel, as (compute path, FLOP-equivalents) pairs: they join the group's compute side,
    # which the weight stream then hides (fold_pipelined); () for everything else
    alu: tuple[tuple[str, float], ...] = ()
    # this group's instructions run under the weight stream of the group listed before it (fold_pipelined moves them)
    pipelined: bool = False
    # > 0: the per-position terms stop growing at this KV position (work(p) = a + b * min(p, cap_pos)): a sliding-window
    # layer's decode step reads min(p, window) keys; 0 = no cap
    cap_pos: int = 0
    # its 16-bit GEMMs accumulate in fp16 (Setup.accumulate16: a library kernel's or the runtime's): GeForce cards
    # run them at GPU.fp16_accumulate_speedup x the catalog's fp32-accumulate rate
    accumulate16: bool = False
    # kernels a step of this group launches that each move little (norms, residual adds, the activation, rotary), in
    # fused-block units as Phase.kernels: each runs at least the GPU's minimum kernel duration (roofline.
    # SMALL_KERNEL_US), so the group's memory side per step is at least these x the runtime's kernels_per_layer_factor
    # x that duration; 0 = no floor (a group whose kernels stream enough bytes to reach the bandwidth)
    small_kernels: float = 0.0
    # the fraction of the runtime's DRAM rate this group's bytes move at (1: streaming kernels); below 1 where its
    # kernels read slower than a stream (a decode step's score GEMMs over the KV cache, AttentionBackend.
    # decode_kv_read_fraction, blended with the group's copies)
    bw_factor: float = 1.0
    # > 0: its kernel reads on this many thread blocks per step and none along the keys (a decode attention kernel
    # without split-KV: batch x heads / tp, Setup.heads_grid), so on a GPU with more SMs than blocks its read runs at
    # blocks / SMs of its rate (grid_rate_factor); grid_read: that read's weight in 1 / bw_factor (its share of the
    # group's bytes over its own rate fraction); 0 = the kernel fills the GPU
    grid_blocks: float = 0.0
    grid_read: float = 0.0
    # > 0: its GEMMs run at this fraction of the matmul ceiling, measured on the path's own kernel (PromptPath.
    # fraction: llama.cpp's MMQ, cuBLAS's SGEMM), in place of the runtime's compute_efficiency
    ceiling_fraction: float = 0.0
    # the host waits for this group's kernels after every call (a quantized library's device synchronize,
    # QuantKernel.synchronizes): their GPU time cannot hide the host's dispatch of the step's other kernels
    host_synced: bool = False
    # the share of its GPU time the host waits for every pass, where it waits after part of it (the q/k/v
    # projections before transformers' per-layer rotary sync, Setup.rotary_sync_types); host_synced: all of it
    synced_share: float = 0.0
    # per step, device-to-host round trips the host waits on (a quantized library's synchronize per call; a mixture
    # of experts' Python loop over every expert, Setup.expert_loop: one per expert visited) and the operators that loop
    # dispatches on experts no token was routed to; serial host time (roofline.host_wait_seconds)
    host_syncs: float = 0.0
    idle_expert_ops: float = 0.0

    @property
    def synced_fraction(self) -> float:
        """The share of its GPU time the host waits for every pass (host_synced: all; else synced_share)."""
        return 1.0 if self.host_synced else self.synced_share


Gemm = tuple[int, int, int, float]  # (M rows, N, K, count per step)

ALL_REDUCE = "all-reduce"
ALL_GATHER = "all-gather"


class Collective(NamedTuple):
    """`count` collectives of one kind (ALL_REDUCE, ALL_GATHER) per step, each over a `message_bytes` tensor (the
    whole result, as every GPU holds it afterwards); the engine times them over the GPUs' link
    (planner.engine.collectives)."""

    kind: str
    message_bytes: float
    count: float


def scaled_gemms(gemms: tuple[Gemm, ...], times: float) -> tuple[Gemm, ...]:
    """The same GEMMs run `times` times as often."""
    return tuple((m, n, k, c * times) for m, n, k, c in gemms)


def training_gemms(forward: tuple[Gemm, ...], checkpointing: bool) -> tuple[Gemm, ...]:
    """A training micro-step's GEMMs from the forward ones: each Y = X W (M x N, inner K) runs again in backward as
    dX = dY W^T (M x K, inner N) and dW = X^T dY (K x N, inner M) (the 2x-forward backward of Kaplan et al. 2020);
    checkpointing recomputes the forward once more."""
    out: list[Gemm] = []
    for m, n, k, c in forward:
        out += [(m, n, k, c * (2 if checkpointing else 1)), (m, k, n, c), (k, n, m, c)]
    return tuple(out)


class MemoryItem(NamedTuple):
    """One memory consumer in decimal GB; `formula` is formatted on demand (estimates are built in a hot loop)."""

    name: str
    gb: float
    template: str
    args: tuple = ()

    @property
    def formula(self) -> str:
        return self.template.format(*self.args)


@dataclass(frozen=True, eq=True)
class Setup(CachedHash):
    """How a model runs: resolved precision, KV-cache dtype and attention backend (on one GPU, the kernel it runs as;
    before a GPU is known, the user's choice), and how it is split."""

    __hash__ = CachedHash.__hash__  # dataclass would otherwise regenerate it
    precision: Precision
    kv_dtype: KVDtype
    attention: AttentionBackend
    tp: int = 1  # tensor-parallel degree: weights, heads and FLOPs split over tp GPUs
    shard: int = 1  # FSDP/ZeRO-3 degree: training states sharded over `shard` GPUs
    # ZeRO stage 1 or 2 (jobs.ZERO_STAGES; 0 = none): optimizer states (1), and gradients (2), partitioned over
    # zero_gpus GPUs while every GPU keeps the whole 16-bit weights (DeepSpeed's layout)
    zero_stage: int = 0
    zero_gpus: int = 1
    # training's model-parallel layout beside tp (planner.inputs.layouts): pipeline stages, virtual stages per GPU
    # (interleaved 1F1B) and context-parallel degree; the engine splits a micro-step's work over them
    pp: int = 1
    vpp: int = 1
    cp: int = 1
    prefill_chunk: int = 0  # prompt tokens per prefill pass (the runtime's micro-batch); 0 = the whole prompt
    # The runtime's own CUDA-core GEMV for quantized weights (llama.cpp's mul_mat_vec_q): used for passes of at most
    # gemv_max_tokens tokens (0 = none), at gemv_ops_per_weight_token integer instructions per weight per token; a
    # precision with its library's kernels (Precision.kernel) brings its own (gemv_tokens, gemv_ops)
    gemv_max_tokens: int = 0
    gemv_ops_per_weight_token: float = 0.0
    gemv_pipelined: bool = False  # the runtime's GEMV runs its instructions under its weight loads
    unpack_pipelined: bool = False  # the runtime's fused kernel for the precision does (Precision.pipelined_on)
    fused_elementwise: bool = False  # the runtime runs chains of elementwise ops as one kernel (False: eager PyTorch)
    lm_head_split: bool = True  # the runtime's tensor parallelism splits the LM head too (False: each GPU holds it all)
    kv_concat: bool = False  # a decode step copies the whole KV cache to append to it (RuntimeProfile.kv_cache_concat)
    # a decode step copies the cached K and V repeated to every query head before attending, and attention reads that
    # copy (RuntimeProfile.kv_heads_repeated_on: Hugging Face's repeat_kv)
    kv_repeat: bool = False
    # the fraction of the streaming DRAM rate at which a decode step's attention reads the cache it attends: below 1
    # where the runtime runs it as batched GEMMs of one query row (RuntimeProfile.score_gemms_on)
    kv_read_fraction: float = 1.0
    # the decode attention kernel launches one thread block per sequence and query head, none along the keys
    # (RuntimeProfile.decode_heads_grid_on): OpGroup.grid_blocks
    heads_grid: bool = False
    custom_ar: CustomAllReduce | None = None  # the runtime's own all-reduce for small messages (None: NCCL only)
    # the runtime's fused MLP multiplies the gate and up projections in the precision's GEMV whatever the rows
    # (QuantKernel.mlp_gemv_on: AutoAWQ's fused QuantLlamaMLP)
    mlp_gemv: bool = False
    # the runtime's fp16 GEMMs on unquantized weights accumulate in fp16 (RuntimeProfile.fp16_accumulate: llama.cpp)
    fp16_accumulate: bool = False
    # the runtime's prompt GEMM era (RuntimeProfile.prompt_era: llama.cpp by build) and the path it gives this
    # precision on the GPU at hand (precision_on resolves it per compute capability); None: the generic model
    prompt_era: PromptEra | None = None
    prompt_path: PromptPath | None = None
    # the runtime's own fused attention kernel a prompt pass runs on that GPU (PromptEra.attention_on: llama.cpp's
    # wmma / mma FlashAttention by build and compute capability); None: the attention backend's own rate
    prompt_attention: AttentionKernel | None = None
    prompt_attention_major: int = 0  # the compute-capability major it was resolved for (OpGroup.peak_fractions)
    # bytes per gradient element FSDP's reduce-scatter sends (Training.grad_reduce_bytes; 0: the compute dtype's)
    grad_reduce_bytes: float = 0.0
    # ZeRO-1 synchronized as InternLM's HybridZeroOptimizer (Training.zero1_tensors_per_layer; 0: DeepSpeed's and
    # Megatron's reduce-scatter + all-gather): gradients all-reduced over the data-parallel ranks, then one broadcast
    # per rank that owns parameters, each tensor owned whole, this many tensors per layer (planner.engine.phases)
    zero1_tensors_per_layer: int = 0
    # the stack's tensor parallel gathers each column-parallel projection's input apart (Training.tp_gather)
    tp_gather_per_projection: bool = False
    # its sequence parallel shards batch-first activations on their sequence (Training.sp_shard_dim 1): every gather
    # and reduce-scatter rearranges the tensor it moves (planner.engine.train_layout.sp_rearranging_copies)
    sp_rearranges: bool = False
    # training: the runtime runs torch.autocast over float32 weights (Training.autocast_fp32_weights), and its
    # optimizer as torch.optim's foreach kernels rather than one fused kernel (Training.optimizer_kernels)
    autocast_fp32_weights: bool = False
    foreach_optimizer: bool = False
    # training under an FP8 recipe with FP8 primary weights (Training.fp8_weights): the layers' weights held in FP8
    fp8_weights: bool = False
    # training: the communication the runtime overlaps with compute beyond DP gradients (Training.comm_overlap)
    comm_overlap: tuple[str, ...] = ()
    # the runtime's MoE layers loop over every expert in Python with one device-to-host sync each, dispatching
    # idle_expert_ops operators on an expert no token was routed to (RuntimeProfile.expert_loop)
    expert_loop: bool = False
    idle_expert_ops: float = 0.0
    # model types (config.json model_type) whose FlashAttention-2 class syncs the host once a layer in the runtime's
    # release (RuntimeProfile.rotary_sync): the decoder of such a type charges it (Decoder.rotary_sync_costs)
    rotary_sync_types: tuple[str, ...] = ()

    @property
    def lm_head_tp(self) -> int:
        """GPUs the LM head's vocabulary is split over: tp, or 1 when the runtime keeps it whole on every GPU."""
        return self.tp if self.lm_head_split else 1

    def prefill_chunks(self, prompt: int) -> int:
        """Passes a prompt of `prompt` tokens is prefilled in."""
        return -(-prompt // self.prefill_chunk) if self.prefill_chunk else 1

    @property
    def gemv_tokens(self) -> int:
        """Most tokens per pass the quantized GEMV takes: the precision's own library kernel's (bitsandbytes,
        exllama), else the runtime's; 0 = no GEMV."""
        k = self.precision.kernel
        return k.gemv_max_tokens if k is not None else self.gemv_max_tokens

    @property
    def gemv_ops(self) -> float:
        """Integer-slot instructions per weight per token of that GEMV: the library kernel's, else the runtime's
        (measured on one format) times the format's Precision.gemv_ops_factor."""
        k = self.precision.kernel
        if k is not None:
            return k.gemv_ops_per_weight_token
        return self.gemv_ops_per_weight_token * self.precision.gemv_ops_factor

    def quantized_gemv(self, rows: int) -> bool:
        """A pass over `rows` tokens multiplies the quantized weights in a CUDA-core GEMV kernel."""
        return bool(self.precision.dequant_ops_per_weight) and 0 < rows <= self.gemv_tokens

    def prompt_gemm(self, rows: int) -> PromptPath | None:
        """The runtime's prompt GEMM path for a pass over `rows` tokens (Setup.prompt_path), None where the pass takes
        the GEMV (at most the runtime's GEMV tokens: llama.cpp's mul_mat_vec kernels for F16 too) or there is none."""
        if self.prompt_path is None or rows <= self.gemv_max_tokens:
            return None
        return self.prompt_path.for_rows(rows)

    @property
    def prompt_path_switch_tokens(self) -> int:
        """Most tokens per pass that take the prompt path's small-pass path (PromptPath.small_path; 0: none): the
        work changes its shape there, as at the GEMV's bound."""
        p = self.prompt_path
        return p.small_max_tokens if p is not None and p.small_path is not None else 0

    def prompt_attention_kernel(self, rows: int) -> AttentionKernel | None:
        """The runtime's own fused attention kernel for a pass over `rows` tokens: only with a fused backend (no score
        matrix), on a pass that takes the prompt GEMM (more rows than the runtime's GEMV: llama.cpp's vector
        FlashAttention kernel serves those), and where the runtime's era names one for this GPU."""
        if self.prompt_attention is None or self.attention.scores_materialized or self.prompt_gemm(rows) is None:
            return None
        return self.prompt_attention

    def pipelined(self, rows: int) -> bool:
        """A pass over `rows` tokens unpacks the quantized weights in a kernel that hides its instructions under its
        own weight stream: the GEMV's flag (the library's, else the runtime's), or for a larger pass the precision's
        fused kernel under this runtime's (Precision.pipelined_on); never a 16-bit buffer, a kernel of its own."""
        if self.quantized_gemv(rows):
            k = self.precision.kernel
            return k.gemv_pipelined if k is not None else self.gemv_pipelined
        return self.unpack_pipelined and not self.buffered(rows)

    def buffered(self, rows: int) -> bool:
        """A pass over `rows` tokens dequantizes the weights into a 16-bit copy in DRAM that a cuBLAS GEMM reads
        (the precision's kernel unpacks through a buffer, and the pass is too large for its GEMV)."""
        k = self.precision.kernel
        return (k is not None and k.unpack == "buffer" and bool(self.precision.dequant_ops_per_weight)
                and not self.quantized_gemv(rows))

    def own_gemm(self, rows: int) -> QuantKernel | None:
        """The precision's library kernel when its own tensor-core GEMM multiplies a pass over `rows` tokens (not its
        GEMV, not a 16-bit buffer and cuBLAS); None otherwise."""
        k = self.precision.kernel
        if k is None or not self.precision.dequant_ops_per_weight or self.quantized_gemv(rows) or self.buffered(rows):
            return None
        return k

    def linear_rate(self, rows: int) -> float:
        """The linear layers' tensor-core rate factor in a pass over `rows` tokens: the library GEMM's own fraction of
        the matmul ceiling (QuantKernel.mma_fraction) when it multiplies the pass, else 1."""
        k = self.own_gemm(rows)
        return k.mma_fraction if k is not None else 1.0

    def accumulate16(self, rows: int) -> bool:
        """A pass over `rows` tokens multiplies its weights in a 16-bit GEMM that accumulates in fp16: the precision's
        library kernel says so (exllama's cublasHgemm after its reconstruct) and the pass does not take its GEMV, or
        the runtime's own fp16 GEMMs do on unquantized fp16 weights (llama.cpp's cuBLAS calls)."""
        k, p = self.precision.kernel, self.precision
        if k is not None:
            return k.accumulate == "fp16" and bool(p.dequant_ops_per_weight) and not self.quantized_gemv(rows)
        return self.fp16_accumulate and p.compute_path == "fp16" and not p.dequant_ops_per_weight

    def linear_note(self, rows: int) -> str:
        """The linear layers' formula text for what linear_rate and accumulate16 change in a pass ('' if nothing)."""
        k, note = self.own_gemm(rows), ""
        if k is not None and k.mma_fraction != 1.0:
            note += (f"; MMAs at {k.mma_fraction:g} of the matmul ceiling ({self.precision.id}'s own GEMM, "
                     f"{k.m_tile or 'whole-pass'}-row tiles)")
        if self.accumulate16(rows):
            note += "; fp16 accumulation (GeForce cards run it at twice the catalog's fp32-accumulate rate)"
        return note

    @property
    def attention_path(self) -> str:
        """Attention and elementwise work run in the activation dtype; quantized weights don't change it."""
        p = self.precision
        return p.compute_path if p.compute_path in ACTIVATION_PATHS else "fp16"


PROMPT_SCALE_GROUP = "prompt GEMM scaling"  # MMQ's CUDA-core work after its MMAs (PromptPath.scale_flops)
ATTENTION_GROUP = "attention"  # a pass's attention: its projections' bytes, its scores' FLOPs (quadratic in a prompt)
DEQUANT_GROUP = "dequantize weights"  # tensor-core kernels: unpack once per pass
GEMV_GROUP = "quantized GEMV (unpack + dot)"  # a runtime's CUDA-core GEMV: unpack and multiply per token
SPLIT_K_GROUP = "split-K partial outputs"  # a library GEMM's partial sums, written and read back


def _gemv_group(weights: float, s: Setup, rows: int, what: str) -> OpGroup:
    """The GEMV group of `weights` quantized weights multiplied in a CUDA-core GEMV, one token at a time."""
    per = s.gemv_ops
    k = s.precision.kernel
    piped = k.gemv_pipelined if k is not None else s.gemv_pipelined
    factor = s.precision.gemv_ops_factor
    scaled = (f" (the runtime's {s.gemv_ops_per_weight_token:g} x {factor:g} for {s.precision.id}'s longer dot "
              "product)" if k is None and factor != 1.0 else "")
    return OpGroup(GEMV_GROUP, 2.0 * per * rows * weights, 0.0, ALU_PATH,
                   f"FLOP-equivalents = 2 x {per:g} integer instructions per weight per token{scaled} x {rows} "
                   f"token(s) x {weights:,.0f} quantized weights ({what}: unpack and multiply per weight per token)",
                   pipelined=piped)


def dequant_groups(quantized_weights: float, s: Setup, rows: int = 1) -> tuple[OpGroup, ...]:
    """The CUDA-core work of weight-only quantized matmuls in one pass over `rows` tokens; () for precisions that
    multiply their stored format directly.

    Tensor-core kernels (Marlin, tinygemm, llama.cpp's MMQ) unpack and scale every weight once per pass before the
    fp16 multiply: dequant_ops_per_weight instructions at the fp32 rate (one per core per clock = fp32 FLOPs / 2).
    A CUDA-core GEMV (Setup.quantized_gemv: llama.cpp's mul_mat_vec_q up to 8 tokens, exllama's q4_matmul up to 7,
    bitsandbytes' gemv_4bit for 1) instead unpacks each weight again for every token and multiplies it there:
    gemv_ops_per_weight_token x rows integer instructions per weight, at the GPU's 32-bit integer rate (ALU_PATH), so
    its time grows with the tokens per pass. A kernel that unpacks through a buffer (Setup.buffered) is a kernel of
    its own: it reads the stored weights and writes a 16-bit copy of each (its GEMM then reads that copy: the linear
    group's bytes), its instructions counted at the integer rate as the GEMVs' are.
    A library GEMM that tiles the pass by QuantKernel.m_tile rows (AutoAWQ's) unpacks the weights once per tile (the
    empty rows of a decode step's tile are the GEMM shape model's tile padding: planner.engine.gemm); a split-K one
    writes and reads back split_k 16-bit partial outputs (split_k_groups).
    A pipelined kernel's group (Setup.pipelined) is marked so: fold_pipelined moves its instructions onto the compute
    side of the matmul group listed just before it, whose weight stream hides them; any other is a group of its own,
    whose time adds to the stream's."""
    path = s.prompt_gemm(rows)
    if path is not None:
        return prompt_copy_groups(quantized_weights, s, path)
    ops = s.precision.dequant_ops_per_weight
    if not ops or not quantized_weights:
        return ()
    piped = s.pipelined(rows)
    if s.quantized_gemv(rows):
        return (_gemv_group(quantized_weights, s, rows, f"a CUDA-core GEMV, <= {s.gemv_tokens} tokens per pass"),)
    p = s.precision
    if s.buffered(rows):  # a kernel of its own, counted in integer-slot instructions as the GEMVs are
        return (OpGroup(DEQUANT_GROUP, 2.0 * ops * quantized_weights,
                        quantized_weights * (p.weight_bytes + p.act_bytes), ALU_PATH,
                        f"FLOP-equivalents = 2 x {ops:g} integer-slot instructions x {quantized_weights:,.0f} "
                        f"quantized weights; "
                        f"bytes = read {p.weight_bytes:g} B + write a {p.act_bytes:g} B copy per weight ({p.id}: "
                        f"dequantized into a 16-bit buffer, once per pass, for a cuBLAS GEMM)"),)
    k = s.own_gemm(rows)
    if k is not None and k.m_tile:  # unpacked again for each tile of m_tile rows
        tiles = -(-rows // k.m_tile)
        return (OpGroup(DEQUANT_GROUP, 2.0 * ops * tiles * quantized_weights, 0.0, ALU_PATH,
                        f"FLOP-equivalents = 2 x {ops:g} integer-slot instructions x {tiles} tile(s) of "
                        f"{k.m_tile} rows x {quantized_weights:,.0f} quantized weights ({p.id}: its GEMM unpacks "
                        f"the weights again for every tile of {k.m_tile} rows)", pipelined=piped),)
    return (OpGroup(DEQUANT_GROUP, 2.0 * ops * quantized_weights, 0.0, "fp32",
                    f"FLOP-equivalents = 2 x {ops:g} instructions x {quantized_weights:,.0f} quantized weights "
                    f"({p.id}: unpack, convert, scale), once per pass", pipelined=piped),)


def prompt_copy_groups(weights: float, s: Setup, path: PromptPath) -> tuple[OpGroup, ...]:
    """The kernel a runtime's prompt GEMM path runs before its GEMM (Setup.prompt_gemm): `weights` weights
    dequantized (a quantized format: its dequant_ops_per_weight) or converted (F16: one instruction each) into a
    copy of path.buffer_bytes per weight, once per pass, reading the stored bytes and writing the copy; () for a path
    that multiplies the stored blocks (MMQ: its unpacking is inside the kernel's measured rate)."""
    p = s.precision
    if not path.copies(bool(p.dequant_ops_per_weight), p.weight_bytes) or not weights:
        return ()
    ops = p.dequant_ops_per_weight or 1.0
    what = "dequantized" if p.dequant_ops_per_weight else "converted"
    return (OpGroup(DEQUANT_GROUP, 2.0 * ops * weights, weights * (p.weight_bytes + path.buffer_bytes), ALU_PATH,
                    f"FLOP-equivalents = 2 x {ops:g} integer-slot instructions x {weights:,.0f} weights; bytes = read "
                    f"{p.weight_bytes:g} B + write a {path.buffer_bytes:g} B copy per weight ({path.id}: {what} "
                    f"into that copy once per pass, which the GEMM reads)"),)


def mlp_gemv_groups(gate_up_weights: float, s: Setup, rows: int) -> tuple[OpGroup, ...]:
    """The GEMV work of a fused MLP that multiplies its gate and up projections (`gate_up_weights` quantized weights
    per GPU) in the precision's GEMV whatever the rows (Setup.mlp_gemv: AutoAWQ's QuantLlamaMLP); () when the pass
    takes the GEMV anyway (dequant_groups counts it) or the runtime does not do this."""
    if not s.mlp_gemv or not gate_up_weights or s.quantized_gemv(rows) or not s.gemv_tokens:
        return ()
    return (_gemv_group(gate_up_weights, s, rows, "the fused MLP's gate and up projections, one token at a time "
                                                  "whatever the rows"),)


def split_k_groups(out_elems: float, s: Setup, rows: int) -> tuple[OpGroup, ...]:
    """The partial outputs of a split-K library GEMM (QuantKernel.split_k) in a pass over `rows` tokens whose linear
    layers write `out_elems` output elements per GPU: split_k 16-bit partials written, then read back and summed
    (torch's sum over the split dimension); () for any other kernel."""
    k = s.own_gemm(rows)
    if k is None or k.split_k <= 1 or not out_elems:
        return ()
    act = s.precision.act_bytes
    return (OpGroup(SPLIT_K_GROUP, k.split_k * out_elems, 2.0 * k.split_k * out_elems * act, s.attention_path,
                    f"bytes = 2 (write, read back) x {k.split_k} partial outputs x {out_elems:,.0f} output elements "
                    f"x {act:g} B ({s.precision.id}: a split-K GEMM, summed in one more kernel per call)"),)


def fold_pipelined(groups: tuple[OpGroup, ...]) -> tuple[OpGroup, ...]:
    """The groups with each pipelined kernel's instructions (OpGroup.pipelined) moved onto the compute side of the
    nearest unpipelined group before it (the matmuls whose weights they unpack: every model lists them right after),
    as OpGroup.alu: the roofline then times that group as the slower of its weight stream and its instructions (MMAs
    plus unpacking), not their sum. The same groups when none is pipelined."""
    if not any(g.pipelined for g in groups):
        return groups
    out: list[OpGroup] = []
    for g in groups:
        if g.pipelined and out:
            host = out[-1]
            out[-1] = host._replace(alu=host.alu + ((g.compute_path, g.flops),),
                                    formula=f"{host.formula}; + {g.name}, pipelined under its weight loads: "
                                            f"{g.formula}")
        else:
            out.append(g)
    return tuple(out)


def call_costs(s: Setup, calls: float, rows: int) -> dict[str, float]:
    """OpGroup fields for the GPU launches and host dispatches (eager kernel units) that `calls` quantized-matmul
    calls of a pass over `rows` tokens add through the precision's library kernels (QuantKernel), and whether the
    host waits for them each call (QuantKernel.synchronizes: one round trip per call); {} when it has none."""
    k = s.precision.kernel
    if k is None or not calls:
        return {}
    return {"launches": calls * k.launches(s.buffered(rows), s.own_gemm(rows) is not None),
            "host_kernels": calls * k.host_kernels_per_call} | (
        {"host_synced": True, "host_syncs": calls} if k.synchronizes else {})


def merge_costs(*costs: dict) -> dict:
    """Sets of OpGroup cost fields (call_costs, a model's expert-loop and rotary-sync costs) as one: counts added,
    flags or-ed, left to right."""
    out: dict = {}
    for b in costs:
        out = out | b | {k: out[k] + b[k] for k in out.keys() & b.keys() if not isinstance(out[k], bool)} | {
            k: out[k] or b[k] for k in out.keys() & b.keys() if isinstance(out[k], bool)}
    return out


def weights_item(params: int, quantized: int, s: Setup) -> MemoryItem:
    """Stored weights per GPU (decimal GB): the quantized matrices at the precision's bytes, the rest (embeddings, LM
    head, norms) at its outside bytes, split over the tensor-parallel GPUs."""
    p = s.precision
    total = quantized * p.weight_bytes + (params - quantized) * p.outside_weight_bytes
    if p.outside_weight_bytes == p.weight_bytes:
        return MemoryItem("weights", total / s.tp / BYTES_PER_GB, "{:,} params x {:g} B / {} GPU(s)",
                          (params, p.weight_bytes, s.tp))
    others = ("the layers' other matrices, embeddings, LM head, norms" if p.quantized_weights in PARTIAL_SCOPES
              else "embeddings, LM head, norms")
    return MemoryItem("weights", total / s.tp / BYTES_PER_GB,
                      "({:,} quantized x {:g} B + {:,} others (" + others + ") x {:g} B) / {} GPU(s)",
                      (quantized, p.weight_bytes, params - quantized, p.outside_weight_bytes, s.tp))
