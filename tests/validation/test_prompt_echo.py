"""A streamer that skips the prompt only once: in later runs the first item is generate()'s echo of the prompt, put
before any forward pass, so the first interval times generate()'s host set-up, not a prefill (`prompt_echo`, read
after noooop/zerollama's tutorial rows were entered). Such a row is excluded, not scored; the evidence is physical."""

import pytest
import yaml

from planner.base.schema import DataFileError
from planner.validation.measured import conditions_read_after, load_measurements, predict_row, prediction_first_ids

WRITTEN = "validation/to_predict/zerollama-qwen15-rtx4090.yaml"  # the rows as written before their values

ECHO_ID = "zl-qwen1.5-14b-bnbint8-rtx4090-p25-prefill"
DECODE_ID = "zl-qwen1.5-14b-bnbint8-rtx4090-p25-tg100"
GGUF_ID = "zl-qwen1.5-14b-q4_k_m-rtx4090-p25-prefill"  # llama.cpp: the first interval is model.eval of the prompt


def _rows() -> dict:
    return {r.id: r for r in load_measurements()}


def test_the_echoed_value_is_shorter_than_one_read_of_the_weights():
    """Qwen1.5-14B in bnb int8 holds ~14.2e9 weights of 1 B: any forward pass reads them, >= 14.2e9 / 1,008e9 B/s
    (the RTX 4090's bandwidth) = 14.1 ms, and the same stack's decode step is 1000 / tokens_per_s = 76.2 ms; the
    'Prefill' cell is 3.8 ms: no forward pass fits in it."""
    rows = _rows()
    assert rows[ECHO_ID].value < 14.2e9 / 1008e9 < 1.0 / rows[DECODE_ID].value


def test_the_echo_rows_are_excluded_post_hoc_and_the_others_still_scored():
    rows, committed = _rows(), prediction_first_ids()
    echo = [k for k, v in conditions_read_after().items() if v.get("prompt_echo")]
    assert len(echo) == 29  # 5 sizes x 6 transformers-stack methods, less the 14B bf16 'oom'
    assert all(k in committed and rows[k].prompt_echo is None and rows[k].regime == "prefill" for k in echo)
    assert "prompt_echo" in (predict_row(rows[ECHO_ID]).excluded or "")
    assert predict_row(rows[DECODE_ID]).excluded is None
    assert predict_row(rows[GGUF_ID]).excluded is None


def test_prompt_echo_on_a_decode_row_is_refused_naming_the_field(tmp_path):
    with open(WRITTEN, encoding="utf-8") as f:
        raw = next(r for r in yaml.safe_load(f)["rows"] if r["id"] == DECODE_ID)
    path = tmp_path / "rows.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [raw | {"value": 13.1, "prompt_echo": True}]}))
    with pytest.raises(DataFileError, match="prompt_echo.*needs a prefill row"):
        load_measurements(path)
