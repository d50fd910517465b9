"""CPU devices (data/cpus.yaml): peaks and bandwidth derived by hand from cores, clocks, vector units and DIMM
channels; the catalog keeps them apart from the GPUs; validation names file, record and field."""

from pathlib import Path

import pytest

from planner.base.schema import DataFileError
from planner.inputs.catalog import COMPUTE_PATHS, GPUS_FILE, load_catalog
from planner.inputs.cpus import CPUS_FILE, load_cpu_specs

CATALOG = load_catalog()
GIB_IN_GB = 2**30 / 1e9


def test_epyc_9654_peaks_from_cores_clock_and_fma_lanes():
    cpu = CATALOG.get("amd-epyc-9654")
    # Zen 4: 2 FMA pipes of 256 bits = 2 x 8 fp32 lanes x 2 FLOPs per FMA = 32 FLOPs per cycle per core;
    # 96 cores x 2.4 GHz base x 32 = 7,372.8 GFLOPS
    assert cpu.fp32_tflops == pytest.approx(96 * 2.4 * 32 / 1000) == pytest.approx(7.3728)
    assert cpu.bf16_tflops == pytest.approx(2 * 7.3728)  # AVX512-BF16: two bf16 products per fp32 lane
    assert cpu.int8_tops == pytest.approx(4 * 7.3728)  # AVX512-VNNI: four int8 products per int32 lane
    assert cpu.fp16_tflops == pytest.approx(0.01 * 7.3728)  # no AVX512-FP16: PyTorch's slow fallback
    assert cpu.tf32_tflops is None and cpu.fp8_tflops is None
    assert cpu.mem_bw_gbps == pytest.approx(12 * 4800 * 8 / 1000) == pytest.approx(460.8)  # 12 x DDR5-4800 x 8 B
    assert cpu.vram_gb == pytest.approx(384 * GIB_IN_GB)  # 12 x 32 GB DIMMs (GiB) of host RAM


def test_sapphire_rapids_takes_the_amx_rate_for_bf16_and_int8():
    cpu = CATALOG.get("intel-xeon-8480-plus")
    # 2 x 512-bit FMA = 2 x 16 lanes x 2 = 64 FLOPs per cycle; 56 cores x 2.0 GHz x 64 = 7,168 GFLOPS
    assert cpu.fp32_tflops == pytest.approx(7.168)
    # AMX: 1024 bf16 / 2048 int8 operations per cycle per core, above AVX512-BF16's 2 x 7.168
    assert cpu.bf16_tflops == pytest.approx(56 * 2.0 * 1024 / 1000) == pytest.approx(114.688)
    assert cpu.int8_tops == pytest.approx(56 * 2.0 * 2048 / 1000)
    assert cpu.fp16_tflops == pytest.approx(2 * 7.168)  # AVX512-FP16: a native path, no slow one
    assert cpu.cpu.slow_path("fp16") is None
    assert cpu.mem_bw_gbps == pytest.approx(8 * 4800 * 8 / 1000)  # 307.2 GB/s


def test_zen3_has_no_bf16_extension_and_no_int8_path():
    cpu = CATALOG.get("amd-epyc-7763")
    fp32 = 64 * 2.45 * 2 * 8 * 2 / 1000  # 5.0176 TFLOPS
    assert cpu.fp32_tflops == pytest.approx(fp32)
    assert cpu.bf16_tflops == pytest.approx(0.01 * fp32) and cpu.cpu.slow_path("bf16") is not None
    assert cpu.int8_tops is None and "VNNI" in cpu.cpu.why_no_path("int8")
    assert cpu.mem_bw_gbps == pytest.approx(8 * 3200 * 8 / 1000)  # 204.8 GB/s


def test_desktop_ryzen_bandwidth_is_two_channels():
    cpu = CATALOG.get("amd-ryzen-9-7950x")
    assert cpu.mem_bw_gbps == pytest.approx(2 * 5200 * 8 / 1000) == pytest.approx(83.2)
    assert cpu.fp32_tflops == pytest.approx(16 * 4.5 * 32 / 1000)  # 2.304 TFLOPS


def test_cpus_are_devices_of_kind_cpu_kept_out_of_the_gpu_list():
    cpus = {g.id for g in CATALOG.cpus}
    assert {"amd-epyc-9654", "amd-epyc-7763", "intel-xeon-8480-plus", "amd-ryzen-9-7950x"} <= cpus
    assert not cpus & {g.id for g in CATALOG.gpus}
    assert all(g.kind == "cpu" and g.memory_class == "cpu" and g.compute_capability is None for g in CATALOG.cpus)
    assert all(g.kind == "gpu" for g in CATALOG.gpus)
    assert CATALOG.selection() == CATALOG.gpus and set(CATALOG.selection(True)) == set(CATALOG.devices)
    assert cpus <= set(CATALOG.ids())


@pytest.mark.parametrize("typed, cpu_id", [
    ("9654", "amd-epyc-9654"), ("AMD EPYC 9654 96-Core Processor", "amd-epyc-9654"),  # the OS's model name
    ("Intel(R) Xeon(R) Platinum 8480+", "intel-xeon-8480-plus"), ("ryzen 9 7950x", "amd-ryzen-9-7950x")])
def test_cpus_resolve_by_name_like_gpus(typed, cpu_id):
    assert CATALOG.get(typed).id == cpu_id


def test_every_cpu_names_its_source():
    for g in CATALOG.cpus:
        assert g.source.strip() and g.cpu.memory_config.strip()
        for ext in g.cpu.extensions:
            assert ext.source.strip()


GOOD = """schema_version: 1
read_on: 2026-11-22
extensions:
  - {id: vnni, name: VNNI, path: int8, fp32_multiple: 4, source: s}
slow_paths:
  - {path: fp16, fraction_of_fp32: 0.01, note: slow, source: s}
cpus:
  - id: box
    name: Test Box
    vendor: AMD
    architecture: Zen 4
    market: consumer
    cores: 8
    threads: 16
    base_ghz: 4.0
    boost_ghz: 5.0
    fma_units: 2
    fma_bits: 256
    extensions: [vnni]
    memory_type: DDR5-6000
    memory_channels: 2
    memory_mts: 6000
    memory_gib: 32
    memory_config: 2 x 16 GB
    tdp_w: 105
    source: s
"""


def _write(tmp_path: Path, text: str, name: str = "cpus.yaml") -> Path:
    path = tmp_path / name  # loads are cached per path: a new text gets a new name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_minimal_file_loads_with_hand_checked_figures(tmp_path):
    (cpu,) = load_cpu_specs(_write(tmp_path, GOOD), COMPUTE_PATHS)
    assert cpu.fp32_tflops == pytest.approx(8 * 4.0 * 32 / 1000)  # 1.024 TFLOPS
    assert cpu.peak_tflops("int8") == pytest.approx(4 * 1.024) and cpu.peak_tflops("bf16") is None
    assert cpu.mem_bw_gbps == pytest.approx(2 * 6000 * 8 / 1000)  # 96 GB/s


@pytest.mark.parametrize("old, new, field", [
    ("extensions: [vnni]", "extensions: [amx]", "extensions"),
    ("fma_bits: 256", "fma_bits: 300", "fma_bits"),
    ("    cores: 8\n", "", "cores"),
    ("threads: 16", "threads: 4", "threads"),
    ("fp32_multiple: 4,", "fp32_multiple: 4, ops_per_cycle_per_core: 64,", "fp32_multiple"),
    ("vendor: AMD", "vendor: Apple", "vendor"),
    ("tdp_w: 105", "tdp_watts: 105", "tdp_watts"),
])
def test_errors_name_file_record_and_field(tmp_path, old, new, field):
    path = _write(tmp_path, GOOD.replace(old, new))
    with pytest.raises(DataFileError) as exc:
        load_cpu_specs(path, COMPUTE_PATHS)
    assert exc.value.field == field and str(path) in str(exc.value)
    assert exc.value.record in ("'box'", "'vnni'")


def test_a_cpu_may_not_take_a_gpu_id_or_name(tmp_path):
    path = _write(tmp_path, GOOD.replace("id: box", "id: rtx-4090"))
    with pytest.raises(DataFileError, match="duplicate id"):
        load_catalog(GPUS_FILE, path)
    path = _write(tmp_path, GOOD.replace("name: Test Box", "name: RTX 4090"), "named.yaml")
    with pytest.raises(DataFileError, match="also a name of"):
        load_catalog(GPUS_FILE, path)


def test_the_committed_file_is_the_default():
    assert CATALOG.cpus and load_cpu_specs(CPUS_FILE, COMPUTE_PATHS)[0].id == CATALOG.cpus[0].id
