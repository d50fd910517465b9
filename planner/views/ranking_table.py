"""The ranking table without Streamlit: which GPUs the filters keep, one row per GPU in ranking order (and your own
cards pinned above), the columns' order, the likely-range bands and export columns, the call-outs' lines, and what to
say when nothing can run. Plain data in, plain data out (tests/views/test_ranking_table.py); user and catalog text that
ends up in Markdown goes through format.md_escape.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date
from collections.abc import Iterable, Mapping

from planner.base.schema import DataFileError
from planner.engine.estimate import Estimate
from planner.engine.ranking import Callout, Mine, Ranking
from planner.engine.utilization import cost_per_billion_tokens, mfu
from planner.inputs.catalog import STALE_AFTER_DAYS, Price
from planner.inputs.price_snapshot import PriceDates
from planner.inputs.price_snapshot import price_dates as snapshot_price_dates
from planner.validation import uncertainty
from planner.views.cluster_text import cluster_json
from planner.views.format import fmt_count, fmt_seconds, fmt_usd, md_escape, short_name, time_unit

NOUNS = {"generate": "sequences", "infer": "samples", "train": "samples"}


@dataclass(frozen=True)
class Filters:
    """The ranking's filters: vendor ('all', 'NVIDIA', 'AMD'), minimum VRAM in decimal GB, maximum $/GPU-hour
    (0 = any), only GPUs that can run the plan, only GPUs with a price in the plan's tier."""

    vendor: str = "all"
    min_vram_gb: float = 0.0
    max_usd_hr: float = 0.0
    feasible_only: bool = False
    priced_only: bool = False


def keep(e: Estimate, f: Filters) -> bool:
    """Whether the filters keep this GPU; VRAM is compared in decimal GB, the unit the table shows."""
    p = e.price
    return ((f.vendor == "all" or e.gpu.vendor == f.vendor) and e.gpu.vram_gb >= f.min_vram_gb
            and (not f.max_usd_hr or (p is not None and p.usd_hr <= f.max_usd_hr))
            and (e.feasible or not f.feasible_only) and (p is not None or not f.priced_only))


def filtered(estimates: Iterable[Estimate], f: Filters) -> list[Estimate]:
    return [e for e in estimates if keep(e, f)]


def rate(e: Estimate) -> float | None:
    """Throughput in the unit the model is counted in: tokens/s for token models, else items (samples)/s."""
    return e.tokens_per_s if e.plan.model.counts_tokens else e.items_per_s


def rate_unit(job: str, counts_tokens: bool) -> str:
    return "tokens/s" if counts_tokens else f"{NOUNS[job]}/s"


def reason_text(e: Estimate) -> str:
    """Every reason in one cell: ✗ blocks the plan, • is a note."""
    blocking = [r.text for r in e.reasons if r.blocking]
    notes = [r.text for r in e.reasons if not r.blocking]
    return "; ".join([f"✗ {t}" for t in blocking] + [f"• {t}" for t in notes])


def price_age(p: Price | None, today: date, stale_after_days: int = STALE_AFTER_DAYS) -> str | None:
    """'⚠ 519 d (2025-06-21)' (stale), '13 d (2026-11-09)', 'yours' for your own price; None without a price.
    The age comes first so that a narrow column still shows it."""
    if p is None:
        return None
    if p.origin == "custom":
        return "yours"
    age = p.age_days(today)
    if age is None:
        return "undated ⚠"
    return ("⚠ " if p.is_stale(today, stale_after_days) else "") + f"{age:,} d ({p.date.isoformat()})"


def price_dates(rows: Iterable[Estimate], today: date, stale_after_days: int = STALE_AFTER_DAYS) -> PriceDates:
    """The dates behind a ranking's prices in its tier (planner.inputs.price_snapshot.price_dates)."""
    return snapshot_price_dates((e.price for e in rows), today, stale_after_days)


def ranking_rows(rows: list[Estimate], ranked: Ranking, job: str, calibrated: Mapping[str, Estimate],
                 bands: Mapping[str, tuple[float, float] | str], today: date | None = None,
                 stale_after_days: int = STALE_AFTER_DAYS) -> tuple[list[dict], str, str]:
    """(table rows, time unit, rate unit): one row per GPU of `rows` in ranking order (its name without the vendor's
    brand words), the whole job's bill from `ranked` when it has overheads, every capacity and use in decimal GB."""
    unit, div = time_unit(e.seconds for e in rows)
    counts_tokens = bool(rows) and rows[0].plan.model.counts_tokens
    rate_name = rate_unit(job, counts_tokens)
    noun = NOUNS[job]
    out = []
    for i, e in enumerate(rows, 1):
        p, cal, band = e.price, calibrated.get(e.gpu.id), bands.get(e.gpu.id)
        row = {"Rank": i, "GPU": short_name(e.gpu.name), "Runs?": e.feasible, "Why / notes": reason_text(e),
               f"Compute time ({unit})": e.seconds / div if e.seconds else None}
        if bands:
            row[f"Likely range ({unit})"] = (NO_RANGE_CELL if isinstance(band, str) else
                                             f"{band[0] / div:.3g} – {band[1] / div:.3g}" if band else None)
        if calibrated:
            row[f"Calibrated time ({unit})"] = cal.seconds / div if cal and cal.seconds else None
        row[f"Throughput ({rate_name})"] = rate(e)
        if counts_tokens:
            row[f"{noun.capitalize()}/s"] = e.items_per_s
        if job == "train":  # what training runs are compared by (planner/engine/utilization.py)
            row["MFU"] = mfu(e)
            if counts_tokens:
                row["$ per 1B tokens"] = cost_per_billion_tokens(e)
        row["Compute cost ($)"] = e.cost()
        if ranked.overheads:
            row["Whole job ($)"] = ranked.bill_usd(e)
        if calibrated:
            row["Calibrated cost ($)"] = cal.cost() if cal else None
        row.update({"$/GPU-h": p.usd_hr if p else None,
                    "Price date": price_age(p, today or date.today(), stale_after_days),
                    "Price source": f"{p.origin}: {p.source}" if p else "no price: enter your own in 'Explain a GPU'",
                    "Limited by": e.bound if e.feasible else "-", "Batch": e.batch,
                    "Memory (GB)": e.memory.total_gb, "Usable (GB)": e.usable_gb, "VRAM (GB)": e.gpu.vram_gb,
                    "Memory used": e.memory.total_gb / e.gpu.vram_gb, "gpu_id": e.gpu.id})
        out.append(row)
    return out, unit, rate_name


def ranking_order(columns: Iterable[str], unit: str, rate_name: str, job: str) -> list[str]:
    """The ranking's columns as shown, left to right: what decides a rental first (rank, GPU, whether it runs, time,
    what the job bills, owning vs renting when you own cards, throughput, memory, batch, the price, why), the details
    after; only columns present, gpu_id never shown."""
    noun = NOUNS[job]
    want = ("Rank", "GPU", "Runs?", f"Compute time ({unit})", "Whole job ($)", f"Throughput ({rate_name})", "MFU",
            "$ per 1B tokens", "Memory used", "Batch", "Own ($/month)", "Break-even (h/month)",
            "Electricity for the job ($)", f"{noun.capitalize()}/s", "$/GPU-h", "Why / notes", "Price date",
            f"Likely range ({unit})",
            f"Calibrated time ({unit})", "Compute cost ($)", "Calibrated cost ($)", "Limited by", "Memory (GB)",
            "Usable (GB)", "VRAM (GB)", "Price source")
    have = set(columns)
    return [c for c in want if c in have]


def nothing_runs_message(shown: list[Estimate], all_estimates: list[Estimate]) -> str | None:
    """What to say when no GPU in the table can run the plan (None when one can): the commonest blocking reasons,
    or that the filters hide every GPU (and whether any hidden one could run it)."""
    if any(e.feasible for e in shown):
        return None
    if not shown:
        hidden_ok = sum(e.feasible for e in all_estimates)
        return ("The filters hide every GPU" + (f"; {hidden_ok} of them can run this plan: loosen the filters."
                                                 if hidden_ok else ", and none of them can run this plan either."))
    counts = Counter(r.code for e in shown for r in e.reasons if r.blocking)
    reasons = ", ".join(f"{code} ({n} GPU{'s' if n > 1 else ''})" for code, n in counts.most_common())
    return (f"No GPU in the list can run this plan. Most common reasons: {reasons}. Try a smaller batch, a lower "
            "precision, activation checkpointing or more GPUs per job.")


NO_RANGE_CELL = "no measurement"  # the table's short form of uncertainty.NO_MEASUREMENT; the note says why


def bands(rows: Iterable[Estimate], calibrated: Mapping[str, Estimate]) -> dict[str, tuple[float, float] | str]:
    """GPU id -> (low_s, high_s), the 80 % range from published measurements of sources the planner was not tuned on,
    or the reason no measurement backs one (uncertainty.band_note); {} when the band file can't be read."""
    out: dict[str, tuple[float, float] | str] = {}
    for e in rows:
        try:
            b = uncertainty.band_or_note(e, e.gpu.id in calibrated)
        except (DataFileError, OSError):
            return {}
        if b:
            out[e.gpu.id] = b
    return out


def extra_columns(rows: Iterable[Estimate], calibrated: Mapping[str, Estimate],
                  bands_: Mapping[str, tuple[float, float] | str]) -> dict[str, dict]:
    """Per GPU, the export columns beyond the estimate: calibrated time and cost, the band (seconds, 4 digits) or
    why there is none."""
    out = {}
    for e in rows:
        extra = {}
        if e.gpu.id in calibrated:
            c = calibrated[e.gpu.id]
            extra.update(calibrated_seconds=c.seconds, calibrated_cost_usd=c.cost())
        b = bands_.get(e.gpu.id)  # a note (no range) is in every export row already (report: range_note)
        if b and not isinstance(b, str):
            extra.update(seconds_low=float(f"{b[0]:.4g}"), seconds_high=float(f"{b[1]:.4g}"))
        if extra:
            out[e.gpu.id] = extra
    return out


def callout_line(c: Callout, ranked: Ranking, gpus: int, today: date | None = None,
                 stale_after_days: int = STALE_AFTER_DAYS) -> str:
    """A call-out's compute time, the whole job's bill (compute alone without overheads) and rate; a stale price
    says so."""
    e = c.estimate
    r = rate(e)
    unit = "tokens/s" if e.plan.model.counts_tokens else "items/s"
    today = today or date.today()
    stale = e.price.is_stale(today, stale_after_days)
    age = e.price.age_days(today)
    note = (f" · ⚠ rests on a price from {e.price.date.isoformat()} ({age:,} days old)" if stale and age is not None
            else " · ⚠ rests on an undated price" if stale else "")
    billed = "whole job" if ranked.overheads else "compute"
    clusters = cluster_json(e)  # a plan beyond one node: who rents these GPUs as a cluster
    if clusters is not None:
        fits = ", ".join(o["provider"] for o in clusters["fits"])
        note += (f" · clusters of {gpus} from {fits}" if fits else
                 f" · no provider's cluster offer of {gpus} of these GPUs is known (Explain says which)")
    return (f"{fmt_seconds(e.seconds)} compute · **{fmt_usd(ranked.bill_usd(e))}** {billed} "
            f"at ${e.price.usd_hr:.2f}/GPU-h"
            + (f" × {gpus}" if gpus > 1 else "") + (f" · {fmt_count(r)} {unit}" if r else "") + note)


def callout_title(c: Callout) -> str:
    return md_escape(short_name(c.estimate.gpu.name))


# ---------------------------------------------------------------- the user's own GPUs


def mine_rows(mine: Iterable[Mine], job: str, unit: str, div: float, today: date | None = None,
              stale_after_days: int = STALE_AFTER_DAYS) -> list[dict]:
    """Rows pinned above the ranking, one per kind of card owned, with the ranking's columns (ranking_rows) and
    the owning ones; Rank 0 keeps them on top when the table is sorted by rank."""
    out = []
    for m in mine:
        rows, _, _ = ranking_rows([m.estimate], m.ranking, job, {}, {}, today, stale_after_days)
        row = rows[0]
        row.pop(next(k for k in row if k.startswith("Compute time (")))
        e, c = m.estimate, m.cost
        row.update({"Rank": 0, "GPU": f"★ Yours: {m.owned.count} × {short_name(e.gpu.name)}",
                    f"Compute time ({unit})": e.seconds / div if e.seconds else None,
                    "Electricity for the job ($)": c.job_energy_usd, "Own ($/month)": c.fixed_usd_per_month,
                    "Break-even (h/month)": c.break_even_h_per_month, "gpu_id": e.gpu.id})
        out.append(row)
    return out
