"""optimum-quanto's 2023 A10G rows, read after their values (validation/conditions_read_after.yaml): the A10G ships
only in AWS EC2 G5 instances, whose CPU is the AMD EPYC 7R32, so every row runs on that host's single-thread speed."""

from dataclasses import replace

import pytest

from planner.validation.measured import as_known_now, load_measurements, predict_row

ROWS = {r.id: r for r in load_measurements() if r.source.startswith("huggingface/optimum-quanto")}
FREE_ID = "quanto-host-test-row"  # an id with no conditions read after


def test_every_row_runs_on_a_g5s_epyc_7r32():
    """Spare Cores' PassMark single-thread on aws/g5.xlarge, 2,136.6, over the reference: the mean of the Sapphire
    Rapids H100 servers' 2,952.4 and the Zen 3 A100 servers' 2,430.7 = 2,691.6: 0.7938, 0.79 to two places."""
    assert len(ROWS) == 8
    for rid, row in ROWS.items():
        assert row.host_speed is None, rid  # the committed row: host not stated
        assert as_known_now(row).host_speed == pytest.approx(2136.6 / ((2952.4 + 2430.7) / 2), abs=0.005), rid


def test_the_host_bound_fp16_row_takes_1_over_0_79_of_its_dispatch():
    """Sheared-LLaMA-1.3B in fp16 is host-bound in eager PyTorch (its 2.6 GB of weights stream in ~5 ms, the host
    dispatches ~730 kernels a step): its decode dispatch takes 1 / 0.79 as long, the GPU's work the same."""
    now = as_known_now(ROWS["quanto-sheared-llama-1.3b-fp16-a10g-b1-p512-g512"])
    slow = next(ph for ph in predict_row(now).estimate.phases if ph.name == "decode")
    ref = next(ph for ph in predict_row(replace(now, id=FREE_ID, host_speed=None)).estimate.phases
               if ph.name == "decode")
    assert slow.host_s == pytest.approx(ref.host_s / 0.79, rel=1e-9)
    assert slow.gpu_s == pytest.approx(ref.gpu_s, rel=1e-9)
    assert slow.host_s > slow.gpu_s
