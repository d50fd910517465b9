"""`planner prices`: the prices in use, live ones, and --refresh to write a dated snapshot."""

from __future__ import annotations

import argparse
import json
import sys

from planner.clients import cloud_catalog, live_prices
from planner.inputs import cloud_prices
from planner.inputs.catalog import PRICE_TIERS
from planner.inputs.facts import load_facts
from planner.inputs.price_snapshot import price_dates, snapshot_table, utc_today
from planner.views.report import emit, price_rows


def _write_cloud_snapshots(a: argparse.Namespace, catalog) -> int:
    names = cloud_prices.load_cloud_names(catalog=catalog)
    commits = cloud_catalog.parse_commits(a.catalog_commit, tuple(names.providers))
    written, problems = cloud_catalog.write_snapshots(a.skypilot_catalog, a.clouds_out or cloud_prices.CLOUD_PRICES_DIR,
                                                      names, utc_today(), commits)
    for line in problems:
        print(f"note: {line}", file=sys.stderr)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    if not written:
        print(f"error: no cloud price file written: no <cloud>/vms.csv of {', '.join(names.providers)} with a catalog "
              f"GPU under {a.skypilot_catalog}", file=sys.stderr)
        return 2
    return 0


def cmd_prices(a: argparse.Namespace) -> int:
    catalog = load_facts().catalog
    if a.skypilot_catalog:
        return _write_cloud_snapshots(a, catalog)
    if a.refresh or a.live:
        table = live_prices.fetch_live(catalog, api_key=live_prices.api_key_from_env(), url=a.url,
                                       timeout_s=a.timeout, ttl_s=0)
    else:
        table = snapshot_table(catalog)
    clouds = cloud_prices.load_cloud_prices(catalog)
    table = cloud_prices.with_providers(table, clouds, cloud_prices.parse_providers(a.providers, clouds.providers()),
                                        plan_gpus=cloud_prices.MAX_MACHINE_GPUS)
    if a.refresh:
        if not table.ok:
            print(f"error: could not refresh prices, no snapshot written: {table.message}", file=sys.stderr)
            return 2
        path = live_prices.write_snapshot(table, a.out, accept=a.accept)
        print(f"wrote {path} ({table.message})", file=sys.stderr)
    if a.format == "json":
        print(json.dumps({"source": table.source, "as_of": table.as_of, "message": table.message, "ok": table.ok,
                          "unmapped": list(table.unmapped), "prices": price_rows(table)}, indent=2, default=str))
    else:
        print(table.message)
        print(emit(price_rows(table), "table"))
        for tier in PRICE_TIERS:  # how old each tier's prices are (stale: older than STALE_AFTER_DAYS or undated)
            dates = price_dates((tiers.get(tier) for tiers in table.prices.values()), utc_today())
            print(f"{tier}: {dates.sentence()}")
    return 0
