"""Work per step: FLOPs and bytes by hand for small cases."""

import pytest

from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.jobs import Generate, Train
from planner.inputs.work import Setup
from planner.engine.phases import generate_phases, train_phases
from ?? import decode_groups


def _setup(precision="fp16", kv="fp16", attention="sdpa"):
    r = load_rules()
    return Setup(r.precision(precision), r.kv_dtype(kv), r.attention(attention))


def test_decode_step_flops_and_bytes_by_hand():
    m = load_models().get("cfdna-gen")
    lin, attn, _ = decode_groups(m, _setup(), batch=4)
    matmul_params = 14 * (4 * 768 * 768 + 3 * 768 * 3072) + 64 * 768  # layers + LM head
    assert lin.flops == 2 * 4 * matmul_params
    assert lin.bytes == matmul_params * 2  # fp16 weights read once per step
    # attention reads the KV cache: per position, 4 sequences x 2 x 14 layers x 768 x 2 bytes
    assert attn.bytes_per_pos == 4 * 2 * 14 * 768 * 2
    assert attn.flops_per_pos == 4 * 14 * 768 * 4  # QK^T and AV, 4 sequences


def test_decode_sums_over_positions_not_an_average():
    m = load_models().get("cfdna-gen")
    prefill, decode = generate_phases(m, Generate(10, 5, 8), _setup(), 2, 1.0)
    assert decode.steps == 7 and decode.p0 == 6  # tokens 1..7 fed back, attending 6..12 keys
    assert prefill.steps == 1


def test_fp16_halves_the_weight_bytes_of_fp32():
    m = load_models().get("llama-2-7b")
    lin32 = decode_groups(m, _setup("fp32", "fp32"), 1)[0]
    lin16 = decode_groups(m, _setup("fp16", "fp16"), 1)[0]
    assert lin16.bytes * 2 == lin32.bytes


def test_checkpointing_adds_one_forward_of_flops():
    m = load_models().get("gpt2-124m")
    base = train_phases(m, Train(64, 128, 1), _setup("bf16", "bf16"), 8, 8.0, 1)[0].groups[0]
    ckpt = train_phases(m, Train(64, 128, 1, checkpointing=True), _setup("bf16", "bf16"), 8, 8.0, 1)[0].groups[0]
    assert base.flops == 6 * 8 * 128 * m.matmul_params  # 6 x tokens x params (fwd 2 + bwd 4)
    assert ckpt.flops == pytest.approx(base.flops * 8 / 6)


def test_manual_attention_materializes_scores():
    m = load_models().get("neuromanifold-gpt")
    flash = train_phases(m, Train(8, 1024, 1), _setup("bf16", "bf16", "sdpa"), 1, 8.0, 1)[0].groups[1]
    manual = train_phases(m, Train(8, 1024, 1), _setup("bf16", "bf16", "manual"), 1, 8.0, 1)[0].groups[1]
    # score traffic: 4 x heads x layers x S^2 x 2 bytes, forward + backward (3x)
    assert manual.bytes - flash.bytes == pytest.approx(3 * 4 * 6 * 12 * 1024 * 1024 * 2)


def test_fsdp_moves_three_shards_of_weights_per_micro_step():
    from dataclasses import replace
    m = load_models().get("gpt2-124m")
    s = replace(_setup("bf16", "bf16"), shard=4)
    micro, opt = train_phases(m, Train(64, 128, 1, sharding="fsdp"), s, 8, 2.0, 4)
    # all-gather forward + all-gather backward + reduce-scatter grads, ring (n-1)/n, 2-byte bf16
    assert micro.comm_bytes == pytest.approx(3 * 3 / 4 * m.params * 2)
    assert opt.comm_bytes == 0  # no DDP all-reduce on top
    ddp_micro, ddp_opt = train_phases(m, Train(64, 128, 1), _setup("bf16", "bf16"), 8, 2.0, 4)
    assert ddp_micro.comm_bytes == 0 and ddp_opt.comm_bytes == pytest.approx(2 * 3 / 4 * m.params * 4)
