"""Collective communication time over a GPU's link: the ring algorithm's alpha-beta model.

A ring all-reduce of S bytes over n GPUs is a reduce-scatter then an all-gather: 2(n-1) steps, each moving S/n
bytes to the next GPU (Thakur, Rabenseifner and Gropp, 'Optimization of Collective Communication Operations in
MPICH', IJHPCA 2005). Each GPU sends 2(n-1)/n x S bytes, at the link's bus bandwidth (nccl-tests busbw is defined
on exactly this traffic), and the 2(n-1) steps each pay the link's hop latency. An all-gather or reduce-scatter alone
is half of it: (n-1)/n x S bytes and n-1 hops.
"""

from __future__ import annotations

from planner.base.units import BYTES_PER_GB
from planner.inputs.catalog import Link


def ring_fraction(n: int) -> float:
    """Share of a message each GPU sends in a ring all-gather or reduce-scatter over n GPUs: (n-1)/n."""
    return (n - 1) / n


def allreduce_hops(n: int) -> int:
    """Sequential steps of one ring all-reduce over n GPUs: 2(n-1)."""
    return 2 * (n - 1)


def comm_seconds(bytes_sent: float, hops: float, link: Link) -> float:
    """Seconds to send `bytes_sent` per GPU at the link's bus bandwidth, plus `hops` ring steps of its latency."""
    return bytes_sent / (link.bus_gbps * BYTES_PER_GB) + hops * link.kind.hop_latency_us * 1e-6


def allreduce_seconds(message_bytes: float, n: int, link: Link) -> float:
    """One ring all-reduce of `message_bytes` over n GPUs: 2(n-1)/n x bytes / bus bandwidth + 2(n-1) hop latencies."""
    if n < 2:
        return 0.0
    return comm_seconds(2 * ring_fraction(n) * message_bytes, allreduce_hops(n), link)
