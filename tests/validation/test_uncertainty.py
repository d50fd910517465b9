"""Uncertainty bands: regime classification, band() against hand-written files, the writer, file validation."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from planner.engine.plan import Plan
from planner.engine.estimate import estimate_all
from planner.inputs.models import load_models
from planner.base.schema import DataFileError
from planner.validation.uncertainty import (MIN_CELL_ROWS, NO_MEASUREMENT, REGIMES, band, band_basis, band_levels,
                                            band_note, band_or_note, cells_from_rows, coverage, evidence_from_rows,
                                            load_uncertainty, rate_band, regime_of, write_uncertainty)
from planner.validation.measured import RowResult
from planner.validation.loso import source_of
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.facts import load_facts

FACTS = load_facts()


B1, BATCHED, TP = "decode, batch 1", "decode, batched", "decode, tensor parallel"


def by_text(r) -> str:
    """A hand-made row's group: its source text as written."""
    return r.source


def cell(regime: str, cls: str, low: float | None, high: float | None, cal_low: float | None = None,
         cal_high: float | None = None, n: int = 10, fallback: str | None = None) -> dict:
    return {"regime": regime, "gpu_class": cls, "n": n, "quantiles": [0.1, 0.9], "low": low, "high": high,
            "calibrated_low": cal_low if cal_low is not None else low,
            "calibrated_high": cal_high if cal_high is not None else high, "fallback": fallback}


def evidence(regime: str, runtimes: dict | None = None, kinds: dict | None = None, wide=(None, None)) -> dict:
    runtimes = {"llama.cpp": 10, "tensorrt-llm": 5} if runtimes is None else runtimes
    return {"regime": regime, "rows": sum(runtimes.values()), "runtimes": runtimes,
            "model_kinds": {"decoder": sum(runtimes.values())} if kinds is None else kinds,
            "wide_low": wide[0], "wide_high": wide[1]}


def write_bands(tmp_path: Path, cells: list[dict], name: str = "u.yaml", evidences: list[dict] | None = None,
                **header) -> Path:
    doc = {"schema_version": 2, "generated": "2026-11-20", "source": "hand-written test file",
           "residuals": "hand-written", "quantiles": [0.1, 0.9], "method": "hand-written", "accuracy": [],
           "evidence": evidences or [evidence(g) for g in REGIMES], **header, "cells": cells}
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


def decode_estimate(gpu: str, runtime: str = "llama.cpp", batch: int = 1, model: str = "llama-3-8b"):
    plan = Plan(load_models().get(model), Generate(batch, 1, 512), "fp16", runtime=runtime, batch=batch)
    return estimate_all(plan, FACTS, gpu_names=[gpu])[0]


# ---------------------------------------------------------------- regime_of


def test_regime_of_is_what_the_job_is():
    m = load_models().get("llama-3-8b")
    assert regime_of(decode_estimate("h100-sxm")) == B1
    assert regime_of(decode_estimate("h100-sxm", batch=8)) == BATCHED
    tp = estimate_all(Plan(m, Generate(1, 1, 64), "fp16", runtime="vllm", batch=1, gpus=2, parallel="tensor"),
                      FACTS, gpu_names=["h100-sxm"])[0]
    assert tp.parallelism == "tensor" and regime_of(tp) == TP
    # a generate job whose one token comes out of the prompt's forward pass is a prefill, however it is bound
    prefill = estimate_all(Plan(m, Generate(1, 4096, 1), "fp16", runtime="tensorrt-llm", batch=1), FACTS,
                           gpu_names=["h100-sxm"])[0]
    assert regime_of(prefill) == "prefill"
    train = estimate_all(Plan(load_models().get("gpt2-124m"), Train(64, 1024, 1.0), "bf16", batch=8), FACTS,
                         gpu_names=["h100-sxm"])[0]
    assert regime_of(train) == "train"


# ---------------------------------------------------------------- band()

def test_band_contains_the_point_estimate_with_the_shipped_file():
    for gpu in ("h100-sxm", "rtx-4090", "a100-sxm-80gb"):
        e = decode_estimate(gpu, "llama.cpp")
        for calibrated in (False, True):
            low, high = band(e, calibrated)
            assert low <= e.seconds <= high and low < high


def test_band_is_wider_where_residuals_are_larger(tmp_path):
    path = write_bands(tmp_path, all_cells(**{f"{B1}/hbm": cell(B1, "hbm", 0.6, 1.8, 0.8, 1.2),
                                              f"{B1}/gddr": cell(B1, "gddr", 0.95, 1.05, 0.98, 1.02)}))
    hbm, gddr = decode_estimate("h100-sxm"), decode_estimate("rtx-4090")
    lo, hi = band(hbm, path=path)
    assert lo == pytest.approx(0.6 * hbm.seconds) and hi == pytest.approx(1.8 * hbm.seconds)
    lo2, hi2 = band(gddr, path=path)
    assert (hi2 - lo2) / gddr.seconds == pytest.approx(0.10)
    assert (hi2 - lo2) / gddr.seconds < (hi - lo) / hbm.seconds


def test_each_regime_has_its_own_band(tmp_path):
    path = write_bands(tmp_path, all_cells(**{f"{BATCHED}/hbm": cell(BATCHED, "hbm", 0.5, 2.0)}))
    one, eight = decode_estimate("h100-sxm"), decode_estimate("h100-sxm", batch=8)
    assert band(one, path=path) == pytest.approx((0.9 * one.seconds, 1.1 * one.seconds))
    assert band(eight, path=path) == pytest.approx((0.5 * eight.seconds, 2.0 * eight.seconds))


def test_calibrated_band_is_narrower(tmp_path):
    path = write_bands(tmp_path, all_cells(**{f"{B1}/hbm": cell(B1, "hbm", 0.6, 1.8, 0.8, 1.2)}))
    e = decode_estimate("h100-sxm")
    lo, hi = band(e, path=path)
    clo, chi = band(e, calibrated=True, path=path)
    assert lo < clo <= e.seconds <= chi < hi
    assert clo == pytest.approx(0.8 * e.seconds) and chi == pytest.approx(1.2 * e.seconds)


def test_band_is_clamped_to_contain_the_estimate(tmp_path):
    """A cell where every row ran slower than estimated (low = 1.0) still reaches down to the point."""
    path = write_bands(tmp_path, all_cells(**{f"{B1}/gddr": cell(B1, "gddr", 1.0, 1.5)}))
    e = decode_estimate("rtx-4090")
    assert band(e, path=path) == pytest.approx((e.seconds, 1.5 * e.seconds))


def test_a_runtime_no_source_measured_takes_the_regimes_wide_band_and_says_why(tmp_path):
    """Evidence with a wide band (0.5-3.0): a runtime without rows of its own in the regime gets seconds x 0.5 to
    seconds x 3.0, calibrated or not, and the note says it is widened and for which runtime; a runtime with rows keeps
    its cell's +-10 %."""
    evid = [evidence(g, wide=(0.5, 3.0)) for g in REGIMES]
    path = write_bands(tmp_path, all_cells(), evidences=evid)
    e = decode_estimate("rtx-4090", runtime="pytorch-eager")  # only llama.cpp and tensorrt-llm in the evidence
    assert band(e, path=path) == pytest.approx((0.5 * e.seconds, 3.0 * e.seconds))
    assert band(e, calibrated=True, path=path) == pytest.approx((0.5 * e.seconds, 3.0 * e.seconds))
    assert band_note(e, path=path) == ""
    basis = band_basis(e, path=path)
    assert basis.startswith("widened") and "pytorch-eager" in basis and B1 in basis
    seen = decode_estimate("rtx-4090")
    assert band(seen, path=path) == pytest.approx((0.9 * seen.seconds, 1.1 * seen.seconds))
    assert band_basis(seen, path=path) == ""


def test_a_wide_band_needs_both_ends(tmp_path):
    evid = [evidence(g, wide=(0.5, None) if g == B1 else (None, None)) for g in REGIMES]
    with pytest.raises(DataFileError, match="wide_low"):
        load_uncertainty(write_bands(tmp_path, all_cells(), evidences=evid))


def test_a_runtime_no_source_measured_in_the_regime_has_no_band_and_says_so(tmp_path):
    evid = [evidence(g) for g in REGIMES]
    path = write_bands(tmp_path, all_cells(), evidences=evid)
    e = decode_estimate("rtx-4090", runtime="pytorch-eager")  # only llama.cpp and tensorrt-llm in the evidence
    assert band(e, path=path) is None
    note = band_note(e, path=path)
    assert note.startswith(NO_MEASUREMENT) and "pytorch-eager" in note and B1 in note
    assert band(decode_estimate("rtx-4090"), path=path) is not None and band_note(decode_estimate("rtx-4090"),
                                                                                     path=path) == ""
    # one lookup for a cell or an export row: the note where there is no band, the band where there is
    assert band_or_note(e, path=path) == note
    assert band_or_note(decode_estimate("rtx-4090"), path=path) == band(decode_estimate("rtx-4090"), path=path)


def test_a_model_kind_no_row_is_of_has_no_band(tmp_path):
    """A generic profile (SEA: an axial transformer's formulas) is not a decoder; no published row is of its kind."""
    path = write_bands(tmp_path, all_cells())
    sea = load_models().get("sea")
    e = estimate_all(Plan(sea, Infer(100, 1000), "fp32", runtime="llama.cpp", batch=1), FACTS,
                     gpu_names=["rtx-a5000"])[0]
    assert e.feasible and band(e, path=path) is None
    assert band_note(e, path=path).startswith(NO_MEASUREMENT) and "generic" in band_note(e, path=path)


def test_a_regime_with_too_few_rows_has_no_band_instead_of_another_regimes(tmp_path):
    why = "only 3 published decode, tensor parallel measurements, fewer than 5"
    path = write_bands(tmp_path, all_cells(**{f"{TP}/hbm": cell(TP, "hbm", None, None, n=3, fallback=why),
                                              f"{TP}/gddr": cell(TP, "gddr", None, None, n=0, fallback=why)}))
    m = load_models().get("llama-3-8b")
    e = estimate_all(Plan(m, Generate(1, 1, 64), "fp16", runtime="llama.cpp", batch=1, gpus=2, parallel="tensor"),
                     FACTS, gpu_names=["h100-sxm"])[0]
    assert e.feasible and band(e, path=path) is None and why in band_note(e, path=path)


def test_a_cpu_has_no_band_and_says_why():
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 1, 16), "bf16", runtime="pytorch-eager", batch=1)
    e = estimate_all(plan, FACTS, gpu_names=["amd-ryzen-9-7950x"])[0]
    assert e.feasible and band(e) is None and "CPU" in band_note(e)


def test_infeasible_estimate_has_no_band_and_needs_no_note():
    plan = Plan(load_models().get("llama-3-70b"), Generate(1, 1, 16), "fp16", runtime="llama.cpp", batch=1)
    e = estimate_all(plan, FACTS, gpu_names=["rtx-4090"])[0]  # 140 GB of weights on a 24 GB card
    assert not e.feasible and band(e) is None and rate_band(e) is None and band_note(e) == ""
    assert band_or_note(e) is None


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


def test_missing_evidence_is_named(tmp_path):
    path = write_bands(tmp_path, all_cells(), evidences=[evidence(g) for g in REGIMES[:-1]])
    with pytest.raises(DataFileError, match="'train'"):
        load_uncertainty(path)


def test_evidence_that_does_not_add_up_is_rejected(tmp_path):
    bad = {**evidence(B1), "rows": 99}
    path = write_bands(tmp_path, all_cells(), evidences=[bad] + [evidence(g) for g in REGIMES[1:]])
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "runtimes" and B1 in err.value.record


def test_calibrated_band_wider_than_uncalibrated_is_rejected(tmp_path):
    path = write_bands(tmp_path, all_cells(**{f"{B1}/hbm": cell(B1, "hbm", 0.9, 1.1, 0.5, 2.0)}))
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "calibrated_high" and f"{B1}/hbm" in err.value.record


def test_small_cell_must_say_what_stands_in(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"train/gddr": cell("train", "gddr", 0.8, 1.3, n=0)}))
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "fallback"


def test_a_cell_without_a_band_must_say_why(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"train/gddr": cell("train", "gddr", None, None, n=0)}))
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "fallback"


def test_half_a_band_is_rejected(tmp_path):
    path = write_bands(tmp_path, all_cells(**{"train/gddr": cell("train", "gddr", 0.8, None, fallback="x")}))
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "low"


def test_low_above_one_is_rejected(tmp_path):
    path = write_bands(tmp_path, all_cells(**{f"{B1}/hbm": cell(B1, "hbm", 1.2, 1.5)}))
    with pytest.raises(DataFileError, match="'low': must be <= 1, got 1.2"):
        load_uncertainty(path)


# ---------------------------------------------------------------- writer: cells from residuals

def _res(rid: str, ratio: float, gpu: str = "h100-sxm", regime: str = B1, cls: str = "hbm",
         source: str = "src", runtime: str = "llama.cpp") -> RowResult:
    # tokens_per_s rows: predicted / measured speed = measured / predicted seconds = ratio
    return RowResult(rid, gpu, cls, "m", regime, runtime, runtime, "fp16", 1, "tokens_per_s", 100.0,
                     100.0 * ratio, (ratio - 1) * 100, "test", "", source)


def _cell(cells, regime: str = B1, cls: str = "hbm"):
    return next(c for c in cells if c.regime == regime and c.gpu_class == cls)


def test_cells_take_the_10th_and_90th_percentiles_of_their_rows():
    ratios = [0.8, 0.9, 1.0, 1.1, 1.2, 1.3]
    rows = [_res(f"r{i}", r, gpu=f"g{i}") for i, r in enumerate(ratios)]
    c = _cell(cells_from_rows(rows))
    # positions 0.1 x 5 = 0.5 and 0.9 x 5 = 4.5: 0.85 and 1.25
    assert c.n == 6 and c.low == pytest.approx(0.85) and c.high == pytest.approx(1.25) and c.fallback is None


def test_small_cells_fall_back_to_their_own_regimes_wider_range():
    rows = [_res(f"r{i}", r, gpu=f"g{i}") for i, r in enumerate([0.8, 0.9, 1.0, 1.1, 1.2, 1.3])]
    rows.append(_res("lone", 1.6, cls="gddr"))
    c = _cell(cells_from_rows(rows), cls="gddr")
    assert c.n == 1 < MIN_CELL_ROWS and f"all {B1} rows" in c.fallback
    own = _cell(cells_from_rows(rows))
    assert c.low <= own.low and c.high >= 1.6  # at least as wide, and covers its own row


def test_a_regime_with_too_few_rows_gets_no_band_not_another_regimes():
    rows = [_res(f"r{i}", r, gpu=f"g{i}") for i, r in enumerate([0.8, 0.9, 1.0, 1.1, 1.2, 1.3])]
    rows += [_res("t1", 1.4, regime=TP), _res("t2", 1.5, regime=TP)]
    cells = cells_from_rows(rows)
    tp = _cell(cells, TP)
    assert tp.low is None and tp.high is None and tp.n == 2 and "only 2" in tp.fallback
    assert _cell(cells, "train").low is None and "no published train" in _cell(cells, "train").fallback


def test_evidence_counts_rows_by_runtime_and_model_kind():
    rows = [_res("a", 1.0), _res("b", 1.1, runtime="vllm"), _res("c", 0.9, regime="train", runtime="pytorch-eager")]
    ev = {e.regime: e for e in evidence_from_rows(rows)}
    assert ev[B1].rows == 2 and dict(ev[B1].runtimes) == {"llama.cpp": 1, "vllm": 1}
    assert dict(ev[B1].model_kinds) == {"decoder": 2} and ev["prefill"].rows == 0
    assert ev[B1].wide_low is None and ev[B1].wide_high is None  # 2 rows < MIN_CELL_ROWS: no band, no wide band


def test_the_wide_band_is_the_regimes_95_percent_range_never_narrower_than_its_cells():
    """41 ratios 0.6, 0.62, ..., 1.4 (step 0.02): their 2.5th / 97.5th percentiles (linear interpolation at positions
    1.0 and 39.0) are 0.62 and 1.38; a cell band reaching 1.5 widens the high end to 1.5."""
    rows = [_res(f"r{i}", 0.6 + 0.02 * i, gpu=f"g{i}") for i in range(41)]
    [ev] = [e for e in evidence_from_rows(rows) if e.regime == B1]
    assert (ev.wide_low, ev.wide_high) == pytest.approx((0.62, 1.38))
    wide_cell = replace(_cell(cells_from_rows(rows)), high=1.5)
    [ev] = [e for e in evidence_from_rows(rows, [wide_cell]) if e.regime == B1]
    assert (ev.wide_low, ev.wide_high) == pytest.approx((0.62, 1.5))


def test_coverage_judges_each_source_by_a_band_its_rows_did_not_shape():
    """Source 'a' runs 10 rows at ratio 1.0; source 'b' 10 rows at 2.0. From all 20 rows the band is
    [1, 2] (10th/90th percentiles of ten 1.0s and ten 2.0s) and holds every row; left out, each source is judged
    by the other's band alone ([1, 1] or [1, 2] clamped to contain 1): a's rows at 1.0 are inside [1, 2],
    b's rows at 2.0 are outside [1, 1]."""
    rows = [_res(f"a{i}", 1.0, gpu=f"g{i}", source="a") for i in range(10)]
    rows += [_res(f"b{i}", 2.0, gpu=f"h{i}", source="b") for i in range(10)]
    inside_all, inside_held, n = coverage(rows, by_text)[B1]
    assert n == 20 and inside_all == 20 and inside_held == 10


def test_writer_round_trips_through_the_loader(tmp_path):
    rows = [_res(f"r{i}", r, gpu=f"g{i}") for i, r in enumerate([0.8, 0.9, 1.0, 1.1, 1.2, 1.3])]
    acc = [{"regime": B1, "rows": 6, "median_ape": 12.5, "p90_ape": 25.0, "median_bias_pct": 5.0, "target_ape": 10.0,
            "meets": False}]
    path = write_uncertainty(rows, "hand-made residuals", tmp_path / "u.yaml", accuracy=acc,
                             levels=band_levels(rows, by_text))
    table = load_uncertainty(path)
    assert table.accuracy[0].regime == B1 and table.accuracy[0].meets is False
    assert table.residuals == "hand-made residuals" and len(table.cells) == len(REGIMES) * 2
    assert table.evidence_for(B1).rows == 6 and table.cell("train", "hbm").low is None
    assert table.evidence_for(B1).wide_low is not None and table.evidence_for("train").wide_low is None


def test_calibration_removes_each_gpus_own_bias():
    """Two GPUs, each consistently off by its own factor: once each GPU's median is divided out, little is left."""
    rows = [_res(f"a{i}", r, gpu="a") for i, r in enumerate([0.70, 0.72, 0.74])]
    rows += [_res(f"b{i}", r, gpu="b") for i, r in enumerate([1.30, 1.32, 1.34])]
    c = _cell(cells_from_rows(rows))
    assert c.high / c.low > 1.7  # uncalibrated spans both GPUs' biases
    assert c.calibrated_high / c.calibrated_low < 1.06  # about +-2.7 % within each GPU
    assert c.calibrated_low <= 1.0 <= c.calibrated_high


def test_band_levels_widen_until_a_left_out_source_is_held():
    """Five sources of six rows each; each source runs at its own bias (0.8, 0.9, 1.0, 1.1, 1.25). Judged by bands
    rebuilt without it, a source at an end of the range falls outside the 10th-90th percentiles of the others; the
    ladder widens until 80 % of rows are held (or its widest step). Same rows, one source: the in-sample 10-90 band."""
    rows = [_res(f"s{s}r{i}", ratio, gpu=f"g{i}", source=f"s{s}")
            for s, ratio in enumerate((0.8, 0.9, 1.0, 1.1, 1.25)) for i in range(6)]
    levels = band_levels(rows, by_text)
    _, held, n = coverage(rows, by_text, levels)[B1]
    assert levels[B1] != (0.1, 0.9) and n == 30 and (held >= 24 or levels[B1] == (0.0, 1.0))
    _, held_10_90, _ = coverage(rows, by_text)[B1]
    assert held_10_90 < 24  # the plain 10th-90th percentiles hold fewer than 80 % of a left-out source
    one_source = [_res(f"r{i}", r, gpu=f"g{i}") for i, r in enumerate([0.8, 0.9, 1.0, 1.1, 1.2, 1.3])]
    assert band_levels(one_source, by_text)[B1] == (0.0, 1.0)  # left out, the only source has no band to be judged by


def test_a_cells_quantiles_must_be_a_step_of_the_ladder(tmp_path):
    bad = {**cell(B1, "hbm", 0.9, 1.1), "quantiles": [0.2, 0.8]}
    path = write_bands(tmp_path, all_cells(**{f"{B1}/hbm": bad}))
    with pytest.raises(DataFileError) as err:
        load_uncertainty(path)
    assert err.value.field == "quantiles"


def test_meets_target_needs_both_the_error_target_and_the_bias_bound():
    """The accuracy target: batch-1 decode median |error| <= 10 % and no regime biased beyond +-10 %; 'all' has no
    target."""
    from planner.validation.uncertainty import meets_target
    assert meets_target("decode, batch 1", 10.0, -10.0) == (10.0, True)  # both bounds inclusive
    assert meets_target("decode, batch 1", 10.1, 0.0) == (10.0, False)
    assert meets_target("train", 8.0, 12.0) == (15.0, False)  # accurate in the median, but biased
    assert meets_target("all", 5.0, 0.0) == (None, None)
    assert meets_target("prefill", None, None) == (None, None)  # no scored rows


def test_a_publications_rows_are_left_out_together_whatever_file_each_row_cites():
    """Rows cite files, commits and table cells of one repository; the band that judges them is built without all of
    them (loso.source_of), or a source would be judged by its own other rows. Source 'x/a' (ten rows at 2.0, each
    citing its own file) and 'x/b' (ten at 1.0): left out by publication, a's rows meet b's band [1, 1] and fall
    outside; by row text each a-row would be judged by a band nine other a-rows shaped, and held."""
    rows = [_res(f"a{i}", 2.0, gpu=f"g{i}", source=f"x/a:results/run{i}.json @abc") for i in range(10)]
    rows += [_res(f"b{i}", 1.0, gpu=f"h{i}", source=f"x/b:README.md @def, row {i}") for i in range(10)]
    _, held_by_publication, n = coverage(rows, source_of)[B1]
    _, held_by_text, _ = coverage(rows, by_text)[B1]
    assert n == 20 and held_by_publication == 10 and held_by_text == 20
