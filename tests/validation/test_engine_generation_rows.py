"""A validation row's `engine` (vLLM's engine generation, from the version its source names): checked on load,
and the row predicted with that generation's CPU work per sequence per step (issue 32 item 6)."""

from dataclasses import replace
from functools import lru_cache

import pytest
import yaml

from planner.base.schema import DataFileError, load_yaml
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import (MEASUREMENTS_FILE, MEASUREMENTS_MAX_BYTES, REFINES_ASSUMED,
                                         conditions_read_after, load_measurements, predict_row, prediction_first_ids)

ROW_ID = "vllm-pr2192-llama2-70b-fp16-a100sxm80x4-tp4-b64-p256-o256"


@lru_cache(maxsize=1)
def _raw_rows() -> tuple:
    # the published file (4-5 MB) parsed once per module with the capped C loader, not PyYAML's pure-Python one
    return tuple(load_yaml(MEASUREMENTS_FILE, "rows", max_bytes=MEASUREMENTS_MAX_BYTES))


def _raw_row(row_id: str) -> dict:
    return dict(next(r for r in _raw_rows() if r["id"] == row_id))


def test_a_v0_row_pays_each_sequence_s_cpu_work_on_every_step():
    """PR #2192's batch-64 row (vLLM 0.2, 'v0-sync'): one prefill round and 255 decode steps, each carrying the 64
    sequences and V0's own per-step loop in place of V1's: 256 x (64 x 90 us + 1,900 us - 260 us) = 1.8944 s more
    than the same row on the current engine."""
    row = next(r for r in load_measurements() if r.id == ROW_ID)
    assert row.engine == "v0-sync"
    vllm = load_schedulers().get("vllm")
    assert (vllm.host_us_per_seq("v0-sync"), vllm.step_host_us("v0-sync")) == (90.0, 1900.0)
    old, now = predict_row(row), predict_row(replace(row, engine=None))
    assert old.predicted - now.predicted == pytest.approx(256 * (64 * 90 + 1900 - 260) * 1e-6, rel=1e-6)


@pytest.mark.parametrize("change, words", [
    ({"engine": "v2"}, "no engine generation 'v2'"),
    ({"engine": "v0", "framework": "llama.cpp"}, r"no engine generation 'v0' \(known: none\)"),
    ({"engine": "v0", "framework": "hf-transformers"}, "not a serving engine"),
])
def test_a_row_s_engine_is_checked_on_load_naming_the_field(tmp_path, change, words):
    path = tmp_path / "rows.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [_raw_row(ROW_ID) | change]}))
    with pytest.raises(DataFileError, match=f"engine.*{words}"):
        load_measurements(path)


def test_committed_rows_get_their_engine_post_hoc_only():
    """A row predicted before measured keeps its committed fields: its engine comes from conditions_read_after,
    and every such entry names a generation vLLM's scheduler knows; an entry replaces an engine the row states only
    where it says refines_assumed (Splitwise's assumed v0-sync)."""
    committed = prediction_first_ids()
    rows = {r.id: r for r in load_measurements()}
    engines = {e.id for e in load_schedulers().get("vllm").engines}
    after = {k: v for k, v in conditions_read_after().items() if "engine" in v}
    assert after and all((rows[k].engine is None or v.get(REFINES_ASSUMED)) and k in committed
                         and v["engine"] in engines for k, v in after.items())
    assert all(rows[k].engine == "v0-sync" for k, v in after.items() if v.get(REFINES_ASSUMED))
