"""The serving rate rows scored per metric over all their rows and below saturation, three ways: the committed
predictions (the headline), today's planner on the conditions as entered, and with the post-hoc conditions
(planner.validation.serving_rescore). Secondary: it reads the measured values, so every figure but the committed
predictions' is post hoc.

    python3 validation/serving_below_saturation.py [--by-source] [--all | prefix ...]   (default: zhjunqin Livinfly)

--all: every serving source with entered values (validation/serving/to_predict/*.yaml), whatever its prefix.

--by-source: the same figures per source (the repository its citation names) as well as over them all, and over them
all with each source weighing the same (per_publication).

Below saturation: the rows at a request rate whose measured median TTFT is under BELOW_SATURATION_TTFT_S. Above the
saturation rate a finite benchmark's queue grows for the whole run, so its TTFT is the run's length, not a latency
the issue's targets are about (median |error| <= 15 % on TTFT and TPOT, bias within +-10 %).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.validation.loso import weighted_median  # noqa: E402
from planner.inputs.facts import load_facts  # noqa: E402
from planner.validation.serving_first import (SERVING_DIR, committed_predictions, load_rows,  # noqa: E402
                                              measured_values, predict)
from planner.validation.serving_rescore import load_posthoc, with_posthoc  # noqa: E402

BELOW_SATURATION_TTFT_S = 1.0  # a median TTFT over a second: the queue grew through the run (a saturated rate)


def _stats(errors: list[float]) -> str:
    if not errors:
        return "-"
    return f"{statistics.median(map(abs, errors)):.1f} % / {statistics.median(errors):+.1f} % ({len(errors)})"


def main(prefixes: list[str], by_source: bool = False) -> dict:
    facts = load_facts()
    measured, committed = measured_values(), committed_predictions()
    posthoc = load_posthoc()
    rows = [r for path in sorted((SERVING_DIR / "to_predict").glob("*.yaml")) for r in load_rows(path)
            if r.id in measured and any(r.source.startswith(p) for p in prefixes)]
    ttft = {(r.source.split(" ")[0], r.runtime, r.rate): measured[r.id] for r in rows if r.metric == "ttft_median_ms"}
    out: dict = {}
    for r in rows:
        v = measured[r.id]
        errs = {"committed": (committed[r.id] - v) / v * 100 if r.id in committed else None,
                "as_entered": (predict(r, facts) - v) / v * 100,
                "posthoc": (predict(with_posthoc(r, posthoc), facts) - v) / v * 100}
        key = (r.source.split(" ")[0], r.runtime, r.rate)
        below = r.rate is not None and ttft.get(key, float("inf")) < BELOW_SATURATION_TTFT_S * 1e3
        for subset in ("all", "below_saturation") if below else ("all",):
            repo = key[0].split(":")[0]  # the repository of the citation's first word (a file of it, else itself)
            for where in (out, out.setdefault("by_source", {}).setdefault(repo, {})) if by_source else (out,):
                group = where.setdefault(r.metric, {}).setdefault(subset, {})
                for k, e in errs.items():
                    if e is not None:
                        group.setdefault(k, []).append(e)
    sources = out.pop("by_source", {})
    result = _summary(out)
    if by_source:
        result["by_source"] = {src: _summary(metrics) for src, metrics in sorted(sources.items())}
        result["per_publication"] = _per_publication(sources)
    return result


def _per_publication(sources: dict) -> dict:
    """Each metric and subset over all sources with each publication weighing the same (loso.weighted_median: one
    source of 92 rows counts once, as one of 5 does): median |error| / median error, and the number of sources."""
    out: dict = {}
    for metrics in sources.values():
        for m, sub in metrics.items():
            for subset, group in sub.items():
                for k, errors in group.items():
                    out.setdefault(m, {}).setdefault(subset, {}).setdefault(k, []).append(errors)
    return {m: {subset: {k: _weighted_stats(lists) for k, lists in g.items()} for subset, g in sub.items()}
            for m, sub in out.items()}


def _weighted_stats(lists: list[list[float]]) -> str:
    pairs = [(e, 1.0 / len(errors)) for errors in lists for e in errors]
    return (f"{weighted_median([(abs(e), w) for e, w in pairs]):.1f} % / {weighted_median(pairs):+.1f} % "
            f"({len(lists)} sources)")


def _summary(out: dict) -> dict:
    return {m: {s: {k: _stats(e) for k, e in g.items()} for s, g in sub.items()} for m, sub in out.items()}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a not in ("--by-source", "--all")]
    chosen = [""] if "--all" in sys.argv[1:] else args or ["zhjunqin", "Livinfly"]  # "": every source's prefix
    print(json.dumps(main(chosen, "--by-source" in sys.argv[1:]), indent=2))
