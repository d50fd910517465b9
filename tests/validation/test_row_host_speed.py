"""A row's host CPU (Measurement.host_speed) and a runtime version without its own all-reduce (custom_allreduce
false), read after the predictions (validation/conditions_read_after.yaml): Splitwise's DGX rows."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError
from planner.inputs.facts import load_facts
from planner.inputs.runtimes import eager_dispatch_us
from planner.validation.measured import (as_known_now, conditions_read_after, load_measurements, plan_for,
                                         predict_row, validation_models)
from planner.inputs.precisions import load_rules

ROWS = {r.id: r for r in load_measurements()}
A100_ROW = "splitwise-llama-2-70b-fp16-a100sxm80gb-tp8-b1-p512-g128-decode"
H100_ROW = "splitwise-llama-2-70b-fp16-h100sxm-tp8-b1-p512-g128-decode"
FREE_ID = "host-speed-test-row"  # an id with no conditions read after: predicted with the fields it carries


def test_a_dgx_a100s_epyc_7742_runs_at_0_82_of_the_reference_host_by_hand():
    """Zen 3 runs 19 % more instructions a clock than Zen 2 and the EPYC 7763 boosts to 3.5 GHz against the 7742's
    3.4, while Sapphire Rapids and Zen 3 servers score alike single-threaded: 1 / (1.19 x 3.5 / 3.4) = 0.8164,
    0.82 to two places. A DGX H100's Xeon Platinum 8480C is the reference generation: no entry."""
    after = conditions_read_after()
    assert after[A100_ROW]["host_speed"] == pytest.approx(1 / (1.19 * 3.5 / 3.4), abs=0.005)
    assert "host_speed" not in after[H100_ROW]
    for rid in (r for r in ROWS if r.startswith("splitwise-")):
        assert after[rid]["custom_allreduce"] is False, rid  # the branch predates vLLM PR #2192
        assert ("host_speed" in after[rid]) == ("a100" in rid), rid


def test_the_row_is_predicted_on_its_host_and_through_nccl():
    """The committed row keeps what it was predicted with (the reference host, vLLM's own all-reduce); as known
    now its plan carries the host's speed and every decode all-reduce runs in NCCL."""
    committed, now = ROWS[A100_ROW], as_known_now(ROWS[A100_ROW])
    assert committed.host_speed is None and committed.custom_allreduce is True
    assert now.host_speed == 0.82 and now.custom_allreduce is False
    assert plan_for(now, validation_models(), load_rules())[0].host_speed == 0.82
    decode_then = next(ph for ph in predict_row(replace(now, id=FREE_ID, custom_allreduce=True)).estimate.phases
                       if ph.name == "decode")
    decode_now = next(ph for ph in predict_row(now).estimate.phases if ph.name == "decode")
    assert "the runtime's" in decode_then.comm_protocols and "the runtime's" not in decode_now.comm_protocols


def test_host_dispatch_scales_inversely_with_the_host_speed():
    """Eager dispatch (vLLM before CUDA graphs) is host time: on a host at 0.82 of the reference each pass's
    dispatch takes 1 / 0.82 as long; the kernels themselves, on the GPU, do not change."""
    now = as_known_now(ROWS[A100_ROW])
    slow = next(ph for ph in predict_row(now).estimate.phases if ph.name == "decode")
    ref = next(ph for ph in predict_row(replace(now, id=FREE_ID, host_speed=None)).estimate.phases
               if ph.name == "decode")
    assert slow.host_s == pytest.approx(ref.host_s / 0.82, rel=1e-9)
    assert slow.kernels_per_step == ref.kernels_per_step


@pytest.mark.parametrize("entry, field", [("{id: x, host_speed: 9, source: s}", "host_speed"),
                                          ("{id: x, custom_allreduce: 'no', source: s}", "custom_allreduce")])
def test_a_bad_condition_names_its_field(tmp_path, entry, field):
    path = tmp_path / "after.yaml"
    path.write_text(f"schema_version: 1\nrows:\n- {entry}\n")
    with pytest.raises(DataFileError, match=field):
        conditions_read_after.__wrapped__(path)


def test_an_eager_tensor_parallel_step_dispatches_its_collectives_like_kernels_by_hand():
    """vLLM before CUDA graphs calls torch.distributed.all_reduce from Python after each row-parallel linear: Llama-2
    70B's 80 layers x 2 all-reduces + the logits' all-gather = 161 calls a decode step beside its 80 x 12 + 5 = 965
    kernels, each one eager dispatch d (pytorch-eager's, as estimates use it). Splitwise's 128-token run: 127 decode
    steps on the DGX A100's host (0.82): 127 x (965 + 161) x d / 0.82."""
    d = eager_dispatch_us(load_facts().runtimes) * 1e-6
    decode = next(ph for ph in predict_row(as_known_now(ROWS[A100_ROW])).estimate.phases if ph.name == "decode")
    assert decode.comm_calls == 161 and decode.kernels_per_step == 965
    assert decode.host_s == pytest.approx(127 * (965 + 161) * d / 0.82, rel=1e-9)


def test_a_graphed_runtime_adds_no_host_time_for_its_collectives():
    """vLLM V1 replays CUDA graphs: no per-kernel host time, so its collectives add none either."""
    row = replace(as_known_now(ROWS[A100_ROW]), id=FREE_ID, engine="v1")
    decode = next(ph for ph in predict_row(row).estimate.phases if ph.name == "decode")
    assert decode.comm_calls == 161 and decode.host_s == 0.0
