"""A row whose host had no GPU peer-to-peer (Measurement.gpu_p2p False) runs its collectives through host memory."""

import pytest

from planner.base.schema import DataFileError
from planner.engine.collectives import allreduce_seconds
from planner.inputs.catalog import load_catalog, load_link_kinds
from planner.validation.measured import as_known_now, conditions_read_after, load_measurements, row_gpu

ROWS = {r.id: r for r in load_measurements()}
TP2_ROWS = ("dl22-vllm0101-t2-qwen2-7b-tp2-a100-b1-in1024-o1024",
            "dl22-vllm0101-t6-qwen25-32b-tp2-a100-b1-in1024-o1024",
            "dl22-vllm0101-t8-qwen2-72b-tp2-a100-b1-in1024-o1024")


def test_an_sxm_a100_without_p2p_all_reduces_through_host_memory_by_hand():
    """Qwen2-7B's 3,584 bf16 activations (7,168 B) over 2 GPUs through host memory, NCCL's LL protocol
    (data/interconnects.yaml pcie-host): 6.6 us a call + 2 hops x 2.97 us + 2 x 1/2 x 7,168 B at half of
    0.70 x 31.5 GB/s (11.025 GB/s) = 12.54 + 0.650 = 13.19 us; Simple would be 8.4 + 2 x 5.7 + 0.33 = 20.1 us."""
    gpu = load_catalog().get("a100-sxm-80gb").without_p2p(load_link_kinds()["pcie-host"])
    link = gpu.link_for(2)
    assert link.kind.id == "pcie-host" and link.unidir_gbps == 31.5
    assert allreduce_seconds(7168, 2, link) == pytest.approx(13.19e-6, rel=0.005)
    # the catalog's own SXM board: NVLink, a third of the time or less
    assert allreduce_seconds(7168, 2, load_catalog().get("a100-sxm-80gb").link_for(2)) < 11e-6


def test_dennislee22s_tp2_rows_run_without_p2p_as_their_log_says():
    """vLLM 0.10.1.1's log of Test 2: 'Custom allreduce is disabled because your platform lacks GPU P2P
    capability' (conditions_read_after); the committed rows themselves stay as predicted."""
    after = conditions_read_after()
    catalog = load_catalog()
    for rid in TP2_ROWS:
        assert ROWS[rid].gpu_p2p is None and after[rid]["gpu_p2p"] is False
        row = as_known_now(ROWS[rid])
        assert row_gpu(row, catalog).link_for(2).kind.id == "pcie-host"
    one_gpu = as_known_now(ROWS["dl22-vllm0101-t4-qwen2-7b-a100-b1-in1024-o1024"])
    assert one_gpu.gpu_p2p is None and row_gpu(one_gpu, catalog).link_for(2).kind.id == "nvlink"


def test_a_gpu_p2p_that_is_not_true_or_false_names_the_field(tmp_path):
    path = tmp_path / "after.yaml"
    path.write_text("schema_version: 1\nrows:\n- {id: x, gpu_p2p: 'no', source: s}\n")
    with pytest.raises(DataFileError, match="gpu_p2p"):
        conditions_read_after.__wrapped__(path)


def test_a10g_pods_have_no_p2p_so_an_8_gpu_all_reduce_crosses_host_memory_by_hand():
    """AWS G5's A10Gs have no peer access (TensorRT-LLM issue #1487): a 16 KiB all-reduce over 8 of them takes
    NCCL's LL through host memory, 6.6 + 14 hops x 2.97 us + 2 x 7/8 x 16,384 B / 11.025 GB/s (half of 0.70 x
    31.5) = 48.18 + 2.60 = 50.8 us, where peer-to-peer PCIe (1.0 us a hop, 0.78) would take 20.6 + 2.33 = 22.9."""
    link = load_catalog().get("a10g").link_for(8)
    assert link.kind.id == "pcie-host"
    assert allreduce_seconds(16384, 8, link) == pytest.approx(50.8e-6, rel=0.005)
