"""Owning the cards vs renting the same ones: the purchase written off over a lifetime, electricity while a job runs,
against the cloud's price per GPU-hour, and the hours of use a month at which both cost the same. Pure."""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engine.estimate import Estimate, estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import Facts
from planner.inputs.ownership import OwnAssumptions, Owned

HOURS_PER_MONTH = 365 * 24 / 12  # 730 h: an average month
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class OwnCost:
    """Owning `count` cards vs renting as many. USD throughout; None where a figure lacks its input (no purchase
    price, no TDP, no cloud price in the plan's tier). break_even_h_per_month None with both rates known: renting
    never costs more than the electricity alone."""

    gpu_id: str
    count: int
    purchase_usd_each: float | None
    purchase_source: str
    fixed_usd_per_month: float | None  # purchase of all cards / lifetime in months
    power_kw: float | None  # all cards, while a job runs
    energy_usd_per_h: float | None
    job_hours: float | None  # compute only: an owned machine has no pod to start or bill
    job_energy_usd: float | None
    rent_usd_per_h: float | None  # all cards, the plan's tier
    job_rent_usd: float | None  # the whole job on a rented pod of as many cards
    break_even_h_per_month: float | None


def estimate_owned(plan: Plan, owned: Owned, facts: Facts, adjust=None) -> Estimate:
    """The plan run on all the owned cards of one kind together (GPUs per job = the cards owned)."""
    return estimate_gpu(replace(plan, gpus=owned.count), facts.catalog.get(owned.gpu_id), facts, adjust)


def own_cost(e: Estimate, owned: Owned, a: OwnAssumptions, job_rent_usd: float | None) -> OwnCost:
    """Cost to own vs rent for the estimate `e` of the plan on the owned cards (e.plan.gpus == owned.count);
    job_rent_usd is what the same job bills on a rented pod of as many cards (planner.engine.ranking)."""
    n = owned.count
    each = owned.paid_usd if owned.paid_usd is not None else a.purchase(owned.gpu_id)
    source = ("the price you paid" if owned.paid_usd is not None
              else a.source(f"purchase_usd.{owned.gpu_id}") or "no purchase price on file: give yours")
    fixed = n * each / (a.lifetime_years * 12) if each is not None else None
    tdp = e.gpu.tdp_w
    power_kw = n * tdp * a.utilization / 1000 if tdp else None
    energy = power_kw * a.usd_per_kwh if power_kw is not None else None
    hours = e.seconds / SECONDS_PER_HOUR if e.feasible and e.seconds is not None else None
    rent = n * e.price.usd_hr if e.price else None
    return OwnCost(owned.gpu_id, n, each, source, fixed, power_kw, energy, hours,
                   hours * energy if hours is not None and energy is not None else None, rent, job_rent_usd,
                   break_even_hours(fixed, rent, energy))


def break_even_hours(fixed_usd_per_month: float | None, rent_usd_per_h: float | None,
                     energy_usd_per_h: float | None) -> float | None:
    """Hours a month h where renting (h x rent) costs what owning does (fixed + h x energy); None without the
    figures or when the rent is no more than the electricity (owning never catches up)."""
    if fixed_usd_per_month is None or rent_usd_per_h is None or energy_usd_per_h is None:
        return None
    margin = rent_usd_per_h - energy_usd_per_h
    return fixed_usd_per_month / margin if margin > 0 else None
