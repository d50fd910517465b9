"""A serving row whose engine runs in process (AccelMark's AsyncLLMEngine, no HTTP server): the post-hoc condition
request_overhead_ms replaces data/serving.yaml's front-end time per request, checked on load."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.facts import load_facts
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import with_posthoc
from tests.fixtures.posthoc import posthoc_from

ROWS = """schema_version: 1
rows:
  - {id: am-rps1-ttft, source: "src-a page", model: llama-3-8b, gpu: a100-sxm-80gb, runtime: vllm, tp: 1,
     input_tokens: 220, output_tokens: 200, metric: ttft_median_ms, rate: 0.5}
"""


def test_an_in_process_row_pays_no_front_end_time(tmp_path):
    """Every request reaches the scheduler the front end's time after it arrives, so the whole simulated run shifts
    by it: taking the front end off (0 ms) takes exactly the profile's request_overhead_ms (4 ms, the OpenAI
    server's, tt-inference-server issue #190) off the median TTFT, which counts from the arrival."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS)
    [row] = load_rows(rows)
    inproc = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: 'am-*', request_overhead_ms: 0, why: in process}\n"))
    assert (row.request_overhead_ms, inproc.request_overhead_ms) == (None, 0.0)
    front_ms = load_schedulers().get("vllm").request_overhead_s * 1e3
    assert front_ms == pytest.approx(4.0)
    facts = load_facts()
    assert predict(row, facts) - predict(inproc, facts) == pytest.approx(front_ms, rel=1e-6)


def test_a_front_end_time_out_of_range_is_refused_naming_it(tmp_path):
    for bad in ("-1", "5000", "fast"):
        with pytest.raises(DataFileError, match="request_overhead_ms"):
            posthoc_from(tmp_path, f"  - {{rows: 'a*', request_overhead_ms: {bad}, why: x}}\n")
