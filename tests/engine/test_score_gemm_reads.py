"""Eager PyTorch's unfused decode attention reads the KV cache through batched GEMMs of one query row
(torch.matmul(q, k.transpose(2, 3)) and torch.matmul(weights, v)), which stream it at 0.58 of the rate a weight GEMV
does (our H200 probe, data/runtimes.yaml pytorch-eager score_gemm_kv_read). Only those reads slow down: the torch.cat
copies and the scores still stream. Llama-2-13B fp16 (40 layers, 40 KV heads of 128: 2 x 5120 cached elements a token
and layer) at batch 16, by hand: the step at position p = 768 attends 769 keys (the new one too), so the two GEMMs
read 16 x 769 x 40 x 2 x 5120 x 2 B = 10.079e9 B; at 0.8 of an A100-SXM-80GB's 2039 GB/s (1631.2 GB/s) they take
6.179 ms streamed and 6.179 / 0.58 = 10.654 ms as measured: 4.475 ms more a step."""

from dataclasses import replace

import pytest

from planner.engine import sweep
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan, resolve_setup
from planner.engine.roofline import time_group
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models

FACTS = load_facts()
MODEL = load_models().get("llama-2-13b")
A100 = load_catalog().get("a100-sxm-80gb")
FRACTION = 0.58  # data/runtimes.yaml pytorch-eager score_gemm_kv_read
BATCH, P = 16, 768
READ_BYTES = BATCH * (P + 1) * 40 * 2 * 5120 * 2  # K and V of every layer, fp16: 10.079e9 B
BW = 2039e9 * 0.8


def _plan(attention: str, runtime: str = "pytorch-eager") -> Plan:
    return Plan(MODEL, Generate(BATCH, 512, 512), "fp16", batch=BATCH, runtime=runtime, attention=attention)


def _attention_memory_s(fraction: float) -> float:
    """Memory seconds of the decode step's attention group at key position P, with the given read fraction."""
    setup = replace(resolve_setup(_plan("manual"), FACTS.rules, FACTS.runtimes), kv_read_fraction=fraction)
    attn = next(g for g in MODEL.decode_work(setup, BATCH) if g.name == "attention")
    eff = replace(FACTS.runtimes.get("pytorch-eager").efficiency("hbm"), mem_bw_efficiency=0.8)
    return time_group(attn, A100, eff, P, 1).memory_s


def test_the_score_gemms_read_the_cache_slower_and_nothing_else_does():
    """The step with the measured fraction takes READ_BYTES x (1 / 0.58 - 1) / BW = 4.475 ms more than streamed:
    the cache's copies (torch.cat) and the scores keep the stream rate."""
    extra = _attention_memory_s(FRACTION) - _attention_memory_s(1.0)
    assert READ_BYTES == pytest.approx(10.079e9, rel=1e-4)
    assert extra == pytest.approx(READ_BYTES * (1 / FRACTION - 1) / BW, rel=1e-3)
    assert extra == pytest.approx(4.475e-3, rel=1e-3)


@pytest.mark.parametrize(("runtime", "attention", "fraction"), [
    ("pytorch-eager", "manual", FRACTION),  # transformers' eager attention: torch.matmul over the cache
    ("pytorch-eager", "sdpa-math", FRACTION),  # SDPA's math fallback runs the same two matmuls
    ("pytorch-eager", "sdpa", 1.0),  # a fused kernel streams the cache (the probe: 0.72-1.21 of the GEMV)
    ("pytorch-eager", "flash-attn-2", 1.0),
    ("llama.cpp", "manual", 1.0),  # its own kernels, not PyTorch's GEMMs: nothing measured, nothing charged
    ("fastertransformer", "manual", 1.0),
])
def test_only_eager_pytorchs_unfused_attention_reads_at_the_measured_fraction(runtime, attention, fraction):
    plan = _plan(attention, runtime)
    assert resolve_setup(plan, FACTS.rules, FACTS.runtimes).kv_read_fraction == fraction


def test_the_sweep_times_the_slower_reads_as_each_gpus_own_estimate_does():
    """The catalog sweep (arrays) and the explanation path agree on the plan the fraction applies to, and its decode
    is slower than the same plan on SDPA by more than the extra reads' time at batch 16."""
    plan = _plan("manual")
    swept = {e.gpu.id: e for e in estimate_all(plan, FACTS, arrays=sweep)}
    own = estimate_gpu(plan, A100, FACTS)
    assert swept["a100-sxm-80gb"].seconds == pytest.approx(own.seconds, rel=1e-9)
    fused = estimate_gpu(_plan("sdpa"), A100, FACTS)
    assert own.seconds > fused.seconds
