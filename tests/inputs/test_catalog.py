"""GPU catalog: loading, aliases, validation errors naming file/record/field."""

import textwrap

import pytest

from planner.inputs.catalog import COMPUTE_PATHS, load_catalog, load_link_kinds
from planner.base.schema import DataFileError, UnknownNameError

REQUIRED = ["h200-sxm", "h100-sxm", "h100-pcie", "h100-nvl", "a100-sxm-80gb", "a100-pcie-80gb", "a100-sxm-40gb",
            "a100-pcie-40gb", "l40s", "l40", "l4", "a40", "a10", "rtx-6000-ada", "rtx-a6000", "rtx-a5000", "rtx-a4500",
            "rtx-a4000", "rtx-4000-ada", "rtx-2000-ada", "rtx-5090", "rtx-4090", "rtx-4080", "rtx-4070-ti-super",
            "rtx-3090", "rtx-3090-ti", "v100-sxm2-16gb", "v100-sxm2-32gb", "t4", "b200", "mi300x"]


def test_catalog_has_every_required_gpu_and_at_least_30():
    cat = load_catalog()
    assert len(cat.gpus) >= 30
    for gpu_id in REQUIRED:
        assert cat.get(gpu_id).id == gpu_id


@pytest.mark.parametrize("name", ["RTX 4090", "rtx-4090", "NVIDIA GeForce RTX 4090", "rtx_4090"])
def test_aliases_find_the_same_gpu(name):
    assert load_catalog().get(name).id == "rtx-4090"


def test_unknown_gpu_suggests_close_names():
    with pytest.raises(UnknownNameError) as err:
        load_catalog().get("rtx 4900")
    assert "did you mean" in str(err.value) and "rtx-4090" in str(err.value)


def test_every_record_has_source_and_dated_prices():
    for gpu in load_catalog().gpus:
        assert gpu.source.strip()
        if gpu.runpod:
            for tier in ("secure", "community", "spot"):
                quote = gpu.price(tier)
                if quote:
                    assert quote.source.strip() and quote.date.year >= 2025 and quote.usd_hr > 0


def test_dense_not_sparse_figures_for_datacenter_gpus():
    # NVIDIA H100 SXM datasheet: BF16 1,979 TFLOPS "with sparsity", half of it dense (989.5).
    # A100: 312 dense BF16 (624 with sparsity). A tensor rate above 2x the sparse-half would mean a sparse figure
    # slipped in.
    cat = load_catalog()
    assert cat.get("h100-sxm").bf16_tflops == pytest.approx(989, rel=0.01)
    assert cat.get("a100-sxm-80gb").bf16_tflops == pytest.approx(312, rel=0.01)


def test_hardware_paths_missing_where_the_silicon_lacks_them():
    cat = load_catalog()
    assert cat.get("v100-sxm2-16gb").bf16_tflops is None  # Volta: no bf16 tensor cores
    assert cat.get("t4").bf16_tflops is None  # Turing: no bf16
    assert cat.get("a100-sxm-80gb").fp8_tflops is None  # Ampere: no fp8


def _write(tmp_path, body: str):
    path = tmp_path / "gpus.yaml"
    path.write_text(textwrap.dedent(body))
    return path


GOOD = """\
schema_version: 1
read_on: 2026-11-20
gpus:
  - id: toy
    name: Toy GPU
    vendor: NVIDIA
    architecture: Ampere
    compute_capability: "8.6"
    market: consumer
    vram_gib: 24
    memory_type: GDDR6X
    mem_bw_gbps: 936
    dense_tflops: {fp32: 35.6, fp16: 71}
    source: test
"""


def test_a_well_formed_file_loads(tmp_path):
    cat = load_catalog(_write(tmp_path, GOOD))
    assert cat.get("toy").mem_bw_gbps == 936 and cat.get("toy").bf16_tflops is None


@pytest.mark.parametrize("bad, field", [
    (GOOD.replace("mem_bw_gbps: 936", "mem_bw_gbps: fast"), "mem_bw_gbps"),
    (GOOD.replace("vram_gib: 24", "vram_gib: -24"), "vram_gib"),
    (GOOD.replace('compute_capability: "8.6"', "compute_capability: eight"), "compute_capability"),
    (GOOD.replace("fp16: 71", "fp61: 71"), "fp61"),
    (GOOD.replace("market: consumer", "market: gaming"), "market"),
    (GOOD.replace("    source: test\n", ""), "source"),
    (GOOD.replace("    source: test\n",
                  "    interconnect: {pcie_unidir_gbps: 31.5, nvlink_peers: 1}\n    source: test\n"),
     "nvlink_peers"),
    (GOOD.replace("    source: test\n",
                  "    interconnect: {pcie_unidir_gbps: 31.5, pcie_p2p: sometimes}\n    source: test\n"),
     "pcie_p2p"),
])
def test_malformed_file_names_file_record_and_field(tmp_path, bad, field):
    path = _write(tmp_path, bad)
    with pytest.raises(DataFileError) as err:
        load_catalog(path)
    msg = str(err.value)
    assert str(path) in msg and "'toy'" in msg and f"'{field}'" in msg


def test_unknown_field_suggests_the_right_one(tmp_path):
    path = _write(tmp_path, GOOD.replace("vram_gib: 24", "vram_gibs: 24"))
    with pytest.raises(DataFileError, match="did you mean 'vram_gib'"):
        load_catalog(path)


def test_a_file_without_its_read_on_date_is_rejected(tmp_path):
    path = _write(tmp_path, GOOD.replace("read_on: 2026-11-20\n", ""))
    with pytest.raises(DataFileError, match="'read_on': missing"):
        load_catalog(path)


def test_not_yaml_is_reported_with_a_line(tmp_path):
    path = _write(tmp_path, "schema_version: 1\ngpus: [\n  {id: x\n")
    with pytest.raises(DataFileError, match="not valid YAML"):
        load_catalog(path)


def test_duplicate_alias_across_gpus_is_rejected(tmp_path):
    two = GOOD + GOOD.split("gpus:\n", 1)[1].replace("id: toy", "id: toy2").replace("Toy GPU", "Toy GPU two") \
        .replace("    source: test", "    aliases: [toy]\n    source: test")
    with pytest.raises(DataFileError, match="also a name of 'toy'"):
        load_catalog(_write(tmp_path, two))


def test_peak_paths_cover_all_compute_paths():
    gpu = load_catalog().get("h100-sxm")
    assert [gpu.peak_tflops(p) is not None for p in COMPUTE_PATHS] == [True] * 6


@pytest.mark.parametrize("typed, gpu_id", [("4090", "rtx-4090"), ("RTX 4090", "rtx-4090"), ("3090", "rtx-3090"),
                                           ("3090 ti", "rtx-3090-ti"), ("geforce rtx 3080", "rtx-3080"),
                                           ("A6000", "rtx-a6000"), ("L40", "l40"), ("l40s", "l40s"), ("A10", "a10"),
                                           ("a100 sxm 40gb", "a100-sxm-40gb"), ("Tesla T4", "t4")])
def test_what_people_type_resolves_to_one_gpu(typed, gpu_id):
    assert load_catalog().get(typed).id == gpu_id


@pytest.mark.parametrize("typed, members", [
    ("A100", {"a100-sxm-80gb", "a100-pcie-80gb", "a100-sxm-40gb", "a100-pcie-40gb"}),
    ("a100 80gb", {"a100-sxm-80gb", "a100-pcie-80gb"}),
    ("Tesla V100", {"v100-sxm2-16gb", "v100-sxm2-32gb", "v100-pcie-16gb", "v100-pcie-32gb"}),
    ("H100", {"h100-sxm", "h100-pcie", "h100-nvl"})])
def test_a_family_name_lists_every_member(typed, members):
    from planner.base.schema import AmbiguousNameError
    with pytest.raises(AmbiguousNameError) as exc:
        load_catalog().get(typed)
    assert set(exc.value.suggestions) == members and f"matches {len(members)} GPUs" in str(exc.value)


def test_a_typo_suggests_the_closest_names():
    with pytest.raises(UnknownNameError, match="did you mean rtx-4090"):
        load_catalog().get("rtx 4900")


def test_datacenter_gddr_cards_report_their_memory_less_the_ecc_reserve():
    cat = load_catalog()
    # CUDA C++ Best Practices Guide: ECC on GDDR takes 6.25 % of the DRAM; nvidia-smi shows 46,068 MiB on an L40S
    # (15/16 of 49,152 = 46,080) and 15,360 on a T4 (15/16 of 16,384)
    for gpu_id, gib in (("l40s", 48), ("l40", 48), ("a40", 48), ("t4", 16), ("a10", 24), ("l4", 24)):
        g = cat.get(gpu_id)
        assert g.reported_vram_gb == pytest.approx(gib * 2**30 * 15 / 16 / 1e9, rel=0.002), gpu_id
        assert "ECC" in g.reported_vram_source
    rtx = cat.get("rtx-4090")  # GeForce: no ECC reserve, the driver reports the whole 24 GiB
    assert rtx.reported_vram_mib is None and rtx.reported_vram_gb == rtx.vram_gb == pytest.approx(24 * 2**30 / 1e9)


@pytest.mark.parametrize("mib, problem", [(24 * 1024 + 1, "must be <= 24576"),  # 24 GiB = 24,576 MiB
                                          (10_000, "must be >= 18432"),  # 3/4 of it: ECC takes only 1/16
                                          ("lots", "expected a number")])
def test_a_reported_memory_above_the_capacity_or_far_below_it_is_refused(tmp_path, mib, problem):
    body = GOOD.replace("vram_gib: 24\n", f"vram_gib: 24\n    reported_vram: {{mib: {mib}, source: test}}\n")
    with pytest.raises(DataFileError) as err:
        load_catalog(_write(tmp_path, body))
    assert "'toy'" in str(err.value) and "'mib'" in str(err.value) and problem in str(err.value)


# ---------------------------------------------------------------- matmul ceilings and SM counts

# stas00/ml-engineering compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS comparison table" (commit
# 744d01e): MAMF / the catalog's dense datasheet peak
PUBLISHED = {("h100-sxm", "bf16"): 794.5 / 989, ("h200-sxm", "bf16"): 794.5 / 989, ("b200", "bf16"): 1745 / 2250,
             ("a100-sxm-80gb", "bf16"): 271.2 / 312, ("a100-pcie-80gb", "bf16"): 252.9 / 312,
             ("mi300x", "bf16"): 668.4 / 1307.4, ("h100-sxm", "fp8"): 1402.6 / 1979, ("h200-sxm", "fp8"): 1453.4 / 1979,
             ("b200", "fp8"): 3432.5 / 4500}


@pytest.mark.parametrize("gpu_id, path", sorted(PUBLISHED))
def test_published_mamf_figures_are_the_ceilings(gpu_id, path):
    gpu = load_catalog().get(gpu_id)
    c = gpu.ceiling(path)  # the burst figure, where a power-saturated one scales it (test_sustained_ceiling.py)
    assert (c.burst_tflops or c.tflops) / gpu.peak_tflops(path) == pytest.approx(PUBLISHED[gpu_id, path])
    assert c.measured and "stas00" in c.how


# Published best-of-shapes torch.matmul figures for cards without a MAMF row (data/gpus.yaml gives each source):
# github.com/zzc0721/torch-performance-test-data database.md @9d828276 and github.com/chsasank/device-benchmarks
# README.md @7ccc8838, bf16 (fp16 where a GPU has no bf16) / the catalog's dense datasheet rate
MEASURED = {"h100-pcie": 495.93 / 756, "l40s": 269.15 / 362.05, "l4": 70.89 / 121, "a10": 56 / 125,
            "rtx-a6000": 123.34 / 154.8, "rtx-a4000": 62.78 / 76.7, "rtx-4090": 165.26 / 165.2,
            "rtx-3090": 76.58 / 71.2, "rtx-3080-ti": 77.41 / 68.2, "rtx-5090": 238.04 / 209.5,
            "rtx-pro-6000-blackwell": 417.98 / 500, "v100-sxm2-16gb": 94.84 / 125, "t4": 41.93 / 65}


@pytest.mark.parametrize("gpu_id", sorted(MEASURED))
def test_published_matmul_benchmarks_are_the_ceilings_of_cards_without_a_mamf_row(gpu_id):
    c = load_catalog().get(gpu_id).ceiling("fp16")
    assert c.ratio == pytest.approx(MEASURED[gpu_id]) and c.measured
    assert "zzc0721" in c.how or "chsasank" in c.how


def test_power_limited_cards_reach_less_of_their_datasheet_than_geforce_cards():
    """A card capped at its board power runs below the boost clock its datasheet rate assumes (A10 150 W: 0.45, L4
    72 W: 0.59, H100 PCIe 350 W: 0.66 vs the 700 W SXM part's 0.80); GeForce cards boost above it (RTX 3090 1.08,
    RTX 4090 1.00, RTX 5090 1.14)."""
    cat = load_catalog()
    published = lambda c: c.burst_tflops or c.tflops  # noqa: E731  (the published figure, before SUSTAINED_RULE)
    ratio = lambda g: published(cat.get(g).ceiling("bf16")) / cat.get(g).bf16_tflops  # noqa: E731
    assert max(ratio(g) for g in ("a10", "l4", "h100-pcie", "l40s", "rtx-a6000")) < 0.8 < ratio("h100-sxm")
    assert min(ratio(g) for g in ("rtx-3090", "rtx-4090", "rtx-5090")) >= 1.0


def test_gpus_without_a_figure_take_the_median_ratio_of_their_architecture_and_power_class():
    cat = load_catalog()
    # Hopper, professional: H100 SXM and H200 794.5 / 989 = 0.8033, H100 PCIe 495.93 / 756 = 0.6560 -> median 0.8033
    nvl = cat.get("h100-nvl").ceiling("bf16")
    # (the burst ceiling: test_sustained_ceiling.py scales it to the power-saturated one)
    assert nvl.burst_tflops == pytest.approx(835.5 * 794.5 / 989)
    assert nvl.how.startswith("derived") and "Hopper" in nvl.how
    # Ampere, professional: 56/125 = 0.448, 123.34/154.8 = 0.797, A100 PCIe 252.9/312 = 0.8106 (x2),
    # 62.78/76.7 = 0.8185, A100 SXM 271.2/312 = 0.8692 (x2): the 4th of 7 is 0.8106
    assert cat.get("a40").ceiling("bf16").ratio == pytest.approx(252.9 / 312)
    # Ampere, consumer: RTX 3090 1.0756 and RTX 3080 Ti 1.1350 -> median 1.1053 for the RTX 3090 Ti
    assert cat.get("rtx-3090-ti").ceiling("bf16").ratio == pytest.approx((76.58 / 71.2 + 77.41 / 68.2) / 2)
    # Ada, professional: L40S 0.7434 and L4 0.5859 -> 0.6646 for the (300 W) RTX 6000 Ada; consumer: RTX 4090
    assert cat.get("rtx-6000-ada").ceiling("bf16").ratio == pytest.approx((269.15 / 362.05 + 70.89 / 121) / 2)
    assert cat.get("rtx-4080").ceiling("bf16").ratio == pytest.approx(165.26 / 165.2)
    # fp16 runs at the bf16 datasheet rate: same ratio
    assert cat.get("rtx-3090").ceiling("fp16").ratio == cat.get("rtx-3090").ceiling("bf16").ratio
    # Hopper fp8 (no H100 PCIe figure): median of 1402.6 / 1979 and 1453.4 / 1979
    pcie = cat.get("h100-pcie")
    assert pcie.ceiling("fp8").burst_tflops / pcie.fp8_tflops == pytest.approx((1402.6 + 1453.4) / 2 / 1979)
    # Volta: the V100 SXM2 fp16 figure (94.84 / 125) for the PCIe parts too
    assert cat.get("v100-pcie-16gb").ceiling("fp16").ratio == pytest.approx(94.84 / 125)


def test_an_architecture_without_any_figure_takes_the_vendor_median():
    cat = load_catalog()
    # AMD: MI300X is the only figure; MI250 (CDNA2) takes 668.4 / 1307.4
    assert cat.get("mi250").ceiling("bf16").ratio == pytest.approx(668.4 / 1307.4)


def test_no_gpu_gets_a_silent_ceiling():
    for gpu in load_catalog().gpus:
        for path in COMPUTE_PATHS:
            if gpu.peak_tflops(path) is not None:
                c = gpu.ceiling(path)
                assert c.how.startswith(("measured", "derived")) and 0.3 < c.ratio <= 1.2, (gpu.id, path)


def test_ceilings_are_monotone_in_the_datasheet_within_an_architecture():
    cat = load_catalog()
    assert (cat.get("h100-pcie").ceiling_tflops("bf16") < cat.get("h100-nvl").ceiling_tflops("bf16")
            < cat.get("h100-sxm").ceiling_tflops("bf16"))


def test_every_gpu_has_its_sm_count_with_a_source():
    cat = load_catalog()
    for gpu in cat.gpus:
        assert gpu.sm_count > 0 and gpu.sm_source.strip()
    # H100 whitepaper: SXM5 132 SMs, PCIe 114; A100 whitepaper: 108; CDNA3 whitepaper: MI300X 304 CUs
    assert [cat.get(g).sm_count for g in ("h100-sxm", "h100-pcie", "a100-sxm-80gb", "mi300x")] == [132, 114, 108, 304]


@pytest.mark.parametrize("extra, field", [
    ("    sm_count: {count: 0, source: x}\n", "count"),
    ("    sm_count: {count: 82}\n", "source"),
    ("    matmul_ceiling_tflops: {bf16: 60, date: 2026-11-22, source: x}\n", "bf16"),  # the toy has no bf16 rate
    ("    matmul_ceiling_tflops: {fp8: 600, date: 2026-11-22, source: x}\n", "fp8"),
])
def test_bad_sm_count_or_ceiling_names_the_field(tmp_path, extra, field):
    path = _write(tmp_path, GOOD.replace("    source: test\n", extra + "    source: test\n"))
    with pytest.raises(DataFileError) as err:
        load_catalog(path)
    assert "'toy'" in str(err.value) and f"'{field}'" in str(err.value)


def test_a_gpu_without_bf16_gives_its_16_bit_figure_as_fp16(tmp_path):
    body = GOOD.replace("    source: test\n", "    matmul_ceiling_tflops: {fp16: 60, date: 2026-11-22, source: x}\n"
                        "    source: test\n")
    toy = load_catalog(_write(tmp_path, body)).get("toy")
    assert toy.ceiling("fp16").ratio == pytest.approx(60 / 71) and toy.ceiling("fp32").ratio == pytest.approx(60 / 71)
    other = tmp_path / "with_bf16"
    other.mkdir()
    with pytest.raises(DataFileError, match="'fp16'"):  # a GPU with a bf16 rate gives it as bf16
        load_catalog(_write(other, body.replace("fp16: 71}", "fp16: 71, bf16: 71}")))


def test_a_ceiling_above_the_datasheet_peak_is_rejected(tmp_path):
    # boost clocks may carry a GeForce card past its datasheet rate, not by 20 %: 71 x 1.2 = 85.2
    body = GOOD.replace("fp16: 71}", "fp16: 71, bf16: 71}").replace(
        "    source: test\n", "    matmul_ceiling_tflops: {bf16: 90, date: 2026-11-22, source: x}\n    source: test\n")
    with pytest.raises(DataFileError, match="'bf16'"):
        load_catalog(_write(tmp_path, body))
    ok = load_catalog(_write(tmp_path, body.replace("bf16: 90", "bf16: 80")))
    assert ok.get("toy").ceiling("bf16").tflops == 80 and ok.get("toy").sm_count == 0


def test_interconnect_fields_pick_the_links(tmp_path):
    body = GOOD.replace("    source: test\n", "    interconnect: {pcie_unidir_gbps: 31.5, nvlink_unidir_gbps: 56, "
                        "nvlink_peers: 1, pcie_p2p: false}\n    source: test\n")
    toy = load_catalog(_write(tmp_path, body)).get("toy")
    assert toy.link_for(2).kind.id == "nvlink" and toy.link_for(2).unidir_gbps == 56  # the bridge: one peer
    assert toy.link_for(3).kind.id == "pcie-host" and toy.link_for(3).unidir_gbps == 31.5  # no P2P beyond it


PROTOCOLS_OK = ("protocols:\n  - {id: ll, busbw_share: 0.5, max_busbw_gbps: {'8.0': 87.7}, source: s}\n"
                "  - {id: ll128, busbw_share: 0.92, source: s}\n  - {id: simple, busbw_share: 1.0, source: s}\n")
LATENCIES_OK = "{ll: {call_latency_us: 6.6, hop_latency_us: 0.6}, simple: {call_latency_us: 8.4, hop_latency_us: 3.4}}"


def _links_file(tmp_path, protocols: str, link: str):
    path = tmp_path / "interconnects.yaml"
    path.write_text(f"schema_version: 1\nread_on: 2026-11-26\n{protocols}links:\n  - {link}\n")
    return path


def test_link_kinds_name_file_record_and_field(tmp_path):
    path = _links_file(tmp_path, PROTOCOLS_OK, f"{{id: nvlink, name: n, busbw_fraction: 2, protocols: {LATENCIES_OK}, "
                                               "source: s}")
    with pytest.raises(DataFileError) as err:
        load_link_kinds(path)
    assert str(path) in str(err.value) and "'busbw_fraction'" in str(err.value)
    ok = f"{{id: nvlink, name: n, busbw_fraction: 0.8, protocols: {LATENCIES_OK}, source: s}}"
    with pytest.raises(DataFileError, match="no link kind 'pcie-p2p'"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK, ok))
    with pytest.raises(DataFileError, match="call_latency_us"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK, ok.replace("call_latency_us: 6.6", "call_latency_us: -1")))
    with pytest.raises(DataFileError, match="'call_latency_us': missing"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK, ok.replace("call_latency_us: 6.6, ", "")))


def test_protocols_name_file_record_and_field(tmp_path):
    """Every link kind gives LL and Simple latencies (LL128 only where NCCL runs it); the protocols section gives each
    protocol's share of the bus bandwidth, LL's caps keyed by compute capability."""
    ok = f"{{id: nvlink, name: n, busbw_fraction: 0.8, protocols: {LATENCIES_OK}, source: s}}"
    with pytest.raises(DataFileError, match=r"'simple'.*missing"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK, ok.replace(", simple: {call_latency_us: 8.4, "
                                                                      "hop_latency_us: 3.4}", "")))
    with pytest.raises(DataFileError, match="'ll256'"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK, ok.replace("ll:", "ll256:")))
    with pytest.raises(DataFileError, match="no protocol 'll128'"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK.replace("  - {id: ll128, busbw_share: 0.92, source: s}\n",
                                                                   ""), ok))
    with pytest.raises(DataFileError, match="duplicate id"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK.replace("ll128", "simple"), ok))
    with pytest.raises(DataFileError, match="compute capability"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK.replace("'8.0'", "ampere"), ok))
    with pytest.raises(DataFileError, match="'busbw_share'"):
        load_link_kinds(_links_file(tmp_path, PROTOCOLS_OK.replace("busbw_share: 0.92", "busbw_share: 1.5"), ok))
    with pytest.raises(DataFileError, match="'protocols'"):
        load_link_kinds(_links_file(tmp_path, "", ok))


def test_integer_alu_work_runs_at_the_int32_lanes_share_of_the_fp32_rate():
    """CUDA C++ Programming Guide, arithmetic instruction throughput per SM per clock: 64 fp32 and 64 int32 on
    compute capability 8.0 (A100); 128 fp32 and 64 int32 on 8.6 (RTX 3090), 8.9 (RTX 4090) and 9.0 (H100)."""
    from planner.inputs.catalog import ALU_PATH
    cat = load_catalog()
    a100, rtx3090, h100, mi300x = (cat.get(g) for g in ("a100-sxm-80gb", "rtx-3090", "h100-sxm", "mi300x"))
    assert a100.peak_tflops(ALU_PATH) == a100.peak_tflops("fp32") == 19.5
    assert rtx3090.peak_tflops(ALU_PATH) == 35.6 / 2 and h100.peak_tflops(ALU_PATH) == 67.0 / 2
    assert mi300x.peak_tflops(ALU_PATH) == mi300x.peak_tflops("fp32")  # CDNA vector ALU: one rate for both
    # the clocks that hold a GPU's fp32 below its datasheet (its ceiling) hold its integer lanes too
    assert rtx3090.ceiling_tflops(ALU_PATH) == pytest.approx(rtx3090.ceiling_tflops("fp32") / 2)
    assert "INT32 lanes" in rtx3090.ceiling(ALU_PATH).how


# ---------------------------------------------------------------- today's data-center GPUs (added 2026-11-27)
# Each expected figure is derived here from the datasheet it cites, never read off the loader's output.

def test_hgx_b300_is_the_hgx_tables_sparse_totals_halved_per_gpu():
    # NVIDIA HGX B300 (8 GPUs, "* with sparsity"): FP16/BF16 36 PFLOPS*, FP8 72 PFLOPS*, TF32 18 PFLOPS*, FP32
    # 600 TFLOPS; Blackwell Ultra blog: 288 GB HBM3E and 8 TB/s per GPU; TransformerEngine support matrix: 10.3.
    b300 = load_catalog().get("B300")
    assert b300.bf16_tflops == 36_000 / 8 / 2 and b300.fp8_tflops == 72_000 / 8 / 2
    assert b300.tf32_tflops == 18_000 / 8 / 2 and b300.fp32_tflops == 600 / 8
    assert (b300.vram_gib, b300.mem_bw_gbps, b300.compute_capability) == (288, 8000, (10, 3))
    assert load_catalog().get("NVIDIA B300 SXM6 AC").id == b300.id  # torch.cuda.get_device_name() (cosmos PR #114)


def test_gb200_and_gb300_are_their_nvl72_racks_divided_by_72():
    # GB200 NVL72: FP8 720 PFLOPS*, FP16/BF16 360 PFLOPS*, INT8 720 POPS*, up to 13.4 TB HBM3e at 576 TB/s.
    # GB300 NVL72: FP8 720 PFLOPS*, FP16/BF16 360 PFLOPS*, INT8 24 POPS* (Blackwell Ultra cut INT8), 576 TB/s;
    # 288 GB per GPU (Blackwell Ultra blog). * with sparsity: dense is half.
    cat = load_catalog()
    gb200, gb300 = cat.get("GB200"), cat.get("GB300")
    assert gb200.fp8_tflops == 720_000 / 72 / 2 and gb200.bf16_tflops == 360_000 / 72 / 2
    assert gb200.int8_tops == 720_000 / 72 / 2
    assert gb200.vram_gib == pytest.approx(13_400 / 72, abs=0.5) and gb200.mem_bw_gbps == 576_000 / 72
    assert gb300.fp8_tflops == 720_000 / 72 / 2 and gb300.bf16_tflops == 360_000 / 72 / 2
    assert gb300.int8_tops == pytest.approx(24_000 / 72 / 2, abs=0.05) and gb300.vram_gib == 288
    assert gb200.compute_capability == (10, 0) and gb300.compute_capability == (10, 3)


@pytest.mark.parametrize("gpu_id", ["gb200", "gb300"])
def test_nvl72_parts_report_a_72_gpu_nvlink_domain(gpu_id):
    # NVL72: 72 GPUs behind one NVLink Switch System (130 TB/s = 72 x 1.8 TB/s); a 73rd GPU is in another rack
    g = load_catalog().get(gpu_id)
    inside, outside = g.link_for(72), g.link_for(73)
    assert inside.kind.id == "nvlink" and inside.max_gpus == 72 and inside.unidir_gbps == 1800 / 2
    # the 73rd GPU sits in a second rack, reached over its one scale-out NIC: a ring through it moves at that NIC's
    # pace, 400 Gb/s (GB200, ConnectX-7) or 800 Gb/s (GB300, ConnectX-8) = 50 or 100 GB/s x 0.96 bus
    assert outside.fabric is not None and outside.nodes == 2
    nic_gbps = {"gb200": 400, "gb300": 800}[gpu_id] / 8
    simple = next(r for r in outside.rates if r.id == "simple")
    assert simple.bytes_per_s == pytest.approx(nic_gbps * 0.96 * 1e9)
    # an HGX board (B300) holds 8 GPUs: NVLink for 8, its ConnectX-8 fabric beyond
    b300 = load_catalog().get("b300")
    assert b300.link_for(8).max_gpus == 8 and b300.link_for(9).fabric.id == "cx8-800"


def test_china_parts_keep_their_silicon_and_lose_the_interconnect():
    cat = load_catalog()
    h100, h800, a800, h20 = (cat.get(g) for g in ("h100-sxm", "H800", "A800", "H20"))
    # H800 / A800: H100 SXM5 / A100 SXM4 silicon with NVLink cut to 400 GB/s bidirectional (export rule, 2022)
    assert h800.bf16_tflops == pytest.approx(1979 / 2, abs=0.5) and h800.bf16_tflops == h100.bf16_tflops
    assert h800.nvlink_unidir_gbps == 400 / 2
    assert a800.bf16_tflops == 624 / 2 and a800.fp8_tflops is None and a800.nvlink_unidir_gbps == 400 / 2
    assert h800.compute_capability == (9, 0) and a800.compute_capability == (8, 0)
    # H20: 148 TFLOPS BF16 dense (15 % of H100's 989), 96 GB HBM3 at 4.0 TB/s, full NVLink 900 GB/s
    assert (h20.bf16_tflops, h20.vram_gib, h20.mem_bw_gbps, h20.nvlink_unidir_gbps) == (148, 96, 4000, 900 / 2)
    # zzc0721/torch-performance-test-data #77 measured 142.25 bf16 TFLOPS on an H20: its ceiling, not a derived one
    assert h20.ceiling("bf16").measured and h20.ceiling("bf16").tflops == 142.25


def test_l20_is_a_48_gb_ada_card_with_ecc():
    # L20: AD102, 48 GB GDDR6 384-bit at 864 GB/s, FP16 tensor 119.5 TFLOPS, 275 W, PCIe 4.0, no NVLink; nvidia-smi
    # 46068 MiB = 48 GiB less the 1/16 ECC keeps (49152 x 15/16 = 46080) and the driver's 12 MiB
    l20 = load_catalog().get("L20")
    assert (l20.vram_gib, l20.mem_bw_gbps, l20.fp16_tflops, l20.compute_capability) == (48, 864, 119.5, (8, 9))
    assert l20.reported_vram_mib == 46068 and l20.nvlink_unidir_gbps is None and l20.link_for(2).kind.id == "pcie-p2p"


def test_mi325x_and_mi355x_figures_from_amd():
    cat = load_catalog()
    mi325x, mi355x = cat.get("MI325X"), cat.get("MI355X")
    # MI325X: 256 GB HBM3E at 6 TB/s, FP8 2,614.9 TFLOPS (5,229.8 with sparsity), gfx942 (CDNA3, as MI300X)
    assert (mi325x.vram_gib, mi325x.mem_bw_gbps, mi325x.gfx_target) == (256, 6000, "gfx942")
    assert mi325x.fp8_tflops == 5229.8 / 2
    # MI355X: HBM3E 288 GB and 8 TB/s; FP8 = 256 CUs x 2.4 GHz x 8,192 FLOPs per CU per clock (ISSCC 2026), AMD's
    # "5 PF" dense / 10.1 with sparsity; FP16 at half that; no TF32 matrix path on CDNA4; gfx950
    assert (mi355x.vram_gib, mi355x.mem_bw_gbps, mi355x.gfx_target, mi355x.sm_count) == (288, 8000, "gfx950", 256)
    assert mi355x.fp8_tflops == pytest.approx(256 * 2.4e9 * 8192 / 1e12, abs=0.05)
    assert mi355x.fp8_tflops == pytest.approx(10_100 / 2, rel=0.01)
    assert mi355x.bf16_tflops == pytest.approx(256 * 2.4e9 * 4096 / 1e12, abs=0.05)
    assert mi355x.tf32_tflops is None and mi355x.run_path("tf32") == "fp32"


def test_the_new_gpus_are_unpriced_and_mark_what_only_the_vendor_announced():
    # no dated RunPod price exists for any of them (shared/reference/runpod_prices.csv): ranked by time, unpriced
    cat = load_catalog()
    new = ("b300", "gb200", "gb300", "h20", "h800", "a800-sxm-80gb", "l20", "mi325x", "mi355x")
    assert all(cat.get(g).runpod is None and not any(cat.get(g).listed_prices().values()) for g in new)
    # nobody has published a matmul measurement of a B300, GB200, GB300 or MI355X yet
    for g in ("b300", "gb200", "gb300", "mi355x"):
        assert "dense_tflops" in cat.get(g).announced and cat.get(g).announced_source.strip()
        assert not cat.get(g).ceiling("bf16").measured
    assert cat.get("h100-sxm").announced == ()


@pytest.mark.parametrize("block, problem", [
    ("{fields: [fp8], source: s}", "'fp8' is not a figure"),
    ("{fields: [dense_tflops.bf16], source: s}", "'dense_tflops.bf16' is not given"),  # the toy has no bf16 rate
    ("{fields: [tdp_w], source: s}", "'tdp_w' is not given"),
    ("{fields: [], source: s}", "at least one"),
    ("{fields: [vram_gib, vram_gib], source: s}", "named twice"),
    ("{fields: [vram_gib]}", "'source'"),
])
def test_a_bad_announced_block_names_the_field(tmp_path, block, problem):
    path = _write(tmp_path, GOOD.replace("    source: test\n", f"    announced: {block}\n    source: test\n"))
    with pytest.raises(DataFileError, match=problem) as err:
        load_catalog(path)
    assert "'toy'" in str(err.value)


def test_a_good_announced_block_loads(tmp_path):
    path = _write(tmp_path, GOOD.replace("    source: test\n",
                                         "    announced: {fields: [mem_bw_gbps, dense_tflops.fp16], source: s}\n"
                                         "    source: test\n"))
    toy = load_catalog(path).get("toy")
    assert toy.announced == ("mem_bw_gbps", "dense_tflops.fp16") and toy.announced_source == "s"


def test_a_job_beyond_one_node_runs_its_ring_over_the_fabric():
    # 16 H100 SXM = 2 HGX nodes of 8; ndr-400: one 400 Gb/s NIC per GPU (data/interconnects.yaml fabrics)
    link = load_catalog().get("h100-sxm").link_for(16)
    assert link.fabric.id == "ndr-400" and link.nodes == 2 and link.node_gpus == 8
    rate = {r.id: r for r in link.rates}
    # Simple: the slower of NVLink's ring (450 x 0.81 = 364.5 GB/s) and 8 NICs x 50 GB/s x 0.96 = 384 GB/s
    assert rate["simple"].bytes_per_s == pytest.approx(364.5e9)
    # LL: NCCL's cap across 2 nodes (llMaxBws, Intel hosts: 39.0 GB/s) under Hopper's 141 and 384 x 0.5
    assert rate["ll"].bytes_per_s == pytest.approx(39.0e9)
    # per ring step: 14 of 15 steps inside (NVLink hop, at least NCCL's 1 us network overhead; x3 for Simple),
    # 1 across at the network latency (LL 2.7, Simple 14.0 us)
    assert rate["ll"].hop_s == pytest.approx((14 * 1.0 + 2.7) / 15 * 1e-6)
    assert rate["simple"].hop_s == pytest.approx((14 * 3.4 + 14.0) / 15 * 1e-6)
    assert "2 nodes of up to 8 GPUs" in link.describe()


def test_a_slower_fabric_bounds_the_ring_and_the_smallest_node_counts():
    a100 = load_catalog().get("a100-sxm-40gb")  # hdr-200: 8 x 25 GB/s x 0.96 = 192 GB/s < NVLink's 300 x 0.81
    simple = next(r for r in a100.link_for(64).rates if r.id == "simple")
    assert simple.bytes_per_s == pytest.approx(192e9)
    # 12 GPUs = a node of 8 and one of 4: the ring leaves the smaller through 4 NICs, 4 x 25 x 0.96 = 96 GB/s
    simple12 = next(r for r in a100.link_for(12).rates if r.id == "simple")
    assert simple12.bytes_per_s == pytest.approx(96e9)


def test_a_gpu_without_a_fabric_has_no_link_beyond_its_node():
    g4090 = load_catalog().get("rtx-4090")
    assert g4090.link_for(8) is not None and g4090.link_for(9) is None


def test_a_gpu_names_a_known_fabric(tmp_path):
    body = GOOD.replace("    source: test\n", "    interconnect: {pcie_unidir_gbps: 31.5, fabric: nope}\n"
                        "    source: test\n")
    with pytest.raises(DataFileError) as err:
        load_catalog(_write(tmp_path, body))
    assert err.value.field == "fabric" and "ndr-400" in str(err.value)
    ok = load_catalog(_write(tmp_path, body.replace("fabric: nope", "fabric: hdr-200, node_gpus: 4")))
    assert ok.get("toy").link_for(4).fabric is None and ok.get("toy").link_for(5).nodes == 2
