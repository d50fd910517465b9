"""Ollama rows run on Ampere Altra hosts (Arm Neoverse-N1), read after their predictions
(validation/conditions_read_after.yaml): the host's single-thread speed, and llama.cpp's per-token CPU work on it."""

import pytest

from planner.validation.measured import as_known_now, conditions_read_after, load_measurements, predict_row

ROWS = {r.id: r for r in load_measurements()}
ALTRA_ROWS = ("geerling-ollama-llama32-3b-rtxa4000-thelio",
              *(f"thoss-ollama-{m}-{g}" for m in ("llama31-8b", "r1-14b") for g in ("a4000", "a5000", "t4")))
# PassMark 11 CPU_SINGLETHREAD on Spare Cores' Altra servers: Azure D2/16/32/48ps_v5, Hetzner cax11/21/31/41
ALTRA_RATINGS = (1326.7, 1333.4, 1329.0, 1333.9, 1308.5, 1327.1, 1318.4, 1315.9)
REFERENCE = (2952.4 + 2430.7) / 2  # the reference hosts' mean of family means (validation/sparecores_hosts.py)


def test_an_altra_core_runs_at_0_49_of_the_reference_host_by_hand():
    """Mean rating 10,592.9 / 8 = 1,324.1 over the reference 2,691.6 = 0.492: 0.49 to two places, on every row the
    sources place on an Altra; the Radxa Orion O6 (another Arm SoC, no rating found) carries none."""
    after = conditions_read_after()
    expected = sum(ALTRA_RATINGS) / len(ALTRA_RATINGS) / REFERENCE
    assert expected == pytest.approx(0.492, abs=0.001)
    for rid in ALTRA_ROWS:
        assert after[rid]["host_speed"] == pytest.approx(expected, abs=0.005), rid
    assert "host_speed" not in after.get("geerling-ollama-r1-14b-rtx3080ti-orion", {})


def test_llama_cpps_per_token_cpu_work_takes_1_over_0_49_as_long():
    """llama.cpp's serial CPU work per decode step (step_host_us 750 at the reference host) over the row's 485
    decode steps (486 generated, the first from the prompt pass): 485 x 750 us / 0.49 = 0.7423 s; the GPU's part
    does not change."""
    row = as_known_now(ROWS["thoss-ollama-llama31-8b-a4000"])
    decode = next(ph for ph in predict_row(row).estimate.phases if ph.name == "decode")
    assert decode.step_host_s * decode.passes == pytest.approx(485 * 750e-6 / 0.49, rel=1e-6)
