"""The cards a user owns, in words: the 'Your GPUs' verdict on each kind of card (runs it or not, what it needs, cost
to own against renting, the break-even use) and the owning assumptions. Catalog text is escaped for Markdown.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.engine.owning import HOURS_PER_MONTH
from planner.engine.ranking import Mine
from planner.inputs.ownership import OwnAssumptions
from planner.views.format import fmt_count, fmt_seconds, fmt_usd, md_escape, short_name
from planner.views.ranking_table import rate


@dataclass(frozen=True)
class Verdict:
    """The 'Your GPUs' card in Markdown: headline (runs or not, time, batch, rate), what it needs (the software
    notes, or why it can't run), cost to own vs rent in short, and the whole cost sentence behind it."""

    headline: str
    needs: str
    cost: str
    details: str


def own_verdict(m: Mine, tier: str) -> Verdict:
    """The card of one kind of owned card; catalog text is escaped."""
    e = m.estimate
    name = f"Your {m.owned.count} × {md_escape(short_name(e.gpu.name))}"
    details = own_cost_sentence(m, tier)
    if not e.feasible:
        blocking = "; ".join(md_escape(r.text, 300) for r in e.reasons if r.blocking)
        return Verdict(f"**{name}** · ✗ can't run this plan", f"Why: {blocking}.", "", details)
    r = rate(e)
    unit = "tokens/s" if e.plan.model.counts_tokens else "items/s"
    head = (f"**{name}** · ✓ runs it · **{fmt_seconds(e.seconds)}** · batch {e.batch:,} per GPU"
            + (f" · {fmt_count(r)} {unit}" if r else "") + f" · {md_escape(e.parallelism)} parallel"
            * (m.owned.count > 1))
    software = [md_escape(x.text, 300) for x in e.reasons
                if not x.blocking and x.code in ("pytorch_build", "precision")]
    return Verdict(head, ("Needs: " + "; ".join(software)) if software else "", own_cost_short(m, tier), details)


def own_cost_short(m: Mine, tier: str) -> str:
    """'Own $41.65/month + $0.078/h power · rent $0.69/h (community) · break-even 68 h/month' (what is known)."""
    c = m.cost
    own = (f"own {fmt_usd(c.fixed_usd_per_month)}/month" if c.fixed_usd_per_month is not None
           else "own: no purchase price on file")
    if c.energy_usd_per_h is not None:
        own += f" + {fmt_usd(c.energy_usd_per_h)}/h power"
    rent = f"rent {fmt_usd(c.rent_usd_per_h)}/h ({tier})" if c.rent_usd_per_h is not None else f"no {tier} rent"
    if c.break_even_h_per_month is not None:
        even = (f"**break-even {c.break_even_h_per_month:,.0f} h/month**"
                + (" (more than a month: renting stays cheaper)" if c.break_even_h_per_month > HOURS_PER_MONTH else ""))
    else:
        even = "no break-even"
    return f"Cost: {own} · {rent} · {even}"


def own_cost_sentence(m: Mine, tier: str) -> str:
    """Cost to own (purchase written off + electricity) against renting as many cards, and the break-even use."""
    c = m.cost
    parts = []
    if c.fixed_usd_per_month is not None:
        parts.append(f"owning: {fmt_usd(c.fixed_usd_per_month)}/month ({c.count} × {fmt_usd(c.purchase_usd_each)}, "
                     f"{md_escape(c.purchase_source, 300)}, written off over the lifetime)")
    else:
        parts.append("owning: no purchase price on file for this card (give yours as gpu-id:count:usd)")
    if c.energy_usd_per_h is not None:
        parts.append(f"electricity {fmt_usd(c.energy_usd_per_h)}/h ({c.power_kw:.3g} kW), "
                     f"{fmt_usd(c.job_energy_usd)} for this job")
    if c.rent_usd_per_h is not None:
        parts.append(f"renting {c.count} of them ({tier}): {fmt_usd(c.rent_usd_per_h)}/h, "
                     f"{fmt_usd(c.job_rent_usd)} for this whole job")
    else:
        parts.append(f"no cloud price for this card in the {tier} tier")
    if c.break_even_h_per_month is not None:
        h = c.break_even_h_per_month
        parts.append(f"**break-even at {h:,.0f} h of use a month**"
                     + (" (more than a month has: renting stays cheaper)" if h > HOURS_PER_MONTH
                        else "; above it owning is cheaper"))
    elif c.fixed_usd_per_month is not None and c.rent_usd_per_h is not None and c.energy_usd_per_h is not None:
        parts.append("the rent is no more than the electricity: owning never catches up")
    return "Cost: " + " · ".join(parts) + "."


def own_assumptions_sentence(a: OwnAssumptions) -> str:
    """The owning assumptions in one line, each with its value (sources: data/ownership.yaml)."""
    return (f"Assumed: written off over {a.lifetime_years:g} years; drawing {a.utilization:.0%} of TDP while a job "
            f"runs; electricity at ${a.usd_per_kwh:.3g}/kWh (data/ownership.yaml, each with its source).")
