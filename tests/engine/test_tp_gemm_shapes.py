"""Tensor-parallel training's GEMMs at the shapes one GPU runs (Megatron-LM's split, Shoeybi et al. 2019,
https://arxiv.org/abs/1909.08053, sec. 3: column-parallel N / tp, row-parallel K / tp, the LM head's vocabulary / tp;
context parallel gives each rank 1/cp of the rows), timed through planner.engine.gemm's tile and wave model. The
shapes are listed by hand from llama-2-7b's config (hidden 4096, 32 heads and KV heads of 128, SwiGLU FFN 11008,
vocabulary 32000, 32 layers); the efficiencies are counted tile by tile on an H100 SXM's 132 SMs."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.gemm import gemm_efficiency, shape_efficiency
from planner.engine.phases import job_passes
from planner.engine.plan import Plan
from planner.engine.train_layout import split_groups
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.layouts import parse_layout
from planner.inputs.models import load_models
from planner.inputs.precisions import load_rules
from planner.inputs.work import Setup, training_gemms

FACTS = load_facts()
H100 = FACTS.catalog.get("h100-sxm")  # 132 SMs
LLAMA = load_models().get("llama-2-7b")
LINEAR = "linear layers (fwd+bwd)"


def _forward(rows: int, tp: int) -> tuple[tuple[int, int, int, float], ...]:
    """llama-2-7b's forward GEMMs (M, N, K, count) on one TP rank, by hand."""
    return ((rows, 3 * 4096 // tp, 4096, 32),  # fused QKV: column-parallel, N = q + k + v widths / tp
            (rows, 4096, 4096 // tp, 32),  # attention output: row-parallel, K / tp
            (rows, 2 * 11008 // tp, 4096, 32),  # gate + up: column-parallel
            (rows, 4096, 11008 // tp, 32),  # down: row-parallel
            (rows, 32000 // tp, 4096, 1))  # LM head: the vocabulary split over tp


def _setup(**split) -> Setup:
    r = load_rules()
    p = r.precision("bf16")
    return replace(Setup(p, r.default_kv_dtype(p), r.attention("sdpa")), **split)


def _linear_group(layout: str, size: int = 2048):
    """The micro-step's linear group as one GPU of the layout runs it (job_passes, batch 1, no checkpointing)."""
    lay = parse_layout(layout)
    w = Train(64, size, 1.0, "adamw", layout=lay)
    s = _setup(tp=lay.tp, pp=lay.pp, cp=lay.cp, vpp=lay.vpp)
    micro = next(ph for ph, _ in job_passes(LLAMA, w, s, 1, 64, 1) if ph.name.startswith("train micro-step"))
    return next(g for g in micro.groups if g.name == LINEAR)


def test_a_row_parallel_weight_gradient_that_leaves_a_partial_wave():
    # The down projection's dW = X^T dY is (K x N, inner M): unsplit 11,008 x 4,096 over 2,048 rows is 86 x 32 =
    # 2,752 tiles, 20.85 waves of 132 -> 21 waves, 2,752 / 2,772; at tp=2, K = 5,504: 43 x 32 = 1,376 tiles,
    # 10.42 waves -> 11, 1,376 / 1,452 (whole tiles both: 11,008 and 5,504 are multiples of 128)
    assert gemm_efficiency(11008, 4096, 2048, 132) == pytest.approx(2752 / 2772)
    assert gemm_efficiency(5504, 4096, 2048, 132) == pytest.approx(1376 / 1452)


def test_a_column_split_that_cuts_a_tile_and_a_wave():
    # N = 4,224 = 33 tiles of 128 over M = 8,192 (64 row tiles): 2,112 tiles = 16 whole waves of 132: the ceiling.
    # Halved by tp=2, N = 2,112 = 16.5 tiles -> 17 (fill 2,112 / 2,176 = 33/34) and 64 x 17 = 1,088 tiles -> 9
    # waves = 1,188 slots (1,088 / 1,188 = 272/297): 33/34 x 272/297 = 8/9
    assert gemm_efficiency(8192, 4224, 4096, 132) == pytest.approx(1.0)
    assert gemm_efficiency(8192, 2112, 4096, 132) == pytest.approx(8 / 9)


@pytest.mark.parametrize("layout, rows, tp", [("", 2048, 1), ("tp=2", 2048, 2), ("tp=4", 2048, 4),
                                              ("tp=2,cp=2", 1024, 2)])
def test_each_gpu_runs_megatrons_split_shapes_and_the_whole_models_flops_are_split_once(layout, rows, tp):
    g, whole = _linear_group(layout), _linear_group("")
    assert g.gemms == training_gemms(_forward(rows, tp), False)  # forward, dX = dY W^T, dW = X^T dY
    split = tp * (2 if "cp=2" in layout else 1)
    assert g.flops == pytest.approx(whole.flops / split)  # split_groups divides the whole model's FLOPs once


def test_an_estimate_times_a_tp_ranks_linear_layers_at_its_own_shapes():
    plan = Plan(LLAMA, Train(64, 2048, 1.0, "adamw", layout=parse_layout("tp=2")), "bf16", batch=1, gpus=2)
    e = estimate_gpu(plan, H100, FACTS)
    micro = next(ph for ph in e.phases if ph.name.startswith("train micro-step"))
    got = next(g for g in micro.groups if g.name == LINEAR).shape_efficiency
    checkpointing = plan.workload.checkpointing
    assert got == pytest.approx(shape_efficiency(training_gemms(_forward(2048, 2), checkpointing), 132))
    assert got != pytest.approx(shape_efficiency(training_gemms(_forward(2048, 1), checkpointing), 132), rel=1e-4)


def test_an_encoder_decoders_cross_attention_is_split_over_tp_once():
    # T5-base's cross-attention under tp=2: each GPU runs half the whole model's work (not a quarter: the model gives
    # the whole work, split_groups splits it), on Q and O GEMMs whose N or K is 768 / 2 = 384
    t5 = load_models().get("t5-base")
    one, two = _setup(), _setup(tp=2)
    cross = {tp: next(g for g in split_groups(t5.train_work(s, 1, 512, False), s) if g.name == "cross-attention")
             for tp, s in ((1, one), (2, two))}
    assert cross[2].flops == pytest.approx(cross[1].flops / 2)
    assert (512, 384, 768, 12) in cross[2].gemms and (512, 768, 384, 12) in cross[2].gemms
