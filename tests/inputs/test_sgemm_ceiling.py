"""fp32 matmuls on the CUDA cores (SGEMM) have a ceiling of their own where a GPU of the architecture has a published
SGEMM figure (catalog.SGEMM_FAMILY); elsewhere fp32 keeps the 16-bit tensor-core ratio, as before.

Expected figures by hand from github.com/zzc0721/torch-performance-test-data database.md @9d828276, row 'NVIDIA Tesla
V100-SXM2-16GB' (one run): fp32 14.06 TFLOPS (Volta has no TF32: cuBLAS SGEMM), fp16 94.84; datasheets: V100 SXM2
fp32 15.7, fp16 tensor 125; V100 PCIe fp32 14.0."""

import textwrap

import pytest

from planner.inputs.catalog import load_catalog

TOYS = """\
schema_version: 1
read_on: 2026-11-27
gpus:
  - id: volta-a
    name: Volta A
    vendor: NVIDIA
    architecture: Volta
    compute_capability: "7.0"
    market: datacenter
    vram_gib: 16
    memory_type: HBM2
    mem_bw_gbps: 900
    dense_tflops: {fp32: 16, fp16: 128}
    matmul_ceiling_tflops: {fp16: 96, fp32: 14, date: 2026-11-27, source: x}
    source: test
  - id: volta-b
    name: Volta B
    vendor: NVIDIA
    architecture: Volta
    compute_capability: "7.0"
    market: datacenter
    vram_gib: 32
    memory_type: HBM2
    mem_bw_gbps: 900
    dense_tflops: {fp32: 8, fp16: 64}
    source: test
  - id: turing-c
    name: Turing C
    vendor: NVIDIA
    architecture: Turing
    compute_capability: "7.5"
    market: datacenter
    vram_gib: 16
    memory_type: GDDR6
    mem_bw_gbps: 320
    dense_tflops: {fp32: 8, fp16: 64}
    matmul_ceiling_tflops: {fp16: 40, date: 2026-11-27, source: x}
    source: test
"""


def _catalog(tmp_path, body: str = TOYS):
    path = tmp_path / "gpus.yaml"
    path.write_text(textwrap.dedent(body))
    return load_catalog(path)


def test_the_v100_runs_fp32_matmuls_at_its_measured_sgemm_rate_not_its_tensor_core_ratio():
    cat = load_catalog()
    sxm = cat.get("v100-sxm2-16gb")
    # 14.06 / 15.7 = 0.896 of the datasheet, against the tensor cores' 94.84 / 125 = 0.759 (11.92 TFLOPS before)
    assert sxm.ceiling("fp32").tflops == pytest.approx(14.06) and sxm.ceiling("fp32").measured
    assert sxm.ceiling("fp16").tflops == pytest.approx(94.84)  # the tensor-core path is untouched
    # the other Volta cards take its SGEMM ratio: PCIe 14.0 x 14.06 / 15.7 = 12.54 TFLOPS; SXM2 32GB 14.06
    assert cat.get("v100-pcie-16gb").ceiling("fp32").tflops == pytest.approx(14.0 * 14.06 / 15.7)
    assert cat.get("v100-sxm2-32gb").ceiling("fp32").tflops == pytest.approx(14.06)
    assert "Volta" in cat.get("v100-pcie-16gb").ceiling("fp32").how


def test_an_architecture_without_an_sgemm_figure_keeps_the_16_bit_ratio_for_fp32():
    cat = load_catalog()
    # A100 SXM 80GB: MAMF 271.2 / 312 bf16, applied to its 19.5 fp32 datasheet rate as before (no Ampere SGEMM figure)
    a100 = cat.get("a100-sxm-80gb").ceiling("fp32")
    assert a100.burst_tflops or a100.tflops
    assert (a100.burst_tflops or a100.tflops) == pytest.approx(19.5 * 271.2 / 312)
    assert "fp32 takes its bf16-family ratio" in a100.how


def test_sgemm_figure_carries_within_its_architecture_only(tmp_path):
    cat = _catalog(tmp_path)
    assert cat.get("volta-a").ceiling("fp32").tflops == pytest.approx(14)  # its own figure
    assert cat.get("volta-b").ceiling("fp32").tflops == pytest.approx(8 * 14 / 16)  # the architecture's ratio
    assert cat.get("volta-b").ceiling("fp16").tflops == pytest.approx(64 * 96 / 128)  # 16-bit family unchanged
    # Turing has no SGEMM figure: fp32 takes its own 16-bit ratio, 8 x 40 / 64 = 5.0
    assert cat.get("turing-c").ceiling("fp32").tflops == pytest.approx(8 * 40 / 64)


def test_an_sgemm_figure_above_the_fp32_datasheet_is_refused_naming_the_field(tmp_path):
    with pytest.raises(Exception, match="'fp32'") as err:
        _catalog(tmp_path, TOYS.replace("fp32: 14, date", "fp32: 40, date"))  # 40 > 1.2 x 16
    assert "volta-a" in str(err.value)
