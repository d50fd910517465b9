"""PyTorch build matrix (data/pytorch_builds.yaml): loading, validation, which build runs which GPU.

Expected outcomes come from the cited arch lists and from CUDA's binary compatibility rule (a cubin for X.y runs on
X.z with z >= y; torch/cuda/__init__.py _check_cubins: "backward compatible within major version")."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.builds import COMPATIBLE, NATIVE, PTX, load_builds, parse_torch_version
from planner.inputs.catalog import load_catalog

B = load_builds()
CAT = load_catalog()


def _build(bid):
    return next(b for b in B.builds if b.id == bid)


def _fit(bid, gpu_id):
    g = CAT.get(gpu_id)
    return _build(bid).fit(g.compute_capability, g.gfx_target)


def test_1_13_1_cu116_ships_kernels_up_to_sm_86():
    # moi90/pytorch_compute_capabilities: pytorch-1.13.1 cuda11.6 -> sm_37, sm_50, sm_60, sm_61, sm_70, sm_75, sm_80,
    # sm_86
    b = _build("1.13.1+cu116")
    assert b.arch_list() == "sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86"
    assert b.platform == "cuda" and b.toolkit_text == "CUDA 11.6"


@pytest.mark.parametrize("gpu, how", [
    ("rtx-a5000", NATIVE),   # SM86: sm_86 is in the list (seed 000: "1.13.1+cu116 works perfectly with RTX A5000")
    ("rtx-a6000", NATIVE),   # SM86
    ("v100-sxm2-32gb", NATIVE),  # SM70: sm_70 in the list
    ("rtx-4090", COMPATIBLE),  # SM89: no sm_89, but sm_86 <= 8.9 in the same major -> the sm_86 cubins run
    ("l40s", COMPATIBLE),      # SM89, as the RTX 4090
    ("h100-sxm", None),        # SM90: no sm_9x cubin and no PTX -> 'no kernel image' (hyena-dna#76)
])
def test_seed_000_pin_runs_the_ampere_and_volta_cards_not_hopper(gpu, how):
    fit = _fit("1.13.1+cu116", gpu)
    assert (fit.how if fit else None) == how
    if how == COMPATIBLE:
        assert fit.arch == "sm_86"


def test_sm_90_kernels_arrive_with_the_cuda_11_8_builds():
    assert _fit("2.0.1+cu117", "h100-sxm") is None  # 2.0.1 cuda11.7: up to sm_86
    assert _fit("2.0.1+cu118", "h100-sxm").how == NATIVE  # 2.0.1 cuda11.8 adds sm_90 (DeepPrep#233 arch list)


def test_seed_002_pytorch_2_4_1_has_no_sm_120_and_2_7_cu128_has():
    # seed 002: "Current PyTorch 2.4.1 only supports up to sm_90"; 2.7.0 cuda12.8 lists sm_120
    assert all(b.fit((12, 0), None) is None for b in B.pin("2.4.1"))
    assert _fit("2.7.0+cu128", "rtx-5090").how == NATIVE
    assert _fit("2.7.0+cu126", "rtx-5090") is None  # the 2.7 CUDA 12.6 build stops at sm_90


def test_volta_and_pascal_leave_the_newer_cuda_builds():
    v100 = CAT.get("v100-sxm2-16gb").compute_capability
    assert _build("2.7.0+cu128").fit(v100, None) is None  # 2.7 cu128 starts at sm_75 (vs-playground#59)
    assert _build("2.8.0+cu128").fit(v100, None).how == NATIVE  # 2.8 put Volta back (pytorch#160269)
    assert _build("2.11.0+cu128").fit(v100, None) is None  # 'Dropping Volta support from CUDA-12.8 binaries for 2.11'
    assert _build("2.14.0+cu126").fit(v100, None).how == NATIVE  # CUDA 12.6 keeps Maxwell/Pascal/Volta
    pascal = (6, 0)
    assert _build("2.8.0+cu128").fit(pascal, None) is None and _build("2.8.0+cu126").fit(pascal, None).how == NATIVE


def test_ptx_reaches_a_newer_major_only_by_jit():
    # cu130 ships '12.0+PTX': a hypothetical compute capability 13.0 GPU has no same-major cubin, but compute_120
    # PTX JIT-compiles for any newer GPU; the cu126 build has no PTX.
    future = (13, 0)
    fit = _build("2.14.0+cu130").fit(future, None)
    assert fit.how == PTX and fit.arch == "compute_120"
    assert _build("2.14.0+cu126").fit(future, None) is None


def test_rocm_builds_run_amd_gpus_and_cuda_builds_do_not():
    assert _fit("2.3.1+rocm6.0", "mi300x").how == NATIVE  # gfx942 added for ROCm >= 6.0 (manywheel build.sh)
    assert _fit("2.0.1+rocm5.4.2", "mi300x") is None  # ROCm 5.4.2 wheels: gfx900;gfx906;gfx908;gfx90a;gfx1030
    assert _fit("2.0.1+rocm5.4.2", "mi250").how == NATIVE  # MI250 is gfx90a
    assert _fit("2.14.0+cu132", "mi300x") is None and _fit("2.14.0+rocm7.14", "h100-sxm") is None


@pytest.mark.parametrize("gpu, oldest", [("v100-sxm2-16gb", "1.13.1+cu116"), ("rtx-4090", "1.13.1+cu116"),
                                         ("h100-sxm", "2.0.1+cu118"), ("rtx-5090", "2.7.0+cu128"),
                                         ("b200", "2.7.0+cu128"), ("mi300x", "2.3.1+rocm6.0"),
                                         ("mi250", "2.0.1+rocm5.4.2")])
def test_oldest_build_that_runs_each_gpu(gpu, oldest):
    g = CAT.get(gpu)
    assert B.oldest_running(g.compute_capability, g.gfx_target)[0].id == oldest


def test_a_pin_names_one_build_or_every_variant_of_a_version():
    assert [b.id for b in B.pin("1.13.1+CU116")] == ["1.13.1+cu116"]
    assert [b.id for b in B.pin("2.4.1")] == ["2.4.1+cu118", "2.4.1+cu121", "2.4.1+cu124"]
    assert B.latest == (2, 14, 0)  # released 2026-09-02 (PyTorchKR/pytorch.kr#119)
    assert parse_torch_version("2.0") == (2, 0)


def test_an_unknown_pin_lists_the_known_builds():
    with pytest.raises(ValueError) as err:
        B.pin("1.12.0+cu113")
    text = str(err.value)
    assert "unknown PyTorch build '1.12.0+cu113'" in text
    assert "1.13.1 (+cu116, +cu117)" in text and "2.14.0 (+cu126, +cu130, +cu132, +rocm7.14)" in text


def test_every_build_has_a_source_and_a_date():
    assert all(b.source and b.read_on for b in B.builds)
    assert [b.id for b in B.builds] == sorted((b.id for b in B.builds), key=lambda i: B.pin(i)[0].sort_key)


def _write(tmp_path, record):
    path = tmp_path / "builds.yaml"
    path.write_text("schema_version: 1\nbuilds:\n  - " + record + "\n")
    return path


@pytest.mark.parametrize("record, field", [
    ("{id: 1.13.1-cu116, sm: ['8.6'], source: s, read_on: 2026-11-20}", "id"),
    ("{id: 2.3.1+rocm6.0, sm: ['8.6'], gfx: [gfx942], source: s, read_on: 2026-11-20}", "sm"),
    ("{id: 2.3.1+cu121, source: s, read_on: 2026-11-20}", "sm"),
    ("{id: 2.3.1+rocm6.0, gfx: [mi300], source: s, read_on: 2026-11-20}", "gfx"),
    ("{id: 2.3.1+cu121, sm: ['86'], source: s, read_on: 2026-11-20}", "sm"),
    ("{id: 2.3.1+cu121, sm: ['8.6'], source: s}", "read_on"),
])
def test_bad_records_are_named_with_their_field(tmp_path, record, field):
    with pytest.raises(DataFileError) as err:
        load_builds(_write(tmp_path, record))
    assert err.value.field == field


def test_blackwell_ultra_sm_103_runs_the_sm_100_cubins():
    # B300 / GB300 are compute capability 10.3 (TransformerEngine support matrix: "10.0, 10.3 Blackwell (data
    # center)"); no official build lists sm_103, and cubins run on a higher minor of the same major (header)
    for gpu in ("b300", "gb300"):
        fit = _fit("2.13.0+cu130", gpu)
        assert fit.how == COMPATIBLE and fit.arch == "sm_100"
    assert _fit("2.13.0+cu130", "gb200").how == NATIVE
    assert _fit("2.6.0+cu126", "b300") is None  # before 2.7 no build has Blackwell kernels
    assert _fit("2.13.0+rocm7.2", "mi355x").how == NATIVE  # gfx950 in the 2.13 ROCm 7.2 arch list
    assert _fit("2.3.1+rocm6.0", "mi325x").how == NATIVE  # gfx942 since ROCm 6.0
