"""bf16-amp: torch.autocast to bfloat16 over a model held in float32 casts every matmul weight again in each forward
(PyTorch AMP docs: the cast cache is cleared on leaving the autocast region)."""

import pytest

from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup
from planner.validation.measured import as_known_now, load_measurements

# meta-llama/Meta-Llama-3-8B: 32 layers of Q, O (4096 x 4096), K, V (4096 x 1024), SwiGLU (3 x 4096 x 14336); untied
# head 128,256 x 4,096 (the embedding is looked up, not multiplied: autocast does not cast it)
LAYERS = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336)
HEAD = 128256 * 4096


def _groups(precision: str):
    rules = load_rules()
    p = rules.precision(precision)
    s = Setup(p, rules.default_kv_dtype(p), rules.attention("sdpa"))
    return {g.name: g for g in load_models().get("llama-3-8b").prefill_work(s, 4, 128)}


def test_autocast_casts_every_matmul_weight_once_per_forward_and_the_gemms_read_the_copy():
    amp, bf16 = _groups("bf16-amp"), _groups("bf16")
    cast = amp["dequantize weights"]
    # read the fp32 weight (4 B), write its bf16 copy (2 B), for every weight a matmul takes
    assert cast.bytes == pytest.approx((LAYERS + HEAD) * (4 + 2))
    assert "dequantize weights" not in bf16
    # the GEMMs then read 2 B per weight, as bf16-held weights: the same linear work
    assert amp["linear layers"].bytes == pytest.approx(bf16["linear layers"].bytes)
    assert amp["linear layers"].flops == pytest.approx(bf16["linear layers"].flops)
    # one cast kernel per linear call of the layers (32 x 7 matrices); the head's one cast is not counted as a
    # launch (one kernel of ~600 a forward)
    calls = 32 * 7
    assert amp["linear layers"].launches - bf16["linear layers"].launches == pytest.approx(calls)


def test_the_cs336_autocast_rows_are_planned_with_the_cast_and_fp32_weights():
    rows = {r.id: r for r in load_measurements()}
    row = as_known_now(rows["cs336-anenbergb-xl-bf16compile-rtx5090-b4-p128-fwd"])
    assert (row.precision, row.weight_bits) == ("bf16-amp", 32)
    fp32 = as_known_now(rows["cs336-yyin-small-fp32-a100sxm40-b4-p128-fwd"])
    assert fp32.precision == "fp32"  # no autocast there: untouched
