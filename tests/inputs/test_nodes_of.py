"""A GPU in servers smaller than its catalog node (GPU.in_nodes_of), and the validation rows that state their node size
(KempnerForge's 4-GPU H200 nodes): hand-derived link sizes and bandwidths."""

from dataclasses import replace
from pathlib import Path

import pytest

from planner.base.schema import DataFileError
from planner.engine.collectives import group_link
from planner.inputs.catalog import load_catalog
from planner.validation.measured import as_known_now, conditions_read_after, load_measurements, predict_row

NDR_GBITS_PER_GPU = 400  # data/interconnects.yaml, fabric ndr-400: one 400 Gb/s NIC per GPU
NDR_BUSBW_FRACTION = 0.96  # the same fabric's busbw_fraction (HDR's too)


@pytest.fixture(scope="module")
def h200():
    return load_catalog().get("h200-sxm")


def test_nvlink_reaches_only_the_smaller_node(h200):
    four = h200.in_nodes_of(4)
    assert h200.link_for(8).fabric is None  # the catalog's 8-GPU NVSwitch board
    assert four.node_gpus == 4
    assert four.link_for(4).fabric is None and four.link_for(4).kind.id == "nvlink"
    eight = four.link_for(8)
    assert eight.fabric is not None and eight.nodes == 2  # 8 GPUs in nodes of 4: two nodes


def test_a_node_as_large_as_the_catalogs_changes_nothing(h200):
    assert h200.in_nodes_of(8) is h200
    assert h200.in_nodes_of(16) is h200


def test_data_parallel_group_beside_tp4_crosses_the_fabric_one_gpu_a_node(h200):
    """TP 4 x FSDP 8 on 32 GPUs: the FSDP group's members sit 4 ranks apart. In nodes of 4 each node holds one of
    them, so its ring runs at one NIC's rate: 400 Gb/s / 8 x 0.96 = 48 GB/s; in the catalog's nodes of 8, two
    members share a node and the ring's slowest hop is a node's two NICs: 96 GB/s."""
    one_nic = NDR_GBITS_PER_GPU / 8 * NDR_BUSBW_FRACTION * 1e9
    link4 = group_link(h200.in_nodes_of(4), 8, 4)
    assert (link4.nodes, link4.node_gpus) == (8, 1)
    simple4 = next(r for r in link4.rates if r.id == "simple")
    assert simple4.bytes_per_s == pytest.approx(one_nic)
    link8 = group_link(h200, 8, 4)
    assert (link8.nodes, link8.node_gpus) == (4, 2)
    assert next(r for r in link8.rates if r.id == "simple").bytes_per_s == pytest.approx(2 * one_nic)


def test_a_row_in_4_gpu_nodes_takes_longer_where_fsdp_leaves_the_node():
    """The 70B TP 4 x FSDP 8 row: its all-gathers leave the node either way, but at half the catalog node's NIC
    bandwidth a micro-step hides twice the seconds of collectives (the same bytes; bf16 reduce in both)."""
    row = next(r for r in load_measurements() if r.id.startswith("kf-14_32gpu_70b"))
    assert row.node_gpus is None  # a committed row keeps its fields; the node size is a condition read after
    assert as_known_now(row).node_gpus == 4
    # renamed, so that no condition read after applies: the node size alone differs
    small = predict_row(replace(row, id="nodes-of-4", node_gpus=4, grad_reduce_dtype="bf16")).estimate
    big = predict_row(replace(row, id="nodes-of-8", grad_reduce_dtype="bf16")).estimate
    micro = lambda e: next(p for p in e.phases if p.name == "train micro-step")  # noqa: E731
    assert micro(small).comm_hidden_s == pytest.approx(2 * micro(big).comm_hidden_s, rel=0.02)
    assert small.seconds > big.seconds


def test_a_network_stated_per_node_is_shared_by_its_gpus():
    """fms-fsdp's '128 A100s with 400Gbps': 400 Gb/s a node of 8 = 50 GB/s, x 0.96 bus = 48 GB/s for a ring across
    the nodes, where the catalog's A100 cluster (one 200 Gb/s HDR NIC per GPU) gives the node 8 x 25 x 0.96 = 192
    GB/s."""
    a100 = load_catalog().get("a100-sxm-80gb")
    rate = lambda g: next(r for r in g.link_for(128).rates if r.id == "simple").bytes_per_s  # noqa: E731
    assert rate(a100.with_fabric_gbits(400)) == pytest.approx(400 / 8 * NDR_BUSBW_FRACTION * 1e9)
    assert rate(a100) == pytest.approx(8 * 200 / 8 * NDR_BUSBW_FRACTION * 1e9)
    assert "400 Gb/s a node of 8" in a100.with_fabric_gbits(400).link_for(128).describe()


def test_every_condition_read_after_names_a_measured_row():
    ids = {r.id for r in load_measurements()}
    assert set(conditions_read_after()) <= ids


def test_a_condition_out_of_range_is_refused_naming_the_field(tmp_path: Path):
    path = tmp_path / "after.yaml"
    path.write_text("schema_version: 1\nrows:\n- id: x\n  node_gpus: 0\n  source: test\n")
    with pytest.raises(DataFileError, match="node_gpus"):
        conditions_read_after(path)
    path.write_text("schema_version: 1\nrows:\n- id: x\n  tp_gather: per-layer\n  source: test\n")
    with pytest.raises(DataFileError, match="tp_gather"):
        conditions_read_after(path)
