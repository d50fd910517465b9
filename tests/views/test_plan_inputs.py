"""The plan's inputs: the core Plan each job's inputs describe, and the plan in one sentence."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.models import load_models
from planner.views import plan_inputs
from planner.views.plan_inputs import Inputs


def test_to_plan_maps_each_job():
    m = load_models().get("gpt2-124m")
    gen = plan_inputs.to_plan(Inputs(model=m.id, job="generate", seqs=7, prompt=3, gen=9, kv="fp8", batch=4, gpus=2), m)
    assert gen.workload == Generate(7, 3, 9) and gen.kv_dtype == "fp8" and gen.batch == 4 and gen.gpus == 2
    inf = plan_inputs.to_plan(Inputs(model=m.id, job="infer", samples=11, size=128, kv="fp8"), m)
    assert inf.workload == Infer(11, 128) and inf.kv_dtype is None  # a KV dtype only matters for generation
    tr = plan_inputs.to_plan(Inputs(model=m.id, job="train", samples=5, size=64, epochs=2.0, opt="sgd", ckpt=True,
                                    accum=4, rt="torch-compile"), m)
    assert tr.workload == Train(5, 64, 2.0, "sgd", True, 4) and tr.runtime == "torch-compile"


def test_the_plan_sentence_counts_in_words():
    one = plan_inputs.plan_sentence(Inputs(seqs=1, gen=1), plan_inputs.resolve_model(Inputs()))
    assert one.startswith("Generate 1 sequence of 1 new token (")
    many = plan_inputs.plan_sentence(Inputs(seqs=2, gen=165), plan_inputs.resolve_model(Inputs()))
    assert many.startswith("Generate 2 sequences of 165 new tokens (")


def test_the_plan_sentence_names_a_host_cpu_only_when_it_is_not_the_reference():
    model = plan_inputs.resolve_model(Inputs())
    assert "host CPU" not in plan_inputs.plan_sentence(Inputs(), model)
    slower = plan_inputs.plan_sentence(Inputs(host=0.6), model)
    assert "a host CPU 0.6x the reference hosts' single-thread speed" in slower


def test_a_name_typed_with_a_control_character_is_not_a_valid_model_and_says_which_field():
    arch = plan_inputs.default_arch() | {"name": "typed\x1b[2J"}
    with pytest.raises(DataFileError) as err:
        plan_inputs.custom_decoder(arch)
    assert err.value.field == "name" and "U+001B" in err.value.problem


def test_train_tokens_become_the_whole_samples_that_hold_them():
    m = load_models().get("llama-3-8b")
    # 10^12 / 4,096 = 244,140,625 exactly; 10^9 / 3,000 = 333,333.3 -> 333,334 samples (the last one partly used)
    exact = plan_inputs.to_plan(Inputs(model="llama-3-8b", job="train", tokens=1e12, size=4096, epochs=3.0), m)
    assert exact.workload.samples_per_epoch == 244_140_625 and exact.workload.epochs == 1.0
    assert exact.workload.train_tokens == 1e12
    rounded = plan_inputs.to_plan(Inputs(model="llama-3-8b", job="train", tokens=1e9, size=3000), m).workload
    assert rounded.samples_per_epoch == 333_334
    sentence = plan_inputs.plan_sentence(Inputs(model="llama-3-8b", job="train", tokens=1e12, size=4096), m)
    assert "1,000,000,000,000 tokens (244,140,625 samples of 4,096 tokens, one epoch)" in sentence


def test_fp8_training_says_it_runs_transformer_engines_recipe():
    m = load_models().get("llama-3-8b")
    train = plan_inputs.plan_sentence(Inputs(model="llama-3-8b", job="train", prec="fp8", size=4096), m)
    serve = plan_inputs.plan_sentence(Inputs(model="llama-3-8b", job="generate", prec="fp8"), m)
    assert "in fp8 (trained as fp8-te, Transformer Engine's FP8 recipe)" in train
    assert "in fp8," in serve and "fp8-te" not in serve
