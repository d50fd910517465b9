"""Prices of more clouds (data/prices/clouds), built from SkyPilot's catalogs: the builder, the committed files, the
providers a user rents from, and a broken provider that breaks no other.

Expected prices are read by hand off the catalog rows in docs/price-sources (the instance's price / its GPUs)."""

import csv
import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from planner.base.schema import DataFileError
from planner.clients import cloud_catalog
from planner.inputs import cloud_prices
from planner.inputs.catalog import load_catalog
from planner.inputs.price_snapshot import snapshot_table
from planner.views import plan_inputs, share
from tests.fixtures.cli_run import run

HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"
VAST_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region"


def info(name: str, count: int, total_mib: int) -> str:
    return (f"\"{{'Gpus': [{{'Name': '{name}', 'Count': {count}, 'MemoryInfo': {{'SizeInMiB': {total_mib}}}}}], "
            f"'TotalGpuMemoryInMiB': {total_mib}}}\"")


@pytest.fixture(scope="module")
def names():
    return cloud_prices.load_cloud_names()


def build(tmp_path, files: dict[str, list[str]], names) -> tuple[dict, list[str]]:
    src, out = tmp_path / "catalogs", tmp_path / "out"
    for cloud, lines in files.items():
        (src / cloud).mkdir(parents=True)
        (src / cloud / "vms.csv").write_text("\n".join(lines) + "\n")
    written, problems = cloud_catalog.write_snapshots(src, out, names, date(2026, 11, 27), {"lambda": "abc1234"})
    catalog = load_catalog()
    return {p.name: cloud_prices.load_cloud_price_file(p, catalog) for p in written}, problems


def by_key(prices):
    return {(p.gpu_id, p.tier): p for p in prices}


def test_the_builder_keeps_the_cheapest_offer_on_the_smallest_machine(tmp_path, names):
    lam = [HEADER,
           "gpu_1x_h100_pcie,H100,1,26,200,3.29,us-east-1,,",
           "gpu_1x_h100_pcie,H100,1,26,200,3.19,us-west-1,,",          # cheaper region wins: 3.19
           "gpu_1x_h100_sxm5,H100,1,26,225,4.29,us-east-1,,",          # same name, the SXM part
           "gpu_8x_h100_sxm5,H100,8,208,1800,27.92,us-east-1,,",       # 3.49/GPU, but an 8-GPU machine
           "gpu_8x_b200_sxm6,B200,8,208,2900,53.52,us-east-1,,",       # only machine: 53.52 / 8 = 6.69
           "gpu_1x_gh200,GH200,1,64,432,2.29,us-east-1,,",             # no catalog GPU: unmapped
           "cpu_4x_general,,,4,16,0.2,us-east-1,,"]                    # a CPU machine: skipped
    vast = [VAST_HEADER,
            f"2x-A100_SXM4-32-65536,A100,2,32,64,{info('A100', 2, 81920)},1.49,0.00,\"Slovenia, SI, EU\"",
            f"1x-A100_PCIE-32-65536,A100,1,32,64,{info('A100', 1, 81920)},0.87,0.00,\", US, NA\"",
            f"1x-H100_NVL-32-65536,H100,1,32,64,{info('H100', 1, 95830)},2.08,0.50,\"Bulgaria, BG, EU\""]
    files, problems = build(tmp_path, {"lambda": lam, "vast": vast}, names)
    assert problems == []
    lam_p = by_key(files["lambda-2026-11-27.yaml"])
    assert lam_p["h100-pcie", "secure"].usd_hr == 3.19 and lam_p["h100-pcie", "secure"].region == "us-west-1"
    assert lam_p["h100-sxm", "secure"].usd_hr == 4.29 and lam_p["h100-sxm", "secure"].gpus == 1
    assert lam_p["b200", "secure"].usd_hr == pytest.approx(6.69) and lam_p["b200", "secure"].gpus == 8
    assert "abc1234" in lam_p["b200", "secure"].source
    assert {k[0] for k in lam_p} == {"h100-pcie", "h100-sxm", "b200"}
    vast_p = by_key(files["vast-2026-11-27.yaml"])
    # Vast's GpuInfo gives the machine's memory: 81920 MiB / 2 GPUs = 40 GB each, so the 40 GB SXM4
    assert vast_p["a100-sxm-40gb", "community"].usd_hr == pytest.approx(0.745)
    assert vast_p["a100-pcie-80gb", "community"].region == "US, NA"  # leading ', ' of an unnamed city dropped
    assert vast_p["h100-nvl", "spot"].usd_hr == 0.5 and ("h100-nvl", "secure") not in vast_p  # Vast: a marketplace


GCP_HEADER = ("InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,"
              "SpotPrice")


def test_a_gpu_only_row_is_priced_with_its_host_machine_in_the_same_zone(tmp_path, names):
    gcp = [GCP_HEADER,
           "a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,0.74,0.37",       # the host of 1 A100
           "a2-highgpu-2g,24.0,170.0,,,,us-central1,us-central1-a,1.48,0.74",
           "a4-highgpu-8g,224.0,3968.0,,,,us-east4,us-east4-b,0.0,0.0",             # GCP's B200 host: $0.00
           ",,,A100,1,{'Gpus': []},us-central1,us-central1-a,2.93,1.43",            # (2.93 + 0.74) / 1 = 3.67
           ",,,A100,2,{'Gpus': []},us-central1,us-central1-a,5.86,2.86",            # a 2-GPU machine: not kept
           ",,,A100,1,{'Gpus': []},us-west9,us-west9-a,1.00,0.50",                  # no host row in that zone
           ",,,B200,8,{'Gpus': []},us-east4,us-east4-b,64.40,32.60",                # 64.40 / 8 = 8.05
           ",,,H100,1,{'Gpus': []},us-east4,us-east4-a,9.80,",                      # H100's host not in the file
           "g6f.large,2.0,8.0,L4,0.125,,us-east-1,,0.2,0.1"]                         # a fraction of a GPU
    files, problems = build(tmp_path, {"gcp": gcp}, names)
    assert problems == []
    got = by_key(files["gcp-2026-11-27.yaml"])
    a100 = got["a100-sxm-40gb", "secure"]
    assert (a100.usd_hr, a100.instance_type, a100.gpus) == (pytest.approx(3.67), "a2-highgpu-1g", 1)
    assert got["a100-sxm-40gb", "spot"].usd_hr == pytest.approx(1.80)  # 1.43 + 0.37
    assert got["b200", "secure"].usd_hr == pytest.approx(8.05) and got["b200", "spot"].usd_hr == pytest.approx(4.075)
    assert ("h100-sxm", "secure") not in got
    written = (tmp_path / "out" / "gcp-2026-11-27.yaml").read_text()
    assert "H100 (no host machine row)" in written and "L4 (a fraction of a GPU)" in written


def test_a_broken_cloud_file_is_named_and_the_others_are_written(tmp_path, names):
    files, problems = build(tmp_path, {"lambda": ["Name,Cost", "x,1"],
                                       "nebius": [HEADER, "gpu-h100-sxm_1gpu,H100,1,16,200,2.95,eu-north1,,1.25"]},
                            names)
    assert list(files) == ["nebius-2026-11-27.yaml"]
    assert len(problems) == 1 and problems[0].startswith("lambda: skipped") and "InstanceType" in problems[0]
    with pytest.raises(ValueError, match="commit id"):
        cloud_catalog.parse_commits("lambda=not-a-sha", ("lambda",))
    assert cloud_catalog.parse_commits("0082b04", ("lambda", "vast")) == {"lambda": "0082b04", "vast": "0082b04"}


def test_the_committed_files_match_the_catalog_rows_they_were_built_from():
    prices = cloud_prices.load_cloud_prices()
    assert prices.problems == ()
    got = {(p.provider, p.gpu_id, p.tier): p for p in prices.prices}
    # docs/price-sources/skypilot-catalog-v8: Nebius gpu-h100-sxm_1gpu 2.95 (spot 1.25), gpu-b200-sxm_8gpu 44.00 / 8
    assert got["Nebius", "h100-sxm", "secure"].usd_hr == 2.95 and got["Nebius", "h100-sxm", "spot"].usd_hr == 1.25
    assert got["Nebius", "b200", "secure"].usd_hr == 5.5 and got["Nebius", "b200", "secure"].gpus == 8
    # Lambda gpu_1x_b200_sxm6 6.99 (the 1-GPU machine, not the 8x's 6.69), gpu_1x_h100_pcie 3.29
    assert got["Lambda", "b200", "secure"].usd_hr == 6.99 and got["Lambda", "h100-pcie", "secure"].usd_hr == 3.29
    # Vast 1x-H100_SXM 1.87 in Texas; 1x-RTX_5090 0.48
    assert got["Vast.ai", "h100-sxm", "community"].usd_hr == 1.87
    assert got["Vast.ai", "rtx-5090", "community"].usd_hr == 0.48
    assert all(p.date == date(2026, 11, 27) and "skypilot-catalog" in p.source for p in prices.prices)
    assert prices.providers() == ("runpod", "aws", "gcp", "lambda", "nebius", "vast.ai")


def catalog_rows(cloud: str) -> list[dict]:
    path = Path(__file__).parents[2] / "docs" / "price-sources" / "skypilot-catalog-v8" / cloud / "vms.csv"
    return list(csv.DictReader(path.read_text().splitlines()))


def test_aws_names_keep_each_skypilot_name_on_its_instance_family(names):
    # SkyPilot's AWS 'A100' is p4d's 40 GB SXM4, 'A100-80GB' p4de's; 'H100' the p5 SXM, 'H200' p5e/p5en
    assert names.gpu_id("aws", "A100", "p4d.24xlarge", None) == "a100-sxm-40gb"
    assert names.gpu_id("aws", "A100-80GB", "p4de.24xlarge", None) == "a100-sxm-80gb"
    assert names.gpu_id("aws", "H100", "p5.4xlarge", None) == "h100-sxm"
    assert names.gpu_id("aws", "H200", "p5en.48xlarge", None) == "h200-sxm"
    assert names.gpu_id("aws", "L4", "g6.xlarge", None) == "l4" and names.gpu_id("aws", "L4", "g6f.large", None) is None
    assert names.gpu_id("aws", "A100", "p9.48xlarge", None) is None  # a family not yet known is left out
    # Azure's NC H100 v5 is the H100 NVL, ND H100 v5 the SXM board
    assert names.gpu_id("azure", "H100", "Standard_NC40ads_H100_v5", None) == "h100-nvl"
    assert names.gpu_id("azure", "H100", "Standard_ND96isr_H100_v5", None) == "h100-sxm"


def test_a_bad_host_entry_is_named_with_the_field_and_how_to_fix_it(tmp_path):
    bad = tmp_path / "names.yaml"
    bad.write_text("schema_version: 1\nread_on: 2026-11-27\nsource: test\n"
                   "clouds: [{cloud: gcp, provider: GCP, on_demand_tier: secure}]\n"
                   "names: [{cloud: gcp, name: A100, id: a100-sxm-40gb, hosts: [a2-highgpu-1g]}]\n")
    with pytest.raises(DataFileError, match="hosts.*GPUs=machine-type"):
        cloud_prices.load_cloud_names(bad, load_catalog())


def test_the_aws_file_is_each_machine_price_over_its_gpus_read_by_hand():
    got = {(p.gpu_id, p.tier): p for p in cloud_prices.load_cloud_prices().prices if p.provider == "AWS"}
    rows = {(r["InstanceType"], r["AvailabilityZone"]): r for r in catalog_rows("aws")}
    # (catalog GPU, instance type, the zone the cheapest on-demand price is first listed in)
    picked = (("t4", "g4dn.xlarge", "use1-az1"), ("a100-sxm-40gb", "p4d.24xlarge", "use1-az1"),
              ("a100-sxm-80gb", "p4de.24xlarge", "use1-az4"), ("b200", "p6-b200.48xlarge", "use1-az6"),
              ("h100-sxm", "p5.4xlarge", "use1-az1"))
    for gpu_id, instance, zone in picked:
        row = rows[instance, zone]
        price = got[gpu_id, "secure"]
        assert price.usd_hr == pytest.approx(float(row["Price"]) / float(row["AcceleratorCount"]), abs=1e-4)
        assert (price.instance_type, price.gpus) == (instance, int(float(row["AcceleratorCount"])))
    # by hand: p4d.24xlarge 21.957642 / 8 = 2.7447; p6-b200 113.9328 / 8 = 14.2416; g4dn.xlarge 0.526 / 1
    assert got["a100-sxm-40gb", "secure"].usd_hr == 2.7447 and got["b200", "secure"].usd_hr == 14.2416
    assert got["t4", "secure"].usd_hr == 0.526
    # p5e's on-demand cells are empty in this catalog: H200's on-demand is p5en's 63.296 / 8
    assert got["h200-sxm", "secure"].instance_type == "p5en.48xlarge" and got["h200-sxm", "secure"].usd_hr == 7.912


def test_aws_and_gcp_rank_on_their_own():
    catalog = load_catalog()
    clouds = cloud_prices.load_cloud_prices(catalog)
    table = cloud_prices.with_providers(snapshot_table(catalog), clouds, ["aws", "gcp"])
    l4 = table.prices["l4"]["secure"]
    assert l4.usd_hr == pytest.approx(0.7045) and l4.provider == "GCP"  # AWS g6.xlarge 0.8048, GCP 0.55821 + 0.14631
    assert table.prices["t4"]["secure"].provider == "AWS"  # GCP's T4 has no fixed host: left out
    assert table.prices["rtx-4090"]["secure"] is None and "RunPod's left out" in table.message


def test_the_gcp_file_adds_each_gpu_row_to_its_host_row_read_by_hand():
    got = {(p.gpu_id, p.tier): p for p in cloud_prices.load_cloud_prices().prices if p.provider == "GCP"}
    # docs/price-sources/skypilot-catalog-v8/gcp/vms.csv, europe-west4-a: A100 x1 1.61365 + a2-highgpu-1g 0.81406
    assert got["a100-sxm-40gb", "secure"].usd_hr == pytest.approx(1.61365 + 0.81406, abs=1e-4)
    assert got["a100-sxm-40gb", "secure"].instance_type == "a2-highgpu-1g"
    # us-east4-a: L4 x1 0.55821 + g2-standard-4 0.14631 (us-central1's 0.56004 + 0.14679 is dearer)
    assert got["l4", "secure"].usd_hr == pytest.approx(0.55821 + 0.14631, abs=1e-4)
    # us-central1-a: H100 x1 4.20076 + a3-highgpu-1g 1.18251
    assert got["h100-sxm", "secure"].usd_hr == pytest.approx(4.20076 + 1.18251, abs=1e-4)
    # asia-northeast1-b: B200 x8 64.44 on a4-highgpu-8g at 0.0: 8.055 per GPU on an 8-GPU machine
    assert got["b200", "secure"].usd_hr == pytest.approx(64.44 / 8, abs=1e-4) and got["b200", "secure"].gpus == 8


def test_the_ranking_uses_the_cheapest_of_the_providers_chosen():
    catalog = load_catalog()
    runpod, clouds = snapshot_table(catalog), cloud_prices.load_cloud_prices(catalog)
    assert cloud_prices.with_providers(runpod, clouds, ["runpod"]) is runpod
    rp_h100 = runpod.prices["h100-sxm"]["secure"].usd_hr
    both = cloud_prices.with_providers(runpod, clouds, ["runpod", "nebius", "lambda"])
    h100 = both.prices["h100-sxm"]["secure"]
    assert h100.usd_hr == min(rp_h100, 2.95, 4.29)  # Nebius 2.95, Lambda's 1x SXM5 4.29
    lam = cloud_prices.with_providers(runpod, clouds, ["lambda"])
    assert lam.prices["h100-sxm"]["secure"].usd_hr == 4.29 and lam.prices["h100-sxm"]["secure"].provider == "Lambda"
    assert lam.prices["rtx-4090"]["secure"] is None  # Lambda rents none, and RunPod is not chosen
    # Nebius's B200 comes only as an 8-GPU machine: no price for a 1-GPU plan, 5.50 for an 8-GPU one
    assert cloud_prices.with_providers(runpod, clouds, ["nebius"]).prices["b200"]["secure"] is None
    assert cloud_prices.with_providers(runpod, clouds, ["nebius"], plan_gpus=8).prices["b200"]["secure"].usd_hr == 5.5


def test_a_broken_provider_file_breaks_no_other(tmp_path):
    catalog = load_catalog()
    good = cloud_prices.CLOUD_PRICES_DIR / "nebius-2026-11-27.yaml"
    (tmp_path / "nebius-2026-11-27.yaml").write_text(good.read_text())
    (tmp_path / "lambda-2026-11-28.yaml").write_text(good.read_text().replace("id: h100-sxm", "id: h100-sxmm", 1))
    (tmp_path / "vast-2026-11-28.yaml").write_text("prices: [")
    prices = cloud_prices.load_cloud_prices(catalog, tmp_path)
    assert {p.provider for p in prices.prices} == {"Nebius"}
    assert len(prices.problems) == 2 and "lambda-2026-11-28.yaml" in prices.problems[0]
    assert "did you mean h100-sxm" in prices.problems[0]
    table = cloud_prices.with_providers(snapshot_table(catalog), prices, ["runpod", "nebius"])
    assert table.prices["h200-sxm"]["secure"].usd_hr <= 3.5 and "left out" in table.message


def test_providers_are_parsed_with_a_message_naming_the_unknown_one():
    known = ("runpod", "lambda", "nebius", "vast.ai")
    assert cloud_prices.parse_providers(" Lambda, runpod,lambda", known) == ("lambda", "runpod")
    assert cloud_prices.parse_providers("all", known) == known
    with pytest.raises(ValueError, match="did you mean lambda"):
        cloud_prices.parse_providers("lamda", known)
    with pytest.raises(ValueError, match="expected provider names"):
        cloud_prices.parse_providers(" , ", known)


def run_cli(*args) -> tuple[int, str, str]:
    done = run(*args)
    return done.returncode, done.stdout, done.stderr


def test_the_command_line_writes_snapshots_and_ranks_on_the_providers_named(tmp_path):
    src = tmp_path / "v8" / "nebius"
    src.mkdir(parents=True)
    (src / "vms.csv").write_text(f"{HEADER}\ngpu-h200-sxm_1gpu,H200,1,16,200,3.50,eu-north1,,1.45\n")
    code, _, err = run_cli("prices", "--skypilot-catalog", str(tmp_path / "v8"), "--catalog-commit", "0082b04",
                           "--clouds-out", str(tmp_path / "out"))
    assert code == 0 and "nebius-" in err and len(list((tmp_path / "out").glob("nebius-*.yaml"))) == 1
    assert run_cli("prices", "--skypilot-catalog", str(tmp_path / "nowhere"))[0] == 2
    code, out, _ = run_cli("estimate", "--model", "gpt2-124m", "--gpu", "h100-sxm", "--providers", "lambda",
                           "--format", "json")
    row = json.loads(out)[0]
    assert row["usd_per_hr"]["secure"] == 4.29 and row["price_provider"]["secure"] == "Lambda us-east-1"
    assert row["cost_usd"]["secure"] == pytest.approx(4.29 * row["seconds"] / 3600, rel=1e-3)
    code, _, err = run_cli("estimate", "--model", "gpt2-124m", "--providers", "lambda,aws-typo")
    assert code == 2 and "unknown provider 'aws-typo'" in err


def test_a_link_carries_the_providers_and_warns_about_an_unknown_one():
    chosen = replace(plan_inputs.DEFAULTS, prov="nebius,runpod")
    params = share.encode(chosen)
    assert params["prov"] == "nebius,runpod" and "prov" not in share.encode(plan_inputs.DEFAULTS)
    back, warnings = share.decode(params)
    assert back.prov == "nebius,runpod" and warnings == []
    back, warnings = share.decode({**params, "prov": "nebius,<b>x</b>"})
    assert back.prov == "runpod" and [w.param for w in warnings] == ["prov"]
