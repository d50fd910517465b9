"""Precisions, KV-cache dtypes and attention backends (data/precisions.yaml)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.inputs.catalog import COMPUTE_PATHS
from planner.base.schema import (CachedHash, DataFileError, Record, UnknownNameError, load_sections, sm_label,
                                 suggest, unique_ids)
from planner.base.units import FP32_BYTES
from planner.inputs.builds import parse_torch_version

PRECISIONS_FILE = DATA_DIR / "precisions.yaml"


# which weights a precision's weight_bytes applies to: all; the layers' matrices; a mixture of experts' expert matrices;
# the MLPs' matrices (attention's kept 16-bit: Meta's FP8 Llama 3.1 checkpoints)
EXPERTS_SCOPE = "experts"
MLP_SCOPE = "mlp"
QUANTIZED_SCOPES = ("all", "layers", EXPERTS_SCOPE, MLP_SCOPE)
PARTIAL_SCOPES = (EXPERTS_SCOPE, MLP_SCOPE)  # scopes that leave some of the layers' matrices 16-bit
MIN_GEMV_OPS_FACTOR, MAX_GEMV_OPS_FACTOR = 0.1, 16.0  # parser bounds of Precision.gemv_ops_factor
MAX_DEQUANT_OPS = 64  # instructions per weight a dequantizing kernel may spend (4-bit formats need ~5)
# How a quantized kernel multiplies passes too large for its GEMV: 'fused' unpacks the weights in registers inside
# its tensor-core GEMM (Marlin, tinygemm: instructions only); 'buffer' first dequantizes every weight into a 16-bit
# copy in DRAM that a cuBLAS GEMM then reads (bitsandbytes' dequantize_4bit + F.linear, exllama's reconstruct).
UNPACK_MODES = ("fused", "buffer")
# A kernel that unpacks and multiplies quantized weights in the same pass as it streams them (Marlin's multi-stage
# cp.async pipeline, llama.cpp's mul_mat_vec_q) is 'pipelined': its ALU instructions issue while the next weights are
# in flight, so a matmul takes the slower of its weight stream and its instructions; a kernel that is not (or a
# separate dequantize kernel) adds its instructions after the stream. Which kernel is which, each with its source:
# data/precisions.yaml (`pipelined_on`, a kernel's `gemv_pipelined`), data/runtimes.yaml (a GEMV's `pipelined`).
MAX_CALL_KERNELS = 64  # extra launches / host dispatches one quantized matmul call may add
MAX_M_TILE = 1024  # rows of one tile of a quantized GEMM kernel (AutoAWQ's: 16 and 128); a parser cap
MAX_SPLIT_K = 64  # partial outputs a split-K quantized GEMM writes (AutoAWQ's: 8); a parser cap
ACCUMULATE_DTYPES = ("fp32", "fp16")  # what a quantized kernel's 16-bit GEMM accumulates in


@dataclass(frozen=True)
class QuantKernel:
    """A library's own kernels for a quantized matmul, as one call of its Linear module runs them.

    gemv_max_tokens: passes of at most this many tokens (rows) run its CUDA-core GEMV, which unpacks every weight
      again for each token at gemv_ops_per_weight_token 32-bit-integer-slot instructions (0 = no GEMV).
    unpack: larger passes unpack 'fused' in the GEMM's registers or through a 16-bit 'buffer' in DRAM (UNPACK_MODES).
    launches_per_call: GPU kernels one call launches beyond the one an nn.Linear launches (the buffer path adds its
      dequantize kernel on top). host_kernels_per_call: host time of one call beyond nn.Linear's (its Python and
      ctypes work, the launches it dispatches from Python included), in eager kernel dispatches (the runtime's
      host_us_per_kernel each); a launch from inside the library's C++ code costs no Python dispatch.
    gemv_pipelined: its GEMV's unpack and dot-product instructions run under its own weight loads (time = the slower
      of the two), or after them (the sum; the comment above UNPACK_MODES).
    m_tile: its own tensor-core GEMM (unpack 'fused') multiplies a pass in tiles of m_tile rows, each tile unpacking
      the weights again (0 = the pass unpacks them once).
    mma_fraction: that GEMM's tensor-core rate as a fraction of the GPU's matmul ceiling (cuBLAS's, 1.0).
    split_k: that GEMM writes split_k partial outputs in 16-bit and sums them in one more kernel (1 = none).
    mlp_gemv_on: runtimes whose fused MLP multiplies the gate and up projections in its GEMV whatever the rows.
    accumulate: what its 16-bit GEMM accumulates in ('fp16' runs at GPU.fp16_accumulate_speedup: 2x on GeForce).
    synchronizes: every call ends in a device synchronize (torch.cuda.synchronize()): the host waits for the call's
      kernels, so the matmuls' GPU time adds to the host's dispatch instead of running under it.
    """

    gemv_max_tokens: int
    gemv_ops_per_weight_token: float
    unpack: str
    launches_per_call: float
    host_kernels_per_call: float
    source: str
    gemv_pipelined: bool = False
    m_tile: int = 0
    mma_fraction: float = 1.0
    split_k: int = 1
    mlp_gemv_on: tuple[str, ...] = ()
    accumulate: str = "fp32"
    synchronizes: bool = False

    def launches(self, buffered: bool, own_gemm: bool = False) -> float:
        """Extra launches of one call: its own, plus the dequantize kernel when it goes through the buffer, plus the
        partial sums' kernel when its own split-K GEMM multiplies the pass."""
        return (self.launches_per_call + (1.0 if buffered else 0.0)
                + (1.0 if own_gemm and self.split_k > 1 else 0.0))


MAX_CAST_BYTES = 16  # parser cap on the bytes one element of a GEMM input costs an FP8 cast (read or write)


@dataclass(frozen=True)
class Fp8Training:
    """A training recipe that runs the transformer layers' linear GEMMs in FP8 (NVIDIA Transformer Engine).

    gemm_path: the compute path those GEMMs run at, forward and backward (QKV, output projection, MLP; the LM head,
      attention and elementwise work keep the precision's compute_path). cast_read_bytes / cast_write_bytes: bytes
      one element of a GEMM input (activation and weight forward, output gradient backward) costs its cast to FP8:
      the high-precision read(s) and the FP8 writes (the tensor and its transpose). weight_copy_bytes: the FP8
      copies of each layer weight held during a step.
    """

    gemm_path: str
    cast_read_bytes: float
    cast_write_bytes: float
    weight_copy_bytes: float
    source: str

    @property
    def cast_bytes(self) -> float:
        """Bytes one element costs its cast: read plus writes."""
        return self.cast_read_bytes + self.cast_write_bytes


@dataclass(frozen=True)
class WeightOnly:
    """Where a precision without its tensor cores still runs, as weight-only: under `runtimes` on GPUs of compute
    capability min_sm..max_sm, its stored weights are unpacked inside a fused kernel and multiplied at compute_path
    (vLLM's FP8-Marlin for FP8 checkpoints on Ampere), at dequant_ops_per_weight instructions per weight, pipelined
    under the weight stream (Precision.pipelined_on)."""

    runtimes: tuple[str, ...]
    min_sm: tuple[int, int]
    max_sm: tuple[int, int]
    compute_path: str
    dequant_ops_per_weight: float
    kernel_name: str
    source: str

    def covers(self, cc: tuple[int, int] | None, runtime: str | None = None) -> bool:
        """A GPU of compute capability `cc` runs this path (under `runtime`, when one is named)."""
        return (cc is not None and self.min_sm <= cc <= self.max_sm
                and (runtime is None or runtime in self.runtimes))


@dataclass(frozen=True)
class RuntimePath:
    """Where a runtime runs a precision through its own kernels on other terms than the precision's default: under
    `runtimes` its compute-capability floor is min_sm and its matmuls compute at compute_path (ggml's MXFP4 kernels
    in llama.cpp: dp4a int8 dot products and fp16 cuBLAS from SM61, where vLLM's and transformers' MXFP4 paths
    dequantize into bf16 and need SM80); its unpack, prompt-GEMM path and decode GEMV are the runtime's as for its
    other quantized formats."""

    runtimes: tuple[str, ...]
    min_sm: tuple[int, int]
    compute_path: str
    kernel_name: str
    source: str


@dataclass(frozen=True)
class MmaPath:
    """Where a runtime's kernel for a precision multiplies on tensor cores through an older instruction than the
    GPU's own: under `runtimes` on GPUs of compute capability min_sm..max_sm its quantized weights' GEMMs run at
    `fraction` of the GPU's matmul ceiling (vLLM's Marlin MXFP4 MoE on Hopper issues Ampere's warp-level mma.sync,
    whose throughput there is below the warpgroup wgmma that cuBLAS, and so the measured ceiling, uses)."""

    runtimes: tuple[str, ...]
    min_sm: tuple[int, int]
    max_sm: tuple[int, int]
    fraction: float
    kernel_name: str
    source: str

    def covers(self, cc: tuple[int, int] | None, runtime: str) -> bool:
        """A GPU of compute capability `cc` under `runtime` runs this path."""
        return cc is not None and self.min_sm <= cc <= self.max_sm and runtime in self.runtimes


@dataclass(frozen=True)
class Precision:
    """A numeric format: the tensor-core path matmuls run at, bytes per weight and per activation element.

    quantized_weights 'layers': weight_bytes applies to the transformer layers' matrices only; embeddings, LM head and
    norms stay in the activation dtype (AWQ, GPTQ, FP8 and W8A8 checkpoints); 'experts': the experts' matrices only,
    attention and routers in the activation dtype too (gpt-oss's MXFP4); 'mlp': every MLP's matrices (experts, shared
    MLP and router included), attention's in the activation dtype (Meta's FP8 Llama 3.1 405B).
    dequant_ops_per_weight: CUDA-core instructions a weight-only kernel spends unpacking and scaling each weight, once
    per weight per pass.
    runtimes: the only runtimes that run the format (a GGUF file needs llama.cpp); () = any.
    kernel: the library kernels it runs with (bitsandbytes, exllama), when they are not the runtime's own.
    pipelined_on: the runtimes whose fused kernel for it hides its unpack work under the weight stream (vLLM's
      Marlin); under any other the unpack adds to the stream (the comment above UNPACK_MODES).
    """

    id: str
    compute_path: str
    weight_bytes: float
    act_bytes: float
    min_sm: tuple[int, int] | None
    note: str
    source: str
    quantized_weights: str = "all"
    dequant_ops_per_weight: float = 0.0
    runtimes: tuple[str, ...] = ()
    kernel: QuantKernel | None = None
    pipelined_on: tuple[str, ...] = ()
    fp8_training: Fp8Training | None = None  # a training-only recipe with FP8 GEMMs (fp8-te)
    train_as: str | None = None  # the precision a train job runs when this one is chosen (fp8 -> fp8-te)
    weight_only: WeightOnly | None = None  # where it runs as weight-only without its own tensor cores
    runs_as: str = ""  # set on the weight-only variant (weight_only_on): which path runs, in words
    mma_path: MmaPath | None = None  # where its runtime's kernel multiplies through an older MMA instruction
    runtime_path: RuntimePath | None = None  # where a runtime's own kernels change its SM floor and compute path
    mma_fraction: float = 1.0  # set on that variant (on_mma_path): its quantized GEMMs' share of the matmul ceiling
    # the runtime's own quantized GEMV (RuntimeGemv.ops_per_weight_token, measured on one format) spends this many
    # times its instructions per weight per token on this format: a format whose dot product unpacks more per weight
    # (GGUF Q3_K's 2 + 1 bit planes and 6-bit scales against Q4_0's nibbles); 1 = as the measured format
    gemv_ops_factor: float = 1.0

    def on_runtime(self, runtime: str) -> Precision:
        """This precision as `runtime` runs it: where `runtime_path` names that runtime, with its SM floor and compute
        path (MXFP4 under llama.cpp: ggml's kernels, SM61+, fp16), else itself."""
        w = self.runtime_path
        if w is None or runtime not in w.runtimes:
            return self
        what = (f"runs {w.kernel_name} under {', '.join(w.runtimes)}: matmuls computed at {w.compute_path}, "
                f"{sm_label(w.min_sm)}+")
        return replace(self, compute_path=w.compute_path, min_sm=w.min_sm, runtime_path=None,
                       runs_as="; ".join(x for x in (self.runs_as, what) if x))

    def weight_only_on(self, cc: tuple[int, int] | None, runtime: str) -> Precision:
        """This precision as `runtime` runs it on a GPU of compute capability `cc`: its weight-only variant (16-bit
        matmuls on unpacked weights, the unpack pipelined under the weight stream) where `weight_only` covers that
        GPU and runtime, else itself."""
        w = self.weight_only
        if w is None or not w.covers(cc, runtime):
            return self
        what = (f"runs weight-only ({w.kernel_name}, {', '.join(w.runtimes)}): {self.weight_bytes:g}-byte weights "
                f"unpacked in the GEMM's registers at {w.dequant_ops_per_weight:g} instructions per weight, hidden "
                f"under the weight stream, and multiplied on {w.compute_path} tensor cores")
        return replace(self, compute_path=w.compute_path, min_sm=w.min_sm,
                       dequant_ops_per_weight=w.dequant_ops_per_weight, pipelined_on=w.runtimes,
                       weight_only=None, runs_as=what)

    def on_mma_path(self, cc: tuple[int, int] | None, runtime: str) -> Precision:
        """This precision as `runtime` runs it on a GPU of compute capability `cc`: where `mma_path` covers them, its
        quantized weights' GEMMs at mma_path.fraction of the matmul ceiling (mma_fraction), else itself."""
        w = self.mma_path
        if w is None or not w.covers(cc, runtime):
            return self
        what = (f"runs its {self.quantized_weights}' GEMMs through {w.kernel_name} under {', '.join(w.runtimes)} at "
                f"{w.fraction:g} of the matmul ceiling")
        return replace(self, mma_path=None, mma_fraction=w.fraction,
                       runs_as="; ".join(x for x in (self.runs_as, what) if x))

    def quantized_rate(self, quantized_share: float) -> float:
        """The linear layers' tensor-core rate factor when `quantized_share` of their FLOPs multiply quantized weights
        at mma_fraction of the ceiling and the rest at the ceiling: the time-weighted (harmonic) mean, 1 / (q / f +
        1 - q)."""
        q = min(max(quantized_share, 0.0), 1.0)
        return 1.0 / (q / self.mma_fraction + 1.0 - q)

    @property
    def outside_weight_bytes(self) -> float:
        """Bytes per weight outside the quantized layers (embeddings, LM head, norms)."""
        if self.quantized_weights in ("layers", *PARTIAL_SCOPES) and self.weight_bytes < self.act_bytes:
            return self.act_bytes
        return self.weight_bytes


@dataclass(frozen=True)
class KVDtype:
    id: str
    bytes: float
    min_sm: tuple[int, int] | None
    source: str


ATTENTION_DTYPES = ("fp32", "fp16", "bf16", "fp8")  # dtypes an attention kernel may accept (tf32 runs as fp32)
_KERNEL_FIELDS = ("min_sm", "max_sm", "max_head_dim", "dtypes", "scores_materialized", "speed_vs_fa2", "speed_source",
                  "amd", "fraction_of_peak", "fraction_source", "backward_fraction_of_peak", "backward_fraction_source",
                  "decode_latency_us", "decode_latency_source", "runtimes")
MAX_DECODE_LATENCY_US = 1000.0  # parser cap on a decode-attention call's fixed latency (the figure: the reference's)
# Where the decode latency comes from, in the words the estimate's explanations use (its source: the reference record)
DECODE_LATENCY_ORIGIN = "FlashAttention-2's decode kernel, timed on an H100: data/precisions.yaml"


@dataclass(frozen=True)
class SelectorRelease:
    """One release of a selector's library (xFormers): the oldest PyTorch its wheels are built for, its priority list
    (each kernel with the compute-capability range this release runs it on) and the source."""

    version: str
    min_pytorch: tuple[int, ...]
    picks: tuple[AttentionBackend, ...]
    source: str


@dataclass(frozen=True, eq=True)
class AttentionBackend(CachedHash):
    """An attention kernel, or a selector (`picks`) that stands for the first of its kernels that runs on a GPU.

    Kernel: compute capability range [min_sm, max_sm] (None = no bound; AMD GPUs have none and need `amd`), the
    dtypes it takes, its largest head dim (None = any), whether it writes the S x S scores to DRAM (O(S^2) memory and
    traffic), and its attention FLOP rate relative to FlashAttention-2. An unresolved selector carries its first
    pick's memory order and speed.
    """

    __hash__ = CachedHash.__hash__  # part of Setup, a cache key
    id: str
    name: str
    source: str
    aliases: tuple[str, ...] = ()
    picks: tuple[AttentionBackend, ...] = ()
    min_sm: tuple[int, int] | None = None
    max_sm: tuple[int, int] | None = None
    max_head_dim: int | None = None
    dtypes: tuple[str, ...] = ATTENTION_DTYPES
    scores_materialized: bool = False
    speed_vs_fa2: float = 1.0
    speed_source: str = ""
    amd: bool = True
    min_pytorch: tuple[int, ...] | None = None  # oldest PyTorch that has it (None: any, or its own package)
    # FlashAttention-2's FLOP rate as a fraction of the datasheet peak per compute-capability major (the reference
    # record's `fraction_of_peak`, carried by every fused kernel), and its source
    reference_fraction: tuple[tuple[int, float], ...] = ()
    reference_source: str = ""
    # this kernel's FLOP rate as a fraction of the datasheet peak per compute-capability major: FlashAttention-2's
    # where it is published, times speed_vs_fa2 (set on load, with_reference); () for kernels that materialize the
    # scores (their matmuls are GEMMs at the matmul ceiling) or without a published reference
    peak_fractions: tuple[tuple[int, float], ...] = ()
    # the same for the training backward pass (FlashAttention-2's backward is slower than its forward): the reference
    # record's `backward_fraction_of_peak`, and this kernel's (x speed_vs_fa2), set on load as the forward's
    backward_reference_fraction: tuple[tuple[int, float], ...] = ()
    backward_reference_source: str = ""
    backward_peak_fractions: tuple[tuple[int, float], ...] = ()
    # GPU microseconds one decode-attention call (a layer's, one new token per sequence) takes beyond its bytes: the
    # reference kernel's measured latency, carried by every backend (set on load, with_reference), and its source
    decode_latency_us: float = 0.0
    decode_latency_source: str = ""
    # a selector whose priority list changed between its library's releases: oldest first (picks: the newest's)
    releases: tuple[SelectorRelease, ...] = ()
    # the runtimes (data/runtimes.yaml ids) whose own kernel this is, the only ones that run it (llama.cpp's fused
    # attention); () = a kernel of the PyTorch world, run by the runtimes that call it (RuntimeAttention checks)
    runtimes: tuple[str, ...] = ()

    @property
    def is_selector(self) -> bool:
        return bool(self.picks)

    def release_for(self, pytorch: tuple[int, ...] | None) -> SelectorRelease | None:
        """The newest release built for `pytorch` or an older one (unpinned: the newest); None without releases or
        when every release needs a newer PyTorch."""
        fits = [r for r in self.releases if pytorch is None or r.min_pytorch <= pytorch]
        return fits[-1] if fits else None

    def picks_for(self, pytorch: tuple[int, ...] | None) -> tuple[AttentionBackend, ...]:
        """The priority list this selector runs under the pinned PyTorch (its release's, else `picks`)."""
        release = self.release_for(pytorch)
        return release.picks if release else self.picks

    def with_reference(self, ref: AttentionBackend) -> AttentionBackend:
        """This kernel carrying the reference's decode latency, and its fraction of peak unless it materializes the
        scores (its matmuls are GEMMs at the matmul ceiling)."""
        latency = replace(self, decode_latency_us=ref.decode_latency_us,
                          decode_latency_source=ref.decode_latency_source)
        if self.scores_materialized:
            return latency
        scaled = lambda fractions: tuple((major, f * self.speed_vs_fa2) for major, f in fractions)  # noqa: E731
        return replace(latency, reference_fraction=ref.reference_fraction, reference_source=ref.reference_source,
                       peak_fractions=scaled(ref.reference_fraction),
                       backward_reference_fraction=ref.backward_reference_fraction,
                       backward_reference_source=ref.backward_reference_source,
                       backward_peak_fractions=scaled(ref.backward_reference_fraction))

    def peak_fraction_on(self, cc: tuple[int, int] | None) -> float:
        """peak_fractions on a GPU of compute capability `cc` (0: none known there: the matmul ceiling applies)."""
        return dict(self.peak_fractions).get(cc[0], 0.0) if cc else 0.0

    def names(self) -> tuple[str, ...]:
        return (self.id, *self.aliases)


@dataclass(frozen=True)
class PrecisionRules:
    precisions: tuple[Precision, ...]
    kv_dtypes: tuple[KVDtype, ...]
    attention_backends: tuple[AttentionBackend, ...]

    def _find(self, items, kind: str, name: str):
        for item in items:
            if item.id == name.lower():
                return item
        raise UnknownNameError(kind, name, suggest(name, [i.id for i in items]))

    def precision(self, name: str) -> Precision:
        return self._find(self.precisions, "precision", name)

    def kv_dtype(self, name: str) -> KVDtype:
        return self._find(self.kv_dtypes, "KV-cache dtype", name)

    def attention(self, name: str) -> AttentionBackend:
        """A backend by id or alias ('auto' is sdpa), ignoring case."""
        key = name.strip().lower()
        for b in self.attention_backends:
            if key in b.names():
                return b
        raise UnknownNameError("attention backend", name,
                               suggest(name, [n for b in self.attention_backends for n in b.names()]))

    def default_kv_dtype(self, precision: Precision) -> KVDtype:
        """The KV cache is kept in the activation dtype unless chosen otherwise."""
        if precision.act_bytes == FP32_BYTES:
            return self.kv_dtype("fp32")
        return self.kv_dtype("bf16" if precision.id == "bf16" else "fp16")


def gemv_ops_factor(rec: Record) -> float:
    """A precision record's optional `gemv_ops_factor` (1 when absent), with its `gemv_ops_factor_source`."""
    factor = rec.number("gemv_ops_factor", required=False, lo=MIN_GEMV_OPS_FACTOR, hi=MAX_GEMV_OPS_FACTOR)
    if factor is None:
        if rec.raw("gemv_ops_factor_source", required=False) is not None:
            raise rec.fail("gemv_ops_factor_source", "given without gemv_ops_factor; add the factor or remove it")
        return 1.0
    rec.text("gemv_ops_factor_source")
    return factor


@lru_cache(maxsize=4)
def load_rules(path: str | Path = PRECISIONS_FILE) -> PrecisionRules:
    doc = load_sections(path, ("precisions", "kv_dtypes", "attention_backends"), dated=True)
    records = doc["precisions"]
    precisions = []
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "compute_path", "weight_bytes", "act_bytes", "min_sm", "quantized_weights",
                        "dequant_ops_per_weight", "runtimes", "kernel", "pipelined_on", "fp8_training", "train_as",
                        "weight_only", "mma_path", "runtime_path", "gemv_ops_factor", "gemv_ops_factor_source",
                        "note", "source"))
        precisions.append(Precision(rec.text("id"), rec.text("compute_path", choices=COMPUTE_PATHS),
                                    rec.number("weight_bytes", lo=0.1, hi=8), rec.number("act_bytes", lo=1, hi=8),
                                    rec.compute_capability("min_sm", required=False), rec.text("note"),
                                    rec.text("source"),
                                    rec.text("quantized_weights", required=False, choices=QUANTIZED_SCOPES) or "all",
                                    rec.number("dequant_ops_per_weight", required=False, lo=0,
                                               hi=MAX_DEQUANT_OPS) or 0.0,
                                    rec.strings("runtimes", required=False) or (), _quant_kernel(rec),
                                    rec.strings("pipelined_on", required=False) or (),
                                    _fp8_training(rec), rec.text("train_as", required=False) or None,
                                    _weight_only(rec), mma_path=_mma_path(rec), runtime_path=_runtime_path(rec),
                                    gemv_ops_factor=gemv_ops_factor(rec)))
    unique_ids(path, (p.id for p in precisions))
    _check_train_as(path, records, precisions)
    kvs = []
    for i, raw in enumerate(doc["kv_dtypes"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "bytes", "min_sm", "source"))
        kvs.append(KVDtype(rec.text("id"), rec.number("bytes", lo=0.25, hi=8),
                           rec.compute_capability("min_sm", required=False), rec.text("source")))
    return PrecisionRules(tuple(precisions), tuple(kvs), _attention_backends(path, doc["attention_backends"]))


def _fp8_training(rec: Record) -> Fp8Training | None:
    """The optional `fp8_training` block of a precision (Fp8Training's fields)."""
    sub = rec.child("fp8_training", required=False)
    if sub is None:
        return None
    sub.check_keys(("gemm_path", "cast_read_bytes", "cast_write_bytes", "weight_copy_bytes", "source"))
    return Fp8Training(sub.text("gemm_path", choices=COMPUTE_PATHS),
                       sub.number("cast_read_bytes", lo=0, hi=MAX_CAST_BYTES),
                       sub.number("cast_write_bytes", lo=0, hi=MAX_CAST_BYTES),
                       sub.number("weight_copy_bytes", lo=0, hi=MAX_CAST_BYTES), sub.text("source"))


def _weight_only(rec: Record) -> WeightOnly | None:
    """The optional `weight_only` block of a precision (WeightOnly's fields); its SM range must be ordered."""
    sub = rec.child("weight_only", required=False)
    if sub is None:
        return None
    sub.check_keys(("runtimes", "min_sm", "max_sm", "compute_path", "dequant_ops_per_weight", "kernel_name",
                    "source"))
    lo, hi = sub.compute_capability("min_sm"), sub.compute_capability("max_sm")
    if hi < lo:
        raise sub.fail("max_sm", "is below min_sm")
    return WeightOnly(sub.strings("runtimes"), lo, hi, sub.text("compute_path", choices=COMPUTE_PATHS),
                      sub.number("dequant_ops_per_weight", lo=0, hi=MAX_DEQUANT_OPS), sub.text("kernel_name"),
                      sub.text("source"))


def _runtime_path(rec: Record) -> RuntimePath | None:
    """The optional `runtime_path` block of a precision (RuntimePath's fields)."""
    sub = rec.child("runtime_path", required=False)
    if sub is None:
        return None
    sub.check_keys(("runtimes", "min_sm", "compute_path", "kernel_name", "source"))
    return RuntimePath(sub.strings("runtimes"), sub.compute_capability("min_sm"),
                       sub.text("compute_path", choices=COMPUTE_PATHS), sub.text("kernel_name"), sub.text("source"))


def _mma_path(rec: Record) -> MmaPath | None:
    """The optional `mma_path` block of a precision (MmaPath's fields); its SM range must be ordered."""
    sub = rec.child("mma_path", required=False)
    if sub is None:
        return None
    sub.check_keys(("runtimes", "min_sm", "max_sm", "fraction", "kernel_name", "source"))
    lo, hi = sub.compute_capability("min_sm"), sub.compute_capability("max_sm")
    if hi < lo:
        raise sub.fail("max_sm", "is below min_sm")
    return MmaPath(sub.strings("runtimes"), lo, hi, sub.number("fraction", lo=0.05, hi=1.0), sub.text("kernel_name"),
                   sub.text("source"))


def _check_train_as(path: str | Path, records: list, precisions: list[Precision]) -> None:
    """Each `train_as` names a training recipe of this file (a precision with an fp8_training block)."""
    recipes = {p.id for p in precisions if p.fp8_training is not None}
    for i, p in enumerate(precisions):
        if p.train_as is not None and p.train_as not in recipes:
            raise Record.of(path, i, records[i]).fail(
                "train_as", f"{p.train_as!r} is not a precision of this file with an fp8_training block "
                            f"(those: {', '.join(sorted(recipes)) or 'none'})")


def _quant_kernel(rec: Record) -> QuantKernel | None:
    """The optional `kernel` block of a precision (QuantKernel's fields); a GEMV needs its instruction count."""
    sub = rec.child("kernel", required=False)
    if sub is None:
        return None
    sub.check_keys(("gemv_max_tokens", "gemv_ops_per_weight_token", "unpack", "launches_per_call",
                    "host_kernels_per_call", "gemv_pipelined", "m_tile", "mma_fraction", "split_k", "mlp_gemv_on",
                    "accumulate", "synchronizes", "source"))
    gemv = int(sub.number("gemv_max_tokens", lo=0, hi=4096, integer=True))
    ops = sub.number("gemv_ops_per_weight_token", required=bool(gemv), lo=0.01, hi=MAX_DEQUANT_OPS)
    return QuantKernel(gemv, ops or 0.0, sub.text("unpack", choices=UNPACK_MODES),
                       sub.number("launches_per_call", lo=0, hi=MAX_CALL_KERNELS),
                       sub.number("host_kernels_per_call", lo=0, hi=MAX_CALL_KERNELS), sub.text("source"),
                       sub.flag("gemv_pipelined", False),
                       int(sub.number("m_tile", required=False, lo=0, hi=MAX_M_TILE, integer=True) or 0),
                       sub.number("mma_fraction", required=False, lo=0.01, hi=1.0) or 1.0,
                       int(sub.number("split_k", required=False, lo=1, hi=MAX_SPLIT_K, integer=True) or 1),
                       sub.strings("mlp_gemv_on", required=False) or (),
                       sub.text("accumulate", required=False, choices=ACCUMULATE_DTYPES) or "fp32",
                       sub.flag("synchronizes", False))


def _kernel(rec: Record, common: dict) -> AttentionBackend:
    rec.check_keys(("id", "name", "aliases", "min_pytorch", "source") + _KERNEL_FIELDS)
    lo, hi = rec.compute_capability("min_sm", required=False), rec.compute_capability("max_sm", required=False)
    if lo and hi and hi < lo:
        raise rec.fail("max_sm", "is below min_sm")
    dtypes = rec.strings("dtypes")
    bad = [d for d in dtypes if d not in ATTENTION_DTYPES]
    if bad:
        raise rec.fail("dtypes", f"unknown dtype {bad[0]!r}; expected some of {', '.join(ATTENTION_DTYPES)}")
    head = rec.number("max_head_dim", required=False, lo=8, hi=4096, integer=True)
    return AttentionBackend(**common, min_sm=lo, max_sm=hi, max_head_dim=head, dtypes=dtypes,
                            scores_materialized=rec.flag("scores_materialized"),
                            speed_vs_fa2=rec.number("speed_vs_fa2", lo=0.05, hi=10),
                            speed_source=rec.text("speed_source"), amd=rec.flag("amd"),
                            runtimes=tuple(rec.strings("runtimes", required=False)),
                            **_fraction_of_peak(rec), **_decode_latency(rec))


def _fraction_of_peak(rec: Record) -> dict:
    """The reference kernel's optional `fraction_of_peak: {smN: fraction}` (per compute-capability major), with
    `fraction_source`, and `backward_fraction_of_peak` (the training backward's, same keys) with
    `backward_fraction_source`; only the reference (speed_vs_fa2 1) may give them."""
    out = {}
    for field, source, key in (("fraction_of_peak", "fraction_source", "reference"),
                               ("backward_fraction_of_peak", "backward_fraction_source", "backward_reference")):
        fractions = _fractions(rec, field)
        if fractions is not None:
            out |= {f"{key}_fraction": fractions, f"{key}_source": rec.text(source)}
    if "backward_reference_fraction" in out and "reference_fraction" not in out:
        raise rec.fail("backward_fraction_of_peak", "given only with the forward's fraction_of_peak")
    if "backward_reference_fraction" in out and \
            {m for m, _ in out["backward_reference_fraction"]} != {m for m, _ in out["reference_fraction"]}:
        raise rec.fail("backward_fraction_of_peak", "expected the same compute-capability majors as fraction_of_peak")
    return out


def _fractions(rec: Record, field: str) -> tuple[tuple[int, float], ...] | None:
    """`field: {smN: fraction}` as ((N, fraction), ...) sorted, None when absent; only the reference kernel."""
    sub = rec.child(field, required=False)
    if sub is None:
        return None
    if rec.number("speed_vs_fa2", lo=0.05, hi=10) != 1:
        raise rec.fail(field, "only the reference kernel (speed_vs_fa2: 1) gives FlashAttention-2's "
                              "fraction of peak; the others scale it by their speed")
    out = []
    for key in sub.data:
        if not re.fullmatch(r"sm\d{1,2}", str(key)):
            raise sub.fail(str(key), "expected a compute-capability major as smN (sm8, sm9)")
        out.append((int(str(key)[2:]), sub.number(key, lo=0.05, hi=1.0)))
    return tuple(sorted(out))


def _decode_latency(rec: Record) -> dict:
    """The reference kernel's optional `decode_latency_us` with `decode_latency_source` (only the reference gives it:
    every backend carries it)."""
    us = rec.number("decode_latency_us", required=False, lo=0.0, hi=MAX_DECODE_LATENCY_US)
    if us is None:
        return {}
    if rec.raw("fraction_of_peak", required=False) is None:
        raise rec.fail("decode_latency_us", "only the reference kernel (the record with fraction_of_peak) gives it; "
                                            "every other backend carries the reference's")
    return {"decode_latency_us": us, "decode_latency_source": rec.text("decode_latency_source")}


MAX_RELEASES = 32  # parser cap on a selector's releases


def _is_selector(rec: Record) -> bool:
    return rec.raw("picks", required=False) is not None or rec.raw("releases", required=False) is not None


def _picks(rec: Record, kernels: dict[str, AttentionBackend],
           ranges: dict[str, tuple[tuple[int, int] | None, tuple[int, int] | None]]) -> tuple[AttentionBackend, ...]:
    """The kernels `rec.picks` names, in order; a kernel in `ranges` with the (min_sm, max_sm) given there."""
    picks = rec.strings("picks")
    missing = [p for p in picks if p not in kernels]
    if missing:
        raise rec.fail("picks", f"{missing[0]!r} is not a kernel record of this file (a selector picks kernels)")
    stray = [k for k in ranges if k not in picks]
    if stray:
        raise rec.fail("sm_ranges", f"{stray[0]!r} is not one of this release's picks")
    return tuple(replace(kernels[p], min_sm=ranges[p][0], max_sm=ranges[p][1]) if p in ranges else kernels[p]
                 for p in picks)


def _releases(rec: Record, kernels: dict[str, AttentionBackend]) -> tuple[SelectorRelease, ...]:
    """A selector's optional `releases` (oldest first, by the PyTorch each is built for), each with its picks and
    optional `sm_ranges: {kernel: {min_sm, max_sm}}` where the release runs a kernel on other GPUs than its record."""
    if rec.raw("releases", required=False) is None:
        return ()
    out: list[SelectorRelease] = []
    for sub in rec.records("releases", MAX_RELEASES):
        sub.check_keys(("version", "pytorch", "picks", "sm_ranges", "source"))
        try:
            pytorch = parse_torch_version(sub.text("pytorch"))
        except ValueError as exc:
            raise sub.fail("pytorch", str(exc)) from None
        if out and pytorch <= out[-1].min_pytorch:
            raise sub.fail("pytorch", "releases go oldest first: each needs a newer PyTorch than the one before")
        ranges = {}
        block = sub.child("sm_ranges", required=False)
        for kernel in (block.data if block else {}):
            limits = block.child(str(kernel))
            limits.check_keys(("min_sm", "max_sm"))
            ranges[str(kernel)] = (limits.compute_capability("min_sm", required=False),
                                   limits.compute_capability("max_sm", required=False))
        out.append(SelectorRelease(sub.text("version"), pytorch, _picks(sub, kernels, ranges), sub.text("source")))
    return tuple(out)


def _attention_backends(path: str | Path, records: list) -> tuple[AttentionBackend, ...]:
    """Kernel records, and selector records (`picks`) whose picks name kernel records of the same file."""
    parsed: list[tuple[Record, dict]] = []
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        version = rec.text("min_pytorch", required=False)
        try:
            min_pt = parse_torch_version(version) if version else None
        except ValueError as exc:
            raise rec.fail("min_pytorch", str(exc)) from None
        parsed.append((rec, dict(id=rec.text("id"), name=rec.text("name"), source=rec.text("source"),
                                 aliases=tuple(a.lower() for a in rec.strings("aliases", required=False)),
                                 min_pytorch=min_pt)))
    unique_ids(path, (n for _, c in parsed for n in (c["id"], *c["aliases"])))
    kernels = {c["id"]: _kernel(rec, c) for rec, c in parsed if not _is_selector(rec)}
    references = [k for k in kernels.values() if k.reference_fraction]
    if len(references) > 1:
        raise DataFileError(path, f"'{references[1].id}'", "fraction_of_peak",
                            f"only one reference kernel may give it ({references[0].id} does)")
    if references:  # every fused kernel's speed is relative to the reference: it carries the reference's fraction
        ref = references[0]
        kernels = {i: k.with_reference(ref) for i, k in kernels.items()}
    out = []
    for rec, common in parsed:
        if common["id"] in kernels:
            out.append(kernels[common["id"]])
            continue
        rec.check_keys(("id", "name", "aliases", "picks", "releases", "min_pytorch", "source"))
        releases = _releases(rec, kernels)
        if releases and rec.raw("picks", required=False) is not None:
            raise rec.fail("picks", "a selector with releases picks by release: give picks in each release only")
        if releases:
            common["min_pytorch"] = releases[0].min_pytorch
        chosen = releases[-1].picks if releases else _picks(rec, kernels, {})
        out.append(AttentionBackend(**common, picks=chosen, releases=releases,
                                    scores_materialized=chosen[0].scores_materialized,
                                    speed_vs_fa2=chosen[0].speed_vs_fa2, speed_source=chosen[0].speed_source,
                                    decode_latency_us=chosen[0].decode_latency_us,
                                    decode_latency_source=chosen[0].decode_latency_source))
    return tuple(out)
