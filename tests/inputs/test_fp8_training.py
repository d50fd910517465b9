"""FP8 training as Transformer Engine runs it (precision fp8-te): which GEMMs run at FP8, the cast traffic, the memory
per parameter, where it is refused, and the MFU convention. Expected numbers from Llama-2-7B's config by hand."""

import pytest

from planner.base.schema import DataFileError
from planner.engine.estimate import estimate_gpu
from planner.engine.memory import breakdown
from planner.engine.plan import Plan, resolve_setup
from planner.engine.utilization import forward_flops_per_sample, mfu
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.models import load_models
from planner.inputs.models.fp8_training import CAST_GROUP, FP8_LINEAR_GROUP, HEAD_GROUP
from planner.inputs.precisions import PRECISIONS_FILE, load_rules
from planner.inputs.work import Setup

FACTS = load_facts()
RULES = load_rules()
MODEL = load_models().get("llama-2-7b")
# Llama-2-7B (config.json): hidden 4,096, intermediate 11,008 (SwiGLU: gate + up fused here as one N = 22,016 GEMM),
# 32 layers, 32 heads of 128 (no GQA: K and V 4,096 wide each), vocabulary 32,000, 6,738,415,616 parameters
H, F, L, VOCAB, PARAMS = 4_096, 11_008, 32, 32_000, 6_738_415_616
# The layers' matrices: QKV 12,288 x 4,096, O 4,096 x 4,096, gate+up 22,016 x 4,096, down 4,096 x 11,008
LAYER_WEIGHTS = L * H * (3 * H + H + 2 * F + F)  # 6,476,005,376 = PARAMS - embedding - LM head (2 x 32,000 x 4,096)
# Each GEMM input cast per token: X (the K side) of QKV, O, gate+up and down; dY (the N side) of the same
X_PER_TOKEN = L * (H + H + H + F)
DY_PER_TOKEN = L * (3 * H + H + 2 * F + H)
H100_BF16_DENSE_TFLOPS = 989.0  # NVIDIA H100 SXM datasheet, BF16 Tensor Core without sparsity (FP8: 1,979)


def _setup(precision):
    p = RULES.precision(precision)
    return Setup(p, RULES.default_kv_dtype(p), RULES.attention("flash-attn-2"))


def _groups(precision, batch=2, size=2048, checkpointing=False):
    return {g.name: g for g in MODEL.train_work(_setup(precision), batch, size, checkpointing)}


def test_layer_weights_are_the_parameters_less_embedding_and_head():
    assert LAYER_WEIGHTS == PARAMS - 2 * VOCAB * H - L * 2 * H - H  # less the 2 RMSNorms a layer and the final one


def test_only_the_layers_linear_gemms_run_at_fp8():
    g = _groups("fp8-te")
    T = 2 * 2048
    assert g[FP8_LINEAR_GROUP].compute_path == "fp8"
    assert g[FP8_LINEAR_GROUP].flops == pytest.approx(2 * 3 * T * LAYER_WEIGHTS)  # fwd + 2x bwd
    assert g[HEAD_GROUP].compute_path == "bf16"
    assert g[HEAD_GROUP].flops == pytest.approx(2 * 3 * T * VOCAB * H)
    for name in ("attention forward", "attention backward", "elementwise & norms (fwd+bwd)", CAST_GROUP):
        assert g[name].compute_path == "bf16"
    # FP8 changes the rate, not the work: the same FLOPs as BF16 mixed precision's one linear group
    assert g[FP8_LINEAR_GROUP].flops + g[HEAD_GROUP].flops == pytest.approx(
        _groups("bf16")["linear layers (fwd+bwd)"].flops)


@pytest.mark.parametrize("checkpointing", [False, True])
def test_cast_bytes_by_hand(checkpointing):
    T = 2 * 2048
    forwards = 2 if checkpointing else 1  # a recomputed forward casts its activations again
    # each element read once in BF16 (2 B, delayed scaling) and written as FP8 plus its FP8 transpose (1 + 1 B)
    hand = 4 * (T * X_PER_TOKEN * forwards + LAYER_WEIGHTS + T * DY_PER_TOKEN)
    g = _groups("fp8-te", checkpointing=checkpointing)
    assert g[CAST_GROUP].bytes == pytest.approx(hand) and g[CAST_GROUP].flops == 0


def test_memory_is_bf16_mixed_precision_plus_the_fp8_copies_less_fp8_saved_inputs():
    w = Train(100, 2048, 1)
    fp8 = breakdown(MODEL, w, _setup("fp8-te"), 1, 0)
    bf16 = breakdown(MODEL, w, _setup("bf16"), 1, 0)
    # fp32 master 4 B + bf16 copy 2 B; fp32 gradient 4 B; AdamW's two fp32 states 8 B
    assert fp8.get("weights") == pytest.approx(PARAMS * 6 / 1e9)
    assert fp8.get("gradients") == pytest.approx(PARAMS * 4 / 1e9)
    assert fp8.get("optimizer") == pytest.approx(PARAMS * 8 / 1e9)
    # each layer weight's FP8 copy and its transpose, 1 B each
    assert fp8.get("FP8 weight copies") == pytest.approx(LAYER_WEIGHTS * 2 / 1e9)
    # activations: each layer's two norm outputs and down-projection input saved as FP8 (1 B less than BF16 each),
    # the attention output once more as the output projection's FP8 input (1 B): per token L x (q - 2h - f) B
    fewer_acts = 2048 * L * (H - 2 * H - F)
    assert fp8.total_gb - bf16.total_gb == pytest.approx((LAYER_WEIGHTS * 2 + fewer_acts) / 1e9)


def _estimate(precision, workload, gpu, gpus=1, sharding="ddp"):
    if isinstance(workload, Train):
        workload = Train(workload.samples_per_epoch, workload.input_size, 1, sharding=sharding)
    return estimate_gpu(Plan(MODEL, workload, precision, batch=1, gpus=gpus), load_catalog().get(gpu), FACTS)


@pytest.mark.parametrize("precision", ["fp8-te", "fp8"])
def test_ampere_refuses_fp8_training_naming_the_field(precision):
    e = _estimate(precision, Train(100, 2048, 1), "a100-sxm-80gb", gpus=8, sharding="fsdp")
    blocking = [r for r in e.reasons if r.blocking and r.code == "precision"]
    assert not e.feasible and blocking
    assert "precision fp8-te" in blocking[0].text and "SM80" in blocking[0].text


def test_fp8_te_is_refused_for_inference():
    e = _estimate("fp8-te", Infer(100, 2048), "h100-sxm")
    assert not e.feasible
    assert any(r.blocking and "precision fp8-te" in r.text and "training recipe" in r.text for r in e.reasons)


def test_fp8_trains_as_transformer_engine_and_serves_as_fp8_weights():
    train = Plan(MODEL, Train(100, 2048, 1), "fp8")
    serve = Plan(MODEL, Generate(100, 128, 128), "fp8")
    assert resolve_setup(train, RULES).precision.id == "fp8-te"
    assert resolve_setup(serve, RULES).precision.id == "fp8"


def test_mfu_of_an_fp8_run_is_against_the_bf16_dense_peak():
    e = _estimate("fp8-te", Train(1000, 2048, 1), "h100-sxm", gpus=8, sharding="fsdp")
    hand = 3 * forward_flops_per_sample(e) * 1000 / (e.seconds * 8 * H100_BF16_DENSE_TFLOPS * 1e12)
    assert e.feasible and mfu(e) == pytest.approx(hand)


def test_fp8_is_faster_than_bf16_but_less_than_twice():
    # only the layers' GEMMs double their rate: attention, norms, the LM head and the casts do not
    fp8 = _estimate("fp8-te", Train(1000, 2048, 1), "h100-sxm", gpus=8, sharding="fsdp")
    bf16 = _estimate("bf16", Train(1000, 2048, 1), "h100-sxm", gpus=8, sharding="fsdp")
    assert 1.0 < bf16.seconds / fp8.seconds < 2.0


def test_train_as_must_name_a_training_recipe(tmp_path):
    text = PRECISIONS_FILE.read_text().replace("train_as: fp8-te", "train_as: bf16")
    path = tmp_path / "precisions.yaml"
    path.write_text(text)
    with pytest.raises(DataFileError, match="train_as"):
        load_rules(path)
