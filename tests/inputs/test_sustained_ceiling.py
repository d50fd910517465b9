"""The matmul ceiling a long compute-bound load holds at its board power (catalog SUSTAINED_RULE): mamf-finder's
power-saturated MSMF where it is published, the same run's MSMF / MAMF ratio on a GPU of the same die and board power,
the burst figure elsewhere. Figures: stas00/ml-engineering compute/accelerator/README.md, branch fast-mamf @082816f
(2026-08-10); the burst ceilings: the same file at 744d01e (data/gpus.yaml). The A100's pair: Horace He, thonking.ai
'Strangely, Matrix Multiplications on GPUs Run Faster When Given "Predictable" Data!' (2024): 8192^3 through cuBLAS at
the 400 W limit, 257 TFLOPS on randn inputs, 295 on zeros (the same kernel below the limit, at the boost clock)."""

import textwrap

import pytest

from planner.base.schema import DataFileError
from planner.inputs.catalog import load_catalog

# (gpu, path): expected sustained TFLOPS, worked by hand from the published rows
SUSTAINED = {
    ("h200-sxm", "bf16"): 708.5,  # its own MSMF
    ("h200-sxm", "fp8"): 1288.7,
    ("b200", "bf16"): 1456.3,
    ("b200", "fp8"): 2795.7,
    ("h100-sxm", "bf16"): 794.5 * 708.5 / 841.9,  # H100's burst 794.5 x H200's MSMF/MAMF: 668.6
    ("h100-sxm", "fp8"): 1402.6 * 1288.7 / 1491.9,  # 1211.6
    ("h200-sxm", "tf32"): 989 / 2 * 794.5 / 989 * 708.5 / 794.5,  # tf32 takes the 16-bit family: 354.25
    ("a100-sxm-80gb", "bf16"): 257.0,  # its own power-saturated figure (below the 271.2 MAMF burst)
    ("a100-sxm-80gb", "fp16"): 312 * 271.2 / 312 * 257 / 271.2,  # fp16 takes the 16-bit family's: 257
    # int8 has no 8-bit figure on Ampere: the 16-bit ratio and so the 16-bit clock, 624 x 271.2 / 312 x 257 / 271.2
    ("a100-sxm-80gb", "int8"): 624 * 257 / 312,  # 514.0
    ("a100-sxm-40gb", "bf16"): 257.0,  # the post names no memory size; a 400 W A100 is an SXM4 part
    # 300 W and 250 W PCIe A100s (burst 252.9): Ampere, compute capability 8.0, at no more than 400 W, 257 / 295 carries
    ("a100-pcie-80gb", "bf16"): 252.9 * 257 / 295,  # 220.3
    ("a100-pcie-40gb", "bf16"): 252.9 * 257 / 295,
}


@pytest.mark.parametrize("gpu_id, path", sorted(SUSTAINED))
def test_the_engine_times_matmuls_at_the_power_saturated_ceiling(gpu_id, path):
    c = load_catalog().get(gpu_id).ceiling(path)
    assert c.tflops == pytest.approx(SUSTAINED[gpu_id, path], rel=1e-6)
    assert c.burst_tflops > c.tflops and "MSMF" in c.how


def test_the_h100_figure_agrees_with_the_projects_own_h100_bench():
    # planner/data/calibrations/2026-11-27_cuda-nvidia-h100-80gb-hbm3.json measured 673 bf16 TFLOPS: within 2 %
    assert load_catalog().get("h100-sxm").ceiling("bf16").tflops == pytest.approx(673, rel=0.02)


@pytest.mark.parametrize("gpu_id", ["h100-pcie", "b300", "gb200", "rtx-4090"])
def test_no_ratio_is_carried_to_another_board_power_or_an_unmeasured_architecture(gpu_id):
    # H100 PCIe (350 W, not H200's 700 W), B300 / GB200 (1100 / 1200 W, not B200's 1000 W), a GeForce card
    c = load_catalog().get(gpu_id).ceiling("bf16")
    assert c.burst_tflops == 0.0 and "MSMF" not in c.how


@pytest.mark.parametrize("gpu_id", ["h800", "h100-nvl"])
def test_a_derived_ceiling_at_no_more_board_power_takes_the_ratio(gpu_id):
    # H800 (700 W) and H100 NVL (400 W): Hopper, ceilings derived from the Hopper median ratio, then x 708.5 / 841.9
    c = load_catalog().get(gpu_id).ceiling("bf16")
    assert c.tflops == pytest.approx(c.burst_tflops * 708.5 / 841.9, rel=1e-6) and "h200-sxm" in c.how


GOOD = """\
schema_version: 1
read_on: 2026-11-20
gpus:
  - id: toy
    name: Toy GPU
    vendor: NVIDIA
    architecture: Hopper
    compute_capability: "9.0"
    market: datacenter
    vram_gib: 80
    memory_type: HBM3
    mem_bw_gbps: 3350
    dense_tflops: {fp32: 67, bf16: 989, fp16: 989, fp8: 1979}
    tdp_w: 700
    matmul_ceiling_tflops: {bf16: 800, date: 2026-11-22, source: x}
    source: test
"""


def _load(tmp_path, extra: str):
    path = tmp_path / "gpus.yaml"
    path.write_text(textwrap.dedent(GOOD.replace("    source: test\n", extra + "    source: test\n")))
    return load_catalog(path)


def test_a_sustained_figure_scales_the_ceiling_of_its_own_gpu(tmp_path):
    cat = _load(tmp_path, "    sustained_matmul_tflops: {bf16: 700, burst_bf16: 840, date: 2026-11-27, source: y}\n")
    c = cat.get("toy").ceiling("bf16")
    assert (c.tflops, c.burst_tflops) == (pytest.approx(700), pytest.approx(800))
    # fp8 has no published figure, its own or its architecture's: it takes the 16-bit ratio 800/989 (rule 3) and so
    # the 16-bit clock at the board power, 700/800 (the same tensor cores under the same power limit)
    assert cat.get("toy").ceiling("fp8").tflops == pytest.approx(1979 * 800 / 989 * 700 / 800)


@pytest.mark.parametrize("extra, field, words", [
    ("    sustained_matmul_tflops: {bf16: 700, date: 2026-11-27, source: y}\n", "burst_bf16", "together"),
    ("    sustained_matmul_tflops: {bf16: 900, burst_bf16: 840, date: 2026-11-27, source: y}\n", "bf16", "exceeds"),
    ("    sustained_matmul_tflops: {date: 2026-11-27, source: y}\n", "bf16", "at least one"),
    ("    sustained_matmul_tflops: {bf16: 700, burst_bf16: 840, source: y}\n", "date", ""),
    ("    sustained_matmul_tflops: {bf16: 5000, burst_bf16: 5000, date: 2026-11-27, source: y}\n", "burst_bf16", ""),
])
def test_a_bad_sustained_figure_names_the_file_record_and_field(tmp_path, extra, field, words):
    with pytest.raises(DataFileError) as err:
        _load(tmp_path, extra)
    msg = str(err.value)
    assert "'toy'" in msg and f"'{field}'" in msg and words in msg
