"""MFU, tokens per GPU and the cost of a billion tokens, checked against hand arithmetic."""

import pytest

from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan
from planner.engine.utilization import cost_per_billion_tokens, forward_flops_per_sample, mfu, tokens_per_s_per_gpu
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Train
from planner.inputs.models import load_models

FACTS = load_facts()
SEQ = 4096
# Llama-2-7B (its config.json): 6,738,415,616 parameters, 32,000 x 4,096 of them the input embedding (the LM head is
# separate), 32 layers of width 4,096
PARAMS, EMBEDDING, LAYERS, WIDTH = 6_738_415_616, 32_000 * 4_096, 32, 4_096


def _train(checkpointing=False, gpu="a100-sxm-80gb"):
    plan = Plan(load_models().get("llama-2-7b"), Train(10_000, SEQ, 1, checkpointing=checkpointing, sharding="fsdp"),
                "bf16", gpus=8)
    return estimate_gpu(plan, load_catalog().get(gpu), FACTS)


def test_forward_flops_are_two_per_matmul_weight_and_token_plus_causal_attention():
    # 2 FLOPs per weight and token for every matmul weight (all but the embedding lookup), and attention's QK^T and
    # AV, 2 x 2 x layers x width per token and key, over the causal half of SEQ keys on average
    hand = SEQ * (2 * (PARAMS - EMBEDDING) + 2 * 2 * LAYERS * WIDTH * SEQ / 2)
    assert forward_flops_per_sample(_train()) == pytest.approx(hand, rel=2e-3)


def test_mfu_is_three_forwards_over_the_dense_datasheet_peak():
    e = _train()
    # A100 SXM bf16 dense peak: 312 TFLOPS (NVIDIA A100 datasheet, without sparsity)
    hand = 3 * forward_flops_per_sample(e) * 10_000 / (e.seconds * 8 * 312e12)
    assert 0 < mfu(e) < 1 and mfu(e) == pytest.approx(hand)


def test_checkpointing_costs_time_but_adds_no_model_flops():
    plain, ckpt = _train(), _train(checkpointing=True)
    assert ckpt.seconds > plain.seconds
    assert mfu(ckpt) / mfu(plain) == pytest.approx(plain.seconds / ckpt.seconds)


def test_tokens_per_gpu_and_cost_of_a_billion_tokens():
    e = _train()
    tokens = 10_000 * SEQ
    assert tokens_per_s_per_gpu(e) == pytest.approx(tokens / e.seconds / 8)
    assert cost_per_billion_tokens(e) == pytest.approx(e.cost() / tokens * 1e9)


def test_no_mfu_outside_training():
    plan = Plan(load_models().get("llama-2-7b"), Generate(100, 1, 128), "bf16")
    assert mfu(estimate_gpu(plan, load_catalog().get("h100-sxm"), FACTS)) is None


def test_time_and_cost_to_train_a_trillion_tokens():
    # 10^12 tokens of 4,096-token samples = 244,140,625 samples exactly: the job is those samples, its cost the
    # cost of a billion tokens x 1,000
    m = load_models().get("llama-2-7b")
    plan = Plan(m, Train.for_tokens(1e12, SEQ, sharding="fsdp"), "bf16", gpus=8)
    e = estimate_gpu(plan, load_catalog().get("h100-sxm"), FACTS)
    assert plan.workload.items == 244_140_625
    assert e.tokens_per_s * e.seconds == pytest.approx(1e12)
    assert cost_per_billion_tokens(e) * 1_000 == pytest.approx(e.cost())


def test_train_tokens_are_refused_for_a_model_not_counted_in_tokens():
    generic = next(m for m in load_models().models if not m.counts_tokens)
    with pytest.raises(ValueError, match="train tokens"):
        estimate_all(Plan(generic, Train.for_tokens(1e9, 100), "bf16"), FACTS)
