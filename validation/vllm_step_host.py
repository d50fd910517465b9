"""vLLM's per-step CPU time against two kinds of evidence at once: IOG's vLLM 0.8.5 serving rows (V1) and the vLLM
decode rows of the validation set (V0 engines, and the tenstorrent rows that name no version). A diagnostic, POST HOC
(it reads measured values), not part of the planner: it changes no data file, it re-predicts the rows with one
per-step host time for every vLLM generation, each value asked (the validation rows: V0's 1.9 ms of data/serving.yaml
engines overridden too; IOG's rows name no generation, so they run V1's, data/runtimes.yaml).

    python3 validation/vllm_step_host.py [step_host_us ... | data]   (default: 1900 950 260 0)

`data` predicts with the data files as they stand (each generation its own data/serving.yaml / data/runtimes.yaml
figure, nothing overridden): the before/after check of a change to those files.

Per value: IOG's rate rows below saturation (median |error| / median error, + = predicted higher, the post-hoc
conditions as validation/serving_below_saturation.py reads them), and the validation rows whose framework is vllm,
grouped by engine generation and regime (median |error| / median speed bias, + = the planner faster). A per-step
figure that brings one group to zero bias and another far from it is not the missing mechanism.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.base.schema import load_yaml  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.inputs.runtimes import Runtimes  # noqa: E402
from planner.validation.measured import as_known_now, load_measurements, predict_row, validation_models  # noqa: E402
from planner.validation.serving_first import SERVING_DIR, load_rows, predict  # noqa: E402
from planner.validation.serving_rescore import load_posthoc, with_posthoc  # noqa: E402

BELOW_SATURATION_TTFT_MS = 1000.0  # validation/serving_below_saturation.py's cut: a median TTFT under a second


def _stats(errors: list[float]) -> str:
    return (f"{statistics.median(map(abs, errors)):5.1f} % / {statistics.median(errors):+6.1f} % ({len(errors)})"
            if errors else "-")


def _with_host(facts, host_us: float):
    """The facts with the vllm profile's per-step host time set to host_us."""
    runtimes = tuple(replace(r, step_host_us=host_us) if r.id == "vllm" else r for r in facts.runtimes.runtimes)
    return replace(facts, runtimes=Runtimes(runtimes))


def serving_errors(facts, host_us: float | None) -> dict[str, list[float]]:
    """IOG's rate rows below saturation: % errors of median TTFT and TPOT at host_us (None: the data's)."""
    measured = {r["id"]: float(r["value"]) for r in load_yaml(SERVING_DIR / "measured.yaml", "rows")}
    posthoc, patched = load_posthoc(), facts if host_us is None else _with_host(facts, host_us)
    rows = [r for path in sorted((SERVING_DIR / "to_predict").glob("iog-*.yaml")) for r in load_rows(path)
            if r.id in measured and r.rate is not None]
    ttft = {(r.model, r.gpu, r.tp, r.rate): measured[r.id] for r in rows if r.metric == "ttft_median_ms"}
    out: dict[str, list[float]] = {"ttft_median_ms": [], "tpot_median_ms": []}
    for r in rows:
        if r.metric in out and ttft.get((r.model, r.gpu, r.tp, r.rate), 1e9) < BELOW_SATURATION_TTFT_MS:
            v = measured[r.id]
            out[r.metric].append((predict(with_posthoc(r, posthoc), patched) - v) / v * 100)
    return out


def decode_errors(host_us: float | None) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """The validation set's vllm rows by (engine generation, regime): (|error| %, speed bias %) at host_us (None:
    the data's, each generation its own)."""
    models = validation_models()

    def adjust(gpu, eff):
        return replace(eff, step_host_us=host_us)

    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for row in load_measurements():
        if row.framework != "vllm":
            continue
        p = predict_row(row, None, models, None if host_us is None else adjust)
        if p.predicted is None or p.excluded:
            continue
        ratio = p.predicted / row.value
        bias = 100.0 * ((1.0 / ratio if row.metric == "step_seconds" else ratio) - 1.0)
        out.setdefault((as_known_now(row).engine or "unnamed", p.regime), []).append((abs(ratio - 1.0) * 100.0, bias))
    return out


def main(values: list[float | None]) -> None:
    facts = load_facts()
    for host_us in values:
        print("## as the data files stand" if host_us is None else f"## vllm step_host_us = {host_us:g}")
        for metric, errors in serving_errors(facts, host_us).items():
            print(f"  IOG {metric:15s} below saturation  {_stats(errors)}")
        for (engine, regime), pairs in sorted(decode_errors(host_us).items()):
            print(f"  rows {engine:8s} {regime:26s} {statistics.median(a for a, _ in pairs):5.1f} % / "
                  f"{statistics.median(b for _, b in pairs):+6.1f} % ({len(pairs)})")


if __name__ == "__main__":
    main([None if a == "data" else float(a) for a in sys.argv[1:]] or [1900.0, 950.0, 260.0, 0.0])
