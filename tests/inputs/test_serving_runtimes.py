"""data/serving.yaml's front-end time per request: optional, in milliseconds, and never without its source."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.serving_runtimes import load_schedulers
from tests.fixtures.serving_engine import ENGINE_YAML

ENGINE = ENGINE_YAML


def test_the_front_end_time_reaches_the_scheduler_in_seconds(tmp_path):
    path = tmp_path / "serving.yaml"
    path.write_text(ENGINE + "    request_overhead_ms: 4\n    request_overhead_source: a profile of one request\n")
    sched = load_schedulers(path).get("eng").on("h100-sxm", 80)
    assert sched.request_overhead_s == pytest.approx(0.004)
    plain = tmp_path / "plain.yaml"  # another file: load_schedulers keeps what it read per path
    plain.write_text(ENGINE)
    assert load_schedulers(plain).get("eng").on("h100-sxm", 80).request_overhead_s == 0.0


def test_a_front_end_time_without_its_source_is_refused(tmp_path):
    path = tmp_path / "serving.yaml"
    path.write_text(ENGINE + "    request_overhead_ms: 4\n")
    with pytest.raises(DataFileError, match="request_overhead_source"):
        load_schedulers(path)
    negative = tmp_path / "negative.yaml"
    negative.write_text(ENGINE + "    request_overhead_ms: -1\n    request_overhead_source: x\n")
    with pytest.raises(DataFileError, match="request_overhead_ms"):
        load_schedulers(negative)


def test_an_engine_generation_may_name_its_own_per_step_host_time(tmp_path):
    """vLLM's V0 loop (1.9 ms a step) is a generation's own step_host_us; a generation that names none runs the
    runtime profile's (None). A per-step time beyond 0.1 s, or a key the entry does not know, is refused naming
    `engines`."""
    ok = tmp_path / "ok.yaml"
    ok.write_text(ENGINE + "    engines: {old: {host_us_per_seq: 90, step_host_us: 1900}, new: {host_us_per_seq: 0}}\n"
                           "    engines_source: a profile\n")
    profile = load_schedulers(ok).get("eng")
    assert (profile.host_us_per_seq("old"), profile.step_host_us("old")) == (90.0, 1900.0)
    assert profile.step_host_us("new") is None
    # first_token_steps is 0 or 1 and eager_prefill a yes/no (tests/engine/test_v0_prefill_first_token.py)
    for spec in ("{host_us_per_seq: 0, step_host_us: 200000}", "{host_us_per_seq: 0, step_host_s: 1}",
                 "{step_host_us: 100}", "{host_us_per_seq: 0, first_token_steps: 2}",
                 "{host_us_per_seq: 0, eager_prefill: 1}", "{host_us_per_seq: 0, first_token_steps: true}"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(ENGINE + f"    engines: {{old: {spec}}}\n    engines_source: a profile\n")
        load_schedulers.cache_clear()
        with pytest.raises(DataFileError, match="engines"):
            load_schedulers(bad)
