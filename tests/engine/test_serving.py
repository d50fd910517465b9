"""Serving: TTFT, TPOT and throughput at a concurrency, and the largest concurrency under a latency target."""

from dataclasses import replace

import pytest

from planner.engine.plan import Plan
from planner.engine.serving import max_concurrency, serving_point
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import RuntimeProfile, Runtimes

FACTS = load_facts()
IDEAL = RuntimeProfile("ideal", "ideal hardware", (("hbm", 1.0), ("gddr", 1.0)), (("hbm", 1.0), ("gddr", 1.0)),
                       0.0, 1.0, 0.0, "test: every roof reached, no launch overhead, no context memory")
IDEAL_FACTS = replace(FACTS, runtimes=Runtimes(FACTS.runtimes.runtimes + (IDEAL,)))


def _plan(runtime="vllm", model="llama-3-8b"):
    return Plan(load_models().get(model), Generate(1, 512, 256), "bf16", runtime=runtime, price_tier="community")


def test_one_sequence_decodes_at_weights_over_bandwidth():
    m, gpu = load_models().get("llama-3-8b"), FACTS.catalog.get("h100-sxm")
    p = serving_point(_plan("ideal"), gpu, IDEAL_FACTS, 1, 512, 256)
    weights = m.matmul_params * 2  # bf16
    kv_mean = (512 + 256 / 2) * m.kv_elems * 2  # KV cache read at the mean position
    attention = m.layers * FACTS.rules.attention("sdpa").decode_latency_us * 1e-6  # each layer's call, data/precisions
    small = (6 * m.layers + 4) * 1.5e-6  # its small kernels at their minimum duration (planner/inputs/work.py)
    assert p.tpot_s == pytest.approx((weights + kv_mean) / 3350e9 + attention + small, rel=0.05)  # H100: 3.35 TB/s


def test_throughput_is_the_sequences_in_flight_over_the_time_each_takes():
    gpu = FACTS.catalog.get("h100-sxm")
    p = serving_point(_plan(), gpu, FACTS, 32, 512, 256)
    # while one sequence decodes its 255 steps, the 31 others are each replaced once and their prompts prefilled
    per_sequence = p.prefill_s + p.decode_step_s + 255 * p.decode_step_s + 31 * p.prefill_s
    assert p.ttft_s == pytest.approx(p.prefill_s + p.decode_step_s)
    assert p.tpot_s == pytest.approx((per_sequence - p.ttft_s) / 255)
    assert p.requests_per_s == pytest.approx(32 / per_sequence)
    assert p.tokens_per_s == pytest.approx(32 * 256 / per_sequence)
    price = FACTS.prices.for_gpu(gpu)["community"].usd_hr
    assert p.usd_per_m_tokens == pytest.approx(price / 3600 / p.tokens_per_s * 1e6)


def test_more_sequences_in_flight_share_the_weight_reads():
    gpu = FACTS.catalog.get("rtx-4090")
    one, many = (serving_point(_plan(), gpu, FACTS, c, 512, 256) for c in (1, 16))
    assert many.tpot_s >= one.tpot_s and many.tokens_per_s > 8 * one.tokens_per_s  # memory-bound: near 16x


def test_the_largest_concurrency_meets_the_target_and_one_more_does_not():
    gpu = FACTS.catalog.get("a100-sxm-80gb")
    best = max_concurrency(_plan(), gpu, FACTS, 512, 256, ttft_target_s=None, tpot_target_s=0.02)
    assert best is not None and best.tpot_s <= 0.02 and best.fits
    nxt = serving_point(_plan(), gpu, FACTS, best.concurrency + 1, 512, 256)
    assert nxt.tpot_s > 0.02 or not nxt.fits


def test_an_impossible_target_and_a_formula_model_are_answered_plainly():
    gpu = FACTS.catalog.get("t4")
    assert max_concurrency(_plan(), gpu, FACTS, 512, 256, ttft_target_s=None, tpot_target_s=1e-6) is None
    with pytest.raises(ValueError, match="serving needs a decoder"):
        serving_point(_plan(model="sea"), gpu, FACTS, 1, 512, 256)


def test_a_runtime_that_cannot_run_on_a_cpu_is_refused_by_name():
    cpu = FACTS.catalog.get("amd-epyc-9654")
    with pytest.raises(ValueError, match="vLLM does not run on a CPU"):
        serving_point(_plan("vllm"), cpu, FACTS, 1, 512, 256)
    p = serving_point(_plan("pytorch-eager"), cpu, FACTS, 1, 512, 256)
    assert p.fits and p.usd_per_m_tokens is None  # host RAM holds it; no listed price for a CPU


def test_prefill_is_charged_at_high_concurrency():
    """Llama-3-8B on an H100 with vLLM at concurrency 64: the GPU time of the 64 prompts that replace finished
    sequences is charged, so throughput is below what the decode steps alone would give, by the prefill share."""
    gpu = FACTS.catalog.get("h100-sxm")
    p = serving_point(_plan(), gpu, FACTS, 64, 512, 256)
    decode_only = 64 * 256 / (p.ttft_s + 255 * p.decode_step_s)  # the old figure: prefills free
    charged = 64 * 256 / (p.ttft_s + 255 * p.decode_step_s + 63 * p.prefill_s)
    assert p.tokens_per_s == pytest.approx(charged) and p.tokens_per_s < decode_only
    # 63 prompts of 512 tokens at ~16 GFLOP per token are ~0.5 PFLOP: at least 0.5 s on a 989 TFLOP/s H100
    assert 63 * p.prefill_s >= 63 * 512 * 2 * 7.5e9 / 989e12
