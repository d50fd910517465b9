"""What a tensor-parallel decode row lacks, per collective call: the miss of the deployed planner spread over its calls.

An analysis of validation rows, not part of the planner (nothing here is read by the engine). For every row the
planner puts in the regime 'decode, tensor parallel', with the values estimates use (data/runtimes_tuned.yaml):

    missing seconds = job seconds x (predicted speed / measured speed - 1)
    implied us per call = (the collectives' modelled seconds + missing seconds) / the job's collective calls

i.e. what each all-reduce (and logits all-gather) would have to cost if the whole miss were in the collectives.
`--single` first divides the speed ratio by the median ratio of the same source's and runtime's one-GPU decode rows
(their miss at batch 1 and up, which is not tensor parallel's), so the per-call figure is what tensor parallel adds.
`--gpu ID` predicts every row on another GPU (e.g. a100-pcie-80gb: the same rows if their server were PCIe cards).

Run: python3 validation/tp_decode_miss.py [--single] [--gpu ID] [row id prefix ...]
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.validation.loso import source_of  # noqa: E402
from planner.validation.measured import load_measurements, predict_row  # noqa: E402

TP_REGIME = "decode, tensor parallel"
TIME_METRICS = ("step_seconds", "seconds", "latency_s")  # metrics where a larger value is slower


def speed_ratio(metric: str, measured: float, predicted: float) -> float:
    """Predicted speed / measured speed (> 1: the planner is too fast)."""
    return measured / predicted if metric in TIME_METRICS else predicted / measured


def implied_call_seconds(job_seconds: float, ratio: float, comm_seconds: float, calls: float) -> float:
    """Seconds each of a job's `calls` collectives would take if the whole miss were in them: (the collectives'
    modelled seconds + job seconds x (ratio - 1)) / calls (ratio = predicted / measured speed)."""
    return (comm_seconds + job_seconds * (ratio - 1)) / calls


def row_miss(row, base_ratio: float | None = None) -> tuple[float, float, float, float]:
    """(speed ratio, collective calls per step, modelled seconds per call, implied seconds per call) of a tensor-
    parallel row, the speed ratio first divided by `base_ratio` (the one-GPU miss) when given."""
    p = predict_row(row)
    e = p.estimate
    ratio = speed_ratio(row.metric, row.value, p.predicted)
    calls = sum(ph.comm_calls * ph.steps * ph.passes for ph in e.phases)
    comm = sum(ph.comm_s * ph.passes for ph in e.phases)
    steps = max((ph.steps * ph.passes for ph in e.phases if ph.comm_calls), default=0)
    tp_ratio = ratio / base_ratio if base_ratio else ratio
    return ratio, calls / steps, comm / calls, implied_call_seconds(e.seconds, tp_ratio, comm, calls)


def single_gpu_ratio(rows, source: str, framework: str) -> float | None:
    """Median speed ratio of a source's one-GPU decode rows of the same framework (None without any)."""
    ratios = []
    for r in rows:
        if source_of(r) != source or r.framework != framework or r.gpus != 1:
            continue
        if r.regime != "decode":
            continue
        p = predict_row(r)
        if p.predicted and not p.excluded:
            ratios.append(speed_ratio(r.metric, r.value, p.predicted))
    return statistics.median(ratios) if ratios else None


def main(argv: list[str]) -> None:
    single = "--single" in argv
    gpu = argv[argv.index("--gpu") + 1] if "--gpu" in argv else None
    prefixes = [a for a in argv if not a.startswith("--") and a != gpu]
    rows = load_measurements()
    print(f"{'row':<62} {'runtime':<20} {'ratio':>6} {'1-GPU':>6} {'calls/step':>10} {'model us':>9} "
          f"{'implied us':>10}")
    for r in rows:
        if prefixes and not any(r.id.startswith(p) for p in prefixes):
            continue
        row = replace(r, gpu=gpu) if gpu else r
        p = predict_row(row)
        if p.regime != TP_REGIME or not p.predicted or p.excluded:
            continue
        base = single_gpu_ratio(rows, source_of(r), r.framework) if single else None
        ratio, per_step, model_s, implied_s = row_miss(row, base)
        print(f"{r.id[:62]:<62} {p.plan.runtime:<20} {ratio:6.3f} {base or float('nan'):6.3f} "
              f"{per_step:10.0f} {model_s * 1e6:9.1f} {implied_s * 1e6:10.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
