"""The page's logic without Streamlit: which GPUs a filter keeps, the ranking's rows, the call-outs, the reasons when
nothing can run, the step-time table of one GPU, the inputs behind its figures, bands and export columns.

app.py turns these into widgets and elements; every function here is plain data in, plain data out (tested in
tests/views/test_page.py). User and catalog text that ends up in Markdown goes through format.md_escape.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date
from typing import Iterable, Mapping

from planner.base.schema import DataFileError
from planner.engine.estimate import Estimate, efficiency_on
from planner.engine.feasibility import capacity_text
from planner.engine.gemm import MMA_ROWS, OVERLAP_EXPONENT, OVERLAP_ORIGIN
from planner.engine.owning import HOURS_PER_MONTH
from planner.engine.ranking import Callout, Mine, Ranking
from planner.engine.serving import max_concurrency, serving_point
from planner.inputs.ownership import OwnAssumptions
from planner.inputs.price_snapshot import PriceDates
from planner.inputs.price_snapshot import price_dates as snapshot_price_dates
from planner.inputs.catalog import STALE_AFTER_DAYS, Price
from planner.inputs.precisions import DECODE_LATENCY_ORIGIN
from planner.validation import uncertainty
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
    want = ("Rank", "GPU", "Runs?", f"Compute time ({unit})", "Whole job ($)", f"Throughput ({rate_name})", "Memory used",
            "Batch", "Own ($/month)", "Break-even (h/month)", "Electricity for the job ($)", f"{noun.capitalize()}/s",
            "$/GPU-h", "Why / notes", "Price date", f"Likely range ({unit})", f"Calibrated time ({unit})",
            "Compute cost ($)", "Calibrated cost ($)", "Limited by", "Memory (GB)", "Usable (GB)", "VRAM (GB)",
            "Price source")
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


# The Accuracy tab's column names for a bias and a verdict, shared by its leave-one-source-out and split tables.
BIAS_COLUMN = "median bias % (+ = estimate too fast)"
VERDICT_COLUMN = "meets target (and bias ±10 %)"


def accuracy_rows() -> tuple[list[dict], date]:
    """The leave-one-source-out accuracy per regime as last written by `planner validate --write-uncertainty`, with
    issue 11's targets, for the page's Accuracy tab; and the date it was written."""
    table = uncertainty.load_uncertainty()
    return [{"regime": a.regime, "rows": a.rows, "median |error| %": a.median_ape, "90th pct |error| %": a.p90_ape,
             BIAS_COLUMN: a.median_bias_pct, "target %": a.target_ape,
             VERDICT_COLUMN: None if a.meets is None else ("yes" if a.meets else "no")}
            for a in table.accuracy], table.generated


def range_sentence(e: Estimate, calibrated: bool = False) -> str:
    """The explanation's line on how far off the time may be: the 80 % range and what it rests on, or why there is
    none ('' for a GPU that can't run the plan)."""
    try:
        b = uncertainty.band_or_note(e, calibrated)
    except (DataFileError, OSError) as exc:
        return f"Likely range: the band file could not be read ({exc})."
    if isinstance(b, str):
        return f"Likely range: {b}."
    if b:
        regime = uncertainty.regime_of(e)
        return (f"Likely range (80 %): {fmt_seconds(b[0])} – {fmt_seconds(b[1])}, from the planner's errors on "
                f"published {regime} measurements of sources it was not tuned on (data/uncertainty.yaml)"
                + (", narrowed by your calibration" if calibrated else "") + ".")
    return ""


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


def _span(values: list[float]) -> str:
    lo, hi = f"{min(values):.0%}", f"{max(values):.0%}"
    return lo if lo == hi else f"{lo} to {hi}"


def _rate_text(g, runtime_factor: float) -> str:
    """How a group's FLOP rate follows from the GPU's matmul ceiling, or from the datasheet peak for an attention
    kernel with a known rate ('' for groups without FLOPs)."""
    if not g.flops:
        return ""
    if g.peak_fraction:
        return (f"; rate {g.achieved_tflops:,.4g} TFLOPS = datasheet peak {g.peak_tflops:,.4g} x {g.peak_fraction:.2f} "
                "(the attention kernel's own rate: FlashAttention-2's fraction of peak on this GPU generation x the "
                "kernel's speed relative to it)")
    kernel = g.achieved_tflops / (g.ceiling_tflops * runtime_factor * g.shape_efficiency) if g.ceiling_tflops else 1.0
    return (f"; rate {g.achieved_tflops:,.4g} TFLOPS = ceiling {g.ceiling_tflops:,.4g} x runtime {runtime_factor:.2f}"
            f" x GEMM shape {g.shape_efficiency:.2f}" + (f" x kernel {kernel:.2f}" if abs(kernel - 1) > 1e-3 else ""))


# What the step-time table's rows add up to, above it in Explain.
STEP_TIME_INTRO = (
    "Each op group of each step takes **max(FLOPs ÷ (peak × compute efficiency), bytes ÷ (bandwidth × bandwidth "
    f"efficiency))**, except GEMMs run as tensor-core tiles ({MMA_ROWS} rows or more), whose loads and MMAs overlap "
    f"only in part: **(compute^p + memory^p)^(1/p)**, p = {OVERLAP_EXPONENT:g} (their rows say so); a step adds "
    "**kernels × launch overhead**; the job is the sum over steps and passes (a pass = one batch through the model). "
    "The larger side limits the group.")


def _overlap_text(g) -> str:
    """How a group's compute and memory times combine into its time ('' for the sharp roofline corner)."""
    if not g.overlap_exponent:
        return ""
    return (f"; time = (compute^p + memory^p)^(1/p), p = {g.overlap_exponent:g}: a tiled GEMM's loads and MMAs "
            f"overlap only in part ({OVERLAP_ORIGIN})")


def step_time_rows(e: Estimate) -> list[dict]:
    """The 'Explain a GPU' step-time table: each op group of each phase, then its launches and communication;
    seconds and work are for the whole job (all passes)."""
    rows = []
    for ph in e.phases:
        steps = f"{ph.steps:,} × {ph.passes:,.4g}"
        for g in ph.groups:
            rows.append({"phase": ph.name, "op group": g.name, "steps × passes": steps,
                         "TFLOP": g.flops * ph.passes / 1e12, "GB moved": g.bytes * ph.passes / 1e9,
                         "FLOP/byte": g.flops / g.bytes if g.bytes else 0.0, "compute s": g.compute_s * ph.passes,
                         "memory s": g.memory_s * ph.passes, "time s": g.time_s * ph.passes, "limited by": g.bound,
                         "formula": g.formula + _rate_text(g, e.efficiency.compute_efficiency) + _overlap_text(g)})
        rows.append({"phase": ph.name, "op group": f"kernel launches ({ph.kernels_per_step:.0f} per step)",
                     "steps × passes": steps, "TFLOP": 0.0, "GB moved": 0.0, "FLOP/byte": 0.0, "compute s": 0.0,
                     "memory s": 0.0, "time s": ph.overhead_s * ph.passes, "limited by": "overhead",
                     "formula": f"steps x kernels x {e.efficiency.launch_overhead_us:g} us"})
        if ph.latency_s:
            rows.append({"phase": ph.name, "op group": "decode-attention latency (one call per layer per step)",
                         "steps × passes": steps, "TFLOP": 0.0, "GB moved": 0.0, "FLOP/byte": 0.0, "compute s": 0.0,
                         "memory s": 0.0, "time s": ph.latency_s * ph.passes, "limited by": "overhead",
                         "formula": f"steps x {ph.latency_s / ph.steps * 1e6:,.4g} us: each layer's attention call "
                                    f"takes a fixed latency beyond its KV bytes ({DECODE_LATENCY_ORIGIN})"})
        if ph.host_bound_s:
            rows.append({"phase": ph.name, "op group": "waiting for the CPU (host-bound dispatch)",
                         "steps × passes": steps, "TFLOP": 0.0, "GB moved": 0.0, "FLOP/byte": 0.0, "compute s": 0.0,
                         "memory s": 0.0, "time s": ph.host_bound_s * ph.passes, "limited by": "overhead",
                         "formula": f"steps x kernels x {e.efficiency.host_us_per_kernel:g} us of Python dispatch, "
                                    "minus the GPU time it overlaps"})
        if ph.step_host_s:
            rounds = "prefill chunks" if ph.steps == 1 else "steps"
            rows.append({"phase": ph.name, "op group": "host work per step (the GPU waits)", "steps × passes": steps,
                         "TFLOP": 0.0, "GB moved": 0.0, "FLOP/byte": 0.0, "compute s": 0.0, "memory s": 0.0,
                         "time s": ph.step_host_s * ph.passes, "limited by": "overhead",
                         "formula": f"{rounds} x {e.efficiency.step_host_us:g} us of the runtime's CPU work on the "
                                    "critical path (graph build, scheduling, sampling: data/runtimes.yaml)"})
        if ph.comm_s or ph.comm_hidden_s:
            hidden = (f"; {ph.comm_hidden_s * ph.passes:,.4g} s more runs under the compute "
                      f"({e.efficiency.dp_comm_overlap:g} overlap, data/runtimes.yaml)" if ph.comm_hidden_s else
                      "; not overlapped with compute")
            rows.append({"phase": ph.name, "op group": "GPU-to-GPU communication", "steps × passes": steps,
                         "TFLOP": 0.0, "GB moved": 0.0, "FLOP/byte": 0.0, "compute s": 0.0, "memory s": 0.0,
                         "time s": ph.comm_s * ph.passes, "limited by": "communication",
                         "formula": f"ring, {ph.comm_calls:,.4g} collectives per step, each at NCCL's fastest "
                                    f"protocol for its size: bytes sent / the protocol's bus bandwidth + its call "
                                    f"latency + ring steps x its hop latency ({ph.comm_protocols}) = "
                                    f"{(ph.comm_s + ph.comm_hidden_s) / ph.steps * 1e6:,.4g} us per step, {ph.link}"
                                    + hidden})
    return rows


def inputs_rows(e: Estimate, auto_batch: bool) -> list[tuple[str, str, str]]:
    """(input, value, source) behind the figures of one GPU: peaks, bandwidth, efficiencies, batch, price."""
    g, eff = e.gpu, e.efficiency
    asked = e.setup.precision.compute_path
    path = g.run_path(asked) or asked
    peak = g.peak_tflops(path)
    where = ("data/cpus.yaml (cores x base clock x FMA lanes x 2, or the extension's rate)",
             "data/cpus.yaml (memory channels x MT/s x 8 B)") if g.cpu else ("data/gpus.yaml (datasheet)",) * 2
    if g.kind == "cpu" and not g.cpu:
        where = ("measured by python -m planner.bench",) * 2
    ceiling = g.ceiling(path)
    shapes = [grp.shape_efficiency for ph in e.phases for grp in ph.groups if grp.flops and grp.shape_efficiency < 1]
    overlap = next((grp.overlap_exponent for ph in e.phases for grp in ph.groups if grp.overlap_exponent), 0.0)
    rows = [
        (f"Peak {path} TFLOPS (dense)" + (f", as {asked} is not available" if path != asked else ""),
         f"{peak:g}" if peak else "none", where[0]),
        (f"Matmul ceiling {path} ({'measured' if ceiling.measured else 'derived'})",
         f"{ceiling.tflops:,.4g} TFLOPS = {ceiling.ratio:.0%} of the datasheet peak" if peak else "none", ceiling.how),
        ("GEMM shape efficiency", (_span(shapes) + " of the ceiling" if shapes else
                                   "100 % (shapes fill whole tiles and waves, or are not known)")
         + f" on {g.sm_count or 'unknown'} SMs",
         "tile and wave quantization of the op groups' GEMMs, 128 x 128 tiles (planner/engine/gemm.py; NVIDIA Matrix "
         "Multiplication Background User's Guide)" + (f"; SM count: {g.sm_source}" if g.sm_source else "")),
        ("GEMM compute and memory overlap", f"p = {overlap:g}: time = (compute^p + memory^p)^(1/p), between "
         "their sum (p = 1) and the larger (the sharp roofline)" if overlap else
         "none modelled: the larger of compute and memory time (GEMVs, traced or formula profiles, a CPU)",
         f"planner/engine/gemm.py, {OVERLAP_ORIGIN}"),
        ("DRAM bandwidth", f"{g.mem_bw_gbps:,.0f} GB/s", where[1]),
        ("Compute efficiency", f"{eff.compute_efficiency:.0%} of the matmul ceiling", eff.source),
        ("Bandwidth efficiency", f"{eff.mem_bw_efficiency:.0%} of peak", eff.source),
        ("Launch overhead", f"{eff.launch_overhead_us:g} us per kernel (x{eff.kernels_per_layer_factor:g} kernels)",
         eff.source),
        ("Host dispatch", f"{eff.host_us_per_kernel:g} us of CPU per kernel (overlaps the GPU's work)"
         if eff.host_us_per_kernel else "none (CUDA graphs or a compiled runtime)", eff.source),
        ("Batch per GPU", f"{e.batch:,} (largest that fits: {e.max_batch:,})",
         "auto: the cheapest that fits" if auto_batch else "yours"),
        ("Parallelism", f"{e.parallelism}, {e.plan.gpus} GPU(s)", "planner"),
        attention_row(e),
    ]
    rows += link_rows(e)
    price = e.price
    if price:
        rows.append((f"Price ({e.plan.price_tier})", f"${price.usd_hr:.3f}/GPU-h",
                     f"{price.origin}, {price.date or 'undated'}: {price.source}"))
    return rows


def link_rows(e: Estimate) -> list[tuple[str, str, str]]:
    """(input, value, source) of the link the plan's collectives run over, with NCCL's protocols on it; [] without
    collectives."""
    phase = next((ph for ph in e.work if ph.comm), None)
    link = e.gpu.link_for(phase.comm_gpus) if phase else None
    if link is None:
        return []
    return [("GPU-to-GPU link", f"{phase.comm_gpus} GPUs over {link.describe()}; NCCL protocols: "
             f"{link.describe_protocols()}",
             f"data/interconnects.yaml, link '{link.kind.id}': {link.kind.source}")]


def attention_row(e: Estimate) -> tuple[str, str, str]:
    """(input, value, source) for the attention kernel this GPU runs: its memory order and speed vs FlashAttention-2."""
    k, chosen = e.setup.attention, e.plan.attention
    if any(r.code == "attention" and r.blocking for r in e.reasons):
        return ("Attention kernel", f"{chosen}: none runs on this GPU (reasons above)", k.source)
    name = k.id if k.id == chosen else f"{k.id} ({chosen}'s pick on this GPU)"
    memory = "S x S scores in DRAM, O(S^2)" if k.scores_materialized else "no score matrix, O(S)"
    return ("Attention kernel", f"{name}: {memory}, {k.speed_vs_fa2:.2f}x FlashAttention-2's FLOP rate",
            k.speed_source or k.source)


def md_table(header: list[str], rows: Iterable[Iterable]) -> str:
    """A small Markdown table (it wraps long text, unlike a dataframe); every cell escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(md_escape(x, 400) for x in r) + " |" for r in rows])


def memory_sentence(e: Estimate) -> str:
    """Memory per GPU against the usable memory and what it follows from, all in decimal GB."""
    g, need, usable = e.gpu, e.memory.total_gb, e.usable_gb
    verdict = (f"fits: {need / g.vram_gb:.0%} of the card, under the {e.plan.memory_target:.0%} memory target "
               f"({usable - need:.2f} GB spare)" if need <= usable else f"does NOT fit, {need - usable:.2f} GB short")
    return (f"Total **{need:.3g} GB** per GPU at batch {e.batch:,}, of {usable:.3g} GB usable ("
            f"{capacity_text(g, e.plan.memory_target)}): {verdict}.")


def gpu_caption(e: Estimate) -> str:
    g = e.gpu
    if g.cpu:
        c = g.cpu
        return (f"CPU · {g.architecture} · {c.cores} cores ({c.threads} threads) at {c.base_ghz:g} GHz base · "
                f"{c.isa_text()} · host RAM {g.vram_gib:g} GiB ({g.vram_gb:.3g} GB, {c.memory_config}) at "
                f"{g.mem_bw_gbps:,.1f} GB/s · {g.market}")
    if g.kind == "cpu":
        return f"CPU (measured) · {g.vram_gb:.3g} GB host RAM at {g.mem_bw_gbps:,.1f} GB/s measured"
    return (f"{g.architecture} · {g.sm} · {g.vram_gib:g} GiB ({g.vram_gb:.3g} GB) {g.memory_type} at "
            f"{g.mem_bw_gbps:,.0f} GB/s · {g.market}")


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
    return (f"{fmt_seconds(e.seconds)} compute · **{fmt_usd(ranked.bill_usd(e))}** {billed} "
            f"at ${e.price.usd_hr:.2f}/GPU-h"
            + (f" × {gpus}" if gpus > 1 else "") + (f" · {fmt_count(r)} {unit}" if r else "") + note)


def callout_title(c: Callout) -> str:
    return md_escape(short_name(c.estimate.gpu.name))


def serving_rows(plan, gpus, facts, prompt: int, output: int, ttft_s: float | None,
                 tpot_s: float | None) -> list[dict]:
    """Per GPU: one sequence alone, and the most sequences served at once within the latency targets (TTFT, TPOT
    in seconds): latencies in ms, output tokens/s and $ per 1M output tokens (planner.engine.serving); a device
    the plan's runtime can't run on (a CPU) is left out."""
    rows = []
    for gpu in gpus:
        if efficiency_on(plan, gpu, facts).unsupported:  # the runtime can't run on this device (a CPU)
            continue
        alone = serving_point(plan, gpu, facts, 1, prompt, output)
        best = max_concurrency(plan, gpu, facts, prompt, output, ttft_s, tpot_s)
        row = {"GPU": gpu.name, "TTFT alone (ms)": alone.ttft_s * 1e3, "TPOT alone (ms)": alone.tpot_s * 1e3,
               "Max concurrency in target": best.concurrency if best else 0,
               "TPOT at max (ms)": best.tpot_s * 1e3 if best else None,
               "Tokens/s at max": best.tokens_per_s if best else None,
               "$ per 1M tokens at max": best.usd_per_m_tokens if best else None, "gpu_id": gpu.id}
        rows.append(row)
    return rows


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
