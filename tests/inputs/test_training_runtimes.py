"""Training runtimes as data: the jobs each runtime runs, the layouts it supports and its data-parallel overlap per
layout, validated on load with the record and field named."""

import pytest

from planner.base.schema import DataFileError
from planner.engine.phases import FSDP_COLLECTIVES_PER_STEP
from planner.inputs.jobs import ZERO_STAGES
from planner.inputs.runtimes import SHARDING_LAYOUTS, TRAIN_LAYOUTS, load_runtimes

TRAINING_STACKS = ("megatron-lm", "torchtitan", "deepspeed", "hf-accelerate-fsdp", "maxtext")
BASE = ("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
        "    mem_bw_efficiency: {hbm: 0.8, gddr: 0.8}\n    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n"
        "    launch_overhead_us: 1\n    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n    source: s\n"
        "    fuses_elementwise: false\n    fuses_elementwise_source: s\n")
TRAINING = ("    training:\n      layouts: {layouts}\n      layouts_source: s\n      overlap: {overlap}\n"
            "      overlap_source: s\n")


@pytest.mark.parametrize("rid", TRAINING_STACKS)
def test_each_training_stack_trains_only_and_sources_its_layouts_and_overlap(rid):
    r = load_runtimes().get(rid)
    assert r.jobs == ("train",) and r.jobs_source
    t = r.training
    assert t.layouts and set(t.layouts) <= set(TRAIN_LAYOUTS) and "read 2026-11-27" in t.layouts_source
    assert "read 2026-11-27" in t.overlap_source and r.fuses_elementwise_source
    assert all(t.runs(name) for name, _ in t.overlap)  # an overlap only for a layout it runs


def test_serving_engines_refuse_training():
    rts = load_runtimes()
    for rid in ("vllm", "tensorrt-llm", "llama.cpp", "mlc-llm", "fastertransformer", "deepspeed-inference"):
        assert "train" not in rts.get(rid).jobs
        assert rts.get(rid).refuses("train") == f"runtime {rid}: {rts.get(rid).name} runs generate and infer jobs, " \
                                                 "not train"
    assert rts.get("pytorch-eager").refuses("train", "fsdp", 8) == ""


def test_fsdp_is_run_by_a_stack_that_names_it_zero3():
    """DeepSpeed calls full sharding ZeRO stage 3: its zero3 layout runs the planner's fsdp sharding."""
    ds = load_runtimes().get("deepspeed").training
    assert "fsdp" not in ds.layouts and "zero3" in ds.layouts and ds.runs("fsdp")
    assert ds.shardings() == ("ddp", "zero1", "zero2", "fsdp")


def test_a_layout_a_stack_lacks_is_refused_naming_the_sharding_and_what_it_runs():
    why = load_runtimes().get("torchtitan").refuses("train", "zero1", 8)
    assert why.startswith("sharding zero1: runtime torchtitan does not run it") and "ddp, fsdp, auto" in why
    assert load_runtimes().get("torchtitan").refuses("train", "zero1", 1) == ""  # one GPU partitions nothing


def test_deepspeed_overlaps_only_stage_3_as_overlap_comm_defaults():
    """overlap_comm defaults to false except under stage 3 (DeepSpeedZeroConfig): stages 0-2 expose their
    collectives, stage 3 may hide all of them."""
    eff = load_runtimes().get("deepspeed").efficiency("hbm")
    assert [eff.for_layout(s, 32).dp_comm_overlap for s in ("ddp", "zero1", "zero2", "fsdp")] == [0, 0, 0, 1]


def test_megatron_exposes_one_layers_chunk():
    """Megatron's layer-chunked DP overlap 'exposes only one DP communication chunk': of 32 layers' collectives,
    31/32 may hide, of 80 layers' 79/80."""
    eff = load_runtimes().get("megatron-lm").efficiency("hbm")
    assert eff.for_layout("fsdp", 32).dp_comm_overlap == pytest.approx(31 / 32)
    assert eff.for_layout("zero1", 80).dp_comm_overlap == pytest.approx(79 / 80)


def test_accelerate_fsdp_exposes_the_backward_gather_without_prefetch():
    """Without backward prefetch one of FULL_SHARD's three collectives per unit waits: 2/3 can overlap."""
    overlap = dict(load_runtimes().get("hf-accelerate-fsdp").training.overlap)
    expected = (FSDP_COLLECTIVES_PER_STEP - 1) / FSDP_COLLECTIVES_PER_STEP
    assert overlap["fsdp"] == pytest.approx(expected, abs=5e-4) and overlap["zero2"] == 1.0


@pytest.mark.parametrize("block, field", [
    ("    jobs: [train, serve]\n    jobs_source: s\n", "jobs"),
    ("    jobs: [train]\n", "jobs_source"),
    (TRAINING.format(layouts="[ddp, zero4]", overlap="{ddp: 1.0}"), "layouts"),
    (TRAINING.format(layouts="[]", overlap="{ddp: 1.0}"), "layouts"),
    (TRAINING.format(layouts="[ddp]", overlap="{fsdp: 1.0}"), "fsdp"),
    (TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.5}"), "ddp"),
    (TRAINING.format(layouts="[ddp]", overlap="{tp: 1.0}"), "tp"),
    (TRAINING.format(layouts="[ddp, zero3]", overlap="{ddp: 1.0}"), "overlap"),  # zero3 runs fsdp: no figure
    ("    jobs: [generate]\n    jobs_source: s\n" + TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.0}"),
     "training"),
    # how the stack runs mixed precision and its optimizer (planner/inputs/models/autocast_chains.py)
    (TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.0}") + "      optimizer_kernels: apex\n"
     "      precision_source: s\n", "optimizer_kernels"),
    (TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.0}") + "      autocast_fp32_weights: yes-please\n"
     "      precision_source: s\n", "autocast_fp32_weights"),
    (TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.0}") + "      autocast_fp32_weights: true\n",
     "precision_source"),
    # the communication it overlaps beyond DP gradients (train_layout's *_hidden_share): known names, with a source
    (TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.0}") + "      comm_overlap: [tp, ep]\n"
     "      comm_overlap_source: s\n", "comm_overlap"),
    (TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.0}") + "      comm_overlap: [tp]\n", "comm_overlap_source"),
    # ZeRO-1 by broadcast (InternLM's HybridZeroOptimizer): a whole count of tensors, a zero1 layout, a source
    (TRAINING.format(layouts="[zero1]", overlap="{zero1: 1.0}") + "      zero1_tensors_per_layer: 0\n"
     "      zero1_sync_source: s\n", "zero1_tensors_per_layer"),
    (TRAINING.format(layouts="[ddp]", overlap="{ddp: 1.0}") + "      zero1_tensors_per_layer: 9\n"
     "      zero1_sync_source: s\n", "zero1_tensors_per_layer"),
    (TRAINING.format(layouts="[zero1]", overlap="{zero1: 1.0}") + "      zero1_tensors_per_layer: 9\n",
     "zero1_sync_source"),
])
def test_a_bad_training_declaration_names_its_field(tmp_path, block, field):
    path = tmp_path / f"bad-{field}-{len(block)}.yaml"
    path.write_text(BASE + block)
    with pytest.raises(DataFileError) as exc:
        load_runtimes(path)
    assert exc.value.field == field and "'x'" in exc.value.record


def test_a_record_without_jobs_runs_every_job(tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text(BASE)
    r = load_runtimes(path).get("x")
    assert r.jobs == ("generate", "infer", "train") and r.training is None and r.refuses("train", "zero2", 8) == ""


def test_a_model_parallel_split_the_stack_lacks_is_refused_naming_it():
    """DeepSpeed declares tensor and pipeline parallel but not context parallel; Megatron declares all three."""
    rts = load_runtimes()
    assert rts.get("deepspeed").refuses("train", "zero1", 16, ("tp", "pp")) == ""
    why = rts.get("deepspeed").refuses("train", "zero1", 16, ("tp", "cp"))
    assert why.startswith("layout: runtime deepspeed has no cp parallelism")
    assert rts.get("megatron-lm").refuses("train", "fsdp", 64, ("tp", "pp", "cp")) == ""
    assert rts.get("hf-accelerate-fsdp").refuses("train", "fsdp", 16, ("tp", "pp")).startswith(
        "layout: runtime hf-accelerate-fsdp has no tp or pp parallelism")


def test_every_timed_sharding_maps_to_declared_layouts():
    assert set(SHARDING_LAYOUTS) == set(ZERO_STAGES)
    assert all(set(names) <= set(TRAIN_LAYOUTS) for names in SHARDING_LAYOUTS.values())
