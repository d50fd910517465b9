"""A serving row's own scheduler limits (max_num_seqs, token_budget, chunked_prefill: what the run's log or command
states, e.g. trtllm-bench's engine) as a row field or a post-hoc condition, checked on load."""

import pytest
import yaml

from planner.base.schema import DataFileError
from planner.inputs.facts import load_facts
from planner.validation.serving_first import load_rows, predict
from planner.validation.serving_rescore import with_posthoc
from tests.fixtures.posthoc import posthoc_from

ROWS = """schema_version: 1
rows:
  - {id: tb-16k, source: "src-b log", model: llama-3-70b, gpu: h100-sxm, runtime: tensorrt-llm, tp: 8,
     input_tokens: 16384, output_tokens: 128, metric: saturation_output_tokens_per_s, max_num_seqs: 2048}
"""


def test_limits_load_from_a_row_and_from_a_posthoc_condition(tmp_path):
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS)
    [row] = load_rows(rows)
    assert (row.max_num_seqs, row.token_budget, row.chunked_prefill) == (2048, None, None)
    ph = posthoc_from(tmp_path, "  - {rows: 'tb-*', token_budget: 8192, chunked_prefill: true, why: the log}\n")
    after = with_posthoc(row, ph)
    assert (after.max_num_seqs, after.token_budget, after.chunked_prefill) == (2048, 8192, True)


@pytest.mark.parametrize("body, field", [("max_num_seqs: 0", "max_num_seqs"), ("token_budget: 8", "token_budget"),
                                         ("chunked_prefill: maybe", "chunked_prefill")])
def test_a_limit_out_of_range_is_refused_naming_it(tmp_path, body, field):
    with pytest.raises(DataFileError, match=field):
        posthoc_from(tmp_path, f"  - {{rows: 'tb-*', {body}, why: x}}\n")


def test_a_concurrency_row_refuses_limits_it_would_ignore(tmp_path):
    """planner.engine.serving (a steady concurrency) has no scheduler to limit: a limit there is refused, not
    dropped."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS.replace("metric: saturation_output_tokens_per_s, max_num_seqs: 2048",
                                 "metric: tpot_median_ms, concurrency: 4, token_budget: 512").replace("tp: 8", "tp: 1"))
    [row] = load_rows(rows)
    with pytest.raises(ValueError, match="token_budget"):
        predict(row, load_facts())


def test_an_in_process_run_states_no_front_end_on_its_row(tmp_path):
    # an offline benchmark (vLLM's benchmark_throughput.py) hands prompts to LLM.generate: no HTTP server, so the row
    # states request_overhead_ms 0 and the simulation charges none; a value beyond a second is refused, named
    row = {"id": "offline", "source": "x", "conditions": "y", "model": "llama-3-8b", "gpu": "h100-sxm",
           "runtime": "vllm", "tp": 1, "input_tokens": 128, "output_tokens": 128,
           "metric": "saturation_output_tokens_per_s", "request_overhead_ms": 0}
    path = tmp_path / "rows.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [row]}))
    assert load_rows(path)[0].request_overhead_ms == 0
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [{**row, "request_overhead_ms": 5000}]}))
    with pytest.raises(DataFileError, match="request_overhead_ms"):
        load_rows(path)
