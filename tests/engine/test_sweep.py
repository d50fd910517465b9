"""The sweep's arithmetic (planner.engine.sweep): what it covers and what it routes to the object path, its array
twins of the roofline's and the GEMM model's formulas, and its pass times against roofline.pass_seconds."""

from dataclasses import replace

import numpy as np
import pytest

from planner.engine import gemm, roofline, sweep
from planner.engine.estimate import estimate_all, estimate_gpu, job_shape, setup_on
from planner.engine.phases import job_passes
from planner.engine.plan import Plan
from planner.engine.sweep import (AFFINE_FROM, affine_work, gemm_efficiency, gpu_constants, pass_table,
                                  sum_max_affine, uncovered)
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Infer, Train
from planner.inputs.models import load_models

FACTS = load_facts()
MODELS = load_models()
DENSE = MODELS.get("cfdna-gen")


def _generate(model=DENSE, precision="bf16", batch=None, seqs=1_000_000, runtime="pytorch-eager"):
    return Plan(model, Generate(seqs, 1, 165), precision, batch=batch, price_tier="community", runtime=runtime)


def test_each_plan_the_arithmetic_does_not_cover_is_named():
    """Training, a mixture of experts: routed to the object path, with the reason; a dense model's generate and
    infer jobs are covered."""
    assert "training" in uncovered(DENSE, Train(1000, 64, 1.0))
    assert "mixture of experts" in uncovered(MODELS.get("mixtral-8x7b"), Generate(10, 100, 100))
    assert uncovered(DENSE, Generate(10, 1, 165)) == ""
    assert uncovered(DENSE, Infer(10, 165)) == ""


def test_a_dense_decoders_pass_is_affine_above_the_floor_and_tensor_parallel_is_refused():
    gpu = FACTS.catalog.get("h100-sxm")
    plan = _generate()
    s = setup_on(plan, gpu, FACTS)
    work = affine_work(DENSE, job_shape(plan.workload), s, 1)
    assert work.refused == "" and work.floor == AFFINE_FROM
    assert [ap.phase.name for ap in work.phases] == ["prefill", "decode"]
    tp = affine_work(MODELS.get("llama-2-7b"), job_shape(plan.workload), replace(s, tp=2), 1)
    assert "collectives" in tp.refused


@pytest.mark.parametrize("precision", ["bf16", "fp32", "int8", "int4"])
def test_pass_table_is_roofline_pass_seconds_and_phase_split(precision):
    """Every phase of one pass, on four GPUs (SM counts and generations differ) and batches across the GEMM tiles'
    steps, equals the object path's pass_seconds and phase_split of the model's own work to 1e-12."""
    plan = _generate(precision=precision)
    for gpu_id in ("h100-sxm", "rtx-4090", "a100-sxm-80gb", "v100-sxm2-32gb"):
        gpu = FACTS.catalog.get(gpu_id)
        eff = FACTS.runtimes.get(plan.runtime).efficiency(gpu.memory_class)
        s = setup_on(plan, gpu, FACTS)
        work = affine_work(DENSE, job_shape(plan.workload), s, 1)
        assert not work.refused
        batches = [17, 31, 127, 129, 1000, 65_537]
        seconds, split = pass_table([work], [0] * len(batches), batches, [gpu_constants(work, gpu, eff)] * len(batches))
        for row, b in enumerate(batches):
            phases = [ph for ph, _ in job_passes(DENSE, plan.workload, s, b, b, 1)]
            for k, ph in enumerate(phases):
                assert seconds[row][k] == pytest.approx(roofline.pass_seconds(ph, gpu, eff), rel=1e-12), (gpu_id, b)
                want = roofline.phase_split(ph, gpu, eff)
                assert split[row][k] == pytest.approx([want[x] for x in roofline.LIMITS], rel=1e-12, abs=1e-300)


def test_gemm_efficiency_on_arrays_is_the_gemm_models():
    """NVIDIA's wave example: 109 full 128 x 128 tiles on 108 SMs take two waves, 109 / 216 of them busy; and the
    array twin equals gemm.gemm_efficiency over shapes below, at and above the MMA rows, tiles and waves."""
    assert gemm_efficiency(np.array([128.0]), np.array([128.0 * 109]), np.array([64.0]), np.array([108.0]))[0] == \
        pytest.approx(109 / 216, rel=1e-15)
    for m in (1, 7, 16, 17, 64, 100, 129, 4096, 165_001):
        for n, k in ((4096, 4096), (50_257, 768), (128, 11_008), (96, 64)):
            for sms in (0, 46, 108, 132):
                got = gemm_efficiency(np.array([float(m)]), np.array([float(n)]), np.array([float(k)]),
                                      np.array([float(sms)]))[0]
                assert got == pytest.approx(gemm.gemm_efficiency(m, n, k, sms), rel=1e-12), (m, n, k, sms)


def test_sum_max_affine_on_arrays_is_the_closed_form():
    """max(10 - p, p) over p = 0..9: 10+9+8+7+6+5 while compute leads (the tie at p = 5 counts as compute), then
    6+7+8+9: 75 s, 45 of them compute-bound; and the twin equals roofline.sum_max_affine on crossings both ways."""
    total, comp = sum_max_affine(np.array([10.0]), np.array([-1.0]), np.array([0.0]), np.array([1.0]), 0, 10)
    assert (total[0], comp[0]) == (75.0, 45.0)
    rng = np.random.default_rng(7)
    scale, offset = np.array([[5.0], [0.1], [5.0], [0.1]]), np.array([[5.0], [0.0], [5.0], [0.0]])
    terms = rng.uniform(-1, 1, size=(4, 200)) * scale + offset
    for p0, n in ((0, 1), (3, 50), (166, 164)):
        total, comp = sum_max_affine(*terms, p0, n)
        for i in range(terms.shape[1]):
            want = roofline.sum_max_affine(*terms[:, i], p0, n)
            assert (total[i], comp[i]) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_the_sweep_builds_an_estimates_phases_only_when_asked():
    """The ranking reads seconds, cost and the split; Explain asks for the phases, which are then the object
    path's, as estimate_gpu builds them."""
    plan = _generate(seqs=1_234_567)
    e = next(e for e in estimate_all(plan, FACTS, arrays=sweep) if e.feasible)
    assert "passes" not in vars(e)
    assert e.work == estimate_gpu(plan, e.gpu, FACTS).work
    assert e.seconds == pytest.approx(sum(ph.total_s for ph in e.phases), rel=1e-9)


def test_a_batch_at_or_below_the_floor_is_timed_by_the_object_path_exactly():
    """A fixed batch of 8 (a quantized GEMV's regime in llama.cpp) is routed to the object path: the sweep's seconds
    equal estimate_gpu's to the last digit."""
    plan = _generate(precision="int4", batch=8, seqs=8 * 1000, runtime="llama.cpp")
    for e in estimate_all(plan, FACTS, arrays=sweep):
        if e.feasible:
            assert e.seconds == estimate_gpu(plan, e.gpu, FACTS).seconds, e.gpu.id


def test_two_works_of_one_shape_are_timed_in_one_table_each_with_its_own_figures():
    """int8 on a V100 runs another attention kernel than on an H100 (its setup differs), with the same groups: the
    sweep times both in one table, each GPU with its own work's figures, as each GPU's own estimate does."""
    plan = _generate(precision="int8", seqs=765_432)
    v100, h100 = FACTS.catalog.get("v100-sxm2-32gb"), FACTS.catalog.get("h100-sxm")
    assert setup_on(plan, v100, FACTS).attention != setup_on(plan, h100, FACTS).attention
    swept = {e.gpu.id: e for e in estimate_all(plan, FACTS, arrays=sweep)}
    for gpu in (v100, h100):
        one = estimate_gpu(plan, gpu, FACTS)
        assert swept[gpu.id].feasible and one.feasible
        assert swept[gpu.id].seconds == pytest.approx(one.seconds, rel=1e-12)
