"""Ring all-reduce timing over a link (alpha-beta model), and which link n GPUs of a catalog GPU use."""

import pytest

from planner.engine.collectives import allreduce_seconds
from planner.inputs.catalog import Link, LinkKind, load_catalog

FAST = Link(LinkKind("fast", "a switch", busbw_fraction=0.8, hop_latency_us=1.0, source="test"), 400.0, None)
HOST = Link(LinkKind("host", "through host memory", busbw_fraction=0.5, hop_latency_us=15.0, source="test"), 32.0, None)


def test_ring_all_reduce_is_bandwidth_term_plus_hop_latencies():
    # 100 MB over 4 GPUs: each sends 2 x 3/4 x 1e8 = 1.5e8 B; bus 400 x 0.8 = 320 GB/s -> 468.75 us; 6 hops x 1 us
    assert allreduce_seconds(1e8, 4, FAST) == pytest.approx(468.75e-6 + 6e-6)
    # same message through host memory: bus 32 x 0.5 = 16 GB/s -> 9375 us; 6 hops x 15 us = 90 us
    assert allreduce_seconds(1e8, 4, HOST) == pytest.approx(9375e-6 + 90e-6)
    assert allreduce_seconds(1e8, 1, HOST) == 0.0  # one GPU: nothing to reduce


def test_small_messages_pay_latency_growing_with_the_ring():
    # 16 KB (one token's hidden state, 8192 x 2 B): 2 GPUs -> 2 hops, 8 GPUs -> 14 hops
    two = allreduce_seconds(16384, 2, HOST)  # 16384 B / 16 GB/s = 1.024 us + 2 x 15 us
    eight = allreduce_seconds(16384, 8, HOST)  # 2 x 7/8 x 16384 / 16e9 = 1.792 us + 14 x 15 us
    assert two == pytest.approx(1.024e-6 + 30e-6) and eight == pytest.approx(1.792e-6 + 210e-6)


def test_each_gpu_gets_the_link_it_really_has():
    c = load_catalog()
    assert c.get("h100-sxm").link_for(8).kind.id == "nvlink"
    assert c.get("rtx-4090").link_for(2).kind.id == "pcie-host"  # GeForce: P2P off in the driver
    assert c.get("rtx-5090").link_for(4).kind.id == "pcie-host"
    assert c.get("a100-pcie-80gb").link_for(4).kind.id == "pcie-p2p"
    nvl = c.get("h100-nvl")  # a bridged pair: the bridge reaches one peer, more GPUs fall back to PCIe
    assert nvl.link_for(2).kind.id == "nvlink" and nvl.link_for(2).unidir_gbps == 300
    assert nvl.link_for(4).kind.id == "pcie-p2p" and nvl.link_for(4).unidir_gbps == 63


def test_a_small_all_reduce_through_host_memory_costs_what_nccl_tests_measured():
    """nccl-tests all_reduce_perf, 8-byte all-reduce over 8 GPUs without P2P: 42.14 us on 8 x RTX 4090
    (NVIDIA/nccl issue #1530) and 54.18 us on 8 x RTX 3090 (NVIDIA/nccl issue #1439). The ring's 14 hops at the
    pcie-host kind's latency land between the two."""
    link = load_catalog().get("rtx-4090").link_for(8)
    t = allreduce_seconds(8, 8, link)
    assert link.kind.id == "pcie-host" and 42.14e-6 <= t <= 54.18e-6
