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


def test_nemo_maps_to_megatron_lm_and_its_rows_keep_the_tables_layout():
    assert FRAMEWORK_RUNTIME["nemo"] == "megatron-lm"
    rows = {r.model: r for r in load_measurements(TO_PREDICT / "nemo-2407-perf-summary.yaml", measured=False)}
    assert {source_of(r) for r in rows.values()} == {"NVIDIA/NeMo"}
    # the table: GBS = MBS x GA x GPUs / TP (PP 1, CP 1, VP 1), FP8 on DGX-H100, no recomputation
    assert {(m, r.gpus, r.batch, r.micro_batch, r.grad_accum, r.tp, r.pp) for m, r in rows.items()} == {
        ("llama-2-7b", 8, 128, 1, 16, 1, 1), ("nemo-gpt3-5b", 64, 2048, 4, 8, 1, 1),
        ("nemo-gpt3-20b", 64, 256, 2, 4, 2, 1)}
    assert all(r.gpu == "h100-sxm" and r.precision == "fp8" and not r.checkpointing for r in rows.values())


def test_nemo_gpt3_shapes_count_the_parameters_of_their_configs():
    models = validation_models()
    # 5B: 24 layers x (12 d^2 + 13 d) with d 4096, + 50,304 x 4096 tied words + 2048 x 4096 positions, + final norm
    d = 4096
    by_hand = 24 * (12 * d * d + 13 * d) + 50304 * d + 2048 * d + 2 * d
    assert abs(models.get("nemo-gpt3-5b").params - by_hand) / by_hand < 0.01
    assert models.get("nemo-gpt3-20b").vocab == 50432  # 50,257 padded to 128 x TP 2


def test_bloom_row_is_the_tr11_layout_tp4_pp12_dp8():
    assert FRAMEWORK_RUNTIME["megatron-deepspeed"] == "megatron-lm"
    row, = load_measurements(TO_PREDICT / "bloom-176b-training.yaml", measured=False)
    assert source_of(row) == "bigscience-workshop/bigscience"
    # 384 GPUs / (TP 4 x PP 12) = 8 data-parallel ranks; GBS 2048 = MBS 2 x 128 micro-batches x 8 ranks
    assert (row.gpus, row.tp, row.pp, row.micro_batch, row.grad_accum, row.batch) == (384, 4, 12, 2, 128, 2048)
    assert row.checkpointing and row.metric == "step_seconds" and (row.node_gpus, row.fabric_gbits_per_node) == (8, 400)
    # the README's own count: 70 x (12 h^2 + 13 h) + v h + 2 h, h 14336, v 250,880
    by_hand = 70 * (12 * 14336**2 + 13 * 14336) + 250880 * 14336 + 2 * 14336
    assert abs(validation_models().get(row.model).params - by_hand) / by_hand < 0.01


def test_megatron_stacks_shard_the_optimizer_over_data_parallel_ranks():
    """NeMo's distributed_fused_adam and Megatron Core's distributed optimizer are ZeRO stage 1 (the rows' conditions
    say so): a row of those frameworks over several data-parallel ranks is planned zero1, one rank stays ddp."""
    from dataclasses import replace
    from planner.inputs.precisions import load_rules
    rows = load_measurements(TO_PREDICT / "nemo-2407-perf-summary.yaml", measured=False)
    models, rules = validation_models(), load_rules()
    plan, _, _ = plan_for(rows[0], models, rules)
    assert plan.workload.sharding == "zero1"
    one = replace(rows[0], gpus=rows[0].tp * rows[0].pp, batch=rows[0].micro_batch or 1, grad_accum=1)
    assert plan_for(one, models, rules)[0].workload.sharding == "ddp"
