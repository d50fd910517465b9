"""Dollars: seconds x GPUs x $/GPU-hour per price tier, and per million items."""

from __future__ import annotations

import math

from planner.base.units import SECONDS_PER_HOUR
from planner.inputs.catalog import Price


def job_cost_usd(seconds: float, n_gpus: int, price: Price | None) -> float | None:
    """Cost of `seconds` on `n_gpus` GPUs at `price` per GPU-hour; None without a price or a finite time."""
    if price is None or not math.isfinite(seconds):
        return None
    return seconds / SECONDS_PER_HOUR * n_gpus * price.usd_hr


def per_million(cost_usd: float | None, items: int) -> float | None:
    return None if cost_usd is None or items <= 0 else cost_usd / items * 1e6
