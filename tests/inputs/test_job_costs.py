"""data/job_costs.yaml: every assumption present, in range, with a source; a warm-up for every runtime."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.job_costs import JOB_COSTS_FILE, load_job_costs
from planner.inputs.runtimes import load_runtimes


def test_the_committed_assumptions_cover_every_runtime_with_sources():
    o = load_job_costs(runtime_ids=tuple(r.id for r in load_runtimes().runtimes))
    assert o.billing_increment_s == 1  # RunPod bills compute per second (docs.runpod.io/accounts-billing/billing)
    assert all(text.strip() for _, text in o.sources)


def test_a_missing_warm_up_or_an_absurd_value_is_named(tmp_path):
    text = JOB_COSTS_FILE.read_text()
    with pytest.raises(DataFileError, match="no warm-up for runtime"):
        load_job_costs(JOB_COSTS_FILE, runtime_ids=("a-runtime-nobody-has",))
    bad = tmp_path / "j.yaml"
    bad.write_text(text.replace("value: 60\n    unit: s\n    source: \"planner default: scheduling", "value: -5\n    "
                                "unit: s\n    source: \"planner default: scheduling"))
    with pytest.raises(DataFileError, match="'pod_start_s'.*must be >= 0"):
        load_job_costs(bad)


def test_a_users_change_is_checked_against_the_limits():
    from planner.inputs.job_costs import with_values
    o = load_job_costs()
    assert with_values(o, {"pod_start_s": 120.0}).pod_start_s == 120.0 and o.pod_start_s == 60  # a copy
    with pytest.raises(ValueError, match="pod_start_s must be between 0 and 3600"):
        with_values(o, {"pod_start_s": 5000.0})
    with pytest.raises(ValueError, match="unknown job-cost assumption 'nope'"):
        with_values(o, {"nope": 1.0})
