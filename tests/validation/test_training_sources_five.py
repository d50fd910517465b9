"""Training sources written before their values (validation/to_predict/, branch sources-5): each file loads as the
predictors read it, its framework maps to an existing training runtime, and its rows keep the layout the source
states."""

from __future__ import annotations

from planner import ROOT_DIR
from planner.inputs.facts import load_facts
from planner.validation.loso import source_of
from planner.validation.measured import FRAMEWORK_RUNTIME, load_measurements, plan_for, validation_models

TO_PREDICT = ROOT_DIR / "validation" / "to_predict"


def test_megatron_bridge_maps_to_the_megatron_lm_runtime():
    # Megatron Bridge trains through Megatron Core with Transformer Engine, the megatron-lm profile's stack
    assert FRAMEWORK_RUNTIME["megatron-bridge"] == "megatron-lm"


def test_megatron_bridge_rows_are_llama3_8b_fp8_ddp_on_one_8_gpu_domain():
    rows = load_measurements(TO_PREDICT / "megatron-bridge-perf-summary.yaml", measured=False)
    assert {source_of(r) for r in rows} == {"NVIDIA-NeMo/Megatron-Bridge"}
    assert {r.gpu for r in rows} == {"gb300", "gb200", "b200"} and len(rows) == 3
    # the table: GBS 128 = MBS 2 x GA 8 x 8 data-parallel ranks (TP 1, PP 1), sequence 8192, no recomputation
    assert all((r.gpus, r.batch, r.micro_batch, r.grad_accum, r.tp, r.pp, r.seq_len) == (8, 128, 2, 8, 1, 1, 8192)
               for r in rows)
    assert not any(r.checkpointing for r in rows) and {r.precision for r in rows} == {"fp8"}
    models, rules = validation_models(), load_facts().rules
    plan, _, _ = plan_for(rows[0], models, rules)
    assert plan.runtime == "megatron-lm" and plan.gpus == 8
