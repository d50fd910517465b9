"""Pavlo Khmel's gpt-oss-20b rows ran unsloth's Q4_K_M GGUF, an 11.6 GB file (the source's 'Size (GB)' column); the
committed rows mapped it to the mxfp4 preset at 4.25 bits, experts only, every other weight bf16.
validation/conditions_read_after.yaml reads them (refines_assumed) at the file-size rule of every other GGUF row:
11.6e9 x 8 / 20.91e9 = 4.44 bits over all weights (POST HOC)."""

from dataclasses import replace

import pytest

from planner.validation.measured import load_measurements, predict_row

H100 = "khmel-llamacpp-gpt-oss-20b-q4km-h100sxm"


def _row(row_id):
    return next(r for r in load_measurements() if r.id == row_id)


def test_the_planned_weights_are_the_file_the_source_names():
    weights = next(i for i in predict_row(_row(H100)).estimate.memory.items if i.name == "weights")
    assert weights.gb == pytest.approx(11.6, rel=0.01)


def test_decode_speeds_up_by_less_than_the_bytes_a_token_reads():
    """Per token (my calc, gpt-oss-20b config): 4 of 32 experts x 24 layers x 24.88e6 = 2.39e9 expert weights, and
    637e6 attention + 579e6 output-head weights. Committed: 2.39e9 x 4.25/8 + 1.216e9 x 2 B = 3.70 GB; at 4.44
    bits over all: 3.606e9 x 0.555 = 2.00 GB. The step keeps its fixed costs (KV reads, host work), so the speed
    rises, by less than 3.70 / 2.00 = 1.85."""
    row = _row(H100)
    committed = replace(row, id="not-in-conditions")
    ratio = predict_row(row).predicted / predict_row(committed).predicted
    assert 1.0 < ratio < 3.70 / 2.00
