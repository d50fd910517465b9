"""Memory per GPU as Megatron Core + Transformer Engine hold it, derived by hand: FP8 primary weights (NeMo fp8_params,
Megatron-LM --fp8-param-gather) under the distributed optimizer and under DDP, how a row states them, and the
interleaved schedule's micro-batches in flight counted from Megatron's own warmup rule."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from planner.base.schema import DataFileError
from planner.engine.memory import breakdown
from planner.engine.plan import Plan, resolve_setup
from planner.engine.train_layout import activations_in_flight, last_stage_in_flight
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.models import load_models
from planner.inputs.runtimes import with_training
from planner.inputs.work import Setup
from planner.validation.measured import load_measurements, predict_row

FACTS = load_facts()
MODEL = load_models().get("llama-2-7b")
# Llama-2-7B: 6,738,415,616 parameters, of which the layers' matrices (QKV, O, gate+up, down) are
# 32 x 4,096 x (4 x 4,096 + 3 x 11,008) = 6,476,005,376; the rest are the embedding and LM head (2 x 32,000 x 4,096)
PARAMS, LAYER_WEIGHTS = 6_738_415_616, 32 * 4096 * (4 * 4096 + 3 * 11008)


def _setup(precision: str, **changes) -> Setup:
    p = FACTS.rules.precision(precision)
    return replace(Setup(p, FACTS.rules.default_kv_dtype(p), FACTS.rules.attention("flash-attn-2")), **changes)


def test_the_distributed_optimizer_with_fp8_weights_holds_one_byte_weights_and_their_cached_transpose():
    # ZeRO-1 over 4 ranks: BF16 embedding and head 2 B, the layers' matrices as FP8 (1 B) with their FP8 transpose
    # cached across micro-batches (1 B), bf16 gradients 2 B, fp32 master + Adam's two states 12 B / 4
    w = Train(100, 2048, 1)
    fp8 = breakdown(MODEL, w, _setup("fp8-te", zero_stage=1, zero_gpus=4, fp8_weights=True), 1, 0)
    assert fp8.get("weights") == pytest.approx(((PARAMS - LAYER_WEIGHTS) * 2 + LAYER_WEIGHTS * 1) / 1e9)
    assert fp8.get("FP8 weight copies") == pytest.approx(LAYER_WEIGHTS * 1 / 1e9)
    assert fp8.get("gradients") == pytest.approx(PARAMS * 2 / 1e9)
    assert fp8.get("optimizer") == pytest.approx(PARAMS * 12 / 4 / 1e9)
    # BF16 weights cast to FP8 instead hold the BF16 weight and both FP8 copies: 2 B more per layer weight
    cast = breakdown(MODEL, w, _setup("fp8-te", zero_stage=1, zero_gpus=4), 1, 0)
    assert cast.total_gb - fp8.total_gb == pytest.approx(LAYER_WEIGHTS * 2 / 1e9)


def test_ddp_with_fp8_weights_keeps_the_fp32_master_beside_them():
    # fp32 master 4 B + bf16 copy 2 B for the embedding and head, fp32 master 4 B + FP8 1 B for the layers' matrices
    fp8 = breakdown(MODEL, Train(100, 2048, 1), _setup("fp8-te", fp8_weights=True), 1, 0)
    assert fp8.get("weights") == pytest.approx(((PARAMS - LAYER_WEIGHTS) * 6 + LAYER_WEIGHTS * 5) / 1e9)
    assert fp8.get("FP8 weight copies") == pytest.approx(LAYER_WEIGHTS * 1 / 1e9)


def test_a_runtime_holds_fp8_weights_only_under_an_fp8_recipe():
    runtimes = with_training(FACTS.runtimes, "megatron-lm", fp8_weights=True, fp8_weights_source="test")
    for precision, held in (("fp8", True), ("bf16", False)):
        plan = Plan(MODEL, Train(100, 2048, 1), precision, runtime="megatron-lm")
        assert resolve_setup(plan, FACTS.rules, runtimes).fp8_weights is held
    plan = Plan(MODEL, Train(100, 2048, 1), "fp8", runtime="megatron-lm")
    assert resolve_setup(plan, FACTS.rules, FACTS.runtimes).fp8_weights is False  # off by default


# Made up (no source): Llama-3-8B FP8 on 8 H100, TP 1 x CP 2 x 4 data-parallel ranks, batch 128 = 1 x 32 x 4
FP8_ROW = {
    "id": "hand-llama3-8b-fp8-h100-x8-cp2", "gpu": "h100-sxm", "gpus": 8, "model": "llama-3-8b", "regime": "train",
    "framework": "nemo", "precision": "fp8", "weight_bits": 16, "batch": 128, "prompt_tokens": 0, "gen_tokens": 0,
    "seq_len": 8192, "metric": "tokens_per_s", "micro_batch": 1, "grad_accum": 32, "cp": 2, "fp8_params": True,
    "source": "hand-made test row", "conditions": "none",
}


def write_rows(tmp_path, rows: list[dict]):
    path = tmp_path / "to_predict.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "rows": rows}, sort_keys=False), encoding="utf-8")
    return path


def test_a_rows_fp8_params_reach_its_memory(tmp_path):
    row, = load_measurements(write_rows(tmp_path, [FP8_ROW]), measured=False)
    m = load_models().get("llama-3-8b")
    e = predict_row(row).estimate
    # the embedding and LM head 2 B, the layers' matrices 1 B, and only their cached transpose as a copy
    assert e.memory.get("weights") == pytest.approx(((m.params - m.quantizable_params) * 2 + m.quantizable_params)
                                                    / 1e9)
    assert e.memory.get("FP8 weight copies") == pytest.approx(m.quantizable_params / 1e9)


def test_fp8_params_on_a_bf16_row_names_the_field(tmp_path):
    with pytest.raises(DataFileError, match="fp8_params"):
        load_measurements(write_rows(tmp_path, [{**FP8_ROW, "precision": "bf16"}]), measured=False)


@pytest.mark.parametrize("p, v", [(4, 5), (8, 5), (9, 7), (2, 2)])
def test_interleaving_holds_the_chunks_megatrons_warmup_leaves_in_flight(p, v):
    # Megatron Core's interleaved schedule (schedules.py, forward_backward_pipelining_with_interleaving): rank 0
    # runs (p - 1) x 2 + (v - 1) x p warmup forward chunks, then one more forward before its first backward; each
    # chunk is L / (p v) layers, so rank 0 holds (2(p-1) + (v-1)p + 1) / (p v) of a whole-model micro-batch
    chunks = 2 * (p - 1) + (v - 1) * p + 1
    assert activations_in_flight(p, v) == pytest.approx(chunks / (p * v))
    # 1F1B: p warmup-or-steady micro-batches of L/p layers = one whole-model micro-batch
    assert activations_in_flight(p, 1) == 1.0
    # the last rank (p - 1) warms up (p - (p-1) - 1) x 2 + (v - 1) x p chunks, then one more forward
    assert last_stage_in_flight(p, v) == pytest.approx(((v - 1) * p + 1) / (p * v))
    assert last_stage_in_flight(p, 1) == pytest.approx(1 / p)


def test_a_large_vocabulary_puts_the_fullest_stage_last():
    # gpt2-124m, bf16, 1,024 tokens: its 12 layers save 34 x 768 B a token each (Korthikanti's 34 sbh: eager GELU
    # MLP, 2 dropout masks) = 313,344 B; the loss keeps fp32 logits and their gradient, 8 x 50,257 = 402,056 B.
    # 1F1B over 2 stages: the first holds 2 micro-batches of 6 layers (313,344 B), the last one micro-batch of 6
    # layers and its logits (156,672 + 402,056 = 558,728 B): the last is the fullest
    gpt2 = load_models().get("gpt2-124m")
    w = Train(100, 1024, 1)
    one = breakdown(gpt2, w, _setup("bf16"), 1, 0).get("activations")
    two = breakdown(gpt2, w, _setup("bf16", pp=2), 1, 0).get("activations")
    assert one == pytest.approx(1024 * (313_344 + 402_056) / 1e9)
    assert two == pytest.approx(1024 * (313_344 / 2 + 402_056) / 1e9)


def test_fsdp_keeps_its_gathered_16_bit_weights_and_both_fp8_copies():
    # FP8 primary weights are Megatron's (DDP, distributed optimizer); FSDP here gathers 16-bit weights as before:
    # the fp32 states / 8 plus 2 gathered layers, and 2 gathered layers' FP8 weight and transpose (2 B)
    w = Train(100, 2048, 1)
    held = breakdown(MODEL, w, _setup("fp8-te", shard=8, fp8_weights=True), 1, 0)
    assert held.as_dict() == breakdown(MODEL, w, _setup("fp8-te", shard=8), 1, 0).as_dict()
    assert held.get("FP8 weight copies") == pytest.approx(2 * MODEL.shard_unit_params * 2 / 1e9)
