"""Ring collectives over a link (alpha-beta model with NCCL's per-call and per-hop latencies), and which link n GPUs
of a catalog GPU use."""

import pytest

from planner.engine.collectives import allreduce_seconds, comm_seconds, ring_traffic
from planner.inputs.catalog import Link, LinkKind, load_catalog
from planner.inputs.work import ALL_GATHER, ALL_REDUCE, Collective

FAST = Link(LinkKind("fast", "a switch", busbw_fraction=0.8, call_latency_us=5.0, hop_latency_us=1.0, source="test"),
            400.0, None)
HOST = Link(LinkKind("host", "through host memory", busbw_fraction=0.5, call_latency_us=5.0, hop_latency_us=15.0,
                     source="test"), 32.0, None)


def test_ring_all_reduce_is_bandwidth_term_plus_call_and_hop_latencies():
    # 100 MB over 4 GPUs: each sends 2 x 3/4 x 1e8 = 1.5e8 B; bus 400 x 0.8 = 320 GB/s -> 468.75 us; one call 5 us;
    # 6 hops x 1 us
    assert allreduce_seconds(1e8, 4, FAST) == pytest.approx(468.75e-6 + 5e-6 + 6e-6)
    # same message through host memory: bus 32 x 0.5 = 16 GB/s -> 9375 us; 5 us; 6 hops x 15 us = 90 us
    assert allreduce_seconds(1e8, 4, HOST) == pytest.approx(9375e-6 + 5e-6 + 90e-6)
    assert allreduce_seconds(1e8, 1, HOST) == 0.0  # one GPU: nothing to reduce


def test_small_messages_pay_the_call_and_a_latency_growing_with_the_ring():
    # 16 KB (one token's hidden state, 8192 x 2 B): 2 GPUs -> 2 hops, 8 GPUs -> 14 hops, one call each
    two = allreduce_seconds(16384, 2, HOST)  # 16384 B / 16 GB/s = 1.024 us + 5 us + 2 x 15 us
    eight = allreduce_seconds(16384, 8, HOST)  # 2 x 7/8 x 16384 / 16e9 = 1.792 us + 5 us + 14 x 15 us
    assert two == pytest.approx(1.024e-6 + 5e-6 + 30e-6) and eight == pytest.approx(1.792e-6 + 5e-6 + 210e-6)


def test_an_all_gather_is_half_an_all_reduce_in_bytes_and_ring_steps():
    # each GPU sends the (n-1)/n of the result it lacks, in n-1 steps: 8 GPUs, 3 gathers of 1 MB
    assert ring_traffic(Collective(ALL_GATHER, 1e6, 3), 8) == pytest.approx((3 * 7 / 8 * 1e6, 3 * 7, 3))
    assert ring_traffic(Collective(ALL_REDUCE, 1e6, 3), 8) == pytest.approx((3 * 2 * 7 / 8 * 1e6, 3 * 14, 3))
    assert ring_traffic(Collective(ALL_REDUCE, 1e6, 3), 1) == (0.0, 0.0, 0.0)
    # 1 MB gathered over 4 GPUs on FAST: 0.75e6 B / 320 GB/s = 2.34375 us + 5 us + 3 hops x 1 us
    assert comm_seconds(*ring_traffic(Collective(ALL_GATHER, 1e6, 1), 4), FAST) == pytest.approx(10.34375e-6)
    with pytest.raises(ValueError, match="unknown collective"):
        ring_traffic(Collective("broadcast", 1e6, 1), 4)


def test_each_gpu_gets_the_link_it_really_has():
    c = load_catalog()
    assert c.get("h100-sxm").link_for(8).kind.id == "nvlink"
    assert c.get("rtx-4090").link_for(2).kind.id == "pcie-host"  # GeForce: P2P off in the driver
    assert c.get("rtx-5090").link_for(4).kind.id == "pcie-host"
    assert c.get("a100-pcie-80gb").link_for(4).kind.id == "pcie-p2p"
    nvl = c.get("h100-nvl")  # a bridged pair: the bridge reaches one peer, more GPUs fall back to PCIe
    assert nvl.link_for(2).kind.id == "nvlink" and nvl.link_for(2).unidir_gbps == 300
    assert nvl.link_for(4).kind.id == "pcie-p2p" and nvl.link_for(4).unidir_gbps == 63


def test_a_small_nvlink_all_reduce_is_nccls_own_latency_model():
    """NCCL's tuning model (src/graph/tuning.cc): ring/LL latency 6.6 us + 2(n-1) x 0.6 us over NVLink, i.e. 7.8 us
    for 2 GPUs and 15.0 us for 8; a few bytes add nothing measurable."""
    link = load_catalog().get("h100-sxm").link_for(8)
    assert allreduce_seconds(8, 2, link) == pytest.approx(7.8e-6, rel=1e-3)
    assert allreduce_seconds(8, 8, link) == pytest.approx(15.0e-6, rel=1e-3)


@pytest.mark.parametrize("gpu, n, message_bytes, measured_us, where", [
    ("a100-sxm-40gb", 2, 32, 10.14, "nccl-tests -g 2, 2 x A100-SXM4-40GB on NVSwitch: NVIDIA/nccl issue #583"),
    ("h100-sxm", 8, 8, 12.49, "nccl-tests, 8 x H20 on NVSwitch (NVLink 4 as H100 SXM): deepseek-ai/DeepEP issue #303"),
    ("h200-sxm", 8, 32768, 17.9, "nccl-tests ring, 8 x H200: stas00/ml-engineering network/benchmarks/README.md"),
])
def test_small_nvlink_all_reduces_land_within_a_quarter_of_what_nccl_tests_measured(gpu, n, message_bytes,
                                                                                   measured_us, where):
    link = load_catalog().get(gpu).link_for(n)
    assert link.kind.id == "nvlink"
    assert allreduce_seconds(message_bytes, n, link) == pytest.approx(measured_us * 1e-6, rel=0.25), where


def test_a_small_all_reduce_through_host_memory_costs_what_nccl_tests_measured():
    """nccl-tests all_reduce_perf, 8-byte all-reduce over 8 GPUs without P2P: 42.14 us on 8 x RTX 4090
    (NVIDIA/nccl issue #1530) and 54.18 us on 8 x RTX 3090 (NVIDIA/nccl issue #1439). The call and the ring's 14 hops
    at the pcie-host kind's latencies land between the two."""
    link = load_catalog().get("rtx-4090").link_for(8)
    t = allreduce_seconds(8, 8, link)
    assert link.kind.id == "pcie-host" and 42.14e-6 <= t <= 54.18e-6
