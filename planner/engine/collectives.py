"""Collective communication time over a GPU's link: the ring algorithm's alpha-beta model, with NCCL's latencies.

A ring all-reduce of S bytes over n GPUs is a reduce-scatter then an all-gather: 2(n-1) steps, each moving S/n
bytes to the next GPU (Thakur, Rabenseifner and Gropp, 'Optimization of Collective Communication Operations in
MPICH', IJHPCA 2005). Each GPU sends 2(n-1)/n x S bytes, at the link's bus bandwidth (nccl-tests busbw is defined
on exactly this traffic). An all-gather or reduce-scatter alone is half of it: (n-1)/n x S bytes and n-1 steps.

Each call is timed as NCCL times its own ring (NVIDIA/nccl src/graph/tuning.cc: ncclTopoTuneModel, ncclTopoGetAlgoTime)
with each of its protocols, and the fastest is taken, as NCCL's tuner does: a base latency per call (launching the
collective kernel and its first handshake), one hop latency per ring step, and the bytes at the protocol's share of
the bus bandwidth (LL half of it, capped per GPU generation; LL128 0.92 of it, NVLink only; Simple all of it).
data/interconnects.yaml holds them per link kind. Small messages take LL, a few MiB LL128, tens of MiB Simple
(tests/engine/test_collectives.py checks the curve against nccl-tests on 8 x H200).
"""

from __future__ import annotations

from planner.base.units import BYTES_PER_GB
from planner.inputs.catalog import GPU, Link, ProtocolRate
from planner.inputs.custom_allreduce import CustomAllReduce, CustomKernel
from planner.inputs.work import ALL_GATHER, ALL_REDUCE, Collective


def ring_fraction(n: int) -> float:
    """Share of a message each GPU sends in a ring all-gather or reduce-scatter over n GPUs: (n-1)/n."""
    return (n - 1) / n


def allreduce_hops(n: int) -> int:
    """Sequential steps of one ring all-reduce over n GPUs: 2(n-1)."""
    return 2 * (n - 1)


def ring_traffic(c: Collective, n: int) -> tuple[float, float, float]:
    """(bytes each GPU sends, ring steps, calls) of `c.count` collectives of `c.message_bytes` over n GPUs."""
    if n < 2 or not c.count:
        return 0.0, 0.0, 0.0
    if c.kind == ALL_REDUCE:
        return c.count * 2 * ring_fraction(n) * c.message_bytes, c.count * allreduce_hops(n), c.count
    if c.kind == ALL_GATHER:
        return c.count * ring_fraction(n) * c.message_bytes, c.count * (n - 1), c.count
    raise ValueError(f"unknown collective {c.kind!r} (known: {ALL_REDUCE}, {ALL_GATHER})")


def call_protocol(bytes_sent: float, hops: float, link: Link) -> tuple[float, ProtocolRate]:
    """(seconds, protocol) of one collective call that sends `bytes_sent` per GPU over `hops` ring steps: the
    protocol with the least call latency + hops x hop latency + bytes / its bus bandwidth (NCCL's own choice)."""
    best_s, best = float("inf"), link.rates[0]
    for r in link.rates:
        t = r.call_s + hops * r.hop_s + bytes_sent / r.bytes_per_s
        if t < best_s:
            best_s, best = t, r
    return best_s, best


def comm_seconds(bytes_sent: float, hops: float, calls: float, link: Link) -> float:
    """Seconds of `calls` equal collective calls that send `bytes_sent` per GPU over `hops` ring steps in all, each
    at NCCL's fastest protocol for its size (call_protocol)."""
    if not calls:
        return 0.0
    return calls * call_protocol(bytes_sent / calls, hops / calls, link)[0]


def allreduce_seconds(message_bytes: float, n: int, link: Link) -> float:
    """One ring all-reduce of `message_bytes` over n GPUs: 2(n-1)/n x bytes / a protocol's bus bandwidth + its call
    latency + 2(n-1) of its hop latencies, at the fastest protocol."""
    return comm_seconds(*ring_traffic(Collective(ALL_REDUCE, message_bytes, 1), n), link)


def group_link(gpu: GPU, n: int, stride: int = 1) -> Link | None:
    """The link a group of n GPUs whose members are `stride` ranks apart exchanges over (None: none known): the
    node's link when the group sits in one node (n x stride <= the node's GPUs, or no node size known); else the
    cluster's, each node holding node_gpus // stride of the group's members and using their NICs only."""
    node = gpu.node_gpus
    if stride <= 1 or not node or n * stride <= node:
        return gpu.link_for(n)
    cluster = gpu.link_for(n * stride)
    if cluster is None or not cluster.fabric:
        return cluster
    return cluster.for_group(n, max(1, node // stride))


def custom_link(link: Link) -> bool:
    """Whether a runtime's own all-reduce runs over this link: NVLink (peer-to-peer loads) inside one node."""
    return link.kind.id == "nvlink" and link.fabric is None


def custom_allreduce_seconds(ar: CustomAllReduce, message_bytes: float, n: int, link: Link
                             ) -> tuple[float, CustomKernel]:
    """(seconds, kernel) of one all-reduce of `message_bytes` over n GPUs in a runtime's own kernel over NVLink
    (data/custom_allreduce.yaml): its call latency, one latency per peer, and its bytes at its share of the GPU's
    NVLink bandwidth in one direction. One-shot reads the whole message from each of the n-1 peers; two-shot moves a
    reduce-scatter's and an all-gather's 2(n-1)/n of it."""
    k = ar.kernel(message_bytes, n)
    moved = (n - 1) * message_bytes if k.id == "one-shot" else 2 * ring_fraction(n) * message_bytes
    return k.call_s + (n - 1) * k.peer_s + moved / (link.unidir_gbps * BYTES_PER_GB * k.link_share), k
