"""Estimates as plain rows (dicts) for JSON/CSV/table output, shared by the CLI and the app's exports."""

from __future__ import annotations

import csv
import io
import json
from datetime import date
from typing import Any
from collections.abc import Iterable

from planner.base.schema import sm_label
from planner.engine.estimate import Estimate
from planner.engine.feasibility import attention_dtype, resolve_attention
from planner.engine.ranking import Ranking
from planner.engine.owning import OwnCost
from planner.engine.plan import DEFAULT_ATTENTION
from planner.engine.train_layout import bubble_fraction
from planner.engine.utilization import cost_per_billion_tokens, mfu, tokens_per_s_per_gpu
from planner.inputs.builds import Build, BuildMatrix, version_text
from planner.inputs.catalog import GPU, PRICE_TIERS, STALE_AFTER_DAYS, Catalog, Price
from planner.inputs.jobs import Train
from planner.inputs.precisions import PrecisionRules
from planner.inputs.work import Setup
from planner.inputs.price_snapshot import PriceTable, utc_today
from planner.validation.loso import LOSO_SET, UNTUNED_SET, LosoRow
from planner.validation.uncertainty import REGIMES, band_basis, band_or_note
from planner.validation.measured import SPLIT_RULE, TUNE_MODULUS, ValidationReport
from planner.views.cluster_text import cluster_json, shape_json
from planner.views.format import short_name


def _r(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def sig(x: float | None, digits: int = 4) -> float | None:
    """Round to significant digits: job costs range from $0.0001 to $10,000."""
    return None if x is None else float(f"{x:.{digits}g}")


def job_fields(e: Estimate, ranked: Ranking | None) -> dict:
    """The whole job as the ranking billed it: billed seconds, its cost in the plan's tier and its parts; the same
    keys with None for a GPU that can't run the plan (every row has the same columns); none without overheads."""
    if ranked is None or ranked.overheads is None:
        return {}
    job = ranked.job(e)
    if job is None:
        return {"job_seconds": None, "job_cost_usd": None, "job_parts_s": None}
    return {"job_seconds": _r(job.billed_s, 1), "job_cost_usd": sig(job.cost_usd),
            "job_parts_s": {k: _r(v, 2) for k, v in job.parts}}


def price_age_fields(p: Price | None, today: date, stale_after_days: int) -> dict:
    """price_date (ISO), price_age_days (whole days before `today`) and price_stale (older than stale_after_days or
    undated; a user's own price never is) of one price; None values without a price."""
    if p is None:
        return {"price_date": None, "price_age_days": None, "price_stale": None}
    return {"price_date": p.date.isoformat() if p.date else None, "price_age_days": p.age_days(today),
            "price_stale": p.is_stale(today, stale_after_days)}


def layout_json(e: Estimate) -> dict | None:
    """A training estimate's layout: degrees, data-parallel ranks, micro-batches per step and the pipeline bubble's
    share of a step (planner.engine.train_layout); None outside training."""
    s, w = e.setup, e.plan.workload
    if not isinstance(w, Train):
        return None
    m = w.accum_for(e.batch, e.data_ranks)
    return {"tp": s.tp, "pp": s.pp, "virtual_stages": s.vpp, "cp": s.cp, "dp": e.data_ranks,
            "micro_batch": e.batch, "micro_batches_per_step": m, "global_batch": e.batch * m * e.data_ranks,
            "bubble_fraction": _r(bubble_fraction(s.pp, m, s.vpp), 4)}


def range_note(e: Estimate, b) -> str | None:
    """What an export says beside the range `b` (band_or_note's answer): why there is none, or why it is widened."""
    if isinstance(b, str):
        return b
    return (band_basis(e) or None) if b else None


def estimate_row(e: Estimate, ranked: Ranking | None = None, today: date | None = None,
                 stale_after_days: int = STALE_AFTER_DAYS) -> dict:
    """One ranking row with every figure and its inputs (the JSON schema of `planner estimate`); with a ranking
    that has overheads, the whole job's billed time and cost too. Price ages count days before `today` (default:
    today, UTC)."""
    ages = {t: price_age_fields(p, today or utc_today(), stale_after_days) for t, p in e.prices.items()}
    b = band_or_note(e)  # the range, why no measurement backs one, or None when the plan can't run
    return {
        "gpu_id": e.gpu.id,
        "gpu_name": e.gpu.name,
        "device_kind": e.gpu.kind,
        "feasible": e.feasible,
        "reasons": [{"code": r.code, "blocking": r.blocking, "text": r.text} for r in e.reasons],
        "batch": e.batch,
        "max_batch": e.max_batch,
        "gpus": e.plan.gpus,
        "parallelism": e.parallelism,
        "layout": layout_json(e),
        "seconds": _r(e.seconds, 3),
        "seconds_range": [_r(x, 3) for x in b] if isinstance(b, tuple) else None,
        "seconds_range_note": range_note(e, b),
        "bound": e.bound,
        "step_time_breakdown_s": {k: _r(v, 4) for k, v in e.split.items()},
        "phases": [{
            "name": ph.name, "steps_per_pass": ph.steps, "passes": ph.passes, "seconds": _r(ph.total_s, 4),
            "kernels_per_step": _r(ph.kernels_per_step, 1), "launch_overhead_s": _r(ph.overhead_s * ph.passes, 4),
            "kernel_latency_s": _r(ph.latency_s * ph.passes, 4),
            "host_bound_s": _r(ph.host_bound_s * ph.passes, 4), "step_host_s": _r(ph.step_host_s * ph.passes, 4),
            "host_wait_s": _r(ph.host_wait_s * ph.passes, 4),
            "communication_s": _r(ph.comm_s * ph.passes, 4),
            "communication_hidden_s": _r(ph.comm_hidden_s * ph.passes, 4),
            "communication_contention_s": _r(ph.contention_s * ph.passes, 4), "link": ph.link,
            "groups": [{"name": g.name, "bound": g.bound, "compute_path": g.compute_path, "flops": g.flops * ph.passes,
                        "bytes": g.bytes * ph.passes, "achieved_tflops": _r(g.achieved_tflops, 2),
                        "achieved_gbps": _r(g.achieved_gbps, 1), "ceiling_tflops": _r(g.ceiling_tflops, 2),
                        "ceiling_burst_tflops": _r(g.ceiling_burst_tflops, 2) or None,
                        "shape_efficiency": _r(g.shape_efficiency, 4), "compute_s": _r(g.compute_s * ph.passes, 4),
                        "memory_s": _r(g.memory_s * ph.passes, 4), "seconds": _r(g.time_s * ph.passes, 4),
                        "overlap_exponent": g.overlap_exponent or None, "formula": g.formula} for g in ph.groups],
        } for ph in e.phases],
        "items_per_s": _r(e.items_per_s, 3),
        "tokens_per_s": _r(e.tokens_per_s, 1),
        "tokens_per_s_per_gpu": _r(tokens_per_s_per_gpu(e), 1),
        "mfu": _r(mfu(e), 4),
        "cluster": shape_json(e),
        "cluster_offers": cluster_json(e),
        "price_tier": e.plan.price_tier,
        "usd_per_hr": {t: (_r(p.usd_hr, 4) if p else None) for t, p in e.prices.items()},
        "price_date": {t: a["price_date"] for t, a in ages.items()},
        "price_age_days": {t: a["price_age_days"] for t, a in ages.items()},
        "price_stale": {t: a["price_stale"] for t, a in ages.items()},
        "price_origin": {t: (p.origin if p else None) for t, p in e.prices.items()},
        "price_provider": {t: (p.provider + (f" {p.region}" if p.region else "") if p else None)
                           for t, p in e.prices.items()},
        "cost_usd": {t: sig(e.cost_usd.get(t)) for t in PRICE_TIERS},
        "cost_per_1m_usd": {t: sig(e.cost_per_million(t)) for t in PRICE_TIERS},
        "cost_per_1b_tokens_usd": {t: sig(cost_per_billion_tokens(e, t)) for t in PRICE_TIERS},
        "memory_gb": {k: _r(v, 4) for k, v in e.memory.as_dict().items()},
        "vram_gb": _r(e.gpu.vram_gb, 4),
        "vram_gib": e.gpu.vram_gib,
        "reported_vram_gb": _r(e.gpu.reported_vram_gb, 4),
        "memory_target": e.plan.memory_target,
        "usable_gb": _r(e.usable_gb, 4),
        "headroom_gb": _r(e.headroom_gb, 4),
        "efficiency": {"mem_bw": e.efficiency.mem_bw_efficiency, "compute": e.efficiency.compute_efficiency,
                       "launch_overhead_us": e.efficiency.launch_overhead_us, "source": e.efficiency.source},
        **job_fields(e, ranked),
    }


def flat_row(e: Estimate, ranked: Ranking | None = None, today: date | None = None,
             stale_after_days: int = STALE_AFTER_DAYS) -> dict:
    """A one-level row for CSV and tables; the price's date, age in days and stale flag sit beside it."""
    tier = e.plan.price_tier
    price = e.price
    b = band_or_note(e)
    low, high = b if isinstance(b, tuple) else (None, None)
    return {
        "gpu_id": e.gpu.id, "gpu": e.gpu.name, "feasible": e.feasible, "batch": e.batch,
        "seconds": _r(e.seconds, 2), "seconds_low": _r(low, 2), "seconds_high": _r(high, 2),
        "range_note": range_note(e, b), "bound": e.bound, "items_per_s": _r(e.items_per_s, 2),
        "tokens_per_s": _r(e.tokens_per_s, 1), "mfu": _r(mfu(e), 3),
        "usd_per_hr": _r(price.usd_hr, 3) if price else None,
        **price_age_fields(price, today or utc_today(), stale_after_days),
        f"cost_usd_{tier}": sig(e.cost()), f"cost_per_1m_usd_{tier}": sig(e.cost_per_million()),
        "memory_gb": _r(e.memory.total_gb, 2), "usable_gb": _r(e.usable_gb, 2), "vram_gb": _r(e.gpu.vram_gb, 2),
        **{k: v for k, v in job_fields(e, ranked).items() if k != "job_parts_s"},
        "reasons": "; ".join(r.text for r in e.reasons),
    }


def own_fields(c: OwnCost) -> dict:
    """Owning the cards vs renting as many (planner.engine.owning), flat, for JSON, CSV and the CLI; USD."""
    return {"own_count": c.count, "own_purchase_usd_each": c.purchase_usd_each,
            "own_purchase_source": c.purchase_source,
            "own_fixed_usd_per_month": sig(c.fixed_usd_per_month), "own_power_kw": sig(c.power_kw),
            "own_energy_usd_per_h": sig(c.energy_usd_per_h), "own_job_energy_usd": sig(c.job_energy_usd),
            "rent_usd_per_h": sig(c.rent_usd_per_h), "rent_job_usd": sig(c.job_rent_usd),
            "break_even_h_per_month": _r(c.break_even_h_per_month, 1)}


def csv_text(rows: list[dict]) -> str:
    """Rows as CSV; the columns are every key in order of first appearance."""
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buf.getvalue()


def text_table(rows: list[dict]) -> str:
    """Rows as an aligned plain-text table (cells cut at 60 characters)."""
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    cells = [[("" if r.get(c) is None else str(r[c])) for c in cols] for r in rows]
    widths = [min(60, max(len(c), *(len(x[i]) for x in cells))) for i, c in enumerate(cols)]
    line = lambda vals: "  ".join(v[:w].ljust(w) for v, w in zip(vals, widths))  # noqa: E731
    return "\n".join([line(cols), line(["-" * w for w in widths])] + [line(x) for x in cells])


# `planner estimate`'s default table: what decides a rental, in a terminal's width; --wide shows every column
NARROW_COLUMNS = ("yours", "gpu_id", "feasible", "batch", "seconds", "job_cost_usd", "tokens_per_s",
                  "items_per_s", "mfu", "memory_gb", "vram_gb", "reasons")
TRAINING_ONLY = ("mfu",)  # narrow columns shown only when some row has a value (training plans)
NARROW_WIDTH = 120  # characters a line


def narrow(rows: list[dict], width: int = NARROW_WIDTH) -> list[dict]:
    """The rows with NARROW_COLUMNS only (those present; tokens/s replaces items/s where both are; MFU where a row
    has one), the last column cut so that text_table's lines fit `width` characters."""
    if not rows:
        return rows
    keep = [c for c in NARROW_COLUMNS if c in rows[0] and not (c == "items_per_s" and "tokens_per_s" in rows[0])
            and not (c in TRAINING_ONLY and all(r.get(c) is None for r in rows))]
    out = [{c: r.get(c) for c in keep} for r in rows]
    last = keep[-1]
    used = sum(max(len(c), *(len("" if r[c] is None else str(r[c])) for r in out)) + 2 for c in keep[:-1])
    room = max(len(last), width - used)
    for r in out:
        text = "" if r[last] is None else str(r[last])
        r[last] = text if len(text) <= room else text[:room - 1] + "…"
    return out


def emit(rows: list[dict], fmt: str, flat: list[dict] | None = None) -> str:
    """Rows as JSON (nested), or `flat` rows (default: rows) as CSV or an aligned text table."""
    if fmt == "json":
        return json.dumps(rows, indent=2, default=str)
    return csv_text(flat or rows) if fmt == "csv" else text_table(flat or rows)


def price_rows(table: PriceTable, today: date | None = None) -> list[dict]:
    """One row per GPU: $/GPU-hour, provider (and region), origin/date and age in days (before `today`, default today
    UTC) per tier."""
    today = today or utc_today()
    rows = []
    for gpu_id, tiers in table.prices.items():
        row: dict[str, Any] = {"gpu": gpu_id}
        for t in PRICE_TIERS:
            p = tiers.get(t)
            row[f"{t}_usd_hr"] = p.usd_hr if p else None
            row[f"{t}_provider"] = (p.provider + (f" {p.region}" if p.region else "")) if p else None
            row[f"{t}_from"] = f"{p.origin} {p.date}" if p else None
            row[f"{t}_age_days"] = p.age_days(today) if p else None
        rows.append(row)
    return rows


def fmt(x: float | None, nd: int = 1) -> str | None:
    """A figure for a text table: fixed decimals, or 4 significant digits from 100,000 up."""
    return None if x is None else (f"{x:.{nd}f}" if abs(x) < 1e5 else f"{x:.4g}")


def validation_rows(report: ValidationReport) -> list[dict]:
    return [{"row": r.row_id, "split": r.split, "regime": r.regime, "gpu": r.gpu_id, "class": r.gpu_class,
             "runtime": r.runtime, "precision": r.precision, "batch": r.batch, "metric": r.metric,
             "measured": r.measured, "predicted": None if r.predicted is None else round(r.predicted, 4),
             "error_pct": None if r.error_pct is None else round(r.error_pct, 1), "note": r.note} for r in report.rows]


def loso_rows(held_out: Iterable[LosoRow]) -> list[dict]:
    """Every scored row's leave-one-source-out prediction, the rows behind `validate --by-source`'s medians: per regime
    (REGIMES order), worst |error| first. error_pct is on the row's own metric; speed_bias_pct on speed whatever the
    metric (+ = the planner faster than measured); set is the summary set the row counts in; untuned_error_pct is the
    row scored with the runtime's priors (data/runtimes.yaml)."""
    order = {g: i for i, g in enumerate(REGIMES)}
    scored = [r for r in held_out if r.result.error_pct is not None]
    scored.sort(key=lambda r: (order.get(r.result.regime, len(order)), -abs(r.result.error_pct), r.result.row_id))
    return [{"row": r.result.row_id, "source": r.source, "set": r.scored_set, "regime": r.result.regime,
             "gpu": r.result.gpu_id, "class": r.result.gpu_class, "runtime": r.result.runtime,
             "metric": r.result.metric, "measured": r.result.measured, "predicted": sig(r.result.predicted),
             "error_pct": round(r.result.error_pct, 1), "speed_bias_pct": _r(r.result.speed_bias_pct, 1),
             "untuned_error_pct": _r(r.untuned.error_pct, 1)} for r in scored]


def loso_headline_rows(summary: list[dict]) -> list[dict]:
    """The leave-one-source-out rows behind the headline: all, each regime with its accuracy target, each GPU class."""
    keep = ("all", "regime", "gpu_class")
    return [{"group": d["key"], "rows": d["n"], "median_ape": d["median_ape"], "p90_ape": d["p90_ape"],
             "median_bias_pct": d["median_bias_pct"], "target_ape": d["target_ape"],
             "meets": None if d["meets"] is None else ("yes" if d["meets"] else "no")}
            for d in summary if d["set"] == LOSO_SET and d["group"] in keep]


def coverage_rows(cover: dict[str, tuple[int, int, int]], levels: dict[str, tuple[float, float]]) -> list[dict]:
    """Per regime, the residual quantiles the band is drawn at and the share of residual rows inside it: built from
    all rows, and built without the row's own source (the honest figure)."""
    return [{"regime": g, "quantiles": f"{levels[g][0]:g}-{levels[g][1]:g}", "rows_with_a_band": n,
             "inside_pct": round(100 * a / n, 1) if n else None,
             "inside_pct_own_source_left_out": round(100 * b / n, 1) if n else None}
            for g, (a, b, n) in cover.items()]


def prediction_first_text(summary: list[dict], files: list[tuple[str, str, str, int, int]]) -> str:
    """The generalisation headline: the error of predictions committed before their rows were measured, per regime
    and per source; `files` is (source, commit, day predicted, rows predicted, rows measured since) per file."""
    head = ("predicted before measured (headline): the error of predictions committed before the rows were measured "
            "(validation/predictions/; bias + = the planner is faster than measured; per_publication_*: the same "
            "medians with each publication weighing the same, whatever its row count)")
    if not summary:
        return head + "\n(no predicted row is measured yet)"
    rows = [{"group": d["key"], "rows": d["n"], "median_ape": d["median_ape"], "p90_ape": d["p90_ape"],
             "median_bias_pct": d["median_bias_pct"], "publications": d.get("publications", ""),
             "per_publication_ape": d.get("pub_median_ape", ""),
             "per_publication_bias_pct": d.get("pub_median_bias_pct", "")} for d in summary]
    made = [{"source": s, "commit": c[:12], "predicted_on": day, "rows": n, "measured": m}
            for s, c, day, n, m in files]
    return "\n".join([head, text_table(rows), text_table(made), "leave one source out (below) is secondary: its "
                      "predictions are tuned by a procedure chosen with every source in view"])


def validation_headline_text(summary: list[dict], ratios: list[dict], cover: dict[str, tuple[int, int, int]],
                             levels: dict[str, tuple[float, float]], bias_pct: float, ratio_target_pct: float,
                             first_cover: dict[str, tuple[int, int, int]] | None = None) -> str:
    """The headline of `planner validate`: leave-one-source-out accuracy per regime against its accuracy targets,
    the speed-up ratios, and how often the uncertainty band holds a left-out source's rows (and, in `first_cover`,
    the rows predicted before they were measured)."""
    untuned = [{"group": d["key"], "rows": d["n"], "median_ape": d["median_ape"], "median_bias_pct":
                d["median_bias_pct"]} for d in summary if d["set"] == UNTUNED_SET
               and d["group"] in ("all", "regime")]
    lines = ["leave one source out (secondary to predicted-before-measured): each source scored with the runtime "
             "efficiencies tuned on every "
             f"other source; meets = median |error| <= target and |median bias| <= {bias_pct:g} % "
             "(bias + = the planner is faster than measured)", text_table(loso_headline_rows(summary))]
    if untuned:
        lines += ["\nuntuned: the priors (data/runtimes.yaml, before data/runtimes_tuned.yaml) on sources they never "
                  "drew from",
                  text_table(untuned)]
    if ratios:
        lines += [f"\nspeed-up ratios (pairs of rows of one source differing in one thing; target: within "
                  f"{ratio_target_pct:g} % of the measured ratio)", text_table(ratios)]
    lines += ["\n80 % band: the residual quantiles each regime's band is drawn at (the narrowest that holds 80 % of a "
              "source left out of it) and the rows inside it (data/uncertainty.yaml is written from them)",
              text_table(coverage_rows(cover, levels))]
    if first_cover:
        lines += ["\nthe same bands on the rows predicted before they were measured (each judged by a band its own "
                  "source did not shape)", text_table(coverage_rows(first_cover, levels))]
    return "\n".join(lines)


def validation_summary_text(report: ValidationReport) -> str:
    lines = []
    for split in ("test", "tune"):
        rows = [{k: d[k] for k in ("group", "key", "n", "median_ape", "p90_ape", "median_speed_bias_pct",
                                   "target_median_ape", "meets_target")}
                for d in report.summary(split) if d["n"]]
        lines += [f"\n{split} split: absolute % error (median, p90) of rows "
                  + ("never used for tuning" if split == "test" else "used to tune data/runtimes.yaml"),
                  text_table(rows)]
    n_ex = sum(r.split == "excluded" for r in report.rows)
    lines.append(f"\nsplit: tune = rows whose sha256(id) mod {TUNE_MODULUS} == 0, {SPLIT_RULE}; "
                 f"{n_ex} rows excluded (reason in 'note').")
    return "\n".join(lines)


# ---------------------------------------------------------------- attention backends per architecture (seed 004)


def _arch_groups(catalog: Catalog) -> list[tuple[tuple[int, int] | None, str | None, list[GPU]]]:
    """Catalog GPUs grouped by compute capability (NVIDIA) or gfx target (AMD), oldest NVIDIA first, AMD last."""
    groups: dict[tuple, list[GPU]] = {}
    for g in catalog.gpus:
        groups.setdefault((g.compute_capability, g.gfx_target), []).append(g)
    return [(cc, gfx, gpus) for (cc, gfx), gpus in sorted(groups.items(), key=lambda kv: (kv[0][0] is None,
                                                                                          kv[0][0] or (0, 0),
                                                                                          kv[0][1] or ""))]


def attention_dtype_of(rules: PrecisionRules, precision: str) -> str:
    """The dtype attention runs in under `precision` (UnknownNameError for an unknown precision)."""
    p = rules.precision(precision)
    return attention_dtype(Setup(p, rules.default_kv_dtype(p), rules.attention(DEFAULT_ATTENTION)))


def backend_matrix_rows(rules: PrecisionRules, catalog: Catalog, builds: BuildMatrix, dtype: str = "fp16",
                        head_dim: int | None = 64, pinned: tuple[Build, ...] = ()) -> list[dict]:
    """One row per GPU architecture of the catalog: the kernel each selector (sdpa = auto, xformers) picks there and
    whether each kernel runs ('yes' / 'no'), for attention in `dtype` at `head_dim`, and the oldest PyTorch build
    that runs the architecture. The pinned builds' version decides which backends exist (SDPA needs 2.0+)."""
    fallback = rules.attention(DEFAULT_ATTENTION)
    version = pinned[0].version if pinned else None
    rows = []
    for cc, gfx, gpus in _arch_groups(catalog):
        platform = "cuda" if cc else "rocm" if gfx else "other"
        oldest = builds.oldest_running(cc, gfx)
        row = {"arch": sm_label(cc) if cc else gfx, "gpus": ", ".join(short_name(g.name) for g in gpus[:2])
               + (f" +{len(gpus) - 2}" if len(gpus) > 2 else ""),
               "oldest_pytorch": oldest[0].id if oldest else None}
        for b in rules.attention_backends:
            got = resolve_attention(b, fallback, cc, platform, dtype, head_dim, version).kernel
            row[b.id] = (got.id if got else "none") if b.is_selector else ("yes" if got else "no")
        rows.append(row)
    return rows


def backend_rows(rules: PrecisionRules) -> list[dict]:
    """What each attention backend needs and costs: SM range, dtypes, head dims, memory order, speed vs FA2."""
    rows = []
    for b in rules.attention_backends:
        kernel = not b.is_selector
        lo, hi = b.min_sm, b.max_sm
        newest = f" (newest: {b.releases[-1].version})" if b.releases else ""  # a PyTorch pin picks its own
        rows.append({"backend": b.id, "kind": "kernel" if kernel else "picks " + " > ".join(k.id for k in b.picks)
                     + newest,
                     "sm": f"{sm_label(lo) if lo else 'any'} to {sm_label(hi) if hi else 'newest'}" if kernel else None,
                     "amd": ("yes" if b.amd else "no") if kernel else None,
                     "dtypes": "/".join(b.dtypes) if kernel else None,
                     "max_head_dim": b.max_head_dim if kernel else None,
                     "memory": ("O(S^2) scores" if b.scores_materialized else "O(S)") if kernel else None,
                     "speed_vs_fa2": b.speed_vs_fa2 if kernel else None,
                     "min_pytorch": version_text(b.min_pytorch) if b.min_pytorch else None})
    return rows


def train_bucket_text(buckets: list[dict], target_ape: float, target_bias: float) -> str:
    """The training rows by GPU count (planner.validation.train_buckets.bucket_summary) as a titled table, the
    sources tuned on listed in full below it (a table cell would cut them)."""
    head = (f"training rows by GPU count: leave one source out (and predicted-first rows with the current engine); "
            f"target per bucket: median |error| <= {target_ape:g} %, median bias within +-{target_bias:g} % "
            "(+ = the planner faster)")
    shown = [{k: d[k] for k in ("gpus", "set", "rows", "median_ape", "p90_ape", "median_bias_pct", "meets",
                                "predicted_first")} for d in buckets]
    tuned = [f"  {d['gpus']} GPUs, {d['set']}: sources {d['sources']}; their runtimes tuned on {d['tuned_on']} "
             "(each row's own source left out)" for d in buckets]
    return "\n".join([head, text_table(shown), *tuned])
