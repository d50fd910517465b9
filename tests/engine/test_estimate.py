"""End-to-end estimates: physics scaling, batch choice, parallelism, monotonicity (hypothesis)."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.inputs.catalog import load_catalog
from planner.engine.plan import Plan
from planner.engine.estimate import auto_batch, estimate_all, estimate_gpu
from planner.inputs.models import load_models
from planner.inputs.runtimes import Efficiency
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.facts import load_facts

FACTS = load_facts()

NO_OVERHEAD = lambda gpu, eff: replace(eff, launch_overhead_us=0.0)  # noqa: E731


def _plan(model="llama-2-7b", precision="fp16", batch=1, **kw):
    return Plan(load_models().get(model), kw.pop("workload", Generate(1, 1, 257)), precision, batch=batch, **kw)


def test_memory_bound_decode_scales_with_one_over_bandwidth():
    gpu = load_catalog().get("a100-sxm-80gb")
    slow, fast = replace(gpu, mem_bw_gbps=1000.0), replace(gpu, mem_bw_gbps=2000.0)
    plan = _plan()
    t_slow = estimate_gpu(plan, slow, FACTS, adjust=NO_OVERHEAD).seconds
    t_fast = estimate_gpu(plan, fast, FACTS, adjust=NO_OVERHEAD).seconds
    assert t_slow / t_fast == pytest.approx(2.0, rel=0.02)  # batch-1 decode reads every weight per token


def test_batch1_decode_of_a_7b_model_is_weights_over_bandwidth():
    gpu = load_catalog().get("h100-sxm")
    e = estimate_gpu(_plan(), gpu, FACTS, adjust=lambda g, eff: Efficiency(1.0, 1.0, 0.0, 1.0, 0.0, "ideal"))
    decode = next(p for p in e.phases if p.name == "decode")
    weights_bytes = load_models().get("llama-2-7b").matmul_params * 2
    per_token = decode.total_s / decode.steps
    assert per_token == pytest.approx(weights_bytes / 3350e9, rel=0.05)  # ~4 ms per token at 3.35 TB/s


def test_torch_compile_cuts_launch_overhead():
    gpu = load_catalog().get("rtx-4090")
    eager = estimate_gpu(_plan("cfdna-gen", batch=8), gpu, FACTS)
    compiled = estimate_gpu(_plan("cfdna-gen", batch=8, runtime="torch-compile"), gpu, FACTS)
    overhead = lambda e: sum(p.overhead_s * p.passes for p in e.phases)  # noqa: E731
    assert overhead(compiled) < overhead(eager) / 2 and compiled.seconds < eager.seconds


def test_auto_batch_is_never_worse_than_a_fixed_feasible_batch():
    gpu = load_catalog().get("rtx-3090")
    auto = estimate_gpu(_plan("cfdna-gen", "bf16", None, workload=Generate(100_000, 1, 165)), gpu, FACTS)
    for b in (64, 512, auto.max_batch // 3):
        fixed = estimate_gpu(_plan("cfdna-gen", "bf16", b, workload=Generate(100_000, 1, 165)), gpu, FACTS)
        assert auto.seconds <= fixed.seconds * 1.0001


def test_auto_batch_balances_the_passes():
    assert auto_batch(600, 1000) == 500  # 2 passes of 500 instead of 600 + 400
    assert auto_batch(1000, 1000) == 1000 and auto_batch(7, 1) == 1


@given(st.integers(1, 20_000))
@settings(max_examples=25, deadline=None)
def test_auto_batch_beats_any_fixed_feasible_batch(fixed):
    gpu = load_catalog().get("rtx-a4000")
    work = Generate(30_000, 8, 120)
    auto = estimate_gpu(_plan("cfdna-gen", "fp16", None, workload=work), gpu, FACTS)
    if fixed <= auto.max_batch:
        assert auto.seconds <= estimate_gpu(_plan("cfdna-gen", "fp16", fixed, workload=work), gpu, FACTS).seconds * 1.0001


@given(st.integers(1, 64), st.integers(1, 4))
@settings(max_examples=40, deadline=None)
def test_larger_batch_never_fewer_sequences_per_second_while_memory_bound(batch, k):
    gpu = load_catalog().get("a100-pcie-80gb")
    small = estimate_gpu(_plan("llama-2-7b", "fp16", batch, workload=Generate(4096, 16, 64)), gpu, FACTS)
    big = estimate_gpu(_plan("llama-2-7b", "fp16", batch * 2 ** k, workload=Generate(4096, 16, 64)), gpu, FACTS)
    if small.feasible and big.feasible and small.bound == big.bound == "memory":
        assert big.items_per_s >= small.items_per_s * 0.9999


def test_data_parallel_divides_the_time_and_keeps_the_cost():
    gpu = "rtx-4090"
    one = estimate_all(_plan("cfdna-gen", "bf16", 256, workload=Generate(4096, 1, 64), price_tier="community"), FACTS,
                       gpu_names=[gpu])[0]
    four = estimate_all(_plan("cfdna-gen", "bf16", 256, workload=Generate(4096, 1, 64), price_tier="community",
                              gpus=4), FACTS, gpu_names=[gpu])[0]
    assert four.parallelism == "data"
    assert four.seconds == pytest.approx(one.seconds / 4, rel=1e-6)
    assert four.cost() == pytest.approx(one.cost(), rel=1e-6)


def test_tensor_parallel_when_weights_do_not_fit_one_gpu():
    e = estimate_all(_plan("llama-3-70b", "fp16", 1, workload=Generate(1, 128, 128), gpus=2), FACTS,
                     gpu_names=["h100-sxm"])[0]
    assert e.parallelism == "tensor" and e.feasible
    assert e.memory.get("weights") == pytest.approx(70_553_706_496 * 2 / 2 / 1e9)
    assert any("tensor parallel" in r.text for r in e.reasons)


def test_cost_is_seconds_times_price():
    e = estimate_all(_plan("cfdna-gen", "bf16", None, workload=Generate(10_000, 1, 165), price_tier="community"), FACTS,
                     gpu_names=["rtx-4090"])[0]
    assert e.cost() == pytest.approx(e.seconds / 3600 * e.gpu.price("community").usd_hr)
    assert e.cost_per_million() == pytest.approx(e.cost() * 100)


def test_ranking_puts_feasible_gpus_first_and_cheapest_on_top():
    res = estimate_all(_plan("cfdna-gen", "bf16", None, workload=Generate(10_000, 1, 165), price_tier="community"), FACTS)
    feasible = [e for e in res if e.feasible and e.cost() is not None]
    assert [e.cost() for e in feasible] == sorted(e.cost() for e in feasible)
    first_infeasible = next(i for i, e in enumerate(res) if not e.feasible)
    assert all(not e.feasible for e in res[first_infeasible:])


def test_generic_profile_inference_and_training_run():
    models = load_models()
    if "sea" not in {m.id for m in models.models}:
        pytest.skip("generic profiles not present")
    sea = models.get("sea")
    e = estimate_all(Plan(sea, Infer(10, sea.default_input_size), "fp32", batch=1), FACTS, gpu_names=["rtx-a5000"])[0]
    assert e.feasible and e.seconds > 0


def test_generate_with_a_generic_model_is_rejected_clearly():
    models = load_models()
    if "sea" not in {m.id for m in models.models}:
        pytest.skip("generic profiles not present")
    with pytest.raises(ValueError, match="decoder"):
        estimate_all(Plan(models.get("sea"), Generate(1, 1, 1)), FACTS)


def test_training_time_counts_epochs():
    plan = lambda ep: Plan(load_models().get("gpt2-124m"), Train(1024, 256, ep), "bf16", batch=16)  # noqa: E731
    one = estimate_all(plan(1), FACTS, gpu_names=["a100-sxm-80gb"])[0]
    three = estimate_all(plan(3), FACTS, gpu_names=["a100-sxm-80gb"])[0]
    assert three.seconds == pytest.approx(3 * one.seconds, rel=1e-9)


# ---------------------------------------------------------------- CPU devices

LLAMA2_7B_PARAMS = 6_738_415_616  # meta-llama/Llama-2-7b-hf: 32 layers x 202,383,360 + 2 x 32,000 x 4,096 + 4,096


def test_cpu_fallback_decode_is_weights_over_dram_bandwidth():
    """Seed 002's CPU fallback: a 7B model in bf16, batch 1, on a 16-core desktop with 2 x DDR5-5200."""
    m = load_models().get("llm-7b-seed002")
    assert m.params == LLAMA2_7B_PARAMS
    cpu = load_catalog().get("amd-ryzen-9-7950x")
    e = estimate_gpu(Plan(m, Generate(1, 100, 100), "bf16", attention="sdpa", batch=1), cpu, FACTS)
    assert e.feasible and e.bound == "memory"
    # every decode step streams the matmul weights once: all parameters but the input embedding (a row lookup, 32,000
    # x 4,096) and the norms (2 x 4,096 per layer + the final 4,096), 2 B each in bf16
    streamed = (LLAMA2_7B_PARAMS - 32_000 * 4_096 - 32 * 2 * 4_096 - 4_096) * 2  # 13.214 GB
    # at 2 channels x 5,200 MT/s x 8 B = 83.2 GB/s and PyTorch eager's CPU bandwidth fraction 0.60 (data/runtimes.yaml)
    floor_s = streamed / (83.2e9 * 0.60)  # 0.2647 s per token
    decode = next(p for p in e.phases if p.name == "decode")
    per_token = decode.total_s / decode.steps
    # the KV cache (~0.5 MB per position), elementwise passes and 5 us per eager op add only a few per cent
    assert floor_s <= per_token <= 1.05 * floor_s
    assert 3.5 < 1 / per_token < 3.8  # tokens/s; shared/seeds/002 measured 3.9 on its 32-thread host


def test_cpus_join_the_ranking_only_when_asked_or_named():
    plan = _plan(model="cfdna-gen", precision="bf16", workload=Generate(1000, 1, 64), batch=None)
    cpu_ids = {g.id for g in FACTS.catalog.cpus}
    default = {e.gpu.id for e in estimate_all(plan, FACTS)}
    assert default == {g.id for g in FACTS.catalog.gpus} and not default & cpu_ids
    assert cpu_ids <= {e.gpu.id for e in estimate_all(plan, FACTS, include_cpus=True)}
    named = estimate_all(plan, FACTS, ["amd-epyc-9654", "rtx-5090"])
    assert {e.gpu.id for e in named} == {"amd-epyc-9654", "rtx-5090"}
    cpu = next(e for e in named if e.gpu.id == "amd-epyc-9654")
    assert cpu.feasible and cpu.price is None and cpu.cost() is None  # no listed price: time only
    assert any(r.code == "price" for r in cpu.reasons)


def test_a_slow_fp16_path_is_timed_at_its_fraction_of_fp32():
    """fp16 on a Zen 4 EPYC (no AVX512-FP16) runs its matmuls at 1 % of the fp32 rate: prefill becomes compute-bound.
    A 4,096-token prompt through a 7B model: 2 x 6.61e9 matmul params x 4,096 tokens = 54.1 TFLOP."""
    m = load_models().get("llm-7b-seed002")
    cpu = load_catalog().get("amd-epyc-9654")
    plan = Plan(m, Infer(1, 4096), "fp16", attention="sdpa", batch=1)
    e = estimate_gpu(plan, cpu, FACTS, adjust=NO_OVERHEAD)
    matmul_flops = 2 * (LLAMA2_7B_PARAMS - 32_000 * 4_096 - 32 * 2 * 4_096 - 4_096) * 4096
    rate = 96 * 2.4 * 32 * 1e9 * 0.01 * 0.60  # fp32 peak x slow-path fraction x PyTorch's CPU compute fraction
    linear = next(g for p in e.phases for g in p.groups if g.name == "linear layers")
    assert linear.time_s == pytest.approx(matmul_flops / rate, rel=0.02) and linear.bound == "compute"
