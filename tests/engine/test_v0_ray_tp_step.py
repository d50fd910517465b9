"""vLLM's Ray executor called every tensor-parallel GPU's worker through Ray once per step (data/serving.yaml vllm
engines 'v0-nograph' tp_step_host_us): 3.6 ms a step from vllm-project/vllm PR #3763 (Llama-2-7B, one request, 2,000
generated tokens on two 80GB A100s: 24.2 s with Ray, 17.0 s without, (24.2 - 17.0) s / 2,000 = 3.6 ms). Expected
figures are derived by hand from that PR, the engine generation's 1.9 ms loop and 90 us a sequence, and the rows'
host speeds (validation/conditions_read_after.yaml)."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import load_measurements, predict_row
from tests.fixtures.serving_engine import ENGINE_YAML

RAY_STEP_US = (24.2 - 17.0) / 2000 * 1e6  # PR #3763: Ray's per-step cost at TP 2, microseconds
LOOP_US, PER_SEQ_US = 1900.0, 90.0  # the synchronous V0 loop's step and per-sequence host time (data/serving.yaml)


def test_pre_graph_vllm_pays_ray_per_step_only_on_more_than_one_gpu():
    """'v0-nograph' (vLLM before 0.2.6, Ray for TP): 1.9 ms a step on one GPU, 1.9 + 3.6 ms on 2 or 8. 'v0-sync'
    spans versions with and without Ray (and MuxServe's Ray-free fork), so it keeps 1.9 ms at TP 8; V1 runs the
    runtime profile's (None)."""
    vllm = load_schedulers().get("vllm")
    assert RAY_STEP_US == pytest.approx(3600.0)
    assert vllm.step_host_us("v0-nograph") == LOOP_US
    assert vllm.step_host_us("v0-nograph", 1) == LOOP_US
    assert vllm.step_host_us("v0-nograph", 2) == pytest.approx(LOOP_US + RAY_STEP_US)
    assert vllm.step_host_us("v0-nograph", 8) == pytest.approx(LOOP_US + RAY_STEP_US)
    assert vllm.step_host_us("v0-sync", 8) == LOOP_US
    assert vllm.step_host_us("v1", 8) is None


def test_splitwise_tp_steps_carry_the_ray_call_at_their_host_speed():
    """Splitwise's Llama-2-70B, batch 1, 512 + 128 tokens (engine v0-nograph, read after): 127 decode steps of
    (1,900 + 3,600 + 1 x 90) us = 0.70993 s on the DGX H100 (the reference host) at TP 8; on the DGX A100 at TP 2
    the same over its host speed 0.82 = 0.86577 s; the prefill step pays 5,590 us once (over 0.82: 6,817 us)."""
    rows = {r.id: r for r in load_measurements()}
    step_us = LOOP_US + RAY_STEP_US + 1 * PER_SEQ_US
    h100 = predict_row(rows["splitwise-llama-2-70b-fp16-h100sxm-tp8-b1-p512-g128-decode"]).estimate.phases
    assert [ph.name for ph in h100] == ["prefill", "decode"]
    assert h100[1].steps == 127
    assert h100[1].step_host_s == pytest.approx(127 * step_us * 1e-6)
    assert h100[1].step_host_s == pytest.approx(0.70993)
    a100 = predict_row(rows["splitwise-llama-2-70b-fp16-a100sxm80gb-tp2-b1-p512-g128-decode"]).estimate.phases
    assert a100[1].step_host_s == pytest.approx(127 * step_us * 1e-6 / 0.82)
    assert a100[0].step_host_s == pytest.approx(step_us * 1e-6 / 0.82)


def test_a_per_gpu_step_time_needs_the_loop_s_own_and_a_bound(tmp_path):
    """tp_step_host_us adds to a generation's own step_host_us (without one it would have nothing to add to) and
    is microseconds in 0..100,000 like it; refused naming `engines` otherwise."""
    ok = tmp_path / "ok.yaml"
    ok.write_text(ENGINE_YAML + "    engines: {old: {host_us_per_seq: 90, step_host_us: 1000, tp_step_host_us: 500}}\n"
                                "    engines_source: a profile\n")
    profile = load_schedulers(ok).get("eng")
    assert (profile.step_host_us("old", 1), profile.step_host_us("old", 4)) == (1000.0, 1500.0)
    for spec in ("{host_us_per_seq: 90, tp_step_host_us: 500}",
                 "{host_us_per_seq: 90, step_host_us: 1000, tp_step_host_us: 200000}",
                 "{host_us_per_seq: 90, step_host_us: 1000, tp_step_host_us: -1}"):
        bad = tmp_path / "bad.yaml"
        bad.write_text(ENGINE_YAML + f"    engines: {{old: {spec}}}\n    engines_source: a profile\n")
        load_schedulers.cache_clear()
        with pytest.raises(DataFileError, match="engines"):
            load_schedulers(bad)
