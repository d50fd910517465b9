"""`planner calibration`: fit a bench result and compare the analytic and calibrated estimates."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.base.files import read_regular
from planner.calibration import fit as calibration
from planner.calibration import tables as calibration_tables
from planner.cli.plans import device_names, plan_from_args
from planner.inputs.bench_result import MAX_RESULT_BYTES, parse_result
from planner.views.calibration_text import factor_rows, fit_lines
from planner.views.report import emit, sig


def cmd_calibration(a: argparse.Namespace) -> int:
    path = Path(a.file)
    result = parse_result(read_regular(path, MAX_RESULT_BYTES, "bench result file"), path.name)
    cal = calibration.fit(result, device=a.calibration_cpu)
    points = calibration_tables.point_table(result, cal)
    gpus = calibration_tables.side_by_side(plan_from_args(a), cal, gpu_names=device_names(a),
                                           include_cpus=a.include_cpu)
    if a.format == "table":  # the figures that matter, rounded; json/csv carry every field
        points = [{"point": r["label"], "measured_s": sig(r["measured_s"]), "analytic_s": sig(r["analytic_s"]),
                   "calibrated_s": sig(r["calibrated_s"]), "error_pct": round(r["calibrated_error_pct"], 1)}
                  for r in points]
        gpus = [{"gpu": r["gpu_id"], "analytic_s": sig(r["analytic_s"]), "calibrated_s": sig(r["calibrated_s"]),
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
            held = [{"held_out_size": r["size"], "workload": r["workload"], "measured_s": sig(r["measured_s"]),
                     "predicted_s": sig(r["predicted_s"]), "error_pct": round(r["error_pct"], 1)} for r in held]
        print(emit(held, a.format))
        print()
    print(emit(gpus, a.format))
    return 0
