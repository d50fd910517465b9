"""Which providers rent a plan's GPUs as a multi-node cluster (data/clusters.yaml), for a plan larger than one node:
the offers that fit its GPU count, those of its GPU at other sizes, and the providers that offer none of that GPU."""

from __future__ import annotations

from planner.engine.cluster import fabric_of
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


def shape_json(e: Estimate) -> dict | None:
    """The nodes and network the estimate was timed on (the plan's cluster inputs applied, or the catalog's): GPUs
    per node, nodes, the fabric and its Gb/s per GPU and per node, and what the plan asked; None for one GPU or a
    device with no node size."""
    g, n = e.gpu, e.plan.gpus
    if n < 2 or not g.node_gpus:
        return None
    f = fabric_of(g)
    return {"node_gpus": g.node_gpus, "nodes": -(-n // g.node_gpus), "fabric": f.name if f else None,
            "fabric_gbits_per_gpu": f.gbits_per_gpu if f else None,
            "fabric_gbits_per_node": f.gbits_per_gpu * g.node_gpus if f else None,
            "node_gpus_asked": e.plan.node_gpus, "fabric_gbits_per_node_asked": e.plan.fabric_gbits_per_node}


def shape_rows(e: Estimate) -> list[tuple[str, str, str]]:
    """(input, value, source) of the nodes and network the plan was timed on; [] for one GPU."""
    shape = shape_json(e)
    if shape is None:
        return []
    asked = e.plan.node_gpus is not None or e.plan.fabric_gbits_per_node is not None
    nodes = f"{shape['nodes']:,} node{'s' if shape['nodes'] > 1 else ''} of up to {shape['node_gpus']} GPUs"
    net = (f"; between nodes {shape['fabric']}: {shape['fabric_gbits_per_node']:,.4g} Gb/s per node = "
           f"{shape['fabric_gbits_per_gpu']:,.4g} Gb/s per GPU" if shape["fabric"] else
           "; no network between nodes known")
    return [("Cluster (nodes x GPUs per node, network)", nodes + net,
             ("your cluster (GPUs per node, network per node) where it applies, the rest " if asked else "")
             + "data/gpus.yaml interconnect (node_gpus, fabric) and data/interconnects.yaml fabrics")]
