"""The user's cluster: GPUs per node and the network between nodes a plan states (Plan.node_gpus,
Plan.fabric_gbits_per_node), applied to each GPU of the sweep through GPU.in_nodes_of and GPU.with_fabric_gbits.

A node size above a GPU's catalog node is not refused (a sweep asks it of every GPU, and a 16-GPU server of H100s
has no 16-GPU NVLink domain): that GPU keeps its catalog node, and its estimate says so. A GPU the catalog knows no
network between nodes for keeps none: a stated network speed gives it no bus fraction or latencies to time a ring
with, so a plan beyond one of its nodes stays blocked, saying why.
"""

from __future__ import annotations

from planner.engine.feasibility import Reason
from planner.engine.plan import Plan
from planner.inputs.catalog import GPU, Fabric

_ON_CLUSTER: dict[tuple[int, int | None, float | None], tuple[GPU, GPU]] = {}
_MAX_REMEMBERED = 4096  # GPUs x cluster shapes kept (a page session changes one input at a time): then it starts anew


def asks_cluster(plan: Plan) -> bool:
    """Whether the plan states a node size or a network of its own."""
    return plan.node_gpus is not None or plan.fabric_gbits_per_node is not None


def on_cluster(plan: Plan, gpu: GPU) -> GPU:
    """`gpu` in the plan's cluster: nodes of plan.node_gpus GPUs (no more than its catalog node), plan's Gb/s per
    node between them. The same object for the same GPU and shape (the sweep's memo is keyed by the GPU's id), and
    a GPU already on this cluster is returned as it is."""
    if not asks_cluster(plan):
        return gpu
    key = (id(gpu), plan.node_gpus, plan.fabric_gbits_per_node)
    found = _ON_CLUSTER.get(key)
    if found is not None and found[0] is gpu:
        return found[1]
    shaped = gpu.in_nodes_of(plan.node_gpus) if plan.node_gpus else gpu
    if plan.fabric_gbits_per_node and fabric_of(shaped):
        shaped = shaped.with_fabric_gbits(plan.fabric_gbits_per_node)
    if len(_ON_CLUSTER) >= _MAX_REMEMBERED:
        _ON_CLUSTER.clear()  # not one evicted: sessions' threads share the memo, and a clear is one step
    _ON_CLUSTER[key] = (gpu, shaped)
    _ON_CLUSTER[(id(shaped), plan.node_gpus, plan.fabric_gbits_per_node)] = (shaped, shaped)
    return shaped


def fabric_of(gpu: GPU) -> Fabric | None:
    """The network between a GPU's nodes (None: none known)."""
    return next((k.fabric for k in gpu.links if k.fabric), None)


def cluster_note(plan: Plan, gpu: GPU) -> Reason | None:
    """What the plan's cluster inputs did on `gpu` (already on_cluster), in a sentence; None when it states none or
    runs on one GPU."""
    if not asks_cluster(plan) or plan.gpus < 2:
        return None
    parts = []
    node, fabric = plan.node_gpus, plan.fabric_gbits_per_node
    if node and gpu.node_gpus and node > gpu.node_gpus:
        parts.append(f"nodes of {node} GPUs asked, but a {gpu.name} node holds at most {gpu.node_gpus} (its NVLink "
                     f"or PCIe domain, data/gpus.yaml): timed in nodes of {gpu.node_gpus}")
    elif node and gpu.node_gpus:
        parts.append(f"nodes of {gpu.node_gpus} GPUs, as asked")
    elif node:
        parts.append(f"nodes of {node} GPUs asked, but no node size of {gpu.name} is known: not applied")
    if fabric and fabric_of(gpu):
        parts.append(f"{fabric:g} Gb/s between nodes per node, as asked ({fabric / gpu.node_gpus:g} Gb/s per GPU)")
    elif fabric:
        parts.append(f"{fabric:g} Gb/s between nodes asked, but no network between {gpu.name} nodes is known "
                     "(data/gpus.yaml interconnect: fabric): not applied")
    return Reason("parallelism", False, "your cluster: " + "; ".join(parts))
