"""Explain's Cluster row (planner.views.cluster_text.shape_rows): the nodes and network an estimate was timed on."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.models import load_models
from planner.views.cluster_text import shape_json, shape_rows


@pytest.fixture(scope="module")
def parts():
    facts = load_facts()
    plan = Plan(load_models().get("gpt2-124m"), Train(1000, 1024, 1.0), batch=8, gpus=16)
    return plan, facts.catalog.get("h100-sxm"), facts


def test_the_catalogs_nodes_and_fabric_by_default(parts):
    plan, h100, facts = parts
    (label, value, source), = shape_rows(estimate_gpu(plan, h100, facts))
    # the H100 SXM's catalog node: 8 GPUs, one 400 Gb/s NIC each = 3,200 Gb/s a node; 16 GPUs: 2 nodes
    assert label.startswith("Cluster") and value.startswith("2 nodes of up to 8 GPUs; between nodes InfiniBand NDR")
    assert value.endswith("3,200 Gb/s per node = 400 Gb/s per GPU") and not source.startswith("your cluster")


def test_your_nodes_and_network_where_they_apply(parts):
    plan, h100, facts = parts
    e = estimate_gpu(replace(plan, node_gpus=4, fabric_gbits_per_node=800), h100, facts)
    (_, value, source), = shape_rows(e)
    assert value.startswith("4 nodes of up to 4 GPUs") and value.endswith("800 Gb/s per node = 200 Gb/s per GPU")
    assert source.startswith("your cluster")


def test_one_gpu_has_no_cluster(parts):
    plan, h100, facts = parts
    e = estimate_gpu(replace(plan, gpus=1, node_gpus=4), h100, facts)
    assert shape_rows(e) == [] and shape_json(e) is None
