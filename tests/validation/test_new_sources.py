"""The sources written before their values (validation/to_predict/, validation/serving/to_predict/): each file loads
as the predictors read it, and its rows become the plans their sources describe (layout, runtime, batch)."""

from __future__ import annotations

import pytest

from planner import ROOT_DIR
from planner.base.schema import DataFileError
from planner.validation.measured import load_measurements, validation_models
from planner.validation.serving_first import load_rows
from tests.fixtures.to_predict import TO_PREDICT, planned_rows, to_predict_rows
from tests.fixtures.to_predict import planned as plan_of

SERVING = ROOT_DIR / "validation" / "serving" / "to_predict"


def rows_of(name: str):
    return {r.id: r for r in to_predict_rows(name)}


@pytest.mark.parametrize("name, runtimes", [
    # KempnerForge's script compiles every run but 08 (compile_model=false)
    ("kempnerforge-mfu-scaling.yaml", {"torch-compile", "pytorch-eager"}),
    ("fms-fsdp-throughput.yaml", {"pytorch-eager"}),
    ("tinyllama-pretraining.yaml", {"pytorch-eager"}),
])
def test_training_sources_plan_fsdp_over_all_gpus(name, runtimes):
    rows = rows_of(name)
    plans = [plan_of(r) for r in rows.values()]
    assert {p.runtime for p in plans} == runtimes
    for row, plan in zip(rows.values(), plans):
        # one GPU has nothing to shard; every multi-GPU run of these sources is FSDP (FULL_SHARD) over all of them
        assert plan.workload.sharding == ("fsdp" if row.gpus > 1 else "ddp"), row.id
        # the plan's micro-batch is the source's per-GPU batch, and the step is its global batch
        assert plan.batch * row.grad_accum * row.gpus == row.batch


def test_kempnerforge_batches_are_the_scripts_tokens_per_step():
    # mfu_bench.sh: run 08 is --train.batch_size=4 --train.grad_accum_steps=4 over dp_shard 8 -> 128 sequences of
    # 4096 tokens = 524,288 tokens a step; run 02 is 2 x 4 over 2 GPUs -> 16 sequences
    rows = {r.id.split("-")[1]: r for r in rows_of("kempnerforge-mfu-scaling.yaml").values()}
    assert rows["08_8gpu_13b_fsdp8"].batch * rows["08_8gpu_13b_fsdp8"].seq_len == 524_288
    assert rows["02_2gpu_7b_fsdp2"].batch == 16
    assert plan_of(rows["08_8gpu_13b_fsdp8"]).model.id == "kf-llama3-13b"


def test_kempnerforge_13b_ffn_is_the_rounded_llama_rule():
    # 256 x ceil(int(4 x 5120 x 2/3 x 1.3) / 256) = 256 x ceil(17749 / 256) = 256 x 70 = 17920
    assert validation_models().get("kf-llama3-13b").ffn == 17920


def test_tensor_parallel_rows_plan_tp_inside_fsdp_over_the_rest():
    # KempnerForge's layout per run: --distributed.tp T --distributed.dp_shard D with T x D = the run's GPUs; the
    # 2-GPU TP2 run (experiment 03) has no FSDP rank beside it, so it plans as plain data parallel of one rank
    pairs = planned_rows("kempnerforge-mfu-scaling-tp.yaml")
    assert len(pairs) == 10
    for row, plan in pairs:
        dp = row.gpus // row.tp
        assert plan.workload.layout.tp == row.tp and row.tp * dp == row.gpus
        assert plan.workload.sharding == ("fsdp" if dp > 1 else "ddp")
        assert plan.batch * row.grad_accum * dp == row.batch  # micro x accumulation x data-parallel ranks


def test_a_layout_that_does_not_divide_the_gpus_is_refused_naming_tp(tmp_path):
    text = (TO_PREDICT / "kempnerforge-mfu-scaling-tp.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("  gpus: 2\n", "  gpus: 3\n", 1))
    with pytest.raises(DataFileError, match="'tp'.*does not divide the row's 3 GPUs"):
        load_measurements(bad, measured=False)


@pytest.mark.parametrize("name, runtimes", [
    ("ninehills-yi6b-rtx4090.yaml", {"pytorch-eager", "vllm", "turbomind"}),
    ("jan-tensorrt-llm-geforce.yaml", {"tensorrt-llm", "llama.cpp"}),
])
def test_decode_sources_load_and_map_to_profiles(name, runtimes):
    plans = [plan_of(r) for r in rows_of(name).values()]
    assert {p.runtime for p in plans} == runtimes
    assert all(p.gpus == 1 for p in plans)


@pytest.mark.parametrize("name, count", [("zhjunqin-rtx3090-serving.yaml", 24),
                                         ("livinfly-a100pcie40-serving.yaml", 48)])
def test_serving_sources_load(name, count):
    rows = load_rows(SERVING / name)
    assert len(rows) == count
    # Livinfly's random 1024/1024 draws input lengths uniform on 1..1024: mean 512.5, entered as 512
    if name.startswith("livinfly"):
        online = [r for r in rows if r.rate is not None]
        assert {(r.input_tokens, r.output_tokens) for r in online} == {(512, 512)}
        assert sorted({r.rate for r in online}) == [1.0, 2.0, 4.0, 8.0, 16.0]
