"""A plan beyond one node names the providers that rent its GPUs as clusters, and those that don't."""

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.models import load_models
from planner.views.cluster_text import cluster_json, cluster_rows, cluster_sentence

FACTS = load_facts()


def _estimate(gpu, gpus):
    plan = Plan(load_models().get("gpt2-124m"), Train(1000, 1024, 1), "bf16", batch=1, gpus=gpus)
    return estimate_gpu(plan, load_catalog().get(gpu), FACTS)


def test_one_node_says_nothing():
    e = _estimate("h100-sxm", 8)  # an HGX board holds 8
    assert cluster_sentence(e) is None and cluster_rows(e) == [] and cluster_json(e) is None


def test_sixty_four_h100s_span_eight_nodes_and_four_providers_rent_them():
    e = _estimate("h100-sxm", 64)
    text = cluster_sentence(e)
    assert text.startswith("64 GPUs span 8 nodes")
    for words in ("runpod Instant Clusters (16-256 GPUs, self-service", "lambda 1-Click Clusters", "nebius",
                  "vast.ai"):
        assert words in text
    assert "no cluster offer" not in text
    row = cluster_rows(e)[0]
    assert row[0] == "Multi-node clusters" and "https://docs.runpod.io/instant-clusters" in row[2]
    assert cluster_json(e)["none_from"] == []


def test_a_gpu_no_provider_rents_as_clusters_says_so():
    e = _estimate("l40s", 16)
    assert cluster_sentence(e) == ("16 GPUs span 2 nodes: no cluster offer of NVIDIA L40S 48GB (nodes on one fast "
                                   "network) is known from runpod, lambda, nebius, vast.ai")
    assert cluster_json(e) == {"fits": [], "other_sizes": [], "none_from": ["runpod", "lambda", "nebius", "vast.ai"]}
