"""GEMM shape efficiency: tile and wave quantization, worked by hand; how a GEMM's compute and memory times combine."""

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.gemm import (MMA_ROWS, OVERLAP_EXPONENT, gemm_efficiency, misaligned_dims, overlapped_seconds,
                                 shape_efficiency, tile_rows, tiled)


def test_one_tile_more_than_the_sms_runs_a_second_wave():
    # 129 tiles of 128 x 128 (M = 129 x 128, N = 128) on 128 SMs: 2 waves, 129 of 256 slots busy
    assert gemm_efficiency(129 * 128, 128, 4096, 128) == pytest.approx(129 / 256)
    # exactly 128 tiles: one full wave
    assert gemm_efficiency(128 * 128, 128, 4096, 128) == pytest.approx(1.0)


def test_a_partial_tile_computes_its_overhang_for_nothing():
    # M = 129 rows: two 128-row tiles, 129 / 256 of their rows real; N = 128 x 256 fills 2 x 256 = 512 tiles,
    # exactly 4 waves on 128 SMs
    assert gemm_efficiency(129, 128 * 256, 4096, 128) == pytest.approx(129 / 256)


def test_few_rows_run_a_narrow_tile_but_not_below_the_mma_rows():
    assert [tile_rows(m) for m in (1, 16, 17, 32, 100, 128, 5000)] == [16, 16, 32, 32, 128, 128, 128]
    # decode at batch 1: 1 of 16 rows real; N = 4096 -> 32 tiles, split-K 4 ways on 128 SMs = 128 units, one wave
    assert gemm_efficiency(1, 4096, 4096, 128) == pytest.approx(1 / 16)


def test_split_k_fills_the_sms_when_there_are_few_tiles():
    # 768 x 768 output = 36 tiles on 132 SMs; K = 4096 splits floor(132 / 36) = 3 ways: 108 of 132 slots
    assert gemm_efficiency(768, 768, 4096, 132) == pytest.approx(108 / 132)
    # K = 64 is one K step: no split, 36 of 132
    assert gemm_efficiency(768, 768, 64, 132) == pytest.approx(36 / 132)


def test_unknown_sm_count_models_no_quantization():
    assert gemm_efficiency(129, 129, 129, 0) == 1.0 and shape_efficiency(((1, 1, 1, 1.0),), 0) == 1.0
    assert shape_efficiency((), 132) == 1.0


def test_group_efficiency_weighs_gemms_by_their_flops():
    # a GEMM at 1.0 with FLOPs F and one at 129/256 with FLOPs F' = F: time F + F x 256/129,
    # efficiency 2 / (1 + 256/129)
    full, tail = (128 * 128, 128, 4096, 1.0), (129 * 128, 128, 4096, 128 / 129)  # same FLOPs: 128 x 128 rows
    assert shape_efficiency((full, tail), 128) == pytest.approx(2 / (1 + 256 / 129))


@given(st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 20000), st.integers(1, 300))
@settings(max_examples=200, deadline=None)
def test_efficiency_is_a_fraction(m, n, k, sms):
    assert 0 < gemm_efficiency(m, n, k, sms) <= 1


@given(st.integers(1, 64), st.integers(1, 300))
@settings(max_examples=100, deadline=None)
def test_whole_waves_of_whole_tiles_reach_the_ceiling(waves, sms):
    assert gemm_efficiency(128 * waves * sms, 128, 4096, sms) == pytest.approx(1.0)


def test_misaligned_dims_are_weight_rows_not_16_byte_multiples():
    """16 bytes hold 8 bf16 elements or 16 fp8 ones: GPT-2's vocabulary 50,257 is a multiple of neither; 2,304
    (3 x 768) is a multiple of both; 50,264 = 8 x 6,283 is a multiple of 8 but not of 16. A GEMM's M (its tokens) is
    no row stride and is never reported, even when odd."""
    gemms = ((16, 50257, 768, 1.0), (16, 2304, 768, 1.0), (1023, 768, 2304, 1.0))
    assert misaligned_dims(gemms, 2) == (50257,)
    assert misaligned_dims(((8, 50264, 768, 1.0),), 2) == ()
    assert misaligned_dims(((8, 50264, 768, 1.0),), 1) == (50264,)
    assert misaligned_dims(((1023, 768, 768, 1.0),), 2) == ()


# deepseek-ai/DeepGEMM README.md @55ab91f (2025-03-25), 'Normal GEMMs for dense models': FP8 GEMMs on an H800 SXM5
# (NVCC 12.8), M, N, K and the 'Computation' column in TFLOPS; A and B in FP8 (1 byte), the output in BF16 (2 bytes).
DEEPGEMM_DECODE_SIZED = [(64, 2112, 7168, 206), (64, 24576, 1536, 289), (64, 32768, 512, 219), (64, 7168, 16384, 336),
                         (64, 4096, 7168, 287), (64, 7168, 2048, 295), (128, 2112, 7168, 352), (128, 24576, 1536, 535),
                         (128, 32768, 512, 358), (128, 7168, 16384, 645), (128, 4096, 7168, 533),
                         (128, 7168, 2048, 510)]
DEEPGEMM_BEST_TFLOPS = 1426.0  # the table's best rate: M = 4096, N = 7168, K = 16384
DEEPGEMM_BEST_GBPS = 2668.0  # the table's best 'Memory bandwidth': M = 64, N = 7168, K = 16384


def _deepgemm_log_errors(p: float | None) -> list[float]:
    """log(predicted / measured) of each decode-sized row, its compute and memory times at the table's best rates
    combined as (c^p + m^p)^(1/p) (p None: the larger of the two)."""
    out = []
    for m, n, k, tflops in DEEPGEMM_DECODE_SIZED:
        flops, moved = 2 * m * n * k, m * k + n * k + 2 * m * n
        c, mem = flops / (DEEPGEMM_BEST_TFLOPS * 1e12), moved / (DEEPGEMM_BEST_GBPS * 1e9)
        predicted = max(c, mem) if p is None else (c ** p + mem ** p) ** (1 / p)
        out.append(math.log(predicted / (flops / (tflops * 1e12))))
    return out


def test_the_overlap_exponent_is_the_best_fit_to_deepgemms_decode_sized_gemms():
    grid = [round(1 + 0.05 * i, 2) for i in range(41)]  # 1.00 .. 3.00
    best = min(grid, key=lambda p: sum(abs(e) for e in _deepgemm_log_errors(p)))
    assert best == OVERLAP_EXPONENT
    # the sharp roofline corner puts these kernels' times a median 13 % short; the fitted overlap within 1 %
    assert math.exp(statistics.median(_deepgemm_log_errors(None))) == pytest.approx(0.87, abs=0.01)
    assert abs(statistics.median(_deepgemm_log_errors(OVERLAP_EXPONENT))) < 0.01


@given(st.floats(0, 1e3), st.floats(0, 1e3))
def test_overlap_lies_between_the_larger_time_and_the_sum(c, m):
    t = overlapped_seconds(c, m)
    assert max(c, m) * (1 - 1e-12) <= t <= (c + m) * (1 + 1e-12)


def test_overlap_of_equal_times_and_of_one_alone():
    # c = m = 1 s: (1 + 1)^(1 / 1.45) = 2^0.690 = 1.613 s; one term alone is itself
    assert overlapped_seconds(1.0, 1.0) == pytest.approx(2 ** (1 / 1.45))
    assert overlapped_seconds(0.0, 2.5) == 2.5 and overlapped_seconds(3.0, 0.0) == 3.0
    # 4 x more memory than compute: 4^1.45 = 7.46, (1 + 7.46)^(1/1.45) = 4.36, 9 % over the sharp corner's 4
    assert overlapped_seconds(1.0, 4.0) == pytest.approx(4.36, abs=0.005)


def test_a_group_runs_as_tiles_when_its_widest_gemm_fills_an_mma():
    decode_b1 = ((1, 4096, 4096, 32.0), (1, 32000, 4096, 1.0))
    decode_b16 = ((16, 4096, 4096, 32.0), (16, 32000, 4096, 1.0))
    prefill_b1 = ((512, 4096, 4096, 32.0), (1, 32000, 4096, 1.0))  # the LM head on the last token only
    assert (tiled(decode_b1), tiled(decode_b16), tiled(prefill_b1), tiled(())) == (False, True, True, False)
    assert tiled(((MMA_ROWS - 1, 8, 8, 1.0),)) is False
