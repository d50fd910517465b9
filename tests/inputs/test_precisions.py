"""Precision rules data: loading, lookups, validation errors."""

import pytest

from planner.inputs.precisions import load_rules
from planner.base.schema import DataFileError, UnknownNameError


def test_weight_bytes_follow_the_formats():
    r = load_rules()
    assert [r.precision(p).weight_bytes for p in ("fp32", "fp16", "bf16", "fp8", "int8")] == [4, 2, 2, 1, 1]
    assert r.precision("int4").weight_bytes == pytest.approx((4 + 16 / 128) / 8)  # 4 bits + one fp16 scale per 128


def test_default_kv_dtype_is_the_activation_dtype():
    r = load_rules()
    assert r.default_kv_dtype(r.precision("fp32")).id == "fp32"
    assert r.default_kv_dtype(r.precision("bf16")).id == "bf16"
    assert r.default_kv_dtype(r.precision("int4")).id == "fp16"


def test_unknown_precision_suggests():
    with pytest.raises(UnknownNameError, match="did you mean bf16"):
        load_rules().precision("bf61")


def test_a_missing_section_is_named(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nprecisions:\n  - {id: fp32, compute_path: fp32, weight_bytes: 4, act_bytes: 4,"
                    " note: n, source: s}\nkv_dtypes: []\n")
    with pytest.raises(DataFileError, match="kv_dtypes"):
        load_rules(path)


def test_a_bad_compute_path_is_named(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nprecisions:\n  - {id: fp5, compute_path: fp5, weight_bytes: 1, act_bytes: 2,"
                    " note: n, source: s}\nkv_dtypes: [{id: fp16, bytes: 2, source: s}]\n"
                    "attention_backends: [{id: sdpa, name: n, scores_materialized: false, source: s}]\n"
                    "pytorch_builds: [{min_sm: '12.0', max_sm: '12.9', text: t, source: s}]\n")
    with pytest.raises(DataFileError, match="'fp5'.*compute_path"):
        load_rules(path)
