"""Exports of a ranking: CSV and JSON that carry the plan's inputs, its share link and the catalog and price dates, so
a file alone still says where its numbers come from. Pure: no streamlit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable, Mapping, Sequence

from planner.engine.estimate import Estimate
from planner.engine.ranking import Mine, Ranking
from planner.inputs.models import ModelProfile
from planner.views.plan_inputs import Inputs, plan_sentence
from planner.views.report import csv_text, estimate_row, flat_row, own_fields
from planner.views.share import encode


@dataclass(frozen=True)
class ExportContext:
    """What an export says about where its numbers come from."""

    link: str
    catalog_path: str
    price_source: str
    price_as_of: str
    extra_columns: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # gpu_id -> column -> value
    ranking: Ranking | None = None  # the ranking the rows come from: each GPU's whole-job bill
    mine: Sequence[Mine] = ()  # the user's own cards, rows on top of the ranking


def _header(inputs: Inputs, ctx: ExportContext, model: ModelProfile) -> dict[str, Any]:
    return {"plan": plan_sentence(inputs, model), "link": ctx.link, "inputs": encode(inputs),
            "catalog": ctx.catalog_path, "price_source": ctx.price_source, "prices_as_of": ctx.price_as_of}


def export_json(inputs: Inputs, model: ModelProfile, estimates: Iterable[Estimate], ctx: ExportContext) -> str:
    """The ranking as JSON: the inputs and their link, catalog and price dates, then one row per GPU."""
    rows = []
    for e in estimates:
        row = estimate_row(e, ctx.ranking, stale_after_days=inputs.stale)
        row.update(ctx.extra_columns.get(e.gpu.id, {}))
        rows.append(row)
    mine = [{"owned": m.owned.text(), **estimate_row(m.estimate, m.ranking, stale_after_days=inputs.stale),
             **own_fields(m.cost)} for m in ctx.mine]
    return json.dumps({**_header(inputs, ctx, model), **({"my_gpus": mine} if mine else {}), "ranking": rows},
                      indent=2, default=str)


def export_csv(inputs: Inputs, model: ModelProfile, estimates: Iterable[Estimate], ctx: ExportContext) -> str:
    """The ranking as plain CSV (the header row first, as every CSV reader expects), the user's own cards first
    (column 'yours'); each row also carries the plan's link, the price source and date, so a row alone still says
    where it comes from. Prices count as stale after the page's threshold (inputs.stale)."""
    mine = [(m.estimate, m.ranking, {"yours": m.owned.text()}, own_fields(m.cost)) for m in ctx.mine]
    rows = []
    for e, ranked, first, last in mine + [(e, ctx.ranking, {}, ctx.extra_columns.get(e.gpu.id, {})) for e in estimates]:
        row = {**first, **flat_row(e, ranked, stale_after_days=inputs.stale)}
        price = e.price
        row["price_date"] = price.date.isoformat() if price and price.date else None
        row["price_origin"] = price.origin if price else None
        row["price_provider"] = (price.provider + (f" {price.region}" if price.region else "")) if price else None
        row["price_source"] = price.source if price else None
        row.update(last)
        row.update(plan_link=ctx.link, prices=f"{ctx.price_source}, as of {ctx.price_as_of}")
        rows.append(row)
    return csv_text(rows)
