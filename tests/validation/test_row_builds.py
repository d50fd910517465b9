"""Validation rows run the llama.cpp build their source printed (Measurement.build -> RuntimeProfile.at_build)."""

import re

from planner.validation.measured import as_known_now, load_measurements, predict_row

# a row predicted before measured carries its build in validation/conditions_read_after.yaml (as_known_now)
ROWS = {r.id: as_known_now(r) for r in load_measurements()}
# 'build 989', 'build: 4400', 'build 6e1531ac (4400)', 'build 1804adb0 (4006)' in a row's source or conditions
PRINTED = re.compile(r"build[ :]+(?:[0-9a-f]{7,9} \()?(\d{3,5})\b")


def test_every_llama_cpp_row_that_prints_its_build_carries_it():
    checked = 0
    for r in ROWS.values():
        printed = {int(b) for b in PRINTED.findall(f"{r.source} {r.conditions}")}
        if r.framework == "llama.cpp" and printed:
            assert r.build in printed, r.id
            checked += 1
    assert checked >= 60


def test_the_ggml_ci_v100_rows_run_build_989s_fp32_sgemm():
    """ggml-org/ci's V100 run of build 989 (2023-08-16): F16 648.31 and Q8_0 648.32 t/s, one path for both."""
    for rid in ("ggmlci-v100pcie-openllama7bv2-f16-ppl2048", "ggmlci-v100pcie-openllama7bv2-q8_0-ppl2048"):
        row = ROWS[rid]
        assert row.build == 989
        prefill = next(p for p in predict_row(row).estimate.phases if p.name == "prefill")
        assert next(g for g in prefill.groups if g.name == "linear layers").compute_path == "fp32"
