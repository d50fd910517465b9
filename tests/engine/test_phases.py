"""Work per step: FLOPs and bytes by hand for small cases, op groups found by name."""

from dataclasses import replace

import pytest

from planner.engine.phases import generate_phases, infer_phases, train_phases
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup


def _setup(precision="fp16", kv="fp16", attention="sdpa"):
    r = load_rules()
    return Setup(r.precision(precision), r.kv_dtype(kv), r.attention(attention))


def _group(groups, name):
    return next(g for g in groups if g.name == name)


def _phase(phases, name):
    return next(p for p in phases if p.name == name)


def test_decode_step_flops_and_bytes_by_hand():
    m = load_models().get("cfdna-gen")
    work = m.decode_work(_setup(), batch=4)
    lin, attn = _group(work, "linear layers"), _group(work, "attention")
    matmul_params = 14 * (4 * 768 * 768 + 3 * 768 * 3072) + 64 * 768  # layers + LM head
    assert lin.flops == 2 * 4 * matmul_params
    assert lin.bytes == matmul_params * 2  # fp16 weights read once per step
    # attention reads the KV cache: per position, 4 sequences x 2 x 14 layers x 768 x 2 bytes
    assert attn.bytes_per_pos == 4 * 2 * 14 * 768 * 2
    assert attn.flops_per_pos == 4 * 14 * 768 * 4  # QK^T and AV, 4 sequences


def test_decode_sums_over_positions_not_an_average():
    m = load_models().get("cfdna-gen")
    phases = generate_phases(m, Generate(10, 5, 8), _setup(), 2, 1.0)
    decode, prefill = _phase(phases, "decode"), _phase(phases, "prefill")
    assert decode.steps == 7 and decode.p0 == 6  # tokens 1..7 fed back, attending 6..12 keys
    assert prefill.steps == 1


def test_fp16_halves_the_weight_bytes_of_fp32():
    m = load_models().get("llama-2-7b")
    lin32 = _group(m.decode_work(_setup("fp32", "fp32"), 1), "linear layers")
    lin16 = _group(m.decode_work(_setup("fp16", "fp16"), 1), "linear layers")
    assert lin16.bytes * 2 == lin32.bytes


def test_checkpointing_adds_one_forward_of_flops():
    m = load_models().get("gpt2-124m")
    step = lambda w: _phase(train_phases(m, w, _setup("bf16", "bf16"), 8, 8.0, 1), "train micro-step")  # noqa: E731
    base = _group(step(Train(64, 128, 1)).groups, "linear layers (fwd+bwd)")
    ckpt = _group(step(Train(64, 128, 1, checkpointing=True)).groups, "linear layers (fwd+bwd)")
    assert base.flops == 6 * 8 * 128 * m.matmul_params  # 6 x tokens x params (fwd 2 + bwd 4)
    assert ckpt.flops == pytest.approx(base.flops * 8 / 6)


def test_manual_attention_materializes_scores():
    m = load_models().get("neuromanifold-gpt")  # 12 layers, 6 heads of 64, no dropout

    def attn(backend, fused):
        s = replace(_setup("bf16", "bf16", backend), fused_elementwise=fused)
        groups = _phase(train_phases(m, Train(8, 1024, 1), s, 1, 8.0, 1), "train micro-step").groups
        fwd, bwd = _group(groups, "attention forward"), _group(groups, "attention backward")
        return fwd._replace(bytes=fwd.bytes + bwd.bytes)  # forward and backward together
    scores = 6 * 12 * 1024 * 1024 * 2  # layers x heads x S^2 x 2 bytes, one sequence
    # fused scale+mask+softmax: forward QK^T write, softmax read+write, AV read (4); backward dP write, P read,
    # softmax backward read P, dP + write dS, dS read by dQ and dK (7)
    assert attn("manual", True).bytes - attn("sdpa", True).bytes == pytest.approx((4 + 7) * scores)
    # eager: the scaling and the additive mask are kernels of their own, each a read and a write (8 forward), and the
    # scaling's backward reads and writes once more (9); the output's (heads, tokens) -> (tokens, heads x 64) copy
    # reads and writes 384 elements per token forward, twice more backward
    layout = 1024 * 12 * 384 * (2 + 4) * 2
    assert attn("manual", False).bytes - attn("sdpa", False).bytes == pytest.approx((8 + 9) * scores + layout)


def test_fsdp_moves_three_shards_of_weights_per_micro_step():
    m = load_models().get("gpt2-124m")
    s = replace(_setup("bf16", "bf16"), shard=4)
    phases = train_phases(m, Train(64, 128, 1, sharding="fsdp"), s, 8, 2.0, 4)
    micro, opt = _phase(phases, "train micro-step"), _phase(phases, "optimizer step")
    # all-gather forward + all-gather backward + reduce-scatter grads, ring (n-1)/n, 2-byte bf16
    assert micro.comm_bytes == pytest.approx(3 * 3 / 4 * m.params * 2)
    assert micro.comm_calls == 3 * 12  # one of each per layer
    assert opt.comm_bytes == 0  # no DDP all-reduce on top
    assert micro.comm_hops == 3 * 12 * 3  # each collective: n-1 = 3 ring steps
    assert micro.comm_gpus == 4 and micro.comm_overlaps


def test_ddp_all_reduces_fp32_gradients_once_per_optimizer_step_during_backward():
    m = load_models().get("gpt2-124m")
    ddp = train_phases(m, Train(64, 128, 1, grad_accum=2), _setup("bf16", "bf16"), 8, 4.0, 4)
    micro, opt = _phase(ddp, "train micro-step"), _phase(ddp, "optimizer step")
    assert opt.comm_bytes == 0  # it runs during the last micro-step's backward, not after it
    # ring all-reduce: 2 x (4-1)/4 x params x 4 B fp32, once per 2 micro-steps (grad_accum 2)
    assert micro.comm_bytes * 2 == pytest.approx(2 * 3 / 4 * m.params * 4)
    assert micro.comm_hops * 2 == 2 * 3  # 2(n-1) ring steps per all-reduce
    assert micro.comm_overlaps


def test_tensor_parallel_collectives_never_overlap_and_use_the_tp_group():
    m = load_models().get("llama-2-7b")
    s = replace(_setup("bf16", "bf16"), tp=4)
    prefill, decode = generate_phases(m, Generate(1, 16, 8), s, 1, 1.0)
    # decode: 2 all-reduces per layer of one token's hidden state (4096 x 2 B), ring 2 x 3/4 of it each, 6 steps;
    # then one all-gather of the logits the vocabulary-split LM head made (32000 x 2 B), ring 3/4 of it, 3 steps
    assert decode.comm_bytes == pytest.approx(2 * 32 * 2 * 3 / 4 * 4096 * 2 + 3 / 4 * 32000 * 2)
    assert decode.comm_calls == 64 + 1 and decode.comm_hops == 64 * 6 + 3 and decode.comm_gpus == 4
    assert not decode.comm_overlaps and not prefill.comm_overlaps
    # prefill: the same all-reduces over the 16 prompt tokens' hidden states, logits for the last token only
    assert prefill.comm_bytes == pytest.approx(2 * 32 * 2 * 3 / 4 * 16 * 4096 * 2 + 3 / 4 * 32000 * 2)


def test_a_whole_lm_head_on_every_gpu_needs_no_logits_gather():
    m = load_models().get("llama-2-7b")
    s = replace(_setup("bf16", "bf16"), tp=8, lm_head_split=False)
    _, decode = generate_phases(m, Generate(1, 16, 8), s, 1, 1.0)
    # only the 2 x 32 all-reduces of 4096 x 2 B, each 2 x 7/8 of it in 14 ring steps
    assert decode.comm_calls == 64 and decode.comm_hops == 64 * 14
    assert decode.comm_bytes == pytest.approx(64 * 2 * 7 / 8 * 4096 * 2)


def test_a_chunked_prefill_all_reduces_once_per_chunk():
    m = load_models().get("llama-2-7b")
    s = replace(_setup("bf16", "bf16"), tp=2, prefill_chunk=512)
    prefill, _ = generate_phases(m, Generate(1, 1200, 8), s, 1, 1.0)
    # 3 chunks (512, 512, 176): 3 x 64 all-reduces moving the same 1200 tokens' hidden states in all, one gather
    assert prefill.comm_calls == 3 * 64 + 1 and prefill.comm_hops == 3 * 64 * 2 + 1
    assert prefill.comm_bytes == pytest.approx(64 * 2 * 1 / 2 * 1200 * 4096 * 2 + 1 / 2 * 32000 * 2)


def test_a_generic_profile_infers_through_the_same_protocol():
    m = load_models().get("betarho-reduced")
    (forward,) = infer_phases(m, Infer(10, 200), _setup("bf16", "bf16"), 2, 5.0)
    matmuls = _group(forward.groups, "matmuls (all layers)")
    assert matmuls.flops == pytest.approx(2 * m.fwd_flops(200))  # batch 2, one forward
    assert matmuls.bytes == m.params * 2  # bf16 weights read once per pass
    assert forward.passes == 5.0 and forward.kernels == m.kernels_per_forward


def test_training_a_generic_profile_costs_three_forwards_and_an_optimizer_step():
    m = load_models().get("betarho-reduced")
    phases = train_phases(m, Train(10, 200, 1), _setup("bf16", "bf16"), 2, 5.0, 1)
    micro = _phase(phases, "train micro-step")
    assert _group(micro.groups, "matmuls (all layers)").flops == pytest.approx(3 * 2 * m.fwd_flops(200))
    opt = _group(_phase(phases, "optimizer step").groups, "optimizer update")
    assert opt.bytes == 28 * m.params  # AdamW fp32: read w, g, m, v; write w, m, v (7 x 4 B)


def test_a_generic_profile_cannot_generate():
    m = load_models().get("sea")
    with pytest.raises(ValueError, match="cannot generate"):
        m.decode_work(_setup(), 1)


def test_mixed_precision_casts_the_master_weights_each_micro_step_and_fp16_unscales_the_gradients():
    m = load_models().get("gpt2-124m")  # 124,439,808 parameters
    P = 124_439_808

    def step(precision, shard=1):
        s = replace(_setup(precision, precision), shard=shard)
        phases = train_phases(m, Train(64, 128, 1), s, 8, 8.0, shard)
        micro, opt = _phase(phases, "train micro-step"), _phase(phases, "optimizer step")
        cast = [g for g in micro.groups if g.name == "mixed-precision weight cast"]
        return (cast[0].bytes if cast else 0.0), _group(opt.groups, "optimizer update").bytes
    # bf16 autocast: read the fp32 master (4 B), write the bf16 copy (2 B) per micro-step; AdamW 28 B per step
    assert step("bf16") == (P * 6, P * 28)
    # fp16 adds GradScaler's in-place unscale of the fp32 gradients: read and write 4 B each
    assert step("fp16") == (P * 6, P * (28 + 8))
    assert step("fp32") == (0.0, P * 28)  # no copy, no scaling
    assert step("bf16", shard=4) == (P * 6 / 4, P * 28 / 4)  # FSDP: each GPU casts and updates its shard


def test_a_job_of_more_passes_repeats_the_same_steps():
    """generate and infer phases of k passes are the one-pass phases with passes = k: the steps do not depend on how
    many batches the job runs (the catalog sweep reuses them when only the job size changes)."""
    m = load_models().get("llama-2-7b")
    for build, job in ((generate_phases, Generate(10, 16, 8)), (infer_phases, Infer(10, 64))):
        one, many = build(m, job, _setup(), 2, 1.0), build(m, job, _setup(), 2, 7.0)
        assert [p.passes for p in many] == [7.0] * len(one)
        assert [p._replace(passes=1.0) for p in many] == list(one)
