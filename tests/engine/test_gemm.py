"""GEMM shape efficiency: tile and wave quantization, worked by hand."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.gemm import gemm_efficiency, misaligned_dims, shape_efficiency, tile_rows


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
    # a GEMM at 1.0 with FLOPs F and one at 129/256 with FLOPs F' = F: time F + F x 256/129, efficiency 2 / (1 + 256/129)
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
