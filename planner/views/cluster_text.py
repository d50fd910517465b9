"""Which providers rent a plan's GPUs as a multi-node cluster (data/clusters.yaml), for a plan larger than one node:
the offers that fit its GPU count, those of its GPU at other sizes, and the providers that offer none of that GPU."""

from __future__ import annotations

from planner.engine.estimate import Estimate
from planner.inputs.clusters import ClusterOffer, load_cluster_offers


def spans_nodes(e: Estimate) -> bool:
    """Whether the plan's GPUs are more than one node of this GPU holds (data/gpus.yaml node_gpus)."""
    return bool(e.gpu.node_gpus) and e.plan.gpus > e.gpu.node_gpus


def _size(o: ClusterOffer) -> str:
    lo, hi = o.min_gpus, o.max_gpus
    return f"{lo:,}-{hi:,} GPUs" if lo and hi else f"from {lo:,} GPUs" if lo else f"up to {hi:,}" if hi else "any size"


def cluster_sentence(e: Estimate) -> str | None:
    """The offers for this plan's GPUs in words; None for a plan within one node."""
    if not spans_nodes(e):
        return None
    g, n = e.gpu, e.plan.gpus
    fit, other, none = load_cluster_offers().for_plan(g.id, n)
    parts = [o.describe() for o in fit]
    parts += [f"{o.provider} {o.offer} rents {g.name} clusters of {_size(o)}, not {n:,}" for o in other]
    if none:
        parts.append(f"no cluster offer of {g.name} (nodes on one fast network) is known from {', '.join(none)}")
    return f"{n:,} GPUs span {-(-n // g.node_gpus):,} nodes: " + "; ".join(parts)


def cluster_rows(e: Estimate) -> list[tuple[str, str, str]]:
    """(input, value, source) of the cluster offers for a plan beyond one node; [] within one node."""
    text = cluster_sentence(e)
    if text is None:
        return []
    fit, other, _ = load_cluster_offers().for_plan(e.gpu.id, e.plan.gpus)
    urls = "; ".join(f"{o.provider}: {o.url}" for o in fit + other)
    return [("Multi-node clusters", text, "data/clusters.yaml" + (f" ({urls})" if urls else ""))]


def cluster_json(e: Estimate) -> dict | None:
    """The offers as JSON fields (fits, other_sizes, none_from); None within one node."""
    if not spans_nodes(e):
        return None
    fit, other, none = load_cluster_offers().for_plan(e.gpu.id, e.plan.gpus)

    def row(o: ClusterOffer) -> dict:
        return {"provider": o.provider, "offer": o.offer, "terms": o.terms, "min_gpus": o.min_gpus,
                "max_gpus": o.max_gpus, "network": o.network, "url": o.url}
    return {"fits": [row(o) for o in fit], "other_sizes": [row(o) for o in other], "none_from": list(none)}
