"""Uncertainty bands: regime classification, band() against hand-written files, the writer, file validation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from planner.engine.plan import Plan
from planner.engine.estimate import estimate_all
from planner.inputs.models import load_models
from planner.base.schema import DataFileError
from planner.tools.uncertainty import (MIN_CELL_ROWS, REGIMES, band, cells_from_rows, load_uncertainty, rate_band,
                                 regime_of)
from planner.tools.validation import RowResult
from planner.inputs.jobs import Generate, Train
from planner.inputs.facts import load_facts

FACTS = load_facts()


def cell(regime: str, cls: str, low: float, high: float, cal_low: float | None = None, cal_high: float | None = None,
         n: int = 10, fallback: str | None = None) -> dict:
    return {"regime": regime, "gpu_class": cls, "n": n, "low": low, "high": high,
            "calibrated_low": cal_low if cal_low is not None else low,
            "calibrated_high": cal_high if cal_high is not None else high, "fallback": fallback}


def write_bands(tmp_path: Path, cells: list[dict], name: str = "u.yaml", **header) -> Path:
    doc = {"schema_version": 1, "generated": "2026-11-20", "source": "hand-written test file", "split": "test",
           "quantiles": [0.1, 0.9], "method": "hand-written",
           "validated_runtimes": {"llama.cpp": 10, "tensorrt-llm": 5},
           "unvalidated_runtime": {"low": 0.5, "high": 3.0, "note": "hand-written"}, **header, "cells": cells}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    load_uncertainty.cache_clear()
    return path


def all_cells(**overrides) -> list[dict]:
    """Every regime x class at +-10 %, with the named cells replaced."""
    out = []
    for g in REGIMES:
        for k in ("hbm", "gddr"):
            out.append(overrides.get(f"{g}/{k}", cell(g, k, 0.9, 1.1, 0.95, 1.05)))
    return out


def decode_estimate(gpu: str, runtime: str = "llama.cpp"):
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 1, 512), "fp16", runtime=runtime, batch=1)
    return estimate_all(plan, FACTS, gpu_names=[gpu])[0]


# ---------------------------------------------------------------- regime_of

def test_regime_of_follows_what_bounds_the_estimate():
    m = load_models().get("llama-3-8b")
    decode = decode_estimate("h100-sxm")  # batch-1 decode reads every weight per token: memory-bound
    assert regime_of(decode) == "decode"
    # A 4096-token prompt: 2 x 8e9 x 4096 = 66 TFLOP against 16 GB of weights: compute-bound on any GPU.
    prefill = estimate_all(Plan(m, Generate(1, 4096, 1), "fp16", runtime="tensorrt-llm", batch=1), FACTS,
                           gpu_names=["h100-sxm"])[0]
    assert regime_of(prefill) == "prefill/compute"
    train = estimate_all(Plan(load_models().get("gpt2-124m"), Train(64, 1024, 1.0), "bf16", batch=8), FACTS,
                         gpu_names=["h100-sxm"])[0]
    assert regime_of(train) == "train"


# ---------------------------------------------------------------- band()

def test_band_contains_the_point_estimate_with_the_shipped_file():
    for gpu in ("h100-sxm", "rtx-4090", "a100-sxm-80gb"):
        for runtime in ("llama.cpp", "pytorch-eager"):
            e = decode_estimate(gpu, runtime)
            for calibrated in (False, True):
                low, high = band(e, calibrated)
                assert low <= e.seconds <= high and low < high


def test_band_is_wider_where_residuals_are_larger(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"decode/hbm": cell("decode", "hbm", 0.6, 1.8, 0.8, 1.2),
                                              "decode/gddr": cell("decode", "gddr", 0.95, 1.05, 0.98, 1.02)}))
    hbm, gddr = decode_estimate("h100-sxm"), decode_estimate("rtx-4090")
    lo, hi = band(hbm, path=path)
    assert lo == pytest.approx(0.6 * hbm.seconds) and hi == pytest.approx(1.8 * hbm.seconds)
    lo2, hi2 = band(gddr, path=path)
    assert (hi2 - lo2) / gddr.seconds == pytest.approx(0.10)
    assert (hi2 - lo2) / gddr.seconds < (hi - lo) / hbm.seconds


def test_calibrated_band_is_narrower(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"decode/hbm": cell("decode", "hbm", 0.6, 1.8, 0.8, 1.2)}))
    e = decode_estimate("h100-sxm")
    lo, hi = band(e, path=path)
    clo, chi = band(e, calibrated=True, path=path)
    assert lo < clo <= e.seconds <= chi < hi
    assert clo == pytest.approx(0.8 * e.seconds) and chi == pytest.approx(1.2 * e.seconds)


def test_band_is_clamped_to_contain_the_estimate(tmp_path):
    """A cell where every row ran slower than estimated (low = 1.2 would exclude the point) is widened down to it."""
    path = write_bands(tmp_path, all_cells(**{"decode/gddr": cell("decode", "gddr", 1.0, 1.5)}))
    e = decode_estimate("rtx-4090")
    assert band(e, path=path) == pytest.approx((e.seconds, 1.5 * e.seconds))


def test_runtime_without_validation_rows_gets_the_wide_band(tmp_path):
    path = write_bands(tmp_path, all_cells())
    e = decode_estimate("rtx-4090", runtime="pytorch-eager")  # not in validated_runtimes
    assert band(e, path=path) == pytest.approx((0.5 * e.seconds, 3.0 * e.seconds))
    assert band(decode_estimate("rtx-4090"), path=path) == pytest.approx(
        (0.9 * decode_estimate("rtx-4090").seconds, 1.1 * decode_estimate("rtx-4090").seconds))


def test_infeasible_estimate_has_no_band():
    plan = Plan(load_models().get("llama-3-70b"), Generate(1, 1, 16), "fp16", runtime="llama.cpp", batch=1)
    e = estimate_all(plan, FACTS, gpu_names=["rtx-4090"])[0]  # 140 GB of weights on a 24 GB card
    assert not e.feasible and band(e) is None and rate_band(e) is None


def test_rate_band_is_the_time_band_inverted():
    e = decode_estimate("h100-sxm")
    lo_s, hi_s = band(e)
    lo_r, hi_r = rate_band(e)
    assert lo_r == pytest.approx(512 / hi_s) and hi_r == pytest.approx(512 / lo_s)


# ---------------------------------------------------------------- file validation

def test_missing_cell_is_named(tmp_path):
    path = write_bands(tmp_path, all_cells()[:-1])
    with pytest.raises(DataFileError, match="train/gddr"):
        load_uncertainty(path)


def test_calibrated_band_wider_than_uncalibrated_is_rejected(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"decode/hbm": cell("decode", "hbm", 0.9, 1.1, 0.5, 2.0)}))
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "calibrated_high" and "decode/hbm" in err.value.record


def test_small_cell_must_say_what_stands_in(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"train/gddr": cell("train", "gddr", 0.8, 1.3, n=0)}))
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "fallback"


def test_low_above_one_is_rejected(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"decode/hbm": cell("decode", "hbm", 1.2, 1.5)}))
    with pytest.raises(DataFileError, match="'low': must be <= 1, got 1.2"):
        load_uncertainty(path)


# ---------------------------------------------------------------- writer: cells from residuals

def _res(rid: str, ratio: float, gpu: str = "h100-sxm", regime: str = "decode", cls: str = "hbm") -> RowResult:
    # tokens_per_s rows: predicted / measured speed = measured / predicted seconds = ratio
    return RowResult(rid, gpu, cls, "m", regime, "llama.cpp", "llama.cpp", "fp16", 1, "tokens_per_s", 100.0,
                     100.0 * ratio, (ratio - 1) * 100, "test", "", "src")


def test_cells_take_the_10th_and_90th_percentiles_of_their_rows():
    ratios = [0.8, 0.9, 1.0, 1.1, 1.2, 1.3]
    rows = [_res(f"r{i}", r, gpu=f"g{i}") for i, r in enumerate(ratios)]
    c = next(c for c in cells_from_rows(rows) if c.regime == "decode" and c.gpu_class == "hbm")
    # positions 0.1 x 5 = 0.5 and 0.9 x 5 = 4.5: 0.85 and 1.25
    assert c.n == 6 and c.low == pytest.approx(0.85) and c.high == pytest.approx(1.25) and c.fallback is None


def test_small_cells_fall_back_to_a_wider_pooled_range():
    rows = [_res(f"r{i}", r, gpu=f"g{i}") for i, r in enumerate([0.8, 0.9, 1.0, 1.1, 1.2, 1.3])]
    rows.append(_res("lone", 1.6, regime="decode", cls="gddr"))
    c = next(c for c in cells_from_rows(rows) if c.regime == "decode" and c.gpu_class == "gddr")
    assert c.n == 1 < MIN_CELL_ROWS and "all decode rows" in c.fallback
    own = next(c for c in cells_from_rows(rows) if c.regime == "decode" and c.gpu_class == "hbm")
    assert c.low <= own.low and c.high >= 1.6  # at least as wide, and covers its own row


def test_calibration_removes_each_gpus_own_bias():
    """Two GPUs, each consistently off by its own factor: once each GPU's median is divided out, little is left."""
    rows = [_res(f"a{i}", r, gpu="a") for i, r in enumerate([0.70, 0.72, 0.74])]
    rows += [_res(f"b{i}", r, gpu="b") for i, r in enumerate([1.30, 1.32, 1.34])]
    c = next(c for c in cells_from_rows(rows) if c.regime == "decode" and c.gpu_class == "hbm")
    assert c.high / c.low > 1.7  # uncalibrated spans both GPUs' biases
    assert c.calibrated_high / c.calibrated_low < 1.06  # about +-2.7 % within each GPU
    assert c.calibrated_low <= 1.0 <= c.calibrated_high
