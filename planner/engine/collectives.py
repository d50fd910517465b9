"""Collective communication time over a GPU's link: the ring algorithm's alpha-beta model, with NCCL's latencies.

A ring all-reduce of S bytes over n GPUs is a reduce-scatter then an all-gather: 2(n-1) steps, each moving S/n
bytes to the next GPU (Thakur, Rabenseifner and Gropp, 'Optimization of Collective Communication Operations in
MPICH', IJHPCA 2005). Each GPU sends 2(n-1)/n x S bytes, at the link's bus bandwidth (nccl-tests busbw is defined
on exactly this traffic). An all-gather or reduce-scatter alone is half of it: (n-1)/n x S bytes and n-1 steps.

Latency as NCCL models its own ring (NVIDIA/nccl src/graph/tuning.cc, ncclTopoTuneModel): a base latency per call
(launching the collective kernel and its first handshake) plus one hop latency per ring step; data/interconnects.yaml
holds both per link kind. The bandwidth term is the link's full bus bandwidth whatever the message size: NCCL's
low-latency protocol, which it picks for small messages, moves them at about half of it, which this model leaves
out (a 1 MiB all-reduce over 8 GPUs on NVLink is then ~25 % short of measured; tests/engine/test_collectives.py).
"""

from __future__ import annotations

from planner.base.units import BYTES_PER_GB
from planner.inputs.catalog import Link
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


def comm_seconds(bytes_sent: float, hops: float, calls: float, link: Link) -> float:
    """Seconds to send `bytes_sent` per GPU at the link's bus bandwidth, plus `calls` x the link's per-call latency
    and `hops` ring steps of its hop latency."""
    kind = link.kind
    return (bytes_sent / (link.bus_gbps * BYTES_PER_GB)
            + (calls * kind.call_latency_us + hops * kind.hop_latency_us) * 1e-6)


def allreduce_seconds(message_bytes: float, n: int, link: Link) -> float:
    """One ring all-reduce of `message_bytes` over n GPUs: 2(n-1)/n x bytes / bus bandwidth + the call's latency
    + 2(n-1) hop latencies."""
    return comm_seconds(*ring_traffic(Collective(ALL_REDUCE, message_bytes, 1), n), link)
