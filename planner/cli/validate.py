"""`planner validate`: the planner against published measurements (leave one source out, speed-up ratios, band
coverage), the measured-vs-predicted chart, and writing the tuned values and uncertainty bands."""

from __future__ import annotations

import argparse
import json
from datetime import date

from planner.validation import loso, measured, predict_first, train_buckets
from planner.validation.uncertainty import MAX_BIAS_PCT, banded_coverages, write_uncertainty
from planner.views.charts import validation_chart
from planner.views.report import (coverage_rows, csv_text, emit, fmt, loso_rows, prediction_first_text, text_table,
                                  train_bucket_text, validation_headline_text, validation_rows,
                                  validation_summary_text)


def _ratio_pairs(ratios: list) -> list[dict]:
    return [{"kind": r.kind, "source": r.source, "pair": r.label, "measured": round(r.measured, 3),
             "predicted": round(r.predicted, 3), "error_pct": round(r.error_pct, 1),
             "untuned": round(r.untuned, 3), "untuned_error_pct": round(r.untuned_error_pct, 1),
             "rows": f"{r.base_id} -> {r.other_id}"} for r in ratios]


def cmd_validate(a: argparse.Namespace) -> int:
    if a.predict:
        path = predict_first.predict_file(a.predict, a.predictions_dir, a.measurements, source_slug=a.slug,
                                          allow_dirty=a.allow_dirty)
        pf = predict_first.load_predictions(path)
        print(f"{len(pf.rows)} rows of {pf.source} predicted by the planner at {pf.commit}"
              + (f" (uncommitted changes: {', '.join(pf.dirty)})" if pf.dirty else "")
              + f"\npredictions written to {path}: commit it, then enter the measured values in "
              "validation/measurements.yaml")
        return 0
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
    scored = predict_first.score_predictions(a.predictions_dir, a.measurements)
    first = predict_first.prediction_summary(scored)
    first_rows = [r for s in scored for r in s.results]
    residuals = [r.result for r in held_out if r.independent] + first_rows
    first_ids = {r.row_id for r in first_rows}
    predicted_first = lambda r: r.row_id in first_ids  # noqa: E731
    # a band is judged on each publication's rows with that publication left out (loso.source_of, not a row's text)
    levels, (cover, first_cover) = banded_coverages(residuals, loso.source_of, (lambda r: True, predicted_first))
    report = measured.run_validation(a.measurements, priors=True)
    rows = validation_rows(report)
    buckets = train_buckets.bucket_summary(train_buckets.train_scores(held_out, a.measurements))
    if a.format == "json":
        print(json.dumps({"prediction_first": first, "leave_one_source_out": summary,
                          "speedup_ratios": loso.ratio_summary(ratios),
                          "speedup_pairs": _ratio_pairs(ratios), "band_coverage": coverage_rows(cover, levels),
                          "band_coverage_predicted_first": coverage_rows(first_cover, levels),
                          "training_by_gpu_count": buckets,
                          "rows": rows, "summary": report.summary("test") + report.summary("tune")}, indent=2))
    elif a.format == "csv":
        print(csv_text(rows), end="")
    else:
        if a.rows:
            shown = [{**d, "measured": fmt(d["measured"], 4), "predicted": fmt(d["predicted"], 4),
                      "note": (d["note"] or "")[:60]} for d in rows]
            print(text_table(shown))
        print(validation_summary_text(report))
        print()
        print(prediction_first_text(first, [(s.file.source, s.file.commit, s.file.day, len(s.file.rows),
                                             len(s.results)) for s in scored]))
        print()
        print(validation_headline_text(summary, loso.ratio_summary(ratios), cover, levels, MAX_BIAS_PCT,
                                       loso.RATIO_TARGET_PCT, first_cover))
        print()
        print(train_bucket_text(buckets, train_buckets.TARGET_APE_PCT, train_buckets.TARGET_BIAS_PCT))
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
