"""Issue 30's training misses traced to what produces them (validation/REPORT.md 'Where the 1-GPU and TP misses
come from' quotes it). An analysis of the committed engine and published rows, not part of the planner; nothing here
changes an estimate.

Run: PYTHONPATH=. python3 validation/train_misses.py (from the repository root: without it, `python3 validation/x.py`
imports whichever planner is installed, not this tree's)

1. The 1-GPU bucket: for each single-GPU training row's source, the values its runtime is tuned to in that source's
   leave-one-source-out fold, and which other sources' rows (and in which regimes) could move them
   (measured.movers); then the bucket scored as now and as it would be if each fold tuned a training row's runtime
   on the other sources' TRAINING rows only (a counterfactual: the engine keeps one set of values per runtime).
2. KempnerForge's tensor-parallel pairs: the rows whose every collective group inside a node is a pair (TP 2 on 2
   GPUs, TP 2 x FSDP 2 on 4; FSDP 2 on 2 beside them), re-predicted with the H200's NVLink at a third of its
   bandwidth, what a pair gets on a 4-GPU board that joins its GPUs directly (each GPU's 18 links split over 3
   peers) instead of through NVSwitch: a hypothesis about Kempner's nodes, which its report does not state.
"""
from __future__ import annotations

import statistics
from dataclasses import replace

from planner.inputs.catalog import Catalog, GPU, load_catalog
from planner.inputs.runtimes import LAUNCH_PARAMS, load_runtimes
from planner.validation import measured
from planner.validation.loso import leave_one_source_out, source_of
from planner.validation.measured import (FRAMEWORK_RUNTIME, Measurement, adjust_for, evaluate_row, load_measurements,
                                      movers, priors_adjust, tune_runtime, validation_models)
from planner.validation.train_buckets import train_scores

BANDWIDTH = ("mem_bw_efficiency.hbm", "mem_bw_efficiency.gddr")
# a fully connected 4-GPU board: each GPU's NVLinks split evenly over its 3 peers, so a pair's ring uses 1 of 3 shares
PAIR_SHARE_ON_4_GPU_MESH = 1 / 3


def speed_error(metric: str, error_pct: float) -> float:
    """A row's error as speed (+ = the planner faster): a step time's sign flips."""
    return -error_pct if metric == "step_seconds" else error_pct


def summary(errors: list[float]) -> str:
    return (f"{len(errors)} rows, median |error| {statistics.median(abs(e) for e in errors):.1f} %, "
            f"median bias {statistics.median(errors):+.1f} %")


def scorable() -> list[Measurement]:
    """Rows the engine scores that were not predicted first (those are never tuned on), as loso scores them."""
    held = measured.prediction_first_ids()
    catalog, models = load_catalog(), validation_models()
    out = []
    for row in load_measurements():
        if row.id in held:
            continue
        res, _ = evaluate_row(row, catalog, models, priors_adjust(row))
        if res.split != "excluded" and res.predicted:
            out.append(row)
    return out


def fold_rows(rows: list[Measurement], held: str, runtime: str, train_only: bool) -> list[Measurement]:
    return [r for r in rows if source_of(r) != held and FRAMEWORK_RUNTIME[r.framework] == runtime
            and (r.regime == "train" or not train_only)]


def one_gpu_folds(rows: list[Measurement]) -> None:
    """Each single-GPU training source's fold: its runtime's bandwidth fractions and the rows that set them."""
    print("1. single-GPU training rows: each source's leave-one-source-out fold")
    pairs = sorted({(source_of(r), FRAMEWORK_RUNTIME[r.framework]) for r in rows
                    if r.regime == "train" and r.gpus == 1})
    for held, runtime in pairs:
        train = fold_rows(rows, held, runtime, train_only=False)
        params, _ = tune_runtime(runtime, train)
        moved = movers(runtime, train, BANDWIDTH)
        print(f"  {held} ({runtime}): " + "; ".join(
            f"{name.split('.')[1]} {params[name]:.2f} from "
            + (", ".join(sorted({f'{source_of(r)} {r.regime}' for r in moved[name]})) or "no row: prior")
            for name in BANDWIDTH))


def one_gpu_bucket(rows: list[Measurement], train_only: bool) -> list[float]:
    """The single-GPU training rows' speed errors, each source's runtime tuned on the other sources' rows (training
    rows only when `train_only`), as loso.leave_one_source_out runs a fold."""
    catalog, models, runtimes = load_catalog(), validation_models(), load_runtimes()
    cache: dict[tuple, dict[str, float]] = {}

    def tuned(runtime: str, train: list[Measurement]) -> dict[str, float]:
        key = (runtime, frozenset(r.id for r in train))
        if key not in cache:
            cache[key] = tune_runtime(runtime, train)[0]
        return cache[key]

    errors = []
    for row in rows:
        if row.regime != "train" or row.gpus != 1:
            continue
        runtime, held = FRAMEWORK_RUNTIME[row.framework], source_of(row)
        train = fold_rows(rows, held, runtime, train_only)
        params = tuned(runtime, train) if train else measured.prior_params(runtime)
        family = runtimes.get(runtime).launch_family
        family_rows = fold_rows(rows, held, family, train_only) if family else []
        if family_rows:
            params = params | {n: tuned(family, family_rows)[n] for n in LAUNCH_PARAMS}
        res, _ = evaluate_row(row, catalog, models, adjust_for(runtime, params))
        errors.append(speed_error(row.metric, res.error_pct))
    return errors


def mesh_pair(gpu: GPU) -> GPU:
    """`gpu` with every NVLink at a pair's share of a fully connected 4-GPU board."""
    links = tuple(replace(k, unidir_gbps=k.unidir_gbps * PAIR_SHARE_ON_4_GPU_MESH) if k.kind.id == "nvlink" else k
                  for k in gpu.links)
    return replace(gpu, links=links)


def pairs_only(row: Measurement) -> bool:
    """Every collective group of the row inside one node is a pair: 2 GPUs, or TP 2 beside 2 data-parallel ranks."""
    return row.gpus == 2 or (row.gpus == 4 and row.tp == 2)


def kempnerforge_pairs() -> None:
    print("\n2. KempnerForge rows whose groups are pairs: speed error now -> with a pair's third of the NVLink")
    catalog = load_catalog()
    meshed = Catalog(tuple(mesh_pair(g) if g.id == "h200-sxm" else g for g in catalog.gpus), catalog.path,
                     catalog.cpus)
    for score in train_scores(leave_one_source_out()):
        row = score.row
        if source_of(row) != "KempnerInstitute/KempnerForge" or not pairs_only(row):
            continue
        res, _ = evaluate_row(row, meshed)
        print(f"  {row.id}: {speed_error(row.metric, score.result.error_pct):+.1f} % -> "
              f"{speed_error(row.metric, res.error_pct):+.1f} %")


def main() -> None:
    rows = scorable()
    one_gpu_folds(rows)
    print(f"  bucket now (as planner validate scores it):      {summary(one_gpu_bucket(rows, train_only=False))}")
    print(f"  folds tuned on other sources' training rows only: {summary(one_gpu_bucket(rows, train_only=True))}")
    kempnerforge_pairs()


if __name__ == "__main__":
    main()
