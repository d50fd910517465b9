"""The cluster inputs in the share link (node: GPUs per node, fab: Gb/s per node between nodes) and in the plan:
round trip, written only when stated, each bad value named and dropped alone."""

from dataclasses import replace

import pytest

from planner.views.plan_inputs import DEFAULTS, plan_sentence, resolve_model, to_plan
from planner.views.share import decode, encode

CLUSTER = replace(DEFAULTS, model="gpt2-124m", job="train", gpus=16, node=4, fab=1600.0)


def test_a_cluster_travels_in_the_link_and_reaches_the_plan():
    params = encode(CLUSTER)
    assert (params["node"], params["fab"]) == ("4", "1600")
    back, warnings = decode(params)
    assert warnings == [] and back == CLUSTER
    plan = to_plan(back, resolve_model(back))
    assert (plan.node_gpus, plan.fabric_gbits_per_node) == (4, 1600.0)
    assert "16 GPUs per job in nodes of 4 GPUs with 1600 Gb/s between nodes per node" in plan_sentence(
        back, resolve_model(back))


def test_no_cluster_stays_out_of_the_link_and_the_plan():
    params = encode(replace(CLUSTER, node=0, fab=0.0))
    assert "node" not in params and "fab" not in params
    plan = to_plan(DEFAULTS, resolve_model(DEFAULTS))
    assert plan.node_gpus is None and plan.fabric_gbits_per_node is None
    assert decode({"node": "0", "fab": "0"}) == (DEFAULTS, [])  # 0: the catalog's, as the page writes it


@pytest.mark.parametrize("param, bad, words", [
    ("node", "73", "must be between 1 and 72"), ("node", "4.5", "whole number"), ("node", "-4", "between 1 and 72"),
    ("node", "eight", "expected a number"), ("fab", "9", "must be between 10 and 57600"),
    ("fab", "inf", "finite"), ("fab", "1e9", "between 10 and 57600"),
])
def test_a_bad_cluster_value_is_named_and_falls_back_alone(param, bad, words):
    inputs, warnings = decode({**encode(CLUSTER), param: bad})
    assert [w.param for w in warnings] == [param]
    assert words in str(warnings[0]) and "using the catalog's" in str(warnings[0])
    assert getattr(inputs, param) == 0
    other = "fab" if param == "node" else "node"
    assert getattr(inputs, other) == getattr(CLUSTER, other) and inputs.gpus == 16  # the rest of the plan kept
