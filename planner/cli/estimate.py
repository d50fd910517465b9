"""`planner estimate`: the ranking as a table, JSON or CSV, your own cards on top, how old the prices are."""

from __future__ import annotations

import argparse
import sys

from planner.cli.plans import device_names, facts_of, job_overheads, load_calibrations, plan_from_args
from planner.engine.estimate import estimate_all
from planner.engine.ranking import Ranking, my_gpus, rank
from planner.inputs.ownership import load_ownership
from planner.inputs.ownership import with_values as own_with_values
from planner.inputs.price_snapshot import price_dates, stale_note, utc_today
from planner.views.owning_text import own_assumptions_sentence
from planner.views.report import emit, estimate_row, flat_row, narrow, own_fields


def cmd_estimate(a: argparse.Namespace) -> int:
    plan = plan_from_args(a)
    fleet = load_calibrations(a)
    facts = facts_of(a)
    adjust = fleet.adjust if fleet else None
    results = estimate_all(plan, facts, gpu_names=device_names(a), adjust=adjust, include_cpus=a.include_cpu)
    overheads = job_overheads(a, facts)
    ranked = rank(results, overheads)  # as the page ranks: by what the whole job bills
    results = ranked.estimates
    today, stale = utc_today(), a.stale_after_days
    owned = tuple(o for group in (a.own or ()) for o in group)
    assumptions = own_with_values(load_ownership(gpu_ids=facts.catalog.ids()), dict(a.own_assumption or ()))
    mine = my_gpus(plan, owned, facts, assumptions, overheads, adjust)
    flat = ([{"yours": m.owned.text(), **flat_row(m.estimate, m.ranking, today, stale), **own_fields(m.cost)}
             for m in mine] + [flat_row(e, ranked, today, stale) for e in results])
    print(emit([{"yours": m.owned.text(), **estimate_row(m.estimate, m.ranking, today, stale), **own_fields(m.cost)}
                for m in mine] + [estimate_row(e, ranked, today, stale) for e in results], a.format,
               flat if a.wide or a.format != "table" else narrow(flat)))
    if mine:  # stderr: the rows stay machine-readable
        print(f"your GPUs: the first {len(mine)} row(s), the plan on all cards of a kind together. "
              f"{own_assumptions_sentence(assumptions)}", file=sys.stderr)
    for line in price_date_lines(ranked, today, stale):  # stderr: the rows stay machine-readable
        print(line, file=sys.stderr)
    return 0


def price_date_lines(ranked: Ranking, today, stale_after_days: int) -> list[str]:
    """How old the prices behind a ranking are, and whether the cheapest whole job rests on a stale one."""
    results = ranked.estimates
    tier = results[0].plan.price_tier if results else "-"
    lines = [f"prices ({tier}): {price_dates((e.price for e in results), today, stale_after_days).sentence()}"]
    cheapest = next((e for e in results if ranked.job(e) and e.price), None)
    note = cheapest and stale_note(cheapest.price, today, stale_after_days)
    if note:
        lines.append(f"warning: the cheapest whole job ({cheapest.gpu.name}) {note}")
    return lines
