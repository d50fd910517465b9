"""MLPerf Server rows beside their Offline siblings (POST HOC: it reads the measured values): per round, model, GPU
and tensor-parallel degree, the planner's Offline tokens/s error, the Server rate over the Offline throughput
(measured and planned), and the Server TTFT / TPOT medians' errors without and with the run-length entries of
validation/serving/posthoc.yaml (validation/REPORT.md, 'MLPerf Server runs last 600 s').

    python3 validation/mlperf_server_vs_offline.py
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.inputs.facts import load_facts  # noqa: E402
from planner.validation.serving_first import SERVING_DIR, load_rows, measured_values, predict  # noqa: E402
from planner.validation.serving_rescore import load_posthoc, with_posthoc  # noqa: E402

SERVER = ("mlperf-inference-v41-llama2-70b-server.yaml", "mlperf-inference-v41-mixtral-8x7b-server.yaml",
          "mlperf-inference-v51-llama2-70b-server.yaml")


def _err(p: float, v: float) -> float:
    return (p - v) / v * 100


def main() -> None:
    facts, measured, posthoc = load_facts(), measured_values(), load_posthoc()
    without = [(pat, c) for pat, c in posthoc if not pat.startswith("mlperf")]  # the run-length entries left out
    offline = {}
    for name in SERVER:
        for r in load_rows(SERVING_DIR / "to_predict" / name.replace("-server", "-offline")):
            if r.id in measured:
                offline[r.id] = (r, measured[r.id], predict(with_posthoc(r, posthoc), facts))
    groups: dict = {}
    for name in SERVER:
        for r in load_rows(SERVING_DIR / "to_predict" / name):
            if r.id not in measured:
                continue
            v = measured[r.id]
            g = groups.setdefault((name.split("-")[2], r.model, r.gpu, r.tp), {"off": [], "rm": [], "rp": [],
                                                                                   "ttft": [], "tpot": []})
            sibling = offline.get(re.sub(r"-(ttft|tpot)$", "", r.id).replace("-server-", "-offline-"))
            if sibling and r.metric == "tpot_median_ms":
                row, ov, op = sibling
                g["off"].append(_err(op, ov))
                g["rm"].append(r.rate * row.output_tokens / ov)
                g["rp"].append(r.rate * row.output_tokens / op)
            before, after = (predict(with_posthoc(r, p), facts) for p in (without, posthoc))
            g[r.metric[:4]].append((_err(before, v), _err(after, v)))

    def med(xs: list) -> float:
        return statistics.median(xs) if xs else float("nan")

    print("round, model, GPU, TP | results | Offline tok/s error | rate/Offline measured | rate/Offline planned | "
          "TTFT before -> after | TPOT before -> after")
    for k, g in sorted(groups.items()):
        t, p = g["ttft"], g["tpot"]
        print(f"{' '.join(map(str, k))} | {len(p)} | {med(g['off']):+.1f} % | {med(g['rm']):.2f} | {med(g['rp']):.2f}"
              f" | {med([a for a, _ in t]):+.1f} -> {med([b for _, b in t]):+.1f} %"
              f" | {med([a for a, _ in p]):+.1f} -> {med([b for _, b in p]):+.1f} %")


if __name__ == "__main__":
    main()
