"""transformers' per-layer device-to-host sync in the FlashAttention-2 classes of Qwen2 and Mistral-family models
(data/runtimes.yaml pytorch-eager rotary_sync; planner.inputs.rotary_sync), on a Qwen1.5 row read after its
prediction (validation/conditions_read_after.yaml `transformers`)."""

from dataclasses import replace

import pytest

from planner.engine.plan import check_plan
from planner.inputs.runtimes import load_runtimes
from planner.inputs.precisions import load_rules
from planner.views.explain_text import transformers_rows
from planner.validation.measured import as_known_now, load_measurements, plan_for, predict_row, validation_models

ROWS = {r.id: r for r in load_measurements()}
FA2_ROW = "qwen15hf-0.5b-bf16-a100sxm80-fa2-in1-g2048"
# Qwen1.5-0.5B (config.json): 24 layers, hidden 1024, 16 heads and 16 KV heads of 64: q, k and v 1024 x 1024 each
QKV_BYTES = 24 * 1024 * (1024 + 2 * 1024) * 2  # bf16 weights read per token: 150,994,944 B
A100_SXM_GBPS = 2039.0  # NVIDIA A100 datasheet, 80GB SXM: 2,039 GB/s
SYNC_US = 26.1  # data/runtimes.yaml pytorch-eager host_sync_us (minimind PR #837: 26.11 us a round trip)


def test_the_releases_read_with_the_sync():
    """Read in the wheels: Mistral's class to 4.41, Qwen2's (and Qwen2-MoE, Starcoder2) to 4.44, Mixtral's and
    Phi-3's to 4.47; none in 4.48, none on SDPA, none for no release stated."""
    sync = load_runtimes().get("pytorch-eager").rotary_sync
    assert set(sync.model_types("4.40.2", "flash-attn-2")) == {"mistral", "mixtral", "qwen2", "qwen2_moe",
                                                                "starcoder2"}
    assert set(sync.model_types("4.44.2", "flash-attn-2")) == {"mixtral", "phi3", "qwen2", "qwen2_moe",
                                                                "starcoder2"}
    assert set(sync.model_types("4.45.2", "flash-attn-2")) == {"mixtral", "phi3"}
    assert sync.model_types("4.48.0", "flash-attn-2") == ()
    assert sync.model_types("4.40.2", "sdpa") == ()
    assert sync.model_types(None, "flash-attn-2") == ()


def decode(row):
    return next(ph for ph in predict_row(row).estimate.phases if ph.name == "decode")


def test_a_round_trip_a_layer_and_the_qkv_projections_exposed_by_hand():
    """Batch-1 decode of Qwen1.5-0.5B on an A100 is host-bound (eager dispatch outruns the GPU): the sync adds, per
    step, 24 round trips x 26.1 us = 626.4 us, plus the q/k/v GEMVs' GPU time, 151.0 MB at the runtime's share of
    2,039 GB/s (at 0.8 that would be 92.6 us), which no dispatch hides any more."""
    row = as_known_now(ROWS[FA2_ROW])
    assert row.transformers == "4.37"
    with_sync, without = decode(row), decode(replace(row, transformers="4.45.2"))  # 4.45: gone
    assert without.host_s > without.gpu_s  # host-bound before, so the whole synced time shows
    eff = predict_row(row).estimate.efficiency.mem_bw_efficiency
    steps = with_sync.steps
    assert with_sync.host_syncs == 24
    assert with_sync.host_wait_s == pytest.approx(steps * 24 * SYNC_US * 1e-6, rel=1e-9)
    assert with_sync.synced_s == pytest.approx(steps * QKV_BYTES / (A100_SXM_GBPS * 1e9 * eff), rel=1e-6)
    extra = with_sync.pass_s - without.pass_s
    assert extra == pytest.approx(with_sync.host_wait_s + with_sync.synced_s, rel=1e-9)


def test_no_sync_on_sdpa_after_4_45_or_for_a_model_of_no_listed_type():
    sdpa = as_known_now(ROWS[FA2_ROW.replace("-fa2-", "-nofa2-")])
    assert decode(sdpa).host_syncs == 0
    row = as_known_now(ROWS[FA2_ROW])
    assert decode(replace(row, transformers="4.45.2")).host_syncs == 0
    llama = next(r for r in ROWS.values() if r.framework == "hf-transformers" and r.model == "llama-2-7b"
                 and r.attention == "flash-attn-2" and r.regime == "decode")
    assert decode(replace(llama, transformers="4.40.2")).host_syncs == 0


def test_a_malformed_release_is_refused_naming_the_field():
    plan, _, _ = plan_for(ROWS[FA2_ROW], validation_models(), load_rules())
    with pytest.raises(ValueError, match="transformers: expected a release"):
        check_plan(replace(plan, transformers="four"))


def test_explain_names_the_sync_and_its_release():
    e = predict_row(as_known_now(ROWS[FA2_ROW])).estimate
    (name, text, _), = transformers_rows(e)
    assert name == "transformers release" and text.startswith("4.37:") and ".item()" in text and "qwen2" in text
    linear = next(g for g in e.phases[-1].groups if g.name == "linear layers")
    assert "24 device-to-host round trips a forward" in linear.formula
