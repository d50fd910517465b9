"""Comparison tables of a calibration: each measured point analytic and calibrated (point_table), held-out sizes and
models predicted by a fit without them (holdout_table, held_out_model_table), and a plan on every device before and
after the calibration (side_by_side)."""

from __future__ import annotations

from collections.abc import Iterable

from planner.base.schema import Record
from planner.calibration.fit import Calibration, fit
from planner.calibration.measured import bench_points, measured_points, predict_seconds
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.bench_result import CalibrationError, point_model, run_model
from planner.inputs.facts import Facts, load_facts


def point_table(result: dict, cal: Calibration) -> list[dict]:
    """Every measured point with the planner's analytic and calibrated time on the measured device (seconds)."""
    dev = cal.measured_gpu()
    rows = []
    for pt, row in zip(bench_points(result), [r for r in measured_points(result) if r["status"] == "ok"]):
        analytic = predict_seconds(pt.kind, pt.model, pt.batch, pt.size, pt.precision, dev, runtime=pt.runtime)
        calibrated = predict_seconds(pt.kind, pt.model, pt.batch, pt.size, pt.precision, dev, cal.bench_adjust,
                                     pt.runtime)
        rows.append({**row, "analytic_s": analytic, "calibrated_s": calibrated,
                     "calibrated_error_pct": 100 * (calibrated / pt.measured_s - 1)})
    return rows


def holdout_table(result: dict, run: int = 0) -> list[dict]:
    """Measure here, predict a size never fitted: for each input size of model run `run`, the calibration fitted
    without that size (every other point of the result kept) predicts the size's forward and train steps on the
    measured device. Rows: size, workload, measured_s, predicted_s, error_pct, and the fit's factors."""
    runs = result.get("model_runs") or []
    if not 0 <= run < len(runs):
        raise CalibrationError(f"the result has {len(runs)} model run(s); no run {run} to hold sizes out of")
    model = run_model(Record("result", f"model_runs[{run}]", runs[run]))
    measured = [pt for pt in runs[run]["points"] if pt.get("status") == "ok"]
    rows = []
    for size in sorted({pt["size"] for pt in measured}):
        kept = {**result, "model_runs": [r if i != run else {**r, "points": [pt for pt in r["points"]
                                                                             if pt["size"] != size]}
                                         for i, r in enumerate(runs)]}
        cal = fit(kept)
        dev = cal.measured_gpu()
        for pt in (pt for pt in measured if pt["size"] == size):
            pred = predict_seconds(pt["workload"], model, int(runs[run]["batch"]), size, runs[run]["precision"], dev,
                                   cal.bench_adjust)
            rows.append({"size": size, "workload": pt["workload"], "measured_s": pt["measured_s"],
                         "predicted_s": pred, "error_pct": 100 * (pred / pt["measured_s"] - 1),
                         "mem_bw_efficiency": cal.mem_bw_efficiency, "compute_efficiency": cal.compute_efficiency,
                         "overhead_us": cal.overhead_us})
    return rows


def held_out_model_table(result: dict, model_id: str) -> list[dict]:
    """Measure here, predict another architecture: the calibration fitted without the workload points of model
    `model_id` predicts each of them on the measured device. Rows: workload, batch, size, measured_s, predicted_s,
    error_pct."""
    held = [(i, w) for i, w in enumerate(result.get("workloads") or [])
            if w["model"]["id"] == model_id and w.get("status") == "ok"]
    if not held:
        raise CalibrationError(f"the result has no measured point of model {model_id!s:.80} to hold out")
    cal = fit(result, points=[w for w in result["workloads"] if w["model"]["id"] != model_id])
    dev = cal.measured_gpu()
    rows = []
    for i, w in held:
        size = w.get("position") or w["seq"]
        pred = predict_seconds(w["workload"], point_model(Record("result", f"workloads[{i}]", w)), w["batch"], size,
                               w["precision"], dev, cal.adjust)
        rows.append({"workload": w["workload"], "batch": w["batch"], "size": size, "measured_s": w["measured_s"],
                     "predicted_s": pred, "error_pct": 100 * (pred / w["measured_s"] - 1)})
    return rows


def side_by_side(plan: Plan, cal: Calibration, facts: Facts | None = None,
                 gpu_names: Iterable[str] | None = None, include_cpus: bool = False) -> list[dict]:
    """Analytic and calibrated estimates of `plan` per device (calibrated ranking order), the measured device first;
    a calibrated catalog CPU is always among them."""
    facts = facts or load_facts()
    names = list(gpu_names) if gpu_names else None
    ref = cal.reference_gpu(facts.catalog)
    if ref is not None and ref.kind == "cpu" and not include_cpus and names is None:
        names = [*(g.id for g in facts.catalog.gpus), ref.id]  # the GPUs and the CPU row this fit calibrates
    analytic = {e.gpu.id: e for e in estimate_all(plan, facts, names, include_cpus=include_cpus)}
    calibrated = estimate_all(plan, facts, names, adjust=cal.adjust, include_cpus=include_cpus)
    device_gpu_ = cal.measured_gpu(facts.catalog)
    device = estimate_gpu(plan, device_gpu_, facts, cal.adjust)
    device_analytic = estimate_gpu(plan, device_gpu_, facts)
    rows = []
    for e, a in [(device, device_analytic)] + [(e, analytic[e.gpu.id]) for e in calibrated]:
        rows.append({"gpu_id": e.gpu.id, "gpu": e.gpu.name, "feasible": e.feasible, "analytic_s": a.seconds,
                     "calibrated_s": e.seconds,
                     "change_pct": (100 * (e.seconds / a.seconds - 1)) if e.seconds and a.seconds else None,
                     "efficiency_source": e.efficiency.source})
    return rows
