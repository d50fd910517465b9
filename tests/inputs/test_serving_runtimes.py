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
