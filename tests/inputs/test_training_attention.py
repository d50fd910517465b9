"""A training step's attention as two parts, forward (with its recomputation) and backward, each at the kernel's own
measured rate per GPU generation: FlashAttention-2's forward 0.60 and backward 0.52 of the dense peak on SM 8.x,
0.35 and 0.31 on SM 9.x (data/precisions.yaml, the papers cited there); FLOPs derived by hand."""

import pytest

from planner.base.schema import DataFileError
from planner.engine.roofline import time_group
from planner.inputs.catalog import load_catalog
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes
from planner.inputs.work import Setup

RULES = load_rules()
GPT2 = load_models().get("gpt2-124m")  # 12 layers, 12 heads of 64
S = 1024
# 4 FLOPs per query-key pair and head dim (QK^T and AV, 2 each) x heads x head_dim x the causal pairs S(S+1)/2 x layers
FWD = 4 * 12 * 64 * (S * (S + 1) / 2) * 12


def _groups(attention: str = "sdpa-flash", checkpointing: bool = False) -> dict:
    p = RULES.precision("bf16")
    s = Setup(p, RULES.default_kv_dtype(p), RULES.attention(attention), fused_elementwise=True)
    return {g.name: g for g in GPT2.train_work(s, 1, S, checkpointing)}


def test_forward_and_backward_flops_by_hand():
    g = _groups()
    assert g["attention forward"].flops == pytest.approx(FWD)
    assert g["attention backward"].flops == pytest.approx(2.5 * FWD)  # 5 matmuls vs the forward's 2, QK^T redone
    ckpt = _groups(checkpointing=True)
    assert ckpt["attention forward"].flops == pytest.approx(2 * FWD)  # the forward recomputed once more
    assert ckpt["attention backward"].flops == pytest.approx(2.5 * FWD)


def test_fused_attention_moves_qkvo_once_per_forward_and_twice_in_backward():
    """Q and O are 768 wide, K and V 768 (12 heads): 4 x 768 elements per token and layer, 2 bytes each."""
    qkvo = S * 12 * 4 * 768 * 2
    g = _groups()
    assert g["attention forward"].bytes == pytest.approx(qkvo)
    assert g["attention backward"].bytes == pytest.approx(2 * qkvo)


@pytest.mark.parametrize("gpu, attention, forward_tflops, backward_tflops", [
    ("a100-sxm-80gb", "sdpa-flash", 312 * 0.60, 312 * 0.52),  # A100: 312 dense BF16 TFLOPS
    ("h100-sxm", "sdpa-flash", 989 * 0.35, 989 * 0.31),  # H100 SXM: 989 in data/gpus.yaml
    ("h100-sxm", "flash-attn-3", 989 * 0.35 * 1.73, 989 * 0.31 * 1.73),  # FlashAttention-3: 1.73x FA2
    ("a100-sxm-80gb", "sdpa-efficient", 312 * 0.60 * 0.5, 312 * 0.52 * 0.5),  # CUTLASS kernel: half FA2's speed
])
def test_each_pass_runs_at_its_own_measured_rate(gpu, attention, forward_tflops, backward_tflops):
    device = load_catalog().get(gpu)
    eff = load_runtimes().get("pytorch-eager").efficiency("hbm")
    g = _groups(attention)
    assert time_group(g["attention forward"], device, eff, 0, 1).achieved_tflops == pytest.approx(forward_tflops)
    assert time_group(g["attention backward"], device, eff, 0, 1).achieved_tflops == pytest.approx(backward_tflops)


def test_manual_attention_has_no_kernel_rate_in_either_pass():
    g = _groups("manual")
    assert g["attention forward"].peak_fractions == () == g["attention backward"].peak_fractions


def test_explain_names_the_backward_rate():
    text = _groups()["attention backward"].formula
    assert "x 2.5 (the backward: 2.5x the forward's FLOPs, QK^T recomputed inside the kernel" in text
    assert "FlashAttention-2's backward is published = datasheet peak x its fraction (SM 8.x 0.52, SM 9.x 0.31)" in text


KERNEL = ("{id: k, name: n, min_sm: '8.0', max_sm: '9.0', max_head_dim: 256, dtypes: [fp16], "
          "scores_materialized: false, speed_vs_fa2: 1, speed_source: s, amd: false, source: s}")


@pytest.mark.parametrize("extra, field", [
    ("backward_fraction_of_peak: {sm8: 0.5}, backward_fraction_source: s, ", "backward_fraction_of_peak"),
    ("fraction_of_peak: {sm8: 0.6}, fraction_source: s, backward_fraction_of_peak: {sm9: 0.3}, "
     "backward_fraction_source: s, ", "backward_fraction_of_peak"),
    ("fraction_of_peak: {sm8: 0.6}, fraction_source: s, backward_fraction_of_peak: {sm8: 1.5}, "
     "backward_fraction_source: s, ", "sm8"),
])
def test_a_bad_backward_fraction_names_its_field(tmp_path, extra, field):
    path = tmp_path / "p.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-20\nprecisions:\n  - {id: fp16, compute_path: fp16, "
                    "weight_bytes: 2, act_bytes: 2, note: n, source: s}\nkv_dtypes: [{id: fp16, bytes: 2, source: s}]\n"
                    "attention_backends:\n  - " + KERNEL.replace("source: s}", extra + "source: s}") + "\n")
    with pytest.raises(DataFileError) as err:
        load_rules(path)
    assert err.value.field == field
