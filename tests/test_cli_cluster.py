"""`planner estimate --gpus-per-node --fabric-gbps`: the cluster reaches every GPU's estimate and its JSON; a bad
value is refused naming the option, without a traceback."""

import json

import pytest

from tests.fixtures.cli_run import run

ARGS = ("estimate", "--model", "gpt2-124m", "--workload", "train", "--samples", "1000", "--batch", "8", "--gpus", "16",
        "--gpu", "h100-sxm", "--format", "json")


def test_the_cluster_is_named_in_the_json():
    out = run(*ARGS, "--gpus-per-node", "4", "--fabric-gbps", "800")
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)[0]
    # 16 GPUs in nodes of 4: 4 nodes; 800 Gb/s shared by a node's 4 GPUs: 200 each
    assert {k: row["cluster"][k] for k in ("node_gpus", "nodes", "fabric_gbits_per_gpu", "fabric_gbits_per_node",
                                          "node_gpus_asked", "fabric_gbits_per_node_asked")} == {
        "node_gpus": 4, "nodes": 4, "fabric_gbits_per_gpu": 200, "fabric_gbits_per_node": 800, "node_gpus_asked": 4,
        "fabric_gbits_per_node_asked": 800}
    assert any(r["text"].startswith("your cluster: nodes of 4 GPUs, as asked") for r in row["reasons"])
    catalog = json.loads(run(*ARGS).stdout)[0]["cluster"]  # the H100 SXM's catalog node: 8, one 400 Gb/s NIC a GPU
    assert (catalog["node_gpus"], catalog["nodes"], catalog["fabric_gbits_per_node"]) == (8, 2, 3200)
    assert catalog["node_gpus_asked"] is None


@pytest.mark.parametrize("args, words", [
    (("--gpus-per-node", "0.5"), "--gpus-per-node: expected a whole number"),
    (("--gpus-per-node", "100"), "--gpus-per-node: must be between 1 and 72"),
    (("--fabric-gbps", "1"), "--fabric-gbps: must be between 10 and 57600"),
    (("--fabric-gbps", "nan"), "--fabric-gbps: expected a finite number"),
    (("--fabric-gbps", "fast"), "--fabric-gbps: expected a number"),
])
def test_a_bad_cluster_option_is_refused_naming_it(args, words):
    out = run(*ARGS, *args)
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr, out.stderr
