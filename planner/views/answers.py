"""The answer to the question asked, at the top of the page: the verdict on the GPU the plan names (runs it or not,
its rank, time, bill and memory) and why the GPUs that can't run the plan can't. Markdown; user and catalog text
escaped."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from planner.engine.estimate import Estimate
from planner.engine.ranking import Ranking
from planner.views import ranking_table
from planner.views.format import fmt_count, fmt_seconds, fmt_usd, md_escape, short_name

NAMES_SHOWN = 3  # GPUs named per blocking reason; the rest are counted
REASONS_SHOWN = 2  # blocking reasons listed above the ranking; the rest are counted (each GPU's row has all of them)
REASON_CHARS = 160  # a reason's words as listed there


def verdict(e: Estimate, ranked: Ranking) -> str:
    """One GPU's answer: whether it runs the plan and, if so, its rank, compute time, whole-job bill, batch, rate and
    memory against the card's; if not, every blocking reason."""
    name = f"**{md_escape(short_name(e.gpu.name))}**"
    if not e.feasible:
        why = "; ".join(md_escape(r.text, 400) for r in e.reasons if r.blocking)
        return f"{name} · ✗ can't run this plan: {why}."
    rank = next(i for i, x in enumerate(ranked.estimates, 1) if x.gpu.id == e.gpu.id)
    bill = ranked.bill_usd(e)
    rate = ranking_table.rate(e)
    parts = [f"{name} · ✓ runs it · rank {rank} of {len(ranked.estimates)}", f"{fmt_seconds(e.seconds)} compute"]
    if bill is not None:
        parts.append(f"**{fmt_usd(bill)}** {'whole job' if ranked.overheads else 'compute'}")
    parts.append(f"batch {e.batch:,}")
    if rate:
        parts.append(f"{fmt_count(rate)} {ranking_table.rate_unit(e.plan.workload.kind, e.plan.model.counts_tokens)}")
    parts.append(f"{e.memory.total_gb:.3g} of {e.gpu.vram_gb:.3g} GB")
    return " · ".join(parts)


def cross_check(model) -> str | None:
    """Where the model's profile disagrees with the figures its source (often the user's own document) reports, and
    why, with the profile's source; None when it does not."""
    if not model.cross_check:
        return None
    return (f"**Your figures vs the planner's** · {md_escape(model.cross_check, 600)} "
            f"(profile: {md_escape(model.source, 80)})")


def blocked_summary(rows: Iterable[Estimate]) -> str | None:
    """Why the GPUs that can't run the plan can't, grouped by reason: one reason's words (its first GPU's) and the
    GPUs it blocks; None when every GPU shown runs it."""
    by_code: dict[str, list[Estimate]] = defaultdict(list)
    first_text: dict[str, str] = {}
    blocked = [e for e in rows if not e.feasible]
    for e in blocked:
        for r in (r for r in e.reasons if r.blocking):
            by_code[r.code].append(e)
            first_text.setdefault(r.code, r.text)
    if not blocked:
        return None
    lines = []
    ranked = sorted(by_code.items(), key=lambda kv: -len(kv[1]))
    for code, ests in ranked[:REASONS_SHOWN]:
        names = ", ".join(md_escape(short_name(e.gpu.name)) for e in ests[:NAMES_SHOWN])
        more = f" and {len(ests) - NAMES_SHOWN} more" if len(ests) > NAMES_SHOWN else ""
        lines.append(f"{names}{more}: {md_escape(first_text[code], REASON_CHARS)}")
    if len(ranked) > REASONS_SHOWN:
        lines.append(f"{len(ranked) - REASONS_SHOWN} more reason(s) in the rows' 'Why / notes'")
    noun = "GPU" if len(blocked) == 1 else "GPUs"
    return f"**{len(blocked)} {noun} can't run this plan** (the first GPU's words): " + " · ".join(lines)
