"""A plan's own cluster (GPUs per node, network per node; planner.engine.cluster): the DDP all-reduce of 16 H100s as
4 nodes of 4 and as 2 nodes of 8, derived by hand from the ring formula (planner/engine/collectives.py); a node size
above the catalog's, a GPU with no known network, the inputs' bounds."""

from dataclasses import replace

import pytest

from planner.engine import sweep
from planner.engine.cluster import on_cluster
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan, check_plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Train
from planner.inputs.models import load_models

# data/interconnects.yaml: NVLink's bus fraction and NCCL Simple latencies (us); fabric ndr-400, the H100 SXM's
NVLINK_GBPS, NVLINK_BUSBW = 450, 0.81  # H100 SXM NVLink 4, one direction (data/gpus.yaml)
SIMPLE_CALL_US, SIMPLE_NVLINK_HOP_US = 8.4, 3.4
NDR_GBITS_PER_GPU, NDR_BUSBW, NDR_SIMPLE_HOP_US, NET_OVERHEAD_US = 400, 0.96, 14.0, 1.0
SIMPLE_NET_OVERHEAD_X = 3  # NCCL tuning.cc: Simple pays the network overhead three times
GRAD_BYTES = 4  # DDP all-reduces fp32 gradients (planner/engine/phases.py _ddp_comm)


@pytest.fixture(scope="module")
def facts():
    return load_facts()


@pytest.fixture(scope="module")
def ddp16(facts):
    """GPT-2 (124M) trained with DDP on 16 GPUs, micro-batch 8, no accumulation: one gradient all-reduce a step."""
    return Plan(load_models().get("gpt2-124m"), Train(1000, 1024, 1.0), batch=8, gpus=16)


def _ring_seconds(params: int, n: int, nodes: int, per_node: int) -> float:
    """One Simple ring all-reduce of the fp32 gradients over n GPUs in `nodes` nodes of `per_node`, by hand: each GPU
    sends 2(n-1)/n x S at the slower of NVLink's bus bandwidth (450 x 0.81 GB/s) and the node's NICs' (per_node x
    400/8 GB/s x 0.96); one call latency and 2(n-1) ring hops, nodes-1 of every n-1 across the network (14 us), the
    rest inside at the larger of NVLink's 3.4 us and 3 x 1 us of network overhead."""
    sent = 2 * (n - 1) / n * GRAD_BYTES * params
    bus = min(NVLINK_GBPS * NVLINK_BUSBW, per_node * NDR_GBITS_PER_GPU / 8 * NDR_BUSBW) * 1e9
    inside = max(SIMPLE_NVLINK_HOP_US, SIMPLE_NET_OVERHEAD_X * NET_OVERHEAD_US)
    hop_us = ((n - nodes) * inside + (nodes - 1) * NDR_SIMPLE_HOP_US) / (n - 1)
    return sent / bus + (SIMPLE_CALL_US + 2 * (n - 1) * hop_us) * 1e-6


def _all_reduce_s(e) -> float:
    ph = next(p for p in e.phases if p.name == "train micro-step")
    return ph.comm_s + ph.comm_hidden_s  # exposed + hidden under the backward: the collective's whole time


def test_16_h100s_as_4_nodes_of_4_take_the_fabric_at_half_a_node_of_8s_nics(facts, ddp16):
    """Nodes of 8: min(364.5, 384) = 364.5 GB/s (NVLink-bound); nodes of 4: min(364.5, 192) = 192 GB/s."""
    h100, params = facts.catalog.get("h100-sxm"), ddp16.model.params
    eight = estimate_gpu(ddp16, h100, facts)  # the catalog's node: 8
    four = estimate_gpu(replace(ddp16, node_gpus=4), h100, facts)
    assert _all_reduce_s(eight) == pytest.approx(_ring_seconds(params, 16, 2, 8), rel=1e-9)
    assert _all_reduce_s(four) == pytest.approx(_ring_seconds(params, 16, 4, 4), rel=1e-9)
    assert 1.8 < _all_reduce_s(four) / _all_reduce_s(eight) < 1.9  # ~364.5 / 192, plus the longer hops
    assert "4 nodes of up to 4 GPUs" in next(p for p in four.phases if p.name == "train micro-step").link


def test_a_network_stated_per_node_is_shared_by_the_nodes_gpus(facts, ddp16):
    """800 Gb/s a node of 4 = 200 Gb/s per GPU: 4 x 25 GB/s x 0.96 = 96 GB/s across the nodes."""
    h100, params = facts.catalog.get("h100-sxm"), ddp16.model.params
    e = estimate_gpu(replace(ddp16, node_gpus=4, fabric_gbits_per_node=800), h100, facts)
    sent = 2 * 15 / 16 * GRAD_BYTES * params
    assert _all_reduce_s(e) == pytest.approx(_ring_seconds(params, 16, 4, 4) - sent / 192e9 + sent / 96e9, rel=1e-9)
    assert "800 Gb/s between nodes per node, as asked (200 Gb/s per GPU)" in " ".join(r.text for r in e.reasons)


def test_a_node_larger_than_the_catalogs_keeps_the_catalogs_and_says_so(facts, ddp16):
    h100 = facts.catalog.get("h100-sxm")
    asked = estimate_gpu(replace(ddp16, node_gpus=16), h100, facts)
    assert asked.seconds == estimate_gpu(ddp16, h100, facts).seconds
    assert any("nodes of 16 GPUs asked, but a NVIDIA H100 SXM5 80GB node holds at most 8" in r.text and not r.blocking
               for r in asked.reasons)


def test_a_gpu_without_a_known_network_stays_blocked_beyond_its_node(facts, ddp16):
    rtx = next(g for g in facts.catalog.gpus if g.node_gpus and not any(k.fabric for k in g.links))
    e = estimate_gpu(replace(ddp16, node_gpus=4, fabric_gbits_per_node=400), rtx, facts)
    assert not e.feasible
    assert any("no network between" in r.text and r.blocking for r in e.reasons)
    assert any("400 Gb/s between nodes asked" in r.text and "not applied" in r.text for r in e.reasons)


def test_no_cluster_inputs_leave_every_gpu_as_the_catalog_gives_it(facts, ddp16):
    h100 = facts.catalog.get("h100-sxm")
    assert on_cluster(ddp16, h100) is h100
    shaped = on_cluster(replace(ddp16, node_gpus=4), h100)
    assert on_cluster(replace(ddp16, node_gpus=4), h100) is shaped  # one object per GPU and shape: the sweep's memo
    assert on_cluster(replace(ddp16, node_gpus=4), shaped) is shaped  # already on it: not applied twice


def test_the_sweep_applies_the_cluster_to_every_gpu(facts, ddp16):
    plan = replace(ddp16, node_gpus=4)
    swept = {e.gpu.id: e for e in estimate_all(plan, facts, ["h100-sxm", "a100-sxm-80gb"])}
    assert {e.gpu.node_gpus for e in swept.values()} == {4}
    assert swept["h100-sxm"].seconds == estimate_gpu(plan, facts.catalog.get("h100-sxm"), facts).seconds


@pytest.mark.parametrize("field, value, words", [
    ("node_gpus", 0, "node_gpus: 0 is not a whole number of GPUs per node between 1 and 72"),
    ("node_gpus", 73, "between 1 and 72"), ("node_gpus", 2.5, "whole number"),
    ("fabric_gbits_per_node", 5, "fabric_gbits_per_node: 5 is not Gb/s per node between 10 and 57600"),
    ("fabric_gbits_per_node", 1e6, "between 10 and 57600"),
])
def test_cluster_inputs_out_of_bounds_are_refused_naming_the_field(ddp16, field, value, words):
    with pytest.raises(ValueError, match=words):
        check_plan(replace(ddp16, **{field: value}))


def test_the_array_sweep_times_a_cluster_as_pass_by_pass(facts):
    """Tensor-parallel generation over 16 GPUs in nodes of 4 (every all-reduce crosses the network): the page's
    array sweep and the one-by-one estimate agree (tests/engine/test_sweep_equality.py's 1e-9)."""
    plan = Plan(load_models().get("llama-3-70b"), Generate(1000, 100, 100), gpus=16, parallel="tensor", node_gpus=4,
                fabric_gbits_per_node=800)
    one = estimate_all(plan, facts)
    swept = estimate_all(plan, facts, arrays=sweep)
    assert [e.gpu.id for e in one] == [e.gpu.id for e in swept]
    timed = [(a.seconds, b.seconds) for a, b in zip(one, swept) if a.seconds]
    assert timed and all(b == pytest.approx(a, rel=1e-9) for a, b in timed)
