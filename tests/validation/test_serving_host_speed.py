"""A serving row's host CPU speed (ServingRow.host_speed; a to_predict row or validation/serving/posthoc.yaml may
state it where a source names the machine's CPU) is the row's Plan.host_speed: every host time of the runtime and
of the scheduler is divided by it, the GPU's own time not (planner/engine/host_speed.py)."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError
from planner.engine.serving_sim import step_times
from planner.inputs.facts import load_facts
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.serving_first import load_rows, row_plan
from planner.validation.serving_rescore import load_posthoc, with_posthoc
from tests.fixtures.posthoc import posthoc_from
from tests.fixtures.validation_scripts import load_script

ROWS = """schema_version: 1
rows:
  - {id: v054-burst, source: "src-a page", model: llama-3-8b, gpu: a100-sxm-80gb, runtime: vllm, tp: 1,
     input_tokens: 200, output_tokens: 200, metric: saturation_output_tokens_per_s, requests: 320, engine: v0-sync}
"""


def test_posthoc_host_speed_reaches_the_row_and_is_bounded(tmp_path):
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS)
    (row,) = load_rows(rows)
    assert row.host_speed == 1.0  # the reference hosts when no CPU is named
    slow = with_posthoc(row, posthoc_from(tmp_path, "  - {rows: 'v054-*', host_speed: 0.5, why: a named CPU}\n"))
    assert slow.host_speed == 0.5 and row_plan(slow, load_schedulers().get("vllm")).host_speed == 0.5
    with pytest.raises(DataFileError, match="host_speed"):
        posthoc_from(tmp_path, "  - {rows: 'v054-*', host_speed: 0.1, why: below the plan's bound 0.25}\n")
    rows.write_text(ROWS.replace("engine: v0-sync}", "engine: v0-sync, host_speed: 0.8}"))
    assert load_rows(rows)[0].host_speed == 0.8  # a to_predict row may state it before predicting


def test_a_host_half_as_fast_doubles_v0s_host_time_per_step_and_per_sequence(tmp_path):
    """vLLM before 0.6.0 ('v0-sync', data/serving.yaml) spends 90 us of Python per sequence and 1,900 us per step in
    series with the GPU. On a host half as fast single-threaded: 180 us per sequence, and a one-sequence decode step
    1,900 us longer (3,800 - 1,900), its GPU work unchanged."""
    rows = tmp_path / "rows.yaml"
    rows.write_text(ROWS)
    (row,) = load_rows(rows)
    facts, prof = load_facts(), load_schedulers().get("vllm")
    gpu = facts.catalog.get(row.gpu)
    sched = replace(prof.on(gpu.id, gpu.vram_gib), host_us_per_seq=prof.host_us_per_seq("v0-sync"),
                    step_host_us=prof.step_host_us("v0-sync", 1))
    assert (sched.host_us_per_seq, sched.step_host_us, sched.host_overlapped) == (90, 1900, False)
    ref, slow = (step_times(row_plan(r, prof), gpu, facts, sched, 1, 400)
                 for r in (row, replace(row, host_speed=0.5)))
    assert ref.seq_host_s == pytest.approx(90e-6) and slow.seq_host_s == pytest.approx(180e-6)
    assert slow.dense_all[1] - ref.dense_all[1] == pytest.approx(1900e-6, rel=1e-6)


def test_the_named_hosts_speeds_by_hand_and_entered_post_hoc():
    """Over the reference 2,691.6 (validation/sparecores_hosts.py): g5.xlarge's EPYC 7R32 2,136.6 -> 0.79; Lambda's
    A100 hosts (Zen 3 EPYC) at the Zen 3 family's 2,430.7 -> 0.90; its H100 hosts (Xeon Platinum 8480+) at the
    Sapphire Rapids family's 2,952.4 -> 1.10 (validation/serving_hosts.py), one value per machine in posthoc.yaml."""
    hosts = load_script("serving_hosts")
    speeds = {m.split(" (")[0]: hosts.machine_speed(m) for m in hosts.MACHINES}
    assert speeds == {"aws/g5.xlarge": 0.79, "Lambda 8x A100-SXM4-80GB": 0.90, "Lambda 8x H100-SXM": 1.10}
    entered = {pattern: cond["host_speed"] for pattern, cond in load_posthoc() if "host_speed" in cond}
    assert entered == {"lambda-v054-*xa100-sxm-80gb-*": 0.90, "lambda-v054-*xh100-sxm-*": 1.10,
                       "subrahmanyam-*": 0.79}
