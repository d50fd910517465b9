"""Dollars from seconds and $/GPU-hour."""

from datetime import date

import pytest

from planner.engine.cost import job_cost_usd, per_million
from planner.inputs.catalog import Price, load_catalog


def test_cost_is_hours_times_gpus_times_price():
    price = Price(2.0, date(2026, 1, 1), "test")
    assert job_cost_usd(1800, 4, price) == pytest.approx(0.5 * 4 * 2.0)  # half an hour on 4 GPUs at $2/h
    assert job_cost_usd(1800, 1, None) is None


def test_per_million_items():
    assert per_million(0.25, 1_000_000) == pytest.approx(0.25)
    assert per_million(0.5, 250_000) == pytest.approx(2.0)
    assert per_million(None, 10) is None


def test_listed_prices_follow_the_catalog_tiers():
    gpu = load_catalog().get("h100-sxm")
    prices = gpu.listed_prices()
    assert prices["secure"].usd_hr == gpu.runpod.secure.usd_hr and prices["secure"].date == gpu.runpod.secure.date
    assert set(prices) == {"secure", "community", "spot"}


def test_no_cost_without_a_finite_time():
    assert job_cost_usd(float("inf"), 1, Price(2.0, None, "test")) is None
