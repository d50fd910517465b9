"""Prices from more clouds than RunPod: the committed snapshots of SkyPilot's catalogs (data/prices/clouds/, one file
per provider, written by `planner prices --skypilot-catalog`), and the ranking's prices restricted to the providers
a user rents from.

Each price is a provider's cheapest offer for one catalog GPU at one tier on the smallest machine that has it
($/GPU-hour: the machine's price divided by its GPUs), with its region, instance type, GPU count, date and source. A
provider file that can't be read is left out and named; the other providers and RunPod's snapshot still price every
GPU they list.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date, datetime
from functools import lru_cache
from pathlib import Path
from collections.abc import Iterable, Mapping

from planner import DATA_DIR
from planner.base.schema import DataFileError, Record, load_document, load_sections, sections_of, suggest
from planner.inputs.catalog import MAX_USD_HR, MIN_USD_HR, PRICE_TIERS, Catalog, Price, load_catalog
from planner.inputs.price_snapshot import PRICES_DIR, PriceTable

CLOUD_PRICES_DIR = PRICES_DIR / "clouds"
NAMES_FILE = DATA_DIR / "cloud_gpu_names.yaml"
RUNPOD = "runpod"  # the provider of data/gpus.yaml's and data/prices/*.yaml's prices
MAX_PRICE_ROWS = 5_000
MAX_MACHINE_GPUS = 72  # an NVL72 rack: the largest machine a price file may name


@dataclass(frozen=True)
class CloudName:
    """Which catalog GPU an offer of `cloud` named `name` is: also requiring `instance` in its instance type (any
    case) and `mib` of memory per GPU (within 10 %) when given."""

    cloud: str
    name: str
    gpu_id: str
    instance: str | None = None
    mib: float | None = None
    hosts: tuple[tuple[int, str], ...] = ()  # (GPU count, the machine type a GPU-only row's GPUs ride on)

    def matches(self, name: str, instance_type: str, mib_per_gpu: float | None) -> bool:
        if name != self.name:
            return False
        if self.instance and self.instance.lower() not in instance_type.lower():
            return False
        return self.mib is None or (mib_per_gpu is not None and abs(mib_per_gpu - self.mib) <= 0.1 * self.mib)


@dataclass(frozen=True)
class CloudNames:
    providers: Mapping[str, str]  # SkyPilot cloud -> the provider's name
    on_demand_tier: Mapping[str, str]  # SkyPilot cloud -> the planner tier its on-demand offers are
    names: tuple[CloudName, ...]

    def gpu_id(self, cloud: str, name: str, instance_type: str, mib_per_gpu: float | None) -> str | None:
        """The catalog GPU an offer is, or None (no entry matches)."""
        entry = self.entry(cloud, name, instance_type, mib_per_gpu)
        return entry.gpu_id if entry else None

    def entry(self, cloud: str, name: str, instance_type: str, mib_per_gpu: float | None) -> CloudName | None:
        """The first entry an offer matches, or None."""
        return next((n for n in self.names if n.cloud == cloud and n.matches(name, instance_type, mib_per_gpu)), None)


def parse_hosts(rec: Record, name: str) -> tuple[tuple[int, str], ...]:
    """`hosts: ["1=a2-highgpu-1g", ...]`: which machine type carries N of the GPU, for a catalog row that prices the
    GPUs alone (GCP's accelerator rows: an empty InstanceType); DataFileError naming the entry otherwise."""
    out = {}
    for item in rec.strings("hosts", required=False):
        count, eq, machine = item.partition("=")
        if not eq or not count.strip().isdigit() or not 1 <= int(count) <= MAX_MACHINE_GPUS or not machine.strip():
            raise rec.fail("hosts", f"{name}: expected 'GPUs=machine-type' (as '1=a2-highgpu-1g'), got {item[:60]!r}")
        out[int(count)] = machine.strip()
    return tuple(sorted(out.items()))


@lru_cache(maxsize=2)
def load_cloud_names(path: str | Path = NAMES_FILE, catalog: Catalog | None = None) -> CloudNames:
    """data/cloud_gpu_names.yaml, validated against the catalog; DataFileError naming file, record and field."""
    catalog = catalog or load_catalog()
    ids = set(catalog.ids())
    sections = load_sections(path, ("clouds", "names"), dated=True)
    providers, tiers = {}, {}
    for i, raw in enumerate(sections["clouds"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("cloud", "provider", "on_demand_tier"))
        cloud = rec.text("cloud", max_len=40)
        providers[cloud] = rec.text("provider", max_len=40)
        tiers[cloud] = rec.text("on_demand_tier", choices=PRICE_TIERS)
    names = []
    for i, raw in enumerate(sections["names"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("cloud", "name", "instance", "mib", "hosts", "id"))
        cloud = rec.text("cloud", choices=tuple(providers))
        gpu_id = rec.text("id")
        if gpu_id not in ids:
            raise rec.fail("id", "not a GPU id in data/gpus.yaml")
        name = rec.text("name", max_len=40)
        names.append(CloudName(cloud, name, gpu_id, rec.text("instance", required=False),
                               rec.number("mib", required=False, lo=1024, hi=4_000_000), parse_hosts(rec, name)))
    return CloudNames(providers, tiers, tuple(names))


@dataclass(frozen=True)
class CloudPrice:
    """One provider's cheapest offer for a catalog GPU at a tier: $/GPU-hour, where, which instance, when, whence."""

    gpu_id: str
    provider: str
    tier: str
    usd_hr: float
    region: str
    instance_type: str
    gpus: int  # the machine's GPUs (it is rented whole)
    date: date
    source: str

    def as_price(self) -> Price:
        machine = f"{self.instance_type}, a {self.gpus}-GPU machine" if self.gpus > 1 else self.instance_type
        return Price(self.usd_hr, self.date, f"{self.provider} {self.region}, {machine} ({self.source})",
                     "snapshot", self.provider, self.region)


@dataclass(frozen=True)
class CloudPrices:
    """Every provider file's prices, and the files left out (each saying why)."""

    prices: tuple[CloudPrice, ...]
    problems: tuple[str, ...] = ()

    def providers(self) -> tuple[str, ...]:
        """RunPod first, then the providers with a price here, by name."""
        return (RUNPOD, *sorted({provider_key(p.provider) for p in self.prices}))


def provider_key(provider: str) -> str:
    """'Vast.ai' -> 'vast.ai': how a provider is named in a link and on the command line."""
    return provider.strip().lower()


def load_cloud_price_file(path: str | Path, catalog: Catalog) -> list[CloudPrice]:
    """One data/prices/clouds file, validated; DataFileError naming file, record and field."""
    doc = load_document(path)
    records = sections_of(doc, path, ("prices",))["prices"]
    if len(records) > MAX_PRICE_ROWS:
        raise DataFileError(path, "-", "prices", f"more than {MAX_PRICE_ROWS:,} prices")
    head = Record(str(path), "header", doc)
    head.check_keys(("schema_version", "date", "provider", "source", "catalog_commit", "unmapped", "prices"))
    day = head.day("date")
    day = day.date() if isinstance(day, datetime) else day
    provider, source = head.text("provider", max_len=40), head.text("source")
    head.text("catalog_commit", required=False)
    head.strings("unmapped", required=False)
    ids, out, seen = set(catalog.ids()), [], set()
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "tier", "usd_hr", "region", "instance", "gpus"))
        gpu_id, tier = rec.text("id"), rec.text("tier", choices=PRICE_TIERS)
        if gpu_id not in ids:
            near = suggest(gpu_id, ids)
            raise rec.fail("id", "not a GPU id in data/gpus.yaml" + (f" (did you mean {', '.join(near)}?)"
                                                                       if near else ""))
        if (gpu_id, tier) in seen:
            raise rec.fail("tier", f"a second {tier} price for {gpu_id} (one per GPU and tier: the cheapest)")
        seen.add((gpu_id, tier))
        out.append(CloudPrice(gpu_id, provider, tier, rec.number("usd_hr", lo=MIN_USD_HR, hi=MAX_USD_HR),
                              rec.text("region", max_len=80), rec.text("instance", max_len=80),
                              int(rec.number("gpus", lo=1, hi=MAX_MACHINE_GPUS, integer=True)), day, source))
    return out


def load_cloud_prices(catalog: Catalog | None = None, directory: str | Path | None = None) -> CloudPrices:
    """Every provider's newest file in data/prices/clouds (by its date; a later file name wins a tie). A file that
    can't be read is left out and named in `problems`; the others still count."""
    catalog = catalog or load_catalog()
    folder = Path(directory) if directory is not None else CLOUD_PRICES_DIR
    files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    stamp = tuple((p.name, p.stat().st_mtime_ns) for p in files)
    return _cloud_prices_cached(catalog, str(folder), stamp)


@lru_cache(maxsize=8)
def _cloud_prices_cached(catalog: Catalog, directory: str, _stamp: tuple) -> CloudPrices:
    newest: dict[str, list[CloudPrice]] = {}
    problems = []
    for path in sorted(Path(directory).glob("*.yaml")):
        try:
            prices = load_cloud_price_file(path, catalog)
        except (DataFileError, OSError, UnicodeDecodeError) as exc:
            why = exc.problem if isinstance(exc, DataFileError) else "not readable text"
            problems.append(f"cloud price file {path.name} was left out ({why}): fix or delete it, or write it again "
                            "with `planner prices --skypilot-catalog`")
            continue
        if not prices:
            continue
        key = provider_key(prices[0].provider)
        if key not in newest or prices[0].date >= newest[key][0].date:
            newest[key] = prices
    return CloudPrices(tuple(p for ps in newest.values() for p in ps), tuple(problems))


def parse_providers(text: str, known: Iterable[str]) -> tuple[str, ...]:
    """'runpod,lambda' (any case, spaces allowed) as known provider keys in that order, each once; 'all' for every
    known one. ValueError naming an unknown one and the known ones."""
    known = tuple(known)
    words = [w.strip().lower() for w in str(text).split(",") if w.strip()]
    if words == ["all"]:
        return known
    if not words or len(words) > 40:
        raise ValueError(f"expected provider names separated by commas, or all: {', '.join(known)}")
    for w in words:
        if w not in known:
            near = suggest(w, known)
            raise ValueError(f"unknown provider {w[:40]!r}" + (f"; did you mean {', '.join(near)}?" if near else
                                                               f"; known: {', '.join(known)}"))
    return tuple(dict.fromkeys(words))


def with_providers(table: PriceTable, cloud: CloudPrices, providers: Iterable[str], plan_gpus: int = 1) -> PriceTable:
    """The price table of the providers a user rents from: per GPU and tier, the cheapest of their prices (RunPod's
    from `table` when 'runpod' is among them). A machine is rented whole, so an offer on a machine of more GPUs than
    the plan's `plan_gpus` is left out (its $/GPU-hour would bill GPUs the plan leaves idle). The same table for
    RunPod alone."""
    chosen = tuple(providers)
    if chosen == (RUNPOD,):
        return table
    prices: dict[str, dict[str, Price | None]] = {}
    for gpu_id, tiers in table.prices.items():
        prices[gpu_id] = {t: (tiers.get(t) if RUNPOD in chosen else None) for t in PRICE_TIERS}
    for p in cloud.prices:
        if provider_key(p.provider) not in chosen or p.gpu_id not in prices or p.gpus > plan_gpus:
            continue
        old = prices[p.gpu_id].get(p.tier)
        if old is None or p.usd_hr < old.usd_hr:
            prices[p.gpu_id][p.tier] = p.as_price()
    names = ", ".join(chosen)
    message = f"{table.message}; the cheapest of {names} per GPU and tier" if RUNPOD in chosen else (
        f"prices from {names} (the cheapest per GPU and tier; RunPod's left out)")
    if cloud.problems:
        message = "; ".join((message, *cloud.problems))
    return replace(table, prices=prices, message=message, problems=(*table.problems, *cloud.problems))
