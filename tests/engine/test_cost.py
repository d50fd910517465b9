"""Dollars from seconds and $/GPU-hour."""

from datetime import date

import pytest

from planner.inputs.catalog import load_catalog
from planner.engine.cost import Price, job_cost_usd, per_million, snapshot_prices


def test_cost_is_hours_times_gpus_times_price():
    price = Price(2.0, date(2026, 1, 1), "test")
    assert job_cost_usd(1800, 4, price) == pytest.approx(0.5 * 4 * 2.0)  # half an hour on 4 GPUs at $2/h
    assert job_cost_usd(1800, 1, None) is None


def test_per_million_items():
    assert per_million(0.25, 1_000_000) == pytest.approx(0.25)
    assert per_million(0.5, 250_000) == pytest.approx(2.0)
    assert per_million(None, 10) is None


def test_snapshot_prices_follow_the_catalog_tiers():
    gpu = load_catalog().get("h100-sxm")
    prices = snapshot_prices(gpu)
    assert prices["secure"].usd_hr == gpu.runpod.secure.usd_hr and prices["secure"].date == gpu.runpod.secure.date
    assert set(prices) == {"secure", "community", "spot"}
