"""Dated price snapshots from SkyPilot's catalogs: one data/prices/clouds file per cloud.

SkyPilot keeps a CSV of every instance type per cloud, with its GPUs, region, on-demand and spot price
(github.com/skypilot-org/skypilot-catalog, catalogs/v8/<cloud>/vms.csv; refreshed by SkyPilot's own fetchers, and
copied to ~/.sky/catalogs/v8/ by any SkyPilot install). This module reads such a folder, maps each GPU offer to a
catalog GPU (data/cloud_gpu_names.yaml) and keeps, per GPU and tier, the cheapest $/GPU-hour (the instance's price
divided by its GPUs) on the smallest machine that has the GPU, with its region, instance type and GPU count. A cloud
whose file is missing, too large or malformed is named and skipped; the others are still written.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from planner.base.files import UserFileError, read_regular, write_atomic
from planner.base.safe_parse import clean_text
from planner.inputs.catalog import MAX_USD_HR, MIN_USD_HR
from planner.inputs.cloud_prices import CloudNames

CATALOG_VERSION = "v8"  # the catalog schema SkyPilot 0.14.1 reads (sky/catalog/constants.py)
CATALOG_REPO = "https://github.com/skypilot-org/skypilot-catalog"
MAX_CSV_BYTES = 64_000_000  # AWS's vms.csv is ~3.7 MB, GCP's ~2.3 MB
REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
_TOTAL_MIB = re.compile(r"'TotalGpuMemoryInMiB':\s*([0-9.]+)")


@dataclass(frozen=True)
class Offer:
    gpu_id: str
    tier: str
    usd_hr: float  # per GPU
    region: str
    instance_type: str
    gpus: int  # the machine's GPUs: it is rented whole


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and value == value and value > 0 else None


def _region(row: dict) -> str:
    return " ".join(p for p in ((row.get("Region") or "").strip(" ,"), (row.get("AvailabilityZone") or "").strip(" ,"))
                    if p) or "-"


def _host_prices(rows: list[dict]) -> dict[tuple[str, str], tuple[float, float | None]]:
    """(machine type, region and zone) -> (on-demand, spot $/hour) of every machine row without GPUs: the hosts
    GCP's GPU-only rows ride on. A host at $0.00 (GCP's a4-highgpu: its B200 row holds the whole price) counts."""
    out = {}
    for row in rows:
        instance = (row.get("InstanceType") or "").strip()
        if instance and not (row.get("AcceleratorName") or "").strip():
            price = _number(row.get("Price"))
            zero = (row.get("Price") or "").strip() in ("0", "0.0", "0.00")
            if price is not None or zero:
                spot = _number(row.get("SpotPrice"))
                out[(instance, _region(row))] = (price or 0.0, spot if spot is not None or not zero else 0.0)
    return out


def read_offers(text: str, cloud: str, names: CloudNames, where: str) -> tuple[list[Offer], set[str]]:
    """The GPU offers of one vms.csv (its text) that map to catalog GPUs, and the GPU names that don't. ValueError
    naming the file and what is missing.

    A row with GPUs and an instance type prices the whole machine. A row with GPUs and no instance type (GCP's
    accelerator rows) prices the GPUs alone: its offer is that price plus the host machine's in the same zone (the
    entry's `hosts`, by GPU count); without a host row it is left out and named as '<name> (no host machine row)'."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise ValueError(f"{where}: no column {', '.join(missing)} (not a SkyPilot vms.csv)")
    rows = list(reader)
    hosts = _host_prices(rows)
    tier = names.on_demand_tier[cloud]
    offers, unmapped = [], set()
    for row in rows:
        name, count = (row.get("AcceleratorName") or "").strip(), _number(row.get("AcceleratorCount"))
        if not name or count is None:
            continue  # a CPU instance
        if count < 1:
            unmapped.add(f"{name} (a fraction of a GPU)")  # AWS g6f: a share of one L4 is no catalog GPU
            continue
        total = _TOTAL_MIB.search(row.get("GpuInfo") or "")
        mib = float(total.group(1)) / count if total else None
        instance, region = (row.get("InstanceType") or "").strip(), _region(row)
        entry = names.entry(cloud, name, instance, mib)
        if entry is None:
            unmapped.add(name)
            continue
        price, spot = _number(row.get("Price")), _number(row.get("SpotPrice"))
        if not instance:
            host = dict(entry.hosts).get(int(count))
            if host is None or (host, region) not in hosts:
                unmapped.add(f"{name} (no host machine row)")
                continue
            host_price, host_spot = hosts[(host, region)]
            instance = host
            price = price + host_price if price is not None else None
            spot = spot + host_spot if spot is not None and host_spot is not None else None
        for offer_tier, usd in ((tier, price), ("spot", spot)):
            if usd is not None and MIN_USD_HR <= usd / count <= MAX_USD_HR:
                offers.append(Offer(entry.gpu_id, offer_tier, round(usd / count, 4), region, instance, int(count)))
    return offers, unmapped


def cheapest(offers: list[Offer]) -> list[Offer]:
    """Per GPU and tier the cheapest offer on the smallest machine that has that GPU (a machine is rented whole: an
    8-GPU machine's lower $/GPU-hour is no price for a 1-GPU plan), ties to the first read; by GPU and tier."""
    best: dict[tuple[str, str], Offer] = {}
    for o in offers:
        key = (o.gpu_id, o.tier)
        if key not in best or (o.gpus, o.usd_hr) < (best[key].gpus, best[key].usd_hr):
            best[key] = o
    return [best[k] for k in sorted(best)]


def snapshot_text(cloud: str, names: CloudNames, offers: list[Offer], unmapped: set[str], day: date,
                  commit: str | None) -> str:
    """The data/prices/clouds file for one cloud (YAML), its header saying where and when the prices were read."""
    where = f"{CATALOG_REPO} catalogs/{CATALOG_VERSION}/{cloud}/vms.csv"
    doc = {"schema_version": 1, "date": day.isoformat(), "provider": names.providers[cloud],
           "source": f"SkyPilot catalog, {where}" + (f" at commit {commit}" if commit else "") + f", read {day}",
           **({"catalog_commit": commit} if commit else {}),
           **({"unmapped": sorted(unmapped)} if unmapped else {}),
           "prices": [{"id": o.gpu_id, "tier": o.tier, "usd_hr": o.usd_hr, "region": o.region,
                       "instance": o.instance_type, "gpus": o.gpus} for o in cheapest(offers)]}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)


def parse_commits(text: str | None, clouds) -> dict[str, str]:
    """--catalog-commit: one git commit id for every cloud, or cloud=commit pairs separated by commas (the commit of
    skypilot-catalog each vms.csv was read at). ValueError naming what is wrong."""
    if not text:
        return {}
    pairs = [p.strip() for p in text.split(",") if p.strip()]
    out = {}
    for pair in pairs:
        cloud, eq, commit = pair.rpartition("=") if "=" in pair else ("", "", pair)
        if not re.fullmatch(r"[0-9a-f]{7,40}", commit) or (eq and cloud not in clouds):
            raise ValueError(f"--catalog-commit {clean_text(pair)[:60]!r}: expected a git commit id (7-40 hex digits) "
                             f"or cloud=commit with a cloud of {', '.join(clouds)}")
        out.update({cloud: commit} if eq else dict.fromkeys(clouds, commit))
    return out


def write_snapshots(catalog_dir: str | Path, out_dir: str | Path, names: CloudNames, day: date,
                    commits: dict[str, str] | None = None) -> tuple[list[Path], list[str]]:
    """A file `<cloud>-<day>.yaml` in out_dir for every cloud of data/cloud_gpu_names.yaml with a vms.csv under
    catalog_dir (a SkyPilot catalog folder: ~/.sky/catalogs/v8 or a checkout's catalogs/v8), each naming the commit
    it was read at (`commits`, per cloud); the files written and, per cloud skipped, why (one line each)."""
    written, problems = [], []
    commits = commits or {}
    for cloud in names.providers:
        path = Path(catalog_dir) / cloud / "vms.csv"
        if not path.exists():
            continue
        try:
            text = read_regular(path, MAX_CSV_BYTES, "SkyPilot catalog file")
            offers, unmapped = read_offers(text.decode("utf-8", errors="replace"), cloud, names, str(path))
        except (OSError, UserFileError, ValueError, csv.Error) as exc:
            problems.append(f"{cloud}: skipped ({clean_text(' '.join(str(exc).split()))[:300]})")
            continue
        if not offers:
            problems.append(f"{cloud}: no offer of a catalog GPU in {path}")
            continue
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        out = Path(out_dir) / f"{cloud}-{day.isoformat()}.yaml"
        write_atomic(out, snapshot_text(cloud, names, offers, unmapped, day, commits.get(cloud)))
        written.append(out)
    return written, problems
