"""Command line: `python -m planner estimate|gpus|models|prices|validate|calibration` (an entry point: it may
import from every layer; nothing imports it)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from datetime import date
from pathlib import Path

from planner.base.safe_parse import parse_number
from planner.base.schema import DataFileError, UnknownNameError
from planner.engine.estimate import efficiency_on, estimate_all
from planner.engine.ranking import Ranking, my_gpus, rank
from planner.engine.plan import Plan
from planner.engine.serving import max_concurrency, serving_point
from planner.inputs.bench_result import parse_result
from planner.inputs.catalog import COMPUTE_PATHS, MAX_STALE_DAYS, PRICE_TIERS, STALE_AFTER_DAYS
from planner.inputs.facts import load_facts
from planner.inputs.job_costs import LIMITS as JOB_COST_LIMITS
from planner.inputs.job_costs import load_job_costs, with_values
from planner.inputs.jobs import BOUNDS
from planner.inputs.models import ModelProfile, load_model_file, load_models
from planner.inputs.ownership import LIMITS as OWN_LIMITS
from planner.inputs.ownership import load_ownership, parse_owned
from planner.inputs.ownership import with_values as own_with_values
from planner.inputs.runtimes import TUNED_FILE
from planner.inputs.price_snapshot import PRICES_DIR, price_dates, snapshot_table, stale_note, utc_today
from planner.calibration import fit as calibration, tables as calibration_tables
from planner.clients import hf_hub, live_prices
from planner.validation import loso, measured
from planner.validation.uncertainty import MAX_BIAS_PCT, UNCERTAINTY_FILE, band_levels, coverage, write_uncertainty
from planner.inputs.launch_names import load_skypilot_names
from planner.views import launch, plan_inputs
from planner.views.calibration_text import factor_rows, fit_lines
from planner.views.charts import validation_chart
from planner.views.owning_text import own_assumptions_sentence
from planner.views.report import (NARROW_WIDTH, attention_dtype_of, backend_matrix_rows, backend_rows, coverage_rows,
                                  csv_text, emit, estimate_row, flat_row, loso_rows, narrow, own_fields, price_rows,
                                  text_table, validation_headline_text, validation_rows, validation_summary_text)


class _Parser(argparse.ArgumentParser):
    """argparse that never repeats a long user value whole in its error message (it quotes invalid choices)."""

    def error(self, message: str):
        super().error(re.sub(r"'([^']{40})[^']{2,}'", r"'\1…'", message))


def _bounded(name: str):
    """An argparse type for the job input `name`: a number within planner.inputs.jobs.BOUNDS, whole if it must be
    ('1.9 sequences' is refused, not rounded)."""
    bound = BOUNDS[name]

    def parse(text: str) -> float | int:
        try:
            return parse_number(text, bound.lo, bound.hi, bound.integer)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = name.replace("_", " ")  # argparse names the type in its message
    return parse


def _key_value(limits: dict[str, tuple[float, float]]):
    """An argparse type for 'key=value' with a key of `limits` and a value within its bounds, e.g. pod_start_s=120
    (job-cost assumptions, data/job_costs.yaml) or usd_per_kwh=0.30 (ownership, data/ownership.yaml)."""
    def parse(text: str) -> tuple[str, float]:
        key, sep, value = text.partition("=")
        if not sep or key not in limits:
            raise argparse.ArgumentTypeError(f"expected key=value with a key among {', '.join(limits)}")
        lo, hi = limits[key]
        try:
            return key, float(parse_number(value, lo, hi, False))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{key}: {exc}") from None
    return parse



def _catalog_id(name: str) -> str:
    try:
        return load_facts().catalog.get(name).id
    except UnknownNameError as exc:
        raise ValueError(str(exc)) from None


def _owned(text: str):
    """'rtx-a5000:3' (comma-separated, count 1 when left out, an optional :USD paid per card): the cards you own."""
    owned, bad = parse_owned(text, _catalog_id)
    if bad:
        raise argparse.ArgumentTypeError("; ".join(bad))
    return owned


def _stale_days(text: str) -> int:
    """Days after which a price counts as stale: a whole number from 1 to MAX_STALE_DAYS."""
    try:
        return int(parse_number(text, 1, MAX_STALE_DAYS, True))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _names(text: str) -> tuple[str, ...]:
    """'epyc-9654, rtx-5090' -> ('epyc-9654', 'rtx-5090'): devices named in one argument."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected one or more GPU or CPU names, comma-separated")
    return names


def _gpus(text: str) -> int | tuple[str, ...]:
    """--gpus: a count (GPUs per job), or device names like --gpu (`--gpus amd-epyc-9654,rtx-5090`)."""
    if re.search(r"[a-df-z]", text, re.IGNORECASE):  # a name (a number has at most an exponent 'e')
        return _names(text)
    return _bounded("gpus")(text)


def _field_type(name: str):
    """An argparse type for a plan field: the link's parser (plan_inputs.SCALARS), its message kept."""
    parse = plan_inputs.SCALARS[name]

    def typed(text: str):
        try:
            return parse(text)
        except (ValueError, UnknownNameError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    typed.__name__ = plan_inputs.PLAN_FIELD[name].flag.lstrip("-")  # argparse names the type in its message
    return typed


# The CLI's own way of giving a field: a model's default input size, --compile for a runtime, devices by name
CLI_DEFAULTS = {"size": None, "rt": None}
CLI_TYPES = {"gpus": _gpus}


def add_plan_args(p: argparse.ArgumentParser) -> None:
    """Every plan field of plan_inputs.PLAN_FIELDS as an option (defaults, bounds and choices from there), then the
    CLI's own: the model, devices, calibration and whole-job assumptions."""
    p.add_argument("--model", default=plan_inputs.DEFAULTS.model, help="preset id, a path to a model YAML or a "
                   "config.json, or a Hugging Face id (owner/name: its config.json is fetched and cached)")
    for f in plan_inputs.PLAN_FIELDS:
        default = CLI_DEFAULTS.get(f.name, getattr(plan_inputs.DEFAULTS, f.name))
        if isinstance(default, bool):
            p.add_argument(f.flag, dest=f.name, action="store_true", help=plan_inputs.field_help(f.name))
        else:
            shown = "" if default is None else f" (default: {default})"
            p.add_argument(f.flag, dest=f.name, type=CLI_TYPES.get(f.name) or _field_type(f.name), default=default,
                           metavar=f.flag.lstrip("-").upper().replace("-", "_"),
                           help=plan_inputs.field_help(f.name) + shown)
    p.add_argument("--compile", action="store_true", help="torch.compile with CUDA graphs (runtime torch-compile)")
    p.add_argument("--gpu", type=_names, action="append", default=None, help="GPUs or CPUs to include, by id or "
                   "name, comma-separated or repeated (default: every GPU)")
    p.add_argument("--include-cpu", action="store_true", help="also rank the CPU devices of data/cpus.yaml (what a "
                   "CPU fallback costs); name one with --gpu to see it alone")
    p.add_argument("--job-cost", type=_key_value(JOB_COST_LIMITS), action="append", default=None,
                   metavar="KEY=VALUE",
                   help="change a whole-job assumption of data/job_costs.yaml, e.g. pod_start_s=120 (repeatable)")
    p.add_argument("--calibration", action="append", default=None,
                   help="a benchmark result file from `python -m planner.bench` (repeatable: each for its own GPU)")
    p.add_argument("--calibration-cpu", default=None, metavar="CPU",
                   help="the catalog CPU (data/cpus.yaml) a CPU bench file was measured on; its fit then calibrates "
                        "that CPU's row (default: the CPU whose name the bench recorded, else only the measured "
                        "machine itself)")


def resolve_model(name: str) -> ModelProfile:
    """A preset id or name, a model file (YAML profile or config.json), or a Hugging Face id (owner/name)."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return load_model_file(path)
    if hf_hub.is_repo_id(name):
        return hf_hub.model_from_hub(name)
    return load_models().get(name)


def plan_from_args(a: argparse.Namespace) -> Plan:
    """The plan the options describe, built as the page builds it (plan_inputs.to_plan)."""
    model = resolve_model(a.model)
    given = {f.name: getattr(a, f.name) for f in plan_inputs.PLAN_FIELDS}
    given.update(size=a.size or plan_inputs.default_size(model), gpus=a.gpus if isinstance(a.gpus, int) else 1,
                 rt=a.rt or ("torch-compile" if a.compile else plan_inputs.DEFAULTS.rt))
    return plan_inputs.to_plan(replace(plan_inputs.DEFAULTS, **given), model)


def device_names(a: argparse.Namespace) -> tuple[str, ...] | None:
    """The devices --gpu (and --gpus NAMES) name, in order, each once; None = the default selection."""
    given = [n for group in (a.gpu or ()) for n in group] + ([] if isinstance(a.gpus, int) else list(a.gpus))
    return tuple(dict.fromkeys(given)) or None


def load_calibrations(a: argparse.Namespace):
    """The --calibration files fitted (a CPU bench for --calibration-cpu's row), as one Fleet; None without any."""
    if not a.calibration:
        return None
    return calibration.Fleet(tuple(calibration.load_calibration(f, a.calibration_cpu) for f in a.calibration))


# ---------------------------------------------------------------- estimate, gpus, models


def cmd_estimate(a: argparse.Namespace) -> int:
    plan = plan_from_args(a)
    fleet = load_calibrations(a)
    facts = load_facts()
    adjust = fleet.adjust if fleet else None
    results = estimate_all(plan, facts, gpu_names=device_names(a), adjust=adjust, include_cpus=a.include_cpu)
    overheads = _overheads(a, facts)
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


def _overheads(a: argparse.Namespace, facts):
    """The whole job's assumptions (data/job_costs.yaml) with the user's --job-cost changes."""
    return with_values(load_job_costs(runtime_ids=tuple(r.id for r in facts.runtimes.runtimes)), dict(a.job_cost or ()))


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


def cmd_gpus(a: argparse.Namespace) -> int:
    rows = []
    for g in load_facts().catalog.selection(a.include_cpu):
        rows.append({"id": g.id, "name": g.name, "vendor": g.vendor, "sm": g.sm, "vram_gib": g.vram_gib,
                     "vram_gb": round(g.vram_gb, 2), "mem_bw_gbps": g.mem_bw_gbps,
                     **{p: _sig(g.peak_tflops(p)) for p in COMPUTE_PATHS}, "sms": g.sm_count or None,
                     "bf16_ceiling": round(g.ceiling_tflops("bf16"), 1) if g.bf16_tflops else None,
                     "ceiling": ("measured" if g.ceiling("bf16").measured else "derived") if g.bf16_tflops else None,
                     **{f"{t}_usd_hr": (g.price(t).usd_hr if g.price(t) else None) for t in PRICE_TIERS}})
    print(emit(rows, a.format))
    return 0


def cmd_backends(a: argparse.Namespace) -> int:
    """Attention backends per GPU architecture: what sdpa (auto) and xformers pick, which kernels run, the oldest
    PyTorch build; then what each backend needs and costs."""
    facts = load_facts()
    dtype = attention_dtype_of(facts.rules, a.precision)
    pinned = facts.builds.pin(a.pytorch) if a.pytorch else ()
    matrix = backend_matrix_rows(facts.rules, facts.catalog, facts.builds, dtype, a.head_dim, pinned)
    backends = backend_rows(facts.rules)
    if a.format == "json":
        print(json.dumps({"attention_dtype": dtype, "head_dim": a.head_dim, "pytorch": a.pytorch,
                          "matrix": matrix, "backends": backends}, indent=2))
    elif a.format == "csv":
        print(csv_text(matrix), end="")
    else:
        print(f"Attention in {dtype}, head dim {a.head_dim}" + (f", PyTorch {a.pytorch}" if a.pytorch else "")
              + ": the kernel sdpa (auto) and xformers pick on each architecture, and which kernels run there\n")
        print(text_table(matrix) + "\n")
        print(text_table(backends))
    return 0


def cmd_models(a: argparse.Namespace) -> int:
    rows = [{"id": m.id, "name": m.name, "kind": m.kind, "params": m.params, "active_params": m.active_params,
             **m.listing()}
            for m in load_models().models]
    print(emit(rows, a.format))
    return 0


# ---------------------------------------------------------------- prices


def cmd_prices(a: argparse.Namespace) -> int:
    catalog = load_facts().catalog
    if a.refresh or a.live:
        table = live_prices.fetch_live(catalog, api_key=live_prices.api_key_from_env(), url=a.url,
                                       timeout_s=a.timeout, ttl_s=0)
    else:
        table = snapshot_table(catalog)
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


# ---------------------------------------------------------------- validate


def _fmt(x: float | None, nd: int = 1) -> str | None:
    return None if x is None else (f"{x:.{nd}f}" if abs(x) < 1e5 else f"{x:.4g}")


def _ratio_pairs(ratios: list) -> list[dict]:
    return [{"kind": r.kind, "source": r.source, "pair": r.label, "measured": round(r.measured, 3),
             "predicted": round(r.predicted, 3), "error_pct": round(r.error_pct, 1),
             "untuned": round(r.untuned, 3), "untuned_error_pct": round(r.untuned_error_pct, 1),
             "rows": f"{r.base_id} -> {r.other_id}"} for r in ratios]


def cmd_validate(a: argparse.Namespace) -> int:
    if a.write_tuned:
        tunings = loso.tune_deployed(a.measurements)
        path = loso.write_tuned(tunings, a.tuned_file, date.today())
        for t in tunings:
            print(f"{t.runtime}: {t.values} ({len(t.rows)} rows, {len(t.sources)} sources)")
        print(f"tuned values written to {path}")
        return 0
    if a.tune:
        result = measured.tune_all(a.measurements)
        print(json.dumps({rt: {"params": p, **info} for rt, (p, info) in result.items()}, indent=2))
        return 0
    held_out = loso.leave_one_source_out(a.measurements)
    summary = loso.loso_summary(held_out)
    ratios = loso.speedup_ratios(held_out)
    if a.by_source:  # every group of every set, and every ratio pair (and every row's prediction with --rows)
        rows = loso_rows(held_out) if a.rows else None
        if a.format == "json" and rows is not None:
            print(json.dumps({"summary": summary, "rows": rows}, indent=2))
            return 0
        print(emit(rows if rows is not None and a.format == "csv" else summary, a.format))
        if a.format == "table" and ratios:
            print("\nspeed-up ratio pairs (leave-one-source-out predictions; untuned = the priors of "
                  "data/runtimes.yaml)")
            print(text_table(_ratio_pairs(ratios)))
        if a.format == "table" and rows:
            print("\nevery row's leave-one-source-out prediction, worst first per regime (error on the row's metric; "
                  "speed bias + = the planner faster than measured)")
            print(text_table(rows))
        return 0
    residuals = [r.result for r in held_out if r.independent]
    levels = band_levels(residuals)
    cover = coverage(residuals, lambda r: r.source, levels)
    report = measured.run_validation(a.measurements, priors=True)
    rows = validation_rows(report)
    if a.format == "json":
        print(json.dumps({"leave_one_source_out": summary, "speedup_ratios": loso.ratio_summary(ratios),
                          "speedup_pairs": _ratio_pairs(ratios), "band_coverage": coverage_rows(cover, levels),
                          "rows": rows, "summary": report.summary("test") + report.summary("tune")}, indent=2))
    elif a.format == "csv":
        print(csv_text(rows), end="")
    else:
        if a.rows:
            shown = [{**d, "measured": _fmt(d["measured"], 4), "predicted": _fmt(d["predicted"], 4),
                      "note": (d["note"] or "")[:60]} for d in rows]
            print(text_table(shown))
        print(validation_summary_text(report))
        print()
        print(validation_headline_text(summary, loso.ratio_summary(ratios), cover, levels, MAX_BIAS_PCT,
                                       loso.RATIO_TARGET_PCT))
    if a.plot:
        validation_chart(report).save(a.plot)
        print(f"\nplot written to {a.plot}")
    if a.write_uncertainty:
        headline = [{"regime": d["key"], "rows": d["n"], "median_ape": d["median_ape"], "p90_ape": d["p90_ape"],
                     "median_bias_pct": d["median_bias_pct"], "target_ape": d["target_ape"], "meets": d["meets"]}
                    for d in summary if d["set"] == loso.LOSO_SET and d["group"] in ("all", "regime")]
        path = write_uncertainty(residuals, loso.RESIDUALS_RULE, a.uncertainty_file, today=date.today(),
                                 accuracy=headline, levels=levels)
        print(f"\nuncertainty bands written to {path}")
    return 0


# ---------------------------------------------------------------- calibration


def _sig(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.4g}")


def cmd_calibration(a: argparse.Namespace) -> int:
    path = Path(a.file)
    result = parse_result(path.read_bytes(), path.name)
    cal = calibration.fit(result, device=a.calibration_cpu)
    points = calibration_tables.point_table(result, cal)
    gpus = calibration_tables.side_by_side(plan_from_args(a), cal, gpu_names=device_names(a),
                                           include_cpus=a.include_cpu)
    if a.format == "table":  # the figures that matter, rounded; json/csv carry every field
        points = [{"point": r["label"], "measured_s": _sig(r["measured_s"]), "analytic_s": _sig(r["analytic_s"]),
                   "calibrated_s": _sig(r["calibrated_s"]), "error_pct": round(r["calibrated_error_pct"], 1)}
                  for r in points]
        gpus = [{"gpu": r["gpu_id"], "analytic_s": _sig(r["analytic_s"]), "calibrated_s": _sig(r["calibrated_s"]),
                 "change_pct": None if r["change_pct"] is None else round(r["change_pct"], 1),
                 "efficiency": r["efficiency_source"]} for r in gpus]
        print(f"calibration: {cal.to_query()}")
        print("\n".join(line for line in fit_lines(cal) if not line.startswith("warning: ")) + "\n")
    else:
        print(emit(factor_rows(cal), a.format))
        print()
    for problem in cal.problems():
        print(f"warning: {problem}", file=sys.stderr)
    print(emit(points, a.format))
    print()
    if result.get("model_runs"):  # measure here, predict a size never fitted: each size from a fit without it
        held = calibration_tables.holdout_table(result)
        if a.format == "table":
            held = [{"held_out_size": r["size"], "workload": r["workload"], "measured_s": _sig(r["measured_s"]),
                     "predicted_s": _sig(r["predicted_s"]), "error_pct": round(r["error_pct"], 1)} for r in held]
        print(emit(held, a.format))
        print()
    print(emit(gpus, a.format))
    return 0


# ---------------------------------------------------------------- serve


def _concurrencies(text: str) -> tuple[int, ...]:
    bound = BOUNDS["batch"]
    try:
        values = tuple(int(parse_number(x, bound.lo, bound.hi, True)) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not values or len(values) > 32:
        raise argparse.ArgumentTypeError("give 1 to 32 comma-separated concurrencies, like 1,8,64")
    return values


def _ms(text: str) -> float:
    try:
        return float(parse_number(text, 0.001, 3.6e6, False)) / 1e3
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _serving_row(gpu_id: str, p, note: str = "") -> dict:
    return {"gpu": gpu_id, "concurrency": p.concurrency, "ttft_ms": round(p.ttft_s * 1e3, 2),
            "tpot_ms": round(p.tpot_s * 1e3, 3), "tokens_per_s": round(p.tokens_per_s, 1),
            "usd_per_1m_tokens": None if p.usd_per_m_tokens is None else float(f"{p.usd_per_m_tokens:.4g}"),
            "memory_gb": round(p.memory_gb, 2), "fits": p.fits, "note": note}


def cmd_serve(a: argparse.Namespace) -> int:
    plan, facts = plan_from_args(a), load_facts()
    names = device_names(a)
    gpus = [facts.catalog.get(n) for n in names] if names else list(facts.catalog.selection(a.include_cpu))
    rows = []
    for gpu in gpus:
        unsupported = efficiency_on(plan, gpu, facts).unsupported
        if unsupported:  # a runtime that can't run on this device (a CPU): say so instead of timing it
            rows.append({"gpu": gpu.id, "concurrency": None, "note": unsupported})
            continue
        rows += [_serving_row(gpu.id, serving_point(plan, gpu, facts, c, a.prompt, a.gen))
                 for c in a.concurrency]
        if a.ttft_ms is None and a.tpot_ms is None:
            continue
        best = max_concurrency(plan, gpu, facts, a.prompt, a.gen, a.ttft_ms, a.tpot_ms)
        rows.append(_serving_row(gpu.id, best, "largest within the target") if best else
                    {"gpu": gpu.id, "concurrency": None, "note": "misses the latency target even alone"})
    print(emit(rows, a.format))
    return 0


# ---------------------------------------------------------------- launch


def _plan_words(plan: Plan) -> str:
    w = plan.workload
    return (f"{w.kind} {w.items:,} items with {plan.model.name} in {plan.precision}, {plan.runtime}, "
            f"{plan.gpus} GPU(s) per job, RunPod {plan.price_tier} prices")


def cmd_launch(a: argparse.Namespace) -> int:
    """The plan as a SkyPilot task (YAML) or a RunPod pod request (JSON), GPUs in the planner's order."""
    plan, facts = plan_from_args(a), load_facts()
    # the order `planner estimate` and the page show: by what the whole job bills
    ranking = rank(estimate_all(plan, facts, gpu_names=device_names(a), include_cpus=a.include_cpu),
                   _overheads(a, facts)).estimates
    if a.bench:
        return _launch_bench(ranking, a.out or "bench-fleet")
    if a.format == "runpod":
        text = launch.runpod_json(launch.runpod_pod(ranking, plan.price_tier, a.image))
    else:
        task, left_out = launch.skypilot_task(ranking, load_skypilot_names(), plan.price_tier == "spot",
                                              "python -m planner " + " ".join(sys.argv[1:])[:500], a.run)
        text = launch.skypilot_yaml(task, _plan_words(plan), launch.accelerator_order(task))
        if left_out:
            print(f"note: left out: {'; '.join(left_out)}", file=sys.stderr)
    if a.out:
        Path(a.out).write_text(text, encoding="utf-8")
        print(f"wrote {a.out}", file=sys.stderr)
    else:
        print(text)
    return 0


def _launch_bench(ranking, folder: str) -> int:
    """A bench task per candidate GPU and a script that runs them all and collects the result files."""
    tasks = launch.bench_tasks(ranking, load_skypilot_names())
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for _, task in tasks:
        gpu = ", ".join(f"{k}:{v}" for k, v in task["resources"]["accelerators"].items())
        (out / f"{task['name']}.yaml").write_text(
            launch.skypilot_yaml(task, "python -m planner.bench (calibrate this GPU type)", gpu, "GPU"),
            encoding="utf-8")
    (out / "run_fleet.sh").write_text(launch.fleet_script(tasks, folder), encoding="utf-8")
    print(f"wrote {len(tasks)} bench tasks and run_fleet.sh to {out}/ (run it from the repository root)",
          file=sys.stderr)
    return 0


# ---------------------------------------------------------------- profile


def cmd_profile(a: argparse.Namespace) -> int:
    """Trace a PyTorch model (MODULE:FACTORY) into a traced profile file; torch is imported only here."""
    try:
        from planner.profiling import tracer  # torch: deferred so the rest of the CLI starts without it
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        print("error: `planner profile` traces with PyTorch, which is not installed: "
              "pip install \".[bench]\" (torch 2.13.0)", file=sys.stderr)
        return 2

    size_name, sizes = tracer.parse_input_spec(a.input)
    args = tuple(tracer.parse_factory_arg(x) for x in a.arg or ())
    req = tracer.Request(a.factory, sizes, args, size_name, a.max_seconds, a.max_host_gb)
    text, model, warnings = tracer.profile(req, a.default_size, a.id, a.name, a.tolerance)
    out = Path(a.out or f"{model.id}.yaml")
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} ({len(text):,} bytes): {model.describe()}", file=sys.stderr)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(emit(tracer.summary_rows(model), a.format))
    return 0


# ---------------------------------------------------------------- parser


def _formatted(sub, name: str, func, text: str, formats=("table", "json", "csv")) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=text)
    p.add_argument("--format", choices=formats, default="table")
    p.set_defaults(func=func)
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m planner", description="Rank GPUs by time, cost and feasibility.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = _formatted(sub, "estimate", cmd_estimate, "estimate a job on every GPU (or --gpu ...)")
    add_plan_args(p)
    p.add_argument("--wide", action="store_true", help="the table with every column (default: the columns that "
                   f"decide a rental, {NARROW_WIDTH} characters wide; json and csv always have every column)")
    p.add_argument("--stale-after-days", type=_stale_days, default=STALE_AFTER_DAYS,
                   help=f"flag prices older than this many days (default {STALE_AFTER_DAYS})")
    p.add_argument("--own", type=_owned, action="append", default=None, metavar="GPU:COUNT[:USD]",
                   help="GPUs you own, e.g. rtx-a5000:3 (repeatable or comma-separated; :USD = price paid per card): "
                        "rows on top with the plan on all of them, and owning vs renting them")
    p.add_argument("--own-assumption", type=_key_value(OWN_LIMITS), action="append", default=None,
                   metavar="KEY=VALUE",
                   help=f"change an owning assumption (data/ownership.yaml): {', '.join(OWN_LIMITS)}")
    p = _formatted(sub, "gpus", cmd_gpus, "list the GPU catalog (--include-cpu: and the CPU devices)")
    p.add_argument("--include-cpu", action="store_true", help="also list the CPU devices of data/cpus.yaml")
    _formatted(sub, "models", cmd_models, "list model presets")
    p = _formatted(sub, "backends", cmd_backends, "attention backends per GPU architecture (which kernel each compute "
                   "capability gets, O(S) or O(S^2) memory, speed vs FlashAttention-2)")
    p.add_argument("--precision", default="fp16", help="the plan's precision: attention runs in its activation dtype")
    p.add_argument("--head-dim", type=_bounded("input_size"), default=64, help="the model's head dim (default 64)")
    p.add_argument("--pytorch", default=None, help="a pinned PyTorch build or version (SDPA needs 2.0+)")

    p = _formatted(sub, "serve", cmd_serve, "serving an LLM: TTFT, TPOT, tokens/s and $/1M tokens per concurrency")
    add_plan_args(p)
    p.add_argument("--concurrency", type=_concurrencies, default=(1, 8, 32, 128),
                   help="sequences decoding at once, comma-separated (default 1,8,32,128)")
    p.add_argument("--ttft-ms", type=_ms, default=None, help="latency target: time to first token (ms)")
    p.add_argument("--tpot-ms", type=_ms, default=None, help="latency target: time per output token (ms)")

    p = sub.add_parser("launch", help="the plan as a SkyPilot task (sky launch) or a RunPod pod request")
    add_plan_args(p)
    p.add_argument("--format", choices=("skypilot", "runpod"), default="skypilot")
    p.add_argument("--run", default=launch.RUN_PLACEHOLDER, help="the task's command (SkyPilot 'run')")
    p.add_argument("--image", default=None, help="container image (RunPod; default: a PyTorch image whose CUDA "
                   "build runs every candidate GPU)")
    p.add_argument("--out", default=None, help="write to this file instead of printing (--bench: a folder)")
    p.add_argument("--bench", action="store_true", help="calibrate a fleet: a SkyPilot task running "
                   "`python -m planner.bench` on each candidate GPU type, and run_fleet.sh to collect the results")
    p.set_defaults(func=cmd_launch)

    p = _formatted(sub, "prices", cmd_prices, "show the GPU prices in use; --refresh fetches RunPod and writes a "
                   "snapshot", ("table", "json"))
    p.add_argument("--refresh", action="store_true",
                   help=f"fetch live prices and write a snapshot file (key from ${live_prices.API_KEY_ENV}, optional)")
    p.add_argument("--live", action="store_true", help="show live prices (snapshot on failure) without writing")
    p.add_argument("--accept", action="store_true",
                   help="with --refresh: also write live prices held back as suspect (more than 3x from the snapshot)")
    p.add_argument("--url", default=live_prices.RUNPOD_GRAPHQL_URL, help="GraphQL endpoint (default: RunPod's)")
    p.add_argument("--out", default=str(PRICES_DIR), help="directory for --refresh (default: data/prices)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")

    p = _formatted(sub, "validate", cmd_validate, "compare estimates with published measurements (validation/)")
    p.add_argument("--measurements", default=str(measured.MEASUREMENTS_FILE),
                   help="measurements YAML (default: validation/)")
    p.add_argument("--plot", default=None, metavar="PATH.html", help="write the measured-vs-predicted chart")
    p.add_argument("--write-uncertainty", action="store_true",
                   help="write the uncertainty bands (data/uncertainty.yaml) from the leave-one-source-out residuals")
    p.add_argument("--rows", action="store_true",
                   help="print every row's measured and predicted value too (with --by-source: each row's "
                        "leave-one-source-out prediction, worst first per regime; csv: only those rows)")
    p.add_argument("--uncertainty-file", default=str(UNCERTAINTY_FILE), help=argparse.SUPPRESS)
    p.add_argument("--tune", action="store_true",
                   help="search runtime efficiencies on the tune split and print them (writes nothing)")
    p.add_argument("--write-tuned", action="store_true",
                   help="tune the runtimes on every source and write the values estimates use "
                   "(data/runtimes_tuned.yaml)")
    p.add_argument("--tuned-file", default=str(TUNED_FILE), help=argparse.SUPPRESS)
    p.add_argument("--by-source", action="store_true",
                   help="only leave one source out, every group (per source too) and every speed-up ratio pair")

    p = _formatted(sub, "profile", cmd_profile, "trace a PyTorch model (MODULE:FACTORY) into a profile file")
    p.add_argument("factory", help="MODULE:FACTORY, e.g. examples/models/gpt2.py:build; factory(size, **args) returns "
                   "(model, inputs[, loss_fn]) for one sample")
    p.add_argument("--input", required=True, help="the input size's name and the sizes to trace, e.g. "
                   "tokens=128,256,512,1024 (3 to 12 sizes)")
    p.add_argument("--arg", action="append", help="KEY=VALUE passed to the factory (repeatable)")
    p.add_argument("--default-size", type=_bounded("input_size"), default=None,
                   help="the profile's default input size (default: the largest traced)")
    p.add_argument("--out", default=None, help="profile file to write (default: <id>.yaml)")
    p.add_argument("--id", default=None, help="the profile's id (default: from the file and arguments)")
    p.add_argument("--name", default=None, help="the profile's display name")
    p.add_argument("--tolerance", type=float, default=1.0, help="largest miss of a growth law, percent (default 1)")
    p.add_argument("--max-seconds", type=float, default=600.0, help="time cap for the whole trace (default 600)")
    p.add_argument("--max-host-gb", type=float, default=4.0,
                   help="host memory the tracing process may use beyond torch itself (default 4)")

    p = _formatted(sub, "calibration", cmd_calibration, "fit a bench result and compare analytic vs calibrated "
                   "estimates")
    p.add_argument("file", help="result file written by `python -m planner.bench`")
    add_plan_args(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (UnknownNameError, DataFileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}", file=sys.stderr)
        return 2


def main_exit() -> None:
    """The `planner` console command (pyproject.toml): main() with its exit code."""
    sys.exit(main())
