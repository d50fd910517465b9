"""A training row's context parallel (`cp`) and interleaved pipeline (`vpp`, virtual stages per rank) fields, and the
`megatron-lm` framework key: made-up rows, loaded and turned into plans; and the dgxc-benchmarking Llama 3.1 rows
written before their values (loaded only). Nothing is estimated."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from planner import ROOT_DIR
from planner.base.schema import DataFileError
from planner.engine.plan import check_plan
from planner.inputs.facts import load_facts
from planner.validation.loso import source_of
from planner.validation.measured import (FRAMEWORK_RUNTIME, ZERO1_FRAMEWORKS, load_measurements, plan_for,
                                         validation_models)

# Made up (no source): Llama-3-70B (80 layers, 8 KV heads) on 64 H100, TP 4 x PP 4 (4 virtual stages each) x CP 2
# leaves 64 / (4 x 4 x 2) = 2 data-parallel ranks; batch 16 = micro-batch 1 x 8 micro-steps x 2 ranks
CP_VPP_ROW = {
    "id": "hand-llama3-70b-h100-x64-tp4-pp4-vpp4-cp2", "gpu": "h100-sxm", "gpus": 64, "model": "llama-3-70b",
    "regime": "train", "framework": "megatron-lm", "precision": "bf16", "weight_bits": 16, "batch": 16,
    "prompt_tokens": 0, "gen_tokens": 0, "seq_len": 8192, "metric": "tokens_per_s", "micro_batch": 1, "grad_accum": 8,
    "tp": 4, "pp": 4, "cp": 2, "vpp": 4, "source": "hand-made test row", "conditions": "none",
}


def write_rows(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "to_predict.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": rows}, sort_keys=False), encoding="utf-8")
    return path


def test_cp_and_vpp_reach_the_training_layout(tmp_path):
    row, = load_measurements(write_rows(tmp_path, [CP_VPP_ROW]), measured=False)
    assert (row.tp, row.pp, row.cp, row.vpp) == (4, 4, 2, 4)
    plan, _, _ = plan_for(row, validation_models(), load_facts().rules)
    lay = plan.workload.layout
    assert (lay.tp, lay.pp, lay.cp, lay.vpp) == (4, 4, 2, 4) and lay.text() == "tp=4,pp=4,cp=2,v=4"
    # two data-parallel ranks: Megatron-LM's distributed optimizer shards the states over them (ZeRO-1)
    assert plan.workload.sharding == "zero1" and plan.runtime == "megatron-lm"
    assert plan.batch == 1 and plan.workload.grad_accum == 8
    check_plan(plan)  # the engine's own layout checks accept it (pp 4 x v 4 = 16 chunks divide 80 layers)


def test_rows_without_cp_and_vpp_keep_one_of_each(tmp_path):
    row = {k: v for k, v in CP_VPP_ROW.items() if k not in ("cp", "vpp")}
    # without CP: 64 / (4 x 4) = 4 ranks, so the same 16 sequences are 1 x 4 micro-steps x 4 ranks
    loaded, = load_measurements(write_rows(tmp_path, [{**row, "grad_accum": 4}]), measured=False)
    assert (loaded.cp, loaded.vpp) == (1, 1)
    lay = plan_for(loaded, validation_models(), load_facts().rules)[0].workload.layout
    assert (lay.cp, lay.vpp) == (1, 1)


def test_megatron_lm_key_is_its_own_profile_with_zero1():
    assert FRAMEWORK_RUNTIME["megatron-lm"] == "megatron-lm" and "megatron-lm" in ZERO1_FRAMEWORKS


@pytest.mark.parametrize("change, field, words", [
    ({"cp": 0}, "cp", "cp"),
    ({"vpp": 0}, "vpp", "vpp"),
    ({"cp": 2048}, "cp", "cp"),
    ({"cp": 3}, "cp", "tp 4 x pp 4 x cp 3 = 48 GPUs per model copy does not divide the row's 64 GPUs"),
    ({"pp": 1, "vpp": 2, "grad_accum": 2}, "vpp", "need pp 2 or more"),
    # CP 2 halves the data-parallel ranks: 1 x 8 x 2 = 16, so a batch of 32 does not multiply out
    ({"batch": 32}, "micro_batch", "x data-parallel ranks 2 (gpus / (tp x pp x cp)) != batch 32"),
])
def test_bad_layout_is_refused_naming_the_field(tmp_path, change, field, words):
    path = write_rows(tmp_path, [{**CP_VPP_ROW, **change}])
    with pytest.raises(DataFileError) as err:
        load_measurements(path, measured=False)
    assert err.value.field == field and words in str(err.value)


@pytest.mark.parametrize("field", ["cp", "vpp"])
def test_inference_row_refuses_a_training_layout(tmp_path, field):
    decode = {"id": "hand-decode", "gpu": "h100-sxm", "gpus": 2, "model": "llama-3-8b", "regime": "decode",
              "framework": "vllm", "precision": "bf16", "weight_bits": 16, "batch": 1, "prompt_tokens": 0,
              "gen_tokens": 128, "seq_len": None, "metric": "tokens_per_s", field: 2, "source": "hand-made test row",
              "conditions": "none"}
    with pytest.raises(DataFileError) as err:
        load_measurements(write_rows(tmp_path, [decode]), measured=False)
    assert err.value.field == field and "training row's layout" in str(err.value)


# ---------------------------------------------------------------- dgxc-benchmarking's Llama 3.1 rows (no values)

DGXC_LLAMA = ROOT_DIR / "validation" / "to_predict" / "dgxc-benchmarking-llama31.yaml"


def test_dgxc_llama_rows_keep_the_tables_layouts():
    rows = load_measurements(DGXC_LLAMA, measured=False)
    assert {source_of(r) for r in rows} == {"NVIDIA/dgxc-benchmarking"} and len(rows) == 78
    layouts = {(r.model, r.precision, "nemo2502" in r.id): (r.tp, r.pp, r.vpp, r.cp) for r in rows}
    # the tables' headings: 8B TP1 CP2; 70B TP4 PP4 VP5 CP2 (FP8 under NeMo 25.02.01: TP4 PP8 VP5 CP1);
    # 405B TP8 PP9 VP7 CP2
    assert layouts[("llama-3-8b", "bf16", False)] == (1, 1, 1, 2)
    assert layouts[("llama-3-70b", "bf16", True)] == (4, 4, 5, 2)
    assert layouts[("llama-3-70b", "fp8", True)] == (4, 8, 5, 1)
    assert layouts[("dgxc-llama3.1-405b", "fp8", False)] == (8, 9, 7, 2)
    for r in rows:
        dp = r.gpus // (r.tp * r.pp * r.cp)
        # weak scaling, MBS 1: 8B GBS 128 per 8 GPUs, 70B 128 per 64, 405B 252 per 576
        per_gpus = {"llama-3-8b": (128, 8), "llama-3-70b": (128, 64), "dgxc-llama3.1-405b": (252, 576)}[r.model]
        assert r.batch * per_gpus[1] == per_gpus[0] * r.gpus and r.micro_batch * r.grad_accum * dp == r.batch
        assert r.framework == "nemo" and r.seq_len == 8192 and not r.checkpointing


def test_dgxc_405b_shape_counts_its_configs_parameters():
    # 126 x (h (h + 2 x 16 x 128) + h^2 + 3 h f) + 2 v h with h 16384, f 53248, v 51,200 (50,257 padded to 1,024)
    h, f, v = 16384, 53248, 51200
    by_hand = 126 * (h * (h + 2 * 16 * 128) + h * h + 3 * h * f) + 2 * v * h
    assert abs(validation_models().get("dgxc-llama3.1-405b").params - by_hand) / by_hand < 0.001


def test_dgxc_gpt3_and_nemotron340b_rows_keep_their_configs_layouts():
    rows = load_measurements(ROOT_DIR / "validation" / "to_predict" / "dgxc-benchmarking-gpt3-nemotron340b.yaml",
                             measured=False)
    assert {source_of(r) for r in rows} == {"NVIDIA/dgxc-benchmarking"} and len(rows) == 42
    layouts = {(r.model, r.gpu, "nemo2412" in r.id): (r.tp, r.pp, r.vpp, r.cp) for r in rows}
    # GPT-3 175B: the configs' VP 12 (NeMo 24.05) and VP 6 (24.12); Nemotron-4 340B: PP 8 on H100, PP 4 on GB200
    assert layouts[("nemo-gpt3-175b", "h100-sxm", False)] == (4, 8, 12, 1)
    assert layouts[("nemo-gpt3-175b", "h100-sxm", True)] == (4, 8, 6, 1)
    assert layouts[("nemotron4-340b", "h100-sxm", False)] == (8, 8, 12, 1)
    assert layouts[("nemotron4-340b", "gb200", False)] == (8, 4, 12, 1)
    strong = [r for r in rows if "-strong-" in r.id]
    # strong scaling keeps GBS 512: 128 GB200 / (TP 8 x PP 4) = 4 ranks x 128 micro-batches of 1
    assert len(strong) == 6 and {r.batch for r in strong} == {512}
    assert {(r.gpus, r.grad_accum) for r in strong} == {(128, 128), (256, 64), (512, 32)}
    # 96 layers = 8 x 12 = 4 x 12 x 2 = 8 x 6 x 2 pipeline chunks: whole layers on every chunk
    assert all(validation_models().get(r.model).layers % (r.pp * r.vpp) == 0 for r in rows)
