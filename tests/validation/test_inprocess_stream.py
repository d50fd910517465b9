"""A serving run that consumes a V0 AsyncLLMEngine's outputs token by token in the engine's own process and event
loop (AccelMark's online scenario): data/serving.yaml's inprocess_stream_us_per_seq per streamed sequence per step,
from vllm PR #8125, set by the post-hoc condition inprocess_stream."""

import re

import pytest

from planner import DATA_DIR
from planner.base.schema import DataFileError
from planner.inputs.facts import load_facts
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import load_posthoc, with_posthoc

ROWS = """schema_version: 1
rows:
  - {id: am-qps1-tpot, source: "src-a page", model: qwen2-0.5b, gpu: a100-sxm-80gb, runtime: vllm, tp: 1,
     input_tokens: 100, output_tokens: 20, metric: tpot_median_ms, rate: 1, engine: v0, requests: 1}
"""


def _posthoc(tmp_path, body: str):
    p = tmp_path / "posthoc.yaml"
    p.write_text("schema_version: 1\nconditions:\n" + body)
    return load_posthoc(p)


def test_the_figure_is_pr_8125s_saving_over_its_sequences_per_step():
    """(31 - 24) ms of TPOT saved, over 8,475.35 tok/s x 24.68 ms = 209 sequences a step (Little's law): 33 us."""
    derived_us = (31 - 24) * 1e3 / (8475.35 * 24.68e-3)
    assert derived_us == pytest.approx(33.5, abs=0.1)
    assert load_schedulers().get("vllm").inprocess_stream_us_per_seq == round(derived_us)


def test_a_lone_streamed_request_pays_it_once_a_token(tmp_path):
    """One request alone: every step carries one sequence, so its TPOT grows by exactly 33 us = 0.033 ms."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS)
    [row] = load_rows(rows)
    streamed = with_posthoc(row, _posthoc(tmp_path, "  - {rows: 'am-*', inprocess_stream: true, why: in process}\n"))
    assert (row.inprocess_stream, streamed.inprocess_stream) == (False, True)
    facts = load_facts()
    assert predict(streamed, facts) - predict(row, facts) == pytest.approx(0.033, rel=1e-6)


def test_a_non_flag_is_refused_naming_it(tmp_path):
    with pytest.raises(DataFileError, match="inprocess_stream"):
        _posthoc(tmp_path, "  - {rows: 'a*', inprocess_stream: often, why: x}\n")


def test_a_figure_out_of_range_or_unsourced_is_refused_naming_it(tmp_path):
    """Beyond a millisecond a sequence a step (the engines' own bound), or without its source, the file is refused."""
    text = (DATA_DIR / "serving.yaml").read_text()
    assert "inprocess_stream_us_per_seq: 33\n" in text
    for bad, field in ((text.replace("inprocess_stream_us_per_seq: 33\n", "inprocess_stream_us_per_seq: 5000\n"),
                        "inprocess_stream_us_per_seq"),
                       (re.sub(r"    inprocess_stream_source: >-\n(      .*\n)+", "", text),
                        "inprocess_stream_source")):
        p = tmp_path / f"serving_{field}.yaml"
        p.write_text(bad)
        with pytest.raises(DataFileError, match=field):
            load_schedulers(p)
