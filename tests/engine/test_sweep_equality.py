"""The catalog sweep's fast path (estimate_all: fixed parts kept per plan shape, passes timed on arrays from their
terms in the batch, planner.engine.sweep) against the explanation path (estimate_gpu on one GPU, built anew;
Estimate.phases, what Explain shows): on every plan a property-based generator builds, every GPU's feasibility,
batch and reasons are the same, and its seconds, cost and split agree to REL (the same formulas, their terms summed
in another order)."""

from dataclasses import fields, replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from planner.base.schema import UnknownNameError
from planner.engine import sweep
from planner.engine.estimate import Estimate, estimate_all, estimate_gpu
from planner.engine.roofline import phase_seconds, work_split
from planner.inputs.facts import load_facts
from planner.views import plan_inputs

FACTS = load_facts()
REL = 1e-9


def _close(a, b) -> bool:
    """Equal, or both numbers within REL of each other."""
    return a == b or (a is not None and b is not None and a == pytest.approx(b, rel=REL))


def _close_dicts(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)

PLANS = st.fixed_dictionaries({
    # decoders (dense and a mixture of experts), and the generic formula profiles
    # gpt-oss-20b: sliding-window layers of 128 tokens, which decode steps past p = 128 cross (OpGroup.cap_pos)
    "model": st.sampled_from(["cfdna-gen", "llama-2-7b", "mixtral-8x7b", "gpt2-124m", "sea", "betarho-reduced",
                              "gpt-oss-20b"]),
    "job": st.sampled_from(["generate", "infer", "train"]),
    "seqs": st.integers(1, 3_000_000),
    "samples": st.integers(1, 200_000),
    "prompt": st.integers(1, 600),
    "gen": st.integers(1, 300),
    "size": st.sampled_from([32, 256, 1024]),
    "epochs": st.sampled_from([0.5, 1.0, 3.0]),
    "accum": st.sampled_from([1, 4]),
    "ckpt": st.booleans(),
    "shard": st.sampled_from(["ddp", "zero1", "zero2", "fsdp", "auto"]),
    "prec": st.sampled_from(["bf16", "fp16", "fp32", "fp8", "fp8-te", "int8", "int4", "q4_k_m", "mxfp4"]),
    "tokens": st.sampled_from([0.0, 0.0, 0.0, 1e6, 3.3e7]),  # a training job given in tokens
    "rt": st.sampled_from(["pytorch-eager", "torch-compile", "vllm", "llama.cpp", "tensorrt-llm"]),
    "gpus": st.sampled_from([1, 2, 4, 8]),
    "par": st.sampled_from(["auto", "data", "tensor"]),
    "batch": st.sampled_from([None, None, 1, 8, 64]),
    "tier": st.sampled_from(["secure", "community", "spot"]),
    "mem": st.sampled_from([60.0, 90.0]),
})
CALIBRATIONS = st.sampled_from([None, None, None, (1.0, 1.0), (0.7, 1.1), (1.3, 0.8)])  # mostly none: the fast path


def _plan(fields: dict):
    inputs = replace(plan_inputs.DEFAULTS, **fields)
    return plan_inputs.to_plan(inputs, plan_inputs.resolve_model(inputs))


def _adjust(scales):
    """A calibration as the page applies one: the runtime's efficiencies scaled on every GPU."""
    if scales is None:
        return None
    compute, memory = scales
    return lambda gpu, eff: replace(eff, compute_efficiency=eff.compute_efficiency * compute,
                                    mem_bw_efficiency=eff.mem_bw_efficiency * memory)


def _same(fast, slow) -> None:
    """Two estimates of one plan on one GPU agree in everything the ranking and Explain read: the same decisions,
    and figures within REL."""
    assert fast.gpu is slow.gpu
    assert (fast.feasible, fast.batch, fast.max_batch, fast.parallelism) == \
        (slow.feasible, slow.batch, slow.max_batch, slow.parallelism), fast.gpu.id
    assert _close(fast.seconds, slow.seconds) and _close_dicts(fast.cost_usd, slow.cost_usd), fast.gpu.id
    assert _close(fast.items_per_s, slow.items_per_s) and _close(fast.tokens_per_s, slow.tokens_per_s)
    assert [r.text for r in fast.reasons] == [r.text for r in slow.reasons], fast.gpu.id
    assert fast.memory.total_gb == slow.memory.total_gb and fast.setup == slow.setup
    assert fast.work == slow.work
    if fast.feasible:  # the remembered pass times and splits are phase_seconds and work_split of the work
        assert _close(fast.seconds, sum(phase_seconds(ph, fast.gpu, fast.efficiency) for ph in fast.work)), fast.gpu.id
        assert _close_dicts(fast.split, work_split(fast.work, fast.gpu, fast.efficiency)), fast.gpu.id
        assert _close_dicts(fast.split, slow.split), fast.gpu.id


@settings(max_examples=80, deadline=None)
@given(PLANS, CALIBRATIONS, st.integers(1, 50_000))
def test_the_fast_sweep_equals_every_gpus_own_estimate(fields, scales, more):
    """Every GPU's estimate in the sweep equals estimate_gpu's, in a first sweep and in a second one of the same
    plan with the job's size changed (the one that reuses the fixed parts and the pass times)."""
    adjust = _adjust(scales)
    try:
        plan = _plan(fields)
        first = estimate_all(plan, FACTS, adjust=adjust, include_cpus=True, arrays=sweep)
    except (ValueError, UnknownNameError):  # a combination the planner refuses as a whole (named there)
        return
    resized = _plan(fields | {"seqs": fields["seqs"] + more, "samples": fields["samples"] + more})
    second = estimate_all(resized, FACTS, adjust=adjust, include_cpus=True, arrays=sweep)
    for p, swept in ((plan, first), (resized, second)):
        assert len(swept) == len(FACTS.catalog.selection(True))
        for e in swept:
            _same(e, estimate_gpu(p, e.gpu, FACTS, adjust))


# plans the arrays cover (planner.engine.sweep.uncovered): dense models' generate and infer jobs, large enough that the
# batches pass the arithmetic's floor (hypothesis draws small integers first, which PLANS' jobs mostly are)
COVERED = st.fixed_dictionaries({
    "model": st.sampled_from(["cfdna-gen", "llama-2-7b", "gpt2-124m", "sea", "betarho-reduced", "gemma-2-9b"]),
    "job": st.sampled_from(["generate", "infer"]),
    "seqs": st.integers(20_000, 3_000_000),
    "samples": st.integers(20_000, 200_000),
    "prompt": st.integers(1, 600),
    "gen": st.integers(1, 300),
    "size": st.sampled_from([32, 256, 1024]),
    "prec": st.sampled_from(["bf16", "fp16", "fp32", "fp8", "int8", "int4", "q4_k_m"]),
    "rt": st.sampled_from(["pytorch-eager", "torch-compile", "vllm", "llama.cpp", "tensorrt-llm"]),
    "gpus": st.sampled_from([1, 1, 2, 4]),
    "par": st.sampled_from(["auto", "data", "data", "tensor"]),
    "batch": st.sampled_from([None, None, None, 17, 64, 1000]),
    "tier": st.sampled_from(["secure", "community", "spot"]),
    "mem": st.sampled_from([60.0, 90.0]),
})


@settings(max_examples=40, deadline=None)
@given(COVERED, st.integers(1, 50_000))
# llama.cpp accumulates fp16 products in fp16, which GeForce cards run at twice their fp32-accumulate rate: the arrays
# once timed it at the catalog's rate (every GeForce row's compute doubled)
@example({"model": "cfdna-gen", "job": "generate", "seqs": 20_000, "samples": 20_000, "prompt": 1, "gen": 1,
          "size": 32, "prec": "fp16", "rt": "llama.cpp", "gpus": 1, "par": "auto", "batch": None, "tier": "secure",
          "mem": 60.0}, 1)
# a fixed batch larger than most GPUs' KV cache under vLLM: waves of the largest batch that fits (test_batch_waves)
@example({"model": "llama-2-7b", "job": "generate", "seqs": 64_000, "samples": 20_000, "prompt": 600, "gen": 300,
          "size": 32, "prec": "fp16", "rt": "vllm", "gpus": 1, "par": "auto", "batch": 1000, "tier": "secure",
          "mem": 90.0}, 7)
# PyTorch's SDPA at a decode step: 17 x 6 heads = 102 thread blocks, fewer than most GPUs' SMs (OpGroup.grid_blocks)
@example({"model": "neuromanifold-gpt", "job": "generate", "seqs": 20_000, "samples": 20_000, "prompt": 600, "gen": 300,
          "size": 32, "prec": "fp16", "rt": "pytorch-eager", "gpus": 1, "par": "auto", "batch": 17, "tier": "secure",
          "mem": 60.0}, 3)
def test_the_array_sweep_equals_every_gpus_own_estimate(fields, more):
    """On plans the arrays cover, at batches past their floor (most GPUs' passes timed by sweep.pass_table), every
    GPU's estimate equals estimate_gpu's, in a first sweep and in one with the job's size changed."""
    try:
        plan = _plan(fields)
        first = estimate_all(plan, FACTS, include_cpus=True, arrays=sweep)
    except (ValueError, UnknownNameError):
        return
    resized = _plan(fields | {"seqs": fields["seqs"] + more, "samples": fields["samples"] + more})
    second = estimate_all(resized, FACTS, include_cpus=True, arrays=sweep)
    for p, swept in ((plan, first), (resized, second)):
        for e in swept:
            _same(e, estimate_gpu(p, e.gpu, FACTS))


@settings(max_examples=25, deadline=None)
@given(PLANS)
def test_the_sweeps_seconds_are_what_explain_shows(fields):
    """Each feasible estimate's seconds are the sum of its explained phases (time_phase, as Explain and the JSON
    show them: the same formula with the terms written out, so equal to rounding)."""
    try:
        ests = estimate_all(_plan(fields), FACTS, arrays=sweep)
    except (ValueError, UnknownNameError):
        return
    for e in ests:
        if e.feasible:
            assert e.seconds == pytest.approx(sum(ph.total_s for ph in e.phases), rel=1e-12), e.gpu.id
            assert e.seconds > 0


@pytest.mark.parametrize("prec", ["bf16", "mxfp4"])
def test_a_decode_crossing_the_sliding_window_is_the_same_both_ways(prec):
    """gpt-oss-20b's 128-token window layers: a 100-token prompt and 200 new tokens cross the window mid-decode (the
    capped group's two spans); the sweep and every GPU's own estimate and its explained phases agree."""
    plan = _plan({"model": "gpt-oss-20b", "job": "generate", "seqs": 500, "prompt": 100, "gen": 200, "prec": prec,
                  "rt": "vllm"})
    feasible = 0
    for e in estimate_all(plan, FACTS, arrays=sweep):
        _same(e, estimate_gpu(plan, e.gpu, FACTS))
        if e.feasible:
            feasible += 1
            assert e.seconds == pytest.approx(sum(ph.total_s for ph in e.phases), rel=1e-12), e.gpu.id
    assert feasible


def test_a_job_of_another_size_at_the_same_batch_reuses_the_pass_times():
    """Two fixed-batch jobs of 64 x 100 and 64 x 300 sequences run the same pass 100 and 300 times: one pass's seconds
    are the same in both sweeps, so the second's are 3x the first's (one pass's seconds x 300 vs x 100)."""
    small = _plan({"seqs": 6_400, "batch": 64})
    big = _plan({"seqs": 19_200, "batch": 64})
    a = {e.gpu.id: e for e in estimate_all(small, FACTS, arrays=sweep)}
    for e in estimate_all(big, FACTS, arrays=sweep):
        if e.feasible:
            # a x 3: the per-pass seconds (p) x 100 x 3 may round differently from p x 300, hence approx
            assert e.seconds == pytest.approx(3 * a[e.gpu.id].seconds, rel=1e-14)
            _same(e, estimate_gpu(big, e.gpu, FACTS))


@settings(max_examples=15, deadline=None)
@given(PLANS)
def test_the_batch_charts_points_are_each_gpus_own_estimate(fields):
    """The batch-size chart's points (one sweep per batch over the GPUs that plot it) equal estimate_gpu at that
    batch, and its largest batch that fits is the auto estimate's."""
    from planner.engine.ranking import batch_sweep
    try:
        plan = _plan(fields)
        estimate_all(plan, FACTS, arrays=sweep)
    except (ValueError, UnknownNameError):
        return
    gpus = [FACTS.catalog.get(g) for g in ("h100-sxm", "a100-sxm-80gb", "rtx-4090", "v100-sxm2-32gb")]
    for p in batch_sweep(plan, gpus, FACTS, arrays=sweep):
        _same(p.estimate, estimate_gpu(replace(plan, batch=p.batch), p.gpu, FACTS))
        assert p.max_batch == estimate_gpu(replace(plan, batch=None), p.gpu, FACTS).max_batch


def test_a_sweeps_estimate_has_every_field_an_estimate_has():
    """The sweep builds estimates without Estimate's __init__ (estimate._estimate): every field, feasible or not, must
    still be set (a field added to Estimate and not to the sweep would be missing here)."""
    ests = estimate_all(_plan({"model": "llama-2-7b", "prec": "fp8"}), FACTS, include_cpus=True, arrays=sweep)
    names = {f.name for f in fields(Estimate)}
    assert {e.feasible for e in ests} == {True, False}  # both kinds were built
    for e in ests:
        assert names <= set(vars(e)), sorted(names - set(vars(e)))


def test_llama_cpp_fp16_on_geforce_keeps_its_fp16_accumulate_rate_in_the_arrays():
    """llama.cpp's cuBLAS GEMMs on F16 weights accumulate in fp16, which GeForce cards run at twice the catalog's
    fp32-accumulate rate (GPU.fp16_accumulate_speedup): a 20,000-sequence prefill of cfdna-gen is compute-bound, so
    before the arrays applied that speedup they timed its linear layers at half the rate (RTX 4090: 0.0742 s against
    0.0497 s, found by the hypothesis test above at 444696a). Both ways now agree on every GPU."""
    plan = _plan({"model": "cfdna-gen", "job": "generate", "seqs": 20000, "prompt": 1, "gen": 1, "prec": "fp16",
                  "rt": "llama.cpp", "batch": None})
    swept = estimate_all(plan, FACTS, arrays=sweep)
    assert any(e.gpu.id == "rtx-4090" and e.feasible for e in swept)
    for e in swept:
        _same(e, estimate_gpu(plan, e.gpu, FACTS))


def test_a_rest_at_or_below_the_floor_is_timed_pass_by_pass_beside_the_arrays():
    """6,405 sequences at a fixed batch of 64: 100 passes of 64, past the arrays' floor (sweep.AFFINE_FROM), and a
    rest of 5 sequences below it, timed pass by pass. Passes are independent, so the job takes 100 times a job of 64
    sequences plus a job of 5, on every GPU; and each estimate is estimate_gpu's."""
    from planner.engine.sweep import AFFINE_FROM
    plan = _plan({"seqs": 6_405, "batch": 64})
    assert 5 <= AFFINE_FROM < 64  # the case this test is about: one pass on arrays, one not
    one = {e.gpu.id: e for e in estimate_all(_plan({"seqs": 64, "batch": 64}), FACTS)}
    rest = {e.gpu.id: e for e in estimate_all(_plan({"seqs": 5, "batch": 64}), FACTS)}
    feasible = 0
    for e in estimate_all(plan, FACTS, arrays=sweep):
        _same(e, estimate_gpu(plan, e.gpu, FACTS))
        if e.feasible:
            feasible += 1
            assert e.seconds == pytest.approx(100 * one[e.gpu.id].seconds + rest[e.gpu.id].seconds, rel=REL)
    assert feasible


def test_a_kept_sweep_answers_another_tier_and_a_size_asked_again():
    """The sweep keeps its last job sizes' timed passes (estimate._swept): another price tier of a kept size, and a
    size asked again after others (more than are kept), are still every GPU's own estimate, their costs and price
    notes those of the tier asked."""
    sizes = [700_001 + 1_000 * k for k in range(10)]
    asked = [(sizes[0], "community"), (sizes[0], "spot"), *[(s, "secure") for s in sizes[1:]], (sizes[0], "spot")]
    for seqs, tier in asked:
        plan = _plan({"seqs": seqs, "tier": tier})
        swept = estimate_all(plan, FACTS, arrays=sweep)
        if seqs == sizes[0]:  # a few sizes are checked against every GPU's own estimate; the others are timed only
            for e in swept:
                _same(e, estimate_gpu(plan, e.gpu, FACTS))
                assert e.price is e.prices.get(tier) and e.plan.price_tier == tier


@pytest.mark.parametrize("arrays", [sweep, None])
def test_a_batch_per_gpu_is_each_gpus_own_estimate_at_it(arrays):
    """estimate_many with a batch per GPU (the batch chart's points, a GPU more than once) equals estimate_gpu of the
    plan at that batch, with the arrays (one sweep) and without them (one sweep per batch)."""
    from planner.engine.estimate import estimate_many
    plan = _plan({"seqs": 200_003})
    gpus = [FACTS.catalog.get(g) for g in ("h100-sxm", "rtx-4090", "h100-sxm", "a100-sxm-80gb", "rtx-4090")]
    batches = [64, 4096, 8, 1_000_000, 7]
    found = estimate_many(plan, gpus, FACTS, arrays=arrays, batches=batches)
    assert [(e.gpu, e.batch) for e in found] == [(g, min(b, 200_003)) for g, b in zip(gpus, batches)]
    for e, g, b in zip(found, gpus, batches):
        _same(e, estimate_gpu(replace(plan, batch=b), g, FACTS))


def test_llama_cpp_quantized_prompts_take_each_gpus_own_path_in_the_arrays():
    """llama.cpp's quantized prompt GEMM depends on the GPU (tests/engine/test_prompt_gemm.py): int8 MMQ from Turing
    on, FP16 cuBLAS over an fp16 copy on a V100, the generic model on AMD. The arrays time every GPU as its own
    estimate does: 2,000 Llama-2-7B Q4_K_M prompts of 600 tokens (two micro-batches each), 8 tokens generated."""
    plan = _plan({"model": "llama-2-7b", "job": "generate", "seqs": 2000, "prompt": 600, "gen": 8,
                  "prec": "q4_k_m", "rt": "llama.cpp", "batch": None})
    swept = estimate_all(plan, FACTS, arrays=sweep)
    assert {e.gpu.id for e in swept if e.feasible} >= {"rtx-4090", "v100-sxm2-32gb"}
    for e in swept:
        _same(e, estimate_gpu(plan, e.gpu, FACTS))
