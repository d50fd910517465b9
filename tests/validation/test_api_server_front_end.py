"""A streamed first token through an OpenAI-compatible server waits for the server's front end: the per-request part
(data/serving.yaml request_overhead_ms, tt-inference-server issue #190) and the prompt's tokenisation, linear in its
tokens (tokenize_us_per_token: Hugging Face tokenizers at 2.7 MiB/s of English prose, 4.24 bytes a token). One
formula (Scheduler.front_end_s) for the serving simulation's queue and a validation row's time to first token
(`api_server`). Answers derived by hand."""

from dataclasses import replace
from functools import lru_cache

import pytest
import yaml

from planner.base.schema import DataFileError, load_yaml
from planner.engine.serving_sim import front_end_entries, simulate
from planner.inputs.serving_runtimes import Scheduler, front_end_seconds, load_schedulers
from planner.validation.measured import (MEASUREMENTS_FILE, MEASUREMENTS_MAX_BYTES, conditions_read_after,
                                         load_measurements, predict_row, prediction_first_ids)
from tests.fixtures.serving_engine import flat_steps

ROW_ID = "scv-smollm2-135m-bf16-h100-sxm-long4096-ttft"
MIXED = Scheduler("t", "test", "vllm", 256, 8192, True, True, 0.9)


def test_the_tokenizer_rate_is_the_gists_throughput_over_bytes_per_token():
    """2.7 MiB/s = 2,831,155 B/s; / 4.24 B a token = 667,725 tokens/s: 1.498 us a token, vLLM's and SGLang's."""
    per_token_s = 4.24 / (2.7 * 2**20)
    for engine in ("vllm", "sglang"):
        assert load_schedulers().get(engine).tokenize_s_per_token == pytest.approx(per_token_s, rel=0.01)


def test_front_end_seconds_is_the_request_part_plus_the_prompts_tokens():
    """vLLM: 4 ms + 4,096 x 1.5 us = 10.144 ms; 256 tokens: 4.384 ms."""
    assert front_end_seconds(0.004, 1.5e-6, 4096) == pytest.approx(0.010144)
    vllm = load_schedulers().get("vllm")
    assert vllm.front_end_s(256) == pytest.approx(0.004384)
    assert vllm.on("h100-sxm", 80).front_end_s(4096) == pytest.approx(0.010144)


def test_the_front_end_queue_charges_each_request_its_own_prompt():
    """Two requests at 0 of 5 and 7 ms of front-end work enter at 5 and 12 ms; one at 100 ms of 4 ms, at 104."""
    assert front_end_entries([0.0, 0.0, 0.1], [0.005, 0.007, 0.004]) == pytest.approx([0.005, 0.012, 0.104])


def test_the_simulation_charges_the_tokenisation_before_the_first_step():
    """One request of 1,000 prompt tokens at 10 us a token: it reaches the scheduler at 10 ms and its 1 ms step ends
    at 11 ms (its TTFT); a 100-token prompt at 1 + 1 = 2 ms."""
    front = replace(MIXED, tokenize_s_per_token=1e-5)
    run = simulate(flat_steps(0.001, 10**6), front, [0.0, 1.0], [1000, 100], [1, 1])
    assert run.ttft_s.tolist() == pytest.approx([0.011, 0.002])


def test_an_api_server_row_waits_for_the_front_end_on_top_of_its_prefill():
    """Spare Cores' SmolLM2 4,096-token TTFT through `vllm serve`: the same row without the server's front end is
    4 ms + 4,096 x 1.5 us = 10.144 ms of host work shorter, on its host (GCP's a3-highgpu-1g, host_speed 1.04 read
    after: validation/sparecores_hosts.py) 10.144 / 1.04 = 9.754 ms."""
    row = next(r for r in load_measurements() if r.id == ROW_ID)
    with_front = predict_row(row).predicted
    without = predict_row(replace(row, api_server=False)).predicted
    assert with_front - without == pytest.approx(0.010144 / 1.04, rel=1e-6)


def test_committed_rows_get_api_server_post_hoc_only():
    committed = prediction_first_ids()
    rows = {r.id: r for r in load_measurements()}
    after = [k for k, v in conditions_read_after().items() if v.get("api_server")]
    assert after and all(rows[k].api_server is None and k in committed and rows[k].streamed_ttft for k in after)


@lru_cache(maxsize=1)
def _raw_rows() -> tuple:
    # the published file (4-5 MB) parsed once per module with the capped C loader, not PyYAML's pure-Python one
    return tuple(load_yaml(MEASUREMENTS_FILE, "rows", max_bytes=MEASUREMENTS_MAX_BYTES))


def _raw_row(row_id: str) -> dict:
    return dict(next(r for r in _raw_rows() if r["id"] == row_id))


@pytest.mark.parametrize("change, words", [
    ({"api_server": True, "streamed_ttft": False}, "needs a prefill row with streamed_ttft"),
    ({"api_server": True, "framework": "hf-transformers", "engine": None}, "not a serving engine"),
])
def test_api_server_is_checked_on_load_naming_the_field(tmp_path, change, words):
    raw = {k: v for k, v in (_raw_row(ROW_ID) | change).items() if v is not None}
    path = tmp_path / "rows.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": [raw]}))
    with pytest.raises(DataFileError, match=f"api_server.*{words}"):
        load_measurements(path)
