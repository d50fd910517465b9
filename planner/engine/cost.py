"""Dollars: seconds x GPUs x $/GPU-hour per price tier, and per million items."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from planner.inputs.catalog import GPU, PRICE_TIERS


@dataclass(frozen=True)
class Price:
    """A $/GPU-hour with its origin ('snapshot', 'live', 'custom') and date."""

    usd_hr: float
    date: date | None
    source: str
    origin: str = "snapshot"


def snapshot_prices(gpu: GPU) -> dict[str, Price | None]:
    out: dict[str, Price | None] = {}
    for tier in PRICE_TIERS:
        q = gpu.price(tier)
        out[tier] = Price(q.usd_hr, q.date, q.source) if q else None
    return out


def job_cost_usd(seconds: float, n_gpus: int, price: Price | None) -> float | None:
    if price is None or seconds == float("inf"):
        return None
    return seconds / 3600.0 * n_gpus * price.usd_hr


def per_million(cost_usd: float | None, items: int) -> float | None:
    return None if cost_usd is None or items <= 0 else cost_usd / items * 1e6
