"""ZeRO-1 synchronized as InternLM's HybridZeroOptimizer (InternLM/InternLM c18bec9, hybrid_zero_optim.py): the
gradients all-reduced over the data-parallel ranks during the backward, then one broadcast per rank that owns
parameter tensors, waited on after the step. Expected traffic derived by hand from the ring algorithm: an all-reduce
sends 2(N-1)/N of the message per GPU in 2(N-1) steps; a broadcast forwards each owner's shard through every rank,
(N-1)/N of the weights in all and N-1 steps per call."""

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.models import load_models

N = 64  # data-parallel ranks: 8 nodes of 8 A100s


def _passes(runtime: str, gpus: int = N):
    facts = load_facts()
    model = load_models().get("llama-2-7b")  # 32 layers, 6.74e9 parameters
    job = Train(gpus * 8, 2048, 1.0, sharding="zero1", global_batch=gpus * 8, grad_accum=4)
    plan = Plan(model, job, "bf16", None, "sdpa-flash", runtime, 1, gpus)
    e = estimate_gpu(plan, facts.catalog.get("a100-sxm-80gb"), facts)
    return model, {p.name: p for p, _ in e.passes}, " ".join(r.text for r in e.reasons)


def test_gradients_are_all_reduced_and_parameters_broadcast_per_owner_after_the_step():
    model, phases, words = _passes("internevo-2023")
    assert "a broadcast of the updated weights from each rank that owns some" in words  # what Explain says
    edge = phases["train micro-step with the step's data-parallel collectives"]
    # one all-reduce of the bf16 gradients: 2 x 63/64 x params x 2 B, 2 x 63 ring steps, one call; under compute
    ((sent, hops, calls),) = edge.comm
    assert sent == pytest.approx(2 * 63 / 64 * model.params * 2, rel=1e-9)
    assert (hops, calls) == (126, 1) and edge.comm_overlaps
    # 64 ranks, 32 layers x 9 tensors = 288 tensors: every rank owns some, so 64 broadcasts of 63 steps each,
    # (N-1)/N of the bf16 weights in all; in the optimizer step's phase, which nothing overlaps
    opt = phases["optimizer step"]
    ((sent, hops, calls),) = opt.comm
    assert sent == pytest.approx(63 / 64 * model.params * 2, rel=1e-9)
    assert (hops, calls) == (64 * 63, 64) and not opt.comm_overlaps


def test_fewer_tensors_than_ranks_caps_the_broadcasts_at_one_per_tensor():
    # 512 ranks, 288 tensors: 224 ranks own nothing and broadcast nothing; each of the 288 calls crosses 511 steps
    _, phases, _ = _passes("internevo-2023", 512)
    ((_, hops, calls),) = phases["optimizer step"].comm
    assert (hops, calls) == (288 * 511, 288)


def test_the_reduce_scatter_layout_keeps_its_all_gather():
    # megatron-lm's distributed optimizer: a reduce-scatter (63/64 of the gradients) and one all-gather, no broadcast
    model, phases, words = _passes("megatron-lm")
    assert "an all-gather of the updated weights" in words
    edge = phases["train micro-step with the step's data-parallel collectives"]
    assert sum(c[0] for c in edge.comm) == pytest.approx(2 * 63 / 64 * model.params * 2, rel=1e-9)
    assert sum(c[2] for c in edge.comm) == 2  # the gather joins the micro-step (overlap_param_gather)
