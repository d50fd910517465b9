"""A kernel that moves a few kB takes its minimum duration, not its bytes' time (planner/inputs/work.py
SMALL_KERNEL_US = 1.5 us: decode-path norms and adds measured at 0.9-2.9 us, NVIDIA/Megatron-LM PR #6463,
lightseekorg/tokenspeed PR #1154, Neroued/ninfer PR #150). The floor binds only where the bytes take less; a
GPU-less device runs no kernel. Hand-derived on an A100-SXM4-80GB (2039 GB/s) at 0.85 of it."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_all
from planner.engine.phases import Phase
from planner.engine.plan import Plan
from planner.base.schema import Record
from planner.engine.roofline import pass_seconds, time_group, time_phase
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models.decoder import parse_decoder
from planner.inputs.runtimes import Efficiency
from planner.inputs.work import OpGroup

FACTS = load_facts()
A100 = load_catalog().get("a100-sxm-80gb")
# FasterTransformer-like: 0.85 of the DRAM bandwidth, 0.818 kernels per fused kernel (9 of a GELU block's 11)
FT_LIKE = Efficiency(0.85, 1.0, 0.0, 0.818, 0.0, "test")
BW = 2039e9 * 0.85
# FasterTransformer's GPT-20B (docs/gpt_guide.md: 44 layers, 48 heads x 128, vocab 51200, fp16)
GPT20B = parse_decoder(Record.of("test", 0, dict(
    id="gpt-20b", name="GPT-20B", kind="decoder", layers=44, hidden=6144, heads=48, kv_heads=48, ffn=24576,
    ffn_kind="gelu", vocab=51200, context=2048, tied_embeddings=True, norm="layernorm", learned_pos_emb=True,
    bias=True, source="NVIDIA/FasterTransformer docs/gpt_guide.md, Performance of GPT-20B")))


def _elementwise(nbytes: float) -> OpGroup:
    return OpGroup("elementwise & norms", 0.0, nbytes, "fp16", "test", small_kernels=10)


def test_ten_small_kernels_of_a_kilobyte_take_their_minimum_duration():
    """1 kB at 1733 GB/s is 0.6 ns; 10 kernels x 0.818 x 1.5 us = 12.27 us a step, x 3 steps."""
    g = time_group(_elementwise(1e3), A100, FT_LIKE, 0, 3)
    assert g.time_s == pytest.approx(3 * 10 * 0.818 * 1.5e-6)
    assert g.bound == "memory"


def test_the_floor_does_not_bind_where_the_bytes_take_longer():
    """1 GB at 1733 GB/s = 577 us a step, far above the 12.27 us floor."""
    g = time_group(_elementwise(1e9), A100, FT_LIKE, 0, 1)
    assert g.time_s == pytest.approx(1e9 / BW)


def test_the_fast_path_and_the_explained_path_agree_with_the_floor():
    """pass_seconds (the batch search's) and time_phase (Explain's) charge the same floor: 2 steps x 12.27 us, with
    no launch gap and no host here."""
    ph = Phase("decode", (_elementwise(1e3),), 0.0, 2, 0, 1.0)
    assert pass_seconds(ph, A100, FT_LIKE) == pytest.approx(time_phase(ph, A100, FT_LIKE).total_s)
    assert pass_seconds(ph, A100, FT_LIKE) == pytest.approx(2 * 12.27e-6)


def test_a_device_without_gpu_kernels_has_no_floor():
    """A CPU device runs no GPU kernel: only the bytes count (1 kB / (its bandwidth x 0.85))."""
    cpu = replace(A100, kind="cpu")
    g = time_group(_elementwise(1e3), cpu, FT_LIKE, 0, 1)
    assert g.time_s == pytest.approx(1e3 / BW)


def test_gpt20b_decode_under_fastertransformer_pays_268_small_kernels_a_step():
    """GPT-20B (44 layers): 6 small kernels a layer (two LayerNorms, the position add, two residual adds, GELU) + 4
    outside = 268 fused units; FasterTransformer's 0.818 runs them as 219 kernels, x 1.5 us = 0.329 ms a decode step at
    batch 1, where their bytes (a few hidden vectors of 6144 x 2 B each) take ~20 us."""
    plan = Plan(GPT20B, Generate(1, 200, 200), "fp16", batch=1, runtime="fastertransformer")
    e = estimate_all(plan, FACTS, gpu_names=["a100-sxm-80gb"])[0]
    decode = next(ph for ph in e.phases if ph.name == "decode")
    elem = next(g for g in decode.groups if g.name == "elementwise & norms")
    assert elem.time_s / decode.steps == pytest.approx(268 * 0.818 * 1.5e-6, rel=1e-6)
