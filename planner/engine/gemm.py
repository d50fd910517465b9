"""Shape efficiency of a GEMM on a GPU: tile and wave quantization against the GPU's measured matmul ceiling.

An M x N x K GEMM (output M x N, inner dimension K) is cut into output tiles of TILE_M x TILE_N; each tile runs on one
SM, as many at a time as the GPU has SMs, so ceil(tiles / SMs) waves run and the last one may be nearly empty (wave
quantization); a tile whose rows or columns overhang the matrix computes the overhang for nothing (tile
quantization). NVIDIA, "Matrix Multiplication Background User's Guide" (docs.nvidia.com/deeplearning/performance/
dl-performance-matrix-multiplication: tile and wave quantization, 108-SM A100 example); stas00/ml-engineering
training/performance/README.md "Tile and wave quantization" (109 tiles on 108 SMs take two waves).

The ceiling (planner.inputs.catalog.Ceiling) is the best rate a shape search reached, i.e. a shape with full tiles and
full waves, so efficiency 1 here means that rate. Modelled choices, each from a source:
- TILE_N = 128 and TILE_M up to 128: the CUTLASS default threadblock tile for 16-bit tensor-core GEMMs is 128 x 128
  (x 32 or 64 in K), one of the tiles cuBLAS heuristics pick among (CUTLASS docs, "Efficient GEMM in CUDA").
- A GEMM with few rows (decode: M = batch) runs a tile of the next power of two >= M, at least 16: the smallest
  tensor-core MMA has 16 rows (PTX ISA, mma.m16n8k16), so rows below 16 are padding.
- Fewer tiles than SMs: the K loop is split over SMs (split-K, CUTLASS "parallel reduction splitK" and cuBLAS
  heuristics), up to floor(SMs / tiles) slices of at least TILE_K = 64 deep, so a narrow GEMM with a deep K still fills
  the GPU.
What is not modelled: per-tile efficiency differences between tile sizes, and the reduction cost of split-K.

A GEMM's time is not the larger of its compute and memory times (the roofline's sharp corner): a tile streams its
operands through a few pipeline stages while the tensor cores work on earlier ones, and the overlap is not complete, so
near the ridge point, where both take about as long, the kernel takes longer than either (overlapped_seconds).
"""

from __future__ import annotations

from functools import lru_cache

# Tensor-core GEMM kernels move their operands in 16-byte vectors, so a matrix whose rows (the N or K of a weight) are
# not a multiple of 16 bytes cannot use cuBLAS's fastest kernels: NVIDIA, "Matrix Multiplication Background User's
# Guide", section "Tensor Core Requirements" (cuBLAS 11.0+ uses Tensor Cores for any size, "but efficiency is better
# when ... multiples of 16 bytes", i.e. 8 fp16 elements); the cuBLAS docs' tensor-core usage notes; CUTLASS issue #75
# ("most kernels targeting Tensor Cores require 128b aligned memory accesses"). The project's own H200 profile shows
# it: GPT-2's 50,257-wide LM head in bf16 runs on sm75-era CUTLASS kernels (validation/measured/README.md).
ALIGNMENT_BYTES = 16
TENSOR_CORE_PATHS = ("fp16", "bf16", "fp8")  # the compute paths whose GEMMs are tensor-core kernels with this rule
TILE_M = 128  # rows of an output tile (CUTLASS default 128 x 128 threadblock tile)
TILE_N = 128  # columns of an output tile
TILE_K = 64  # depth of one K step of a tile; the shallowest split-K slice
MMA_ROWS = 16  # the smallest tensor-core MMA's rows (PTX mma.m16n8k16)

# How a GEMM's compute time c and memory time m combine: (c^p + m^p)^(1/p), between the sum (p = 1, no overlap) and the
# larger of the two (p -> infinity, the sharp roofline). p is fitted on a table that measures both at once, and
# on no validation row: DeepGEMM's dense FP8 GEMMs on an H800 SXM5 (deepseek-ai/DeepGEMM README.md @55ab91f,
# 2025-03-25, 'Normal GEMMs for dense models'), the twelve rows with M = 64 and 128 (decode-sized: a quarter and a half
# of the ridge), each timed against that table's own best rates (1,426 TFLOPS, 2,668 GB/s): the least absolute log error
# over p = 1.00, 1.05, ... 3.00 is at p = 1.45 (tests/engine/test_gemm.py redoes the fit). The sharp corner would put
# their times a median 13 % short. Assumed to carry to other GPUs' and libraries' tiled GEMMs (cuBLAS, CUTLASS); one
# check: cuBLAS bf16 on an H100 (vllm PR #23280's torch-bf16 column, N = 2112, K = 7168, M = 64-256) fits best at
# p = 1.25, so 1.45 times those 7-8 % short (tests/engine/test_gemm_overlap_cublas.py). GEMV-sized work (fewer rows
# than an MMA: tiled) and the matmuls of a formula or traced profile (no GEMM shapes recorded: planner.inputs.models)
# keep the sharp corner.
OVERLAP_EXPONENT = 1.45
OVERLAP_ORIGIN = "fitted on DeepGEMM's M = 64 and 128 FP8 GEMMs on an H800, deepseek-ai/DeepGEMM README @55ab91f"


def tile_rows(m: int) -> int:
    """Rows of the output tile a GEMM with `m` rows runs: the next power of two >= m within [16, 128]."""
    return min(TILE_M, max(MMA_ROWS, 1 << (max(m, 1) - 1).bit_length()))


def gemm_efficiency(m: int, n: int, k: int, sms: int) -> float:
    """Fraction of the ceiling an M x N x K GEMM reaches on `sms` SMs: tile fill x wave utilization (0 < e <= 1).

    tile fill = M / (ceil(M/tm) tm) x N / (ceil(N/tn) tn); work units = tiles x split-K slices;
    wave utilization = units / (ceil(units / sms) x sms). sms = 0 (unknown) models no quantization: 1.0.
    """
    if sms <= 0:
        return 1.0
    tm = min(TILE_M, max(MMA_ROWS, 1 << (max(m, 1) - 1).bit_length()))  # tile_rows(m), inlined: a hot path
    rows, cols = -(-m // tm), -(-n // TILE_N)
    tiles = rows * cols
    slices = max(1, min(sms // tiles, k // TILE_K)) if tiles < sms else 1
    units = tiles * slices
    return m * n * units / (rows * tm * cols * TILE_N * -(-units // sms) * sms)


def tiled(gemms: tuple[tuple[int, int, int, float], ...]) -> bool:
    """Whether a group's GEMMs run as tensor-core tiles whose loads and MMAs overlap (overlapped_seconds): its widest
    GEMM fills an MMA's rows (M >= MMA_ROWS; a prefill's LM head on the last tokens alone does not decide). Below
    that (decode at batch < 16), runtimes stream the weights through GEMV kernels (llama.cpp's mul_mat_vec, cuBLAS's
    gemv paths, TensorRT-LLM's and MLC's GEMV kernels) and the padded MMA rows this module charges bound work that is
    not on the critical path: the sharp corner applies."""
    return bool(gemms) and max(m for m, _, _, _ in gemms) >= MMA_ROWS


def overlapped_seconds(compute_s: float, memory_s: float) -> float:
    """Seconds of a GEMM (or a group of GEMMs with one compute-to-memory ratio) that needs `compute_s` at its FLOP
    rate and `memory_s` at its bandwidth: (c^p + m^p)^(1/p), p = OVERLAP_EXPONENT; the other term when one is 0."""
    big, small = (compute_s, memory_s) if compute_s >= memory_s else (memory_s, compute_s)
    if small <= 0.0:
        return big
    return big * (1.0 + (small / big) ** OVERLAP_EXPONENT) ** (1.0 / OVERLAP_EXPONENT)  # scaled: no underflow


@lru_cache(maxsize=16384)
def shape_efficiency(gemms: tuple[tuple[int, int, int, float], ...], sms: int) -> float:
    """FLOP-weighted efficiency of a group's GEMMs ((M, N, K, count) each): total FLOPs / sum(FLOPs_i / e_i), so the
    group takes as long as its GEMMs would one after another. () (shapes unknown) = 1.0: the ceiling as it is."""
    if not gemms or sms <= 0:
        return 1.0
    work = time = 0.0
    for m, n, k, count in gemms:
        flops = m * n * k * count
        work += flops
        time += flops / gemm_efficiency(m, n, k, sms)
    return work / time if time else 1.0


@lru_cache(maxsize=16384)
def gemm_shape(gemms: tuple[tuple[int, int, int, float], ...], sms: int) -> tuple[float, bool]:
    """(shape_efficiency, tiled) of a group's GEMMs in one cache look-up: the catalog sweep's hot loop asks for both."""
    return shape_efficiency(gemms, sms), tiled(gemms)


@lru_cache(maxsize=4096)
def misaligned_dims(gemms: tuple[tuple[int, int, int, float], ...], element_bytes: float) -> tuple[int, ...]:
    """The weight dimensions among `gemms` ((M, N, K, count) each) whose rows are not ALIGNMENT_BYTES-aligned at
    `element_bytes` per element. Every weight dimension is the N of some GEMM (of the forward, or of a backward
    product for a K), while M (tokens) never is: a matrix's row stride is its N or K, never its row count."""
    step = max(1, int(ALIGNMENT_BYTES // element_bytes))
    return tuple(sorted({n for _, n, _, _ in gemms if n % step}))
