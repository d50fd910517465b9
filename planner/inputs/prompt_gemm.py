"""Which GEMM a runtime multiplies a prompt's weights with, by the runtime's build and the GPU: the `prompt_gemm`
block of a runtime in data/runtimes.yaml (llama.cpp's CUDA backend).

A llama.cpp pass of more tokens than its GEMV takes (quantized_gemv.max_tokens) has run four ways over its history:
the weights dequantized (or an F16 matrix converted) into an fp32 copy for cublasSgemm, the same into an fp16 copy
for a tensor-core cublasGemmEx that accumulates in fp16, or its own MMQ kernels on the quantized blocks with int8
dot products (dp4a on the CUDA cores, or int8 tensor-core MMA from Turing on). Each `path` says what its pass costs;
each `era` (from a build number on) which path a quantized format and an F16 matrix take on each compute capability.
Estimates take the newest era; a validation row that names its build takes that build's (RuntimeProfile.at_build).
An era may also name the fused FlashAttention kernel (`attention_kernels`) such a pass runs on each compute
capability: llama.cpp's own wmma or mma kernels, each at its measured fraction of the GPU's full-rate FP16 tensor peak.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.base.schema import CachedHash, Record, parse_compute_capability, sm_label
from planner.inputs.catalog import ALU_PATH, COMPUTE_PATHS

MAX_PATHS, MAX_ERAS, MAX_ATTENTION_KERNELS = 16, 32, 8  # parser caps
WEIGHT_KINDS = ("quantized", "f16")  # what an era's path table is keyed by: a GGUF quantized format, an F16 matrix


@dataclass(frozen=True)
class PromptPath(CachedHash):
    """How one pass multiplies its weights: in `compute_path` (a catalog peak: fp32, fp16, int8, or the integer ALU
    path for dp4a), at `fraction` of that path's matmul ceiling where the path's own kernel has a measured rate (0:
    the runtime's compute_efficiency, as its other GEMMs), `flops_per_op` FLOPs per counted instruction on the ALU
    path (dp4a: 4 multiply-adds), through a copy of `buffer_bytes` per weight written each pass and read by the GEMM
    (0: the GEMM reads the stored blocks), converting each GEMM input element at `act_convert_bytes` (read + write),
    accumulating in fp16 where `accumulate16`. `scale_flops` FLOP-equivalents per matmul FLOP run on the CUDA
    cores after each MMA, in series with it, at the GPU's fp32 rate (MMQ's per-block scales: 0 for cuBLAS). A pass of
    at most `small_max_tokens` tokens takes `small_path` instead (ggml's choice by batch size: MMQ below 64 tokens on
    GPUs with FP16 but no int8 tensor-core MMA); None: every pass takes this path."""

    id: str
    compute_path: str
    fraction: float
    buffer_bytes: float
    act_convert_bytes: float
    accumulate16: bool
    flops_per_op: float
    source: str
    scale_flops: float = 0.0
    small_max_tokens: int = 0
    small_path: PromptPath | None = None

    def for_rows(self, rows: int) -> PromptPath:
        """The path a pass over `rows` tokens takes: `small_path` up to small_max_tokens, else this one."""
        return self.small_path if self.small_path is not None and rows <= self.small_max_tokens else self

    @property
    def buffered(self) -> bool:
        return self.buffer_bytes > 0

    def copies(self, quantized: bool, weight_bytes: float) -> bool:
        """Whether a pass writes a copy of its weights first: a quantized format always does on a buffered path, a
        float matrix only when the copy's dtype differs (F16 into fp32, not F16 into fp16)."""
        return self.buffered and (quantized or self.buffer_bytes != weight_bytes)


@dataclass(frozen=True)
class AttentionKernel(CachedHash):
    """A runtime's own fused attention kernel for a prompt pass: it reaches `fraction` of the GPU's full-rate FP16
    tensor peak (the catalog's dense FP16 figure x GPU.fp16_accumulate_speedup), whatever the model's shape."""

    id: str
    fraction: float
    source: str


@dataclass(frozen=True)
class PromptEra(CachedHash):
    """From build `from_build` on: the path of each weight kind (WEIGHT_KINDS) per minimum compute capability,
    highest first; and the fused attention kernel a prompt pass runs per minimum compute capability (may be empty)."""

    from_build: int
    paths: tuple[tuple[str, tuple[tuple[tuple[int, int], PromptPath], ...]], ...]
    source: str
    attention: tuple[tuple[tuple[int, int], AttentionKernel], ...] = ()

    def attention_on(self, cc: tuple[int, int] | None) -> AttentionKernel | None:
        """The fused attention kernel a prompt pass runs on a GPU of compute capability `cc` (None: none listed)."""
        if cc is None:
            return None
        return next((k for min_cc, k in self.attention if cc >= min_cc), None)

    def path_on(self, cc: tuple[int, int] | None, kind: str) -> PromptPath | None:
        """The path a `kind` weight takes on a GPU of compute capability `cc` (None: no CUDA GPU, or none listed)."""
        if cc is None:
            return None
        table = dict(self.paths).get(kind, ())
        return next((p for min_cc, p in table if cc >= min_cc), None)

    def describe(self) -> str:
        return "; ".join(f"{kind}: " + ", ".join(f"{p.id} from {sm_label(c)}" for c, p in table)
                         for kind, table in self.paths)


def parse_prompt_gemm(rec: Record) -> tuple[PromptEra, ...]:
    """The optional `prompt_gemm` block {paths: [...], eras: [...]}: its eras, oldest first (() when absent)."""
    sub = rec.child("prompt_gemm", required=False)
    if sub is None:
        return ()
    sub.check_keys(("paths", "eras", "attention_kernels"))
    paths, small = {}, {}
    for p in sub.records("paths", MAX_PATHS):
        p.check_keys(("id", "compute_path", "fraction", "buffer_bytes", "act_convert_bytes", "accumulate",
                      "flops_per_op", "scale_flops", "small_pass", "source"))
        small_pass = p.child("small_pass", required=False)
        if small_pass is not None:
            small_pass.check_keys(("max_tokens", "path"))
            small[p.text("id")] = (small_pass, int(small_pass.number("max_tokens", lo=1, hi=4096, integer=True)),
                                   small_pass.text("path"))
        path = p.text("compute_path", choices=(*COMPUTE_PATHS, ALU_PATH))
        paths[p.text("id")] = PromptPath(
            p.text("id"), path, p.number("fraction", required=False, lo=0.01, hi=1.0) or 0.0,
            p.number("buffer_bytes", required=False, lo=0, hi=8) or 0.0,
            p.number("act_convert_bytes", required=False, lo=0, hi=16) or 0.0,
            p.text("accumulate", required=False, choices=("fp16", "fp32")) == "fp16",
            p.number("flops_per_op", required=path == ALU_PATH, lo=1, hi=64) or 1.0, " ".join(p.text("source").split()),
            p.number("scale_flops", required=False, lo=0, hi=1.0) or 0.0)
    for pid, (block, max_tokens, target) in small.items():
        if target not in paths or small.get(target) is not None:
            raise block.fail("path", f"expected a path of prompt_gemm.paths without a small_pass of its own "
                                   f"({', '.join(q for q in paths if q not in small)}), got '{target}'")
        paths[pid] = replace(paths[pid], small_max_tokens=max_tokens, small_path=paths[target])
    kernels = {}
    listed = sub.raw("attention_kernels", False) is not None
    for k in sub.records("attention_kernels", MAX_ATTENTION_KERNELS) if listed else ():
        k.check_keys(("id", "fraction", "source"))
        kernels[k.text("id")] = AttentionKernel(k.text("id"), k.number("fraction", lo=0.01, hi=1.0),
                                                " ".join(k.text("source").split()))
    eras = []
    for e in sub.records("eras", MAX_ERAS):
        e.check_keys(("from_build", *WEIGHT_KINDS, "attention", "source"))
        eras.append(PromptEra(int(e.number("from_build", lo=0, hi=10**6, integer=True)),
                              tuple((kind, _table(e, kind, paths)) for kind in WEIGHT_KINDS),
                              " ".join(e.text("source").split()),
                              _table(e, "attention", kernels, required=False)))
    builds = [e.from_build for e in eras]
    if builds != sorted(set(builds)):
        raise sub.fail("eras", f"expected from_build in increasing order, got {builds}")
    return tuple(eras)


def _table(e: Record, kind: str, paths: dict, required: bool = True) -> tuple[tuple[tuple[int, int], object], ...]:
    """An era's {min compute capability: path (or attention kernel) id} mapping for one weight kind (or
    'attention'), highest capability first; () for an absent optional table."""
    sub = e.child(kind, required=required)
    if sub is None:
        return ()
    out = []
    for sm, pid in sub.data.items():
        cc = parse_compute_capability(sm, lambda problem, field=str(sm): sub.fail(field, problem))
        if pid not in paths:
            what, block = ("kernel", "attention_kernels") if kind == "attention" else ("path", "paths")
            raise sub.fail(str(sm), f"no {what} '{pid}' in prompt_gemm.{block} ({', '.join(paths) or 'none given'})")
        out.append((cc, paths[pid]))
    return tuple(sorted(out, key=lambda x: x[0], reverse=True))


def era_at(eras: tuple[PromptEra, ...], build: int | None) -> PromptEra | None:
    """The era a build falls in (None build: the newest); None when there are no eras or the build predates them."""
    if not eras:
        return None
    if build is None:
        return eras[-1]
    return next((e for e in reversed(eras) if build >= e.from_build), None)
