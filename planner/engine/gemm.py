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
"""

from __future__ import annotations

from functools import lru_cache

# Tensor-core GEMM kernels move their operands in 16-byte vectors, so a matrix whose rows (the N or K of a weight) are
# not a multiple of 16 bytes cannot use cuBLAS's fastest kernels: NVIDIA, "Matrix Multiplication Background User's
# Guide", section "Tensor Core Requirements" (cuBLAS 11.0+ uses Tensor Cores for any size, "but efficiency is better
# when ... multiples of 16 bytes", i.e. 8 fp16 elements); the cuBLAS docs' tensor-core usage notes; CUTLASS issue #75
# ("most kernels targeting Tensor Cores require 128b aligned memory accesses"). Seen on an H200 (2026-11-26): GPT-2's
# 50,257-wide LM head in bf16 ran on sm75-era CUTLASS kernels at ~125 TFLOP/s (validation/measured/README.md).
ALIGNMENT_BYTES = 16
TENSOR_CORE_PATHS = ("fp16", "bf16", "fp8")  # the compute paths whose GEMMs are tensor-core kernels with this rule
TILE_M = 128  # rows of an output tile (CUTLASS default 128 x 128 threadblock tile)
TILE_N = 128  # columns of an output tile
TILE_K = 64  # depth of one K step of a tile; the shallowest split-K slice
MMA_ROWS = 16  # the smallest tensor-core MMA's rows (PTX mma.m16n8k16)


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


@lru_cache(maxsize=4096)
def misaligned_dims(gemms: tuple[tuple[int, int, int, float], ...], element_bytes: float) -> tuple[int, ...]:
    """The weight dimensions among `gemms` ((M, N, K, count) each) whose rows are not ALIGNMENT_BYTES-aligned at
    `element_bytes` per element. Every weight dimension is the N of some GEMM (of the forward, or of a backward
    product for a K), while M (tokens) never is: a matrix's row stride is its N or K, never its row count."""
    step = max(1, int(ALIGNMENT_BYTES // element_bytes))
    return tuple(sorted({n for _, n, _, _ in gemms if n % step}))
