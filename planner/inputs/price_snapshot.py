"""The committed price snapshot: RunPod $/GPU-hour per GPU and tier, from data/gpus.yaml and data/prices/*.yaml.

Per GPU and tier the newer of the two wins (`python -m planner prices --refresh` writes data/prices files).
PriceTable is what the engine prices a ranking with, whatever its origin (snapshot, live, or the user's own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import date, datetime, UTC
from functools import lru_cache
from pathlib import Path
from collections.abc import Iterable, Mapping

from planner import DATA_DIR
from planner.base.safe_parse import shown
from planner.base.schema import DataFileError, Record, load_document, sections_of, suggest, unique_ids
from planner.inputs.catalog import (CUSTOM_MAX_USD_HR, CUSTOM_MIN_USD_HR, GPU, MAX_USD_HR, MIN_USD_HR, PRICE_TIERS,
                                    STALE_AFTER_DAYS, Catalog, Price, load_catalog)

PRICES_DIR = DATA_DIR / "prices"


@dataclass(frozen=True)
class PriceTable:
    """Prices in use for every catalog GPU, with where and when they come from.

    prices: gpu_id -> tier ('secure', 'community', 'spot') -> Price (origin 'snapshot'|'live'|'custom') or None.
    source: 'snapshot', 'live' or 'live (partial)'; as_of: ISO date or UTC timestamp; message: one line for
    the page; unmapped: RunPod gpu type ids that match no catalog GPU; ok: False when a fetch fell back.
    Treat the mappings as read-only (tables are cached and shared).
    """

    prices: Mapping[str, Mapping[str, Price | None]]
    source: str
    as_of: str
    message: str
    unmapped: tuple[str, ...]
    ok: bool
    suspect: tuple[tuple[str, str, float], ...] = ()  # (gpu id, tier, $/h) live prices held back (> 3x off)
    pending: bool = False  # a live fetch is under way; this is the snapshot meanwhile
    problems: tuple[str, ...] = ()  # snapshot files left out because they could not be read, each saying why


    def for_gpu(self, gpu: GPU) -> Mapping[str, Price | None]:
        """Prices per tier for `gpu`; a GPU outside the table (a measured device) keeps its catalog listing."""
        return self.prices.get(gpu.id) or gpu.listed_prices()


def _snapshot_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml")) if directory.is_dir() else []


def load_snapshot_file(path: str | Path, catalog: Catalog) -> tuple[date, str, dict[str, dict[str, float]]]:
    """Validate one data/prices file; return (date, source, {gpu_id: {tier: usd_hr}}). Raises DataFileError."""
    doc = load_document(path)  # read and parsed once: its records and its header
    records = sections_of(doc, path, ("prices",))["prices"]
    head = Record(str(path), "header", doc)
    head.check_keys(("schema_version", "date", "fetched_at", "source", "prices"))
    day = head.day("date")
    day = day.date() if isinstance(day, datetime) else day
    source = head.text("source")
    head.text("fetched_at", required=False)
    ids = set(catalog.ids())
    out: dict[str, dict[str, float]] = {}
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "runpod_gpu_type_ids", *PRICE_TIERS))
        gpu_id = rec.text("id")
        if gpu_id not in ids:
            near = suggest(gpu_id, ids)
            raise rec.fail("id", "not a GPU id in data/gpus.yaml"
                           + (f" (did you mean {', '.join(near)}?)" if near else ""))
        rec.strings("runpod_gpu_type_ids", required=False)
        out[gpu_id] = {t: v for t in PRICE_TIERS
                       if (v := rec.number(t, required=False, lo=MIN_USD_HR, hi=MAX_USD_HR)) is not None}
    unique_ids(path, (r.get("id") for r in records))
    return day, source, out


def _dates(prices: Mapping[str, Mapping[str, Price | None]]) -> list[date]:
    return [p.date for tiers in prices.values() for p in tiers.values() if p is not None and p.date]


def _table(prices: dict[str, dict[str, Price | None]]) -> PriceTable:
    """A snapshot table: as_of is its newest date; the message names the oldest too (most prices may be far older)."""
    days = _dates(prices)
    if not days:
        return PriceTable(prices, "snapshot", "unknown date", "prices from the snapshot (undated)", (), True)
    old, new = min(days).isoformat(), max(days).isoformat()
    span = old if old == new else f"{old} to {new}"
    return PriceTable(prices, "snapshot", new, f"prices from the snapshot, dated {span}", (), True)


def listing_table(catalog: Catalog) -> PriceTable:
    """The catalog's own RunPod listing (data/gpus.yaml alone), for when data/prices/ can't be read."""
    return _table({g.id: g.listed_prices() for g in catalog.devices})


def snapshot_table(catalog: Catalog | None = None, directory: str | Path | None = None) -> PriceTable:
    """The committed snapshot: per GPU and tier, the newer of data/gpus.yaml and data/prices/*.yaml.

    On equal dates a price file wins over gpus.yaml (it is the dedicated record). A price file that can't be read
    (torn by a full disk, emptied, malformed) is left out and named in `problems` and the message: the older files
    and the catalog's listing still price every GPU. Cached until a snapshot file is added, removed or changed.
    """
    catalog = catalog or load_catalog()
    folder = Path(directory) if directory is not None else PRICES_DIR
    stamp = tuple((p.name, p.stat().st_mtime_ns) for p in _snapshot_files(folder))
    return _snapshot_cached(catalog, str(folder), stamp)


@lru_cache(maxsize=8)
def _snapshot_cached(catalog: Catalog, directory: str, _stamp: tuple) -> PriceTable:
    prices = {g.id: g.listed_prices() for g in catalog.devices}
    problems = []
    for path in _snapshot_files(Path(directory)):
        try:
            day, source, table = load_snapshot_file(path, catalog)
        except (DataFileError, OSError, UnicodeDecodeError) as exc:
            why = exc.problem if isinstance(exc, DataFileError) else "not readable text"
            problems.append(f"price file {path.name} was left out ({why}): fix or delete it, or write a new one "
                            "with `planner prices --refresh`")
            continue
        for gpu_id, tiers in table.items():
            for tier, usd_hr in tiers.items():
                old = prices[gpu_id].get(tier)
                if old is None or old.date is None or day >= old.date:
                    prices[gpu_id][tier] = Price(usd_hr, day, f"{source} (snapshot {path.name})", "snapshot")
    table = _table(prices)
    if not problems:
        return table
    return replace(table, message="; ".join((table.message, *problems)), problems=tuple(problems))


def with_custom(table: PriceTable, custom_usd_hr: Mapping[str, float]) -> PriceTable:
    """Apply user-typed $/GPU-hour (origin 'custom', every tier); ValueError naming the GPU if not 0 < x < 1000."""
    if not custom_usd_hr:
        return table
    prices = {g: dict(t) for g, t in table.prices.items()}
    today = utc_today()
    for gpu_id, value in custom_usd_hr.items():
        if gpu_id not in prices:
            near = suggest(str(gpu_id), prices)
            raise ValueError(f"custom price for unknown GPU '{gpu_id}'"
                             + (f"; did you mean {', '.join(near)}?" if near else ""))
        bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        if bad or not CUSTOM_MIN_USD_HR <= value <= CUSTOM_MAX_USD_HR:
            raise ValueError(f"custom price for {gpu_id} must be a number of $/GPU-hour from {CUSTOM_MIN_USD_HR:g} to "
                             f"{CUSTOM_MAX_USD_HR:g}, got {shown(value)}")
        price = Price(float(value), today, "entered by you", "custom", "you")
        prices[gpu_id] = {t: price for t in PRICE_TIERS}
    names = ", ".join(custom_usd_hr)
    return replace(table, prices=prices, message=f"{table.message}; your own $/h for {names}")




# ---------------------------------------------------------------- how old the prices in use are


def utc_today() -> date:
    """Today's date in UTC, the calendar every price date is read in."""
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class PriceDates:
    """The dates behind a set of prices in use (one ranking, one tier): the oldest and newest, how many are older than
    stale_after_days (or undated), out of how many priced. A user's own prices are left out: they have no date to
    doubt."""

    oldest: date | None
    newest: date | None
    stale: int
    priced: int
    stale_after_days: int

    def sentence(self) -> str:
        """'33 prices dated 2025-06-21 to 2026-11-09; 26 of 33 are older than 90 days' (plain text)."""
        if not self.priced:
            return "no price in use"
        span = ("undated" if self.oldest is None else f"dated {self.oldest.isoformat()}" if self.oldest == self.newest
                else f"dated {self.oldest.isoformat()} to {self.newest.isoformat()}")
        flag = (f"; {self.stale} of {self.priced} are older than {self.stale_after_days} days or undated" if self.stale
                else f"; none older than {self.stale_after_days} days")
        return f"{self.priced} price{'s' if self.priced != 1 else ''} {span}{flag}"


def price_dates(prices: Iterable[Price | None], today: date,
                stale_after_days: int = STALE_AFTER_DAYS) -> PriceDates:
    """Oldest and newest date and the stale count of `prices` (None entries: GPUs without a price, skipped)."""
    dated = [p for p in prices if p is not None and p.origin != "custom"]
    days = [p.date for p in dated if p.date is not None]
    return PriceDates(min(days, default=None), max(days, default=None),
                      sum(p.is_stale(today, stale_after_days) for p in dated), len(dated), stale_after_days)


def stale_note(price: Price | None, today: date, stale_after_days: int = STALE_AFTER_DAYS) -> str | None:
    """'rests on a price from 2025-06-21 (519 days old)' when `price` is stale, 'rests on an undated price' when it has
    no date; None for a fresh price, a user's own or no price. For the 'Cheapest' call-out and the CLI."""
    if price is None or not price.is_stale(today, stale_after_days):
        return None
    age = price.age_days(today)
    if age is None:
        return "rests on an undated price"
    return f"rests on a price from {price.date.isoformat()} ({age:,} days old)"
