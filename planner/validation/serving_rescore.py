"""The serving rows re-scored with today's planner (secondary: the committed predictions of serving_first stay the
headline). Two columns per source and metric: today's planner on the conditions as entered before predicting, and
on them plus the conditions read only after the values were seen (validation/serving/posthoc.yaml: each with the
rows it applies to and where it was read). Nothing is tuned on these rows, so there is no leave-one-source-out fit
to run: a held-out source is predicted by exactly what predicts every other one.
"""

from __future__ import annotations

import fnmatch
import statistics
from dataclasses import replace
from pathlib import Path

from planner.base.schema import DataFileError, Record, load_yaml
from planner.inputs.facts import Facts
from planner.engine.serving_sim import MAX_REQUESTS
from planner.inputs.serving_runtimes import MAX_NUM_SEQS, MAX_TOKEN_BUDGET
from planner.validation.serving_first import (LENGTHS, MAX_REQUEST_OVERHEAD_MS, SERVING_DIR, STATISTICS, ServingRow,
                                              load_rows, predict)

POSTHOC_FILE = SERVING_DIR / "posthoc.yaml"
MAX_POSTHOC = 50
# the row conditions a post-hoc entry may set
OVERRIDES = ("precision", "kv_dtype", "scheduler_steps", "lengths", "host_overlap", "engine", "requests",
             "request_overhead_ms", "max_num_seqs", "token_budget", "chunked_prefill", "inprocess_stream",
             "enforce_eager", "statistic", "custom_allreduce", "max_output_tokens", "output_tokens",
             "streamed", "cached_prefix_tokens", "concurrency")


def load_posthoc(path: str | Path = POSTHOC_FILE) -> list[tuple[str, dict]]:
    """(row id pattern, conditions) per entry of `path`; DataFileError naming the entry and field."""
    out = []
    for i, raw in enumerate(load_yaml(path, "conditions")):
        rec = Record.of(path, i, raw)
        rec.check_keys(("rows", "why") + OVERRIDES)
        rec.text("why")
        cond = {}
        if "precision" in rec.data:
            cond["precision"] = rec.text("precision")
        if "kv_dtype" in rec.data:
            cond["kv_dtype"] = rec.text("kv_dtype")
        if "scheduler_steps" in rec.data:
            cond["scheduler_steps"] = int(rec.number("scheduler_steps", lo=1, hi=64, integer=True))
        if "lengths" in rec.data:
            cond["lengths"] = rec.text("lengths", choices=LENGTHS)
        if "host_overlap" in rec.data:
            cond["host_overlap"] = rec.flag("host_overlap")
        if "engine" in rec.data:
            cond["engine"] = rec.text("engine")
        if "requests" in rec.data:
            cond["requests"] = int(rec.number("requests", lo=1, hi=MAX_REQUESTS, integer=True))
        if "request_overhead_ms" in rec.data:
            cond["request_overhead_ms"] = rec.number("request_overhead_ms", lo=0, hi=MAX_REQUEST_OVERHEAD_MS)
        if "max_num_seqs" in rec.data:
            cond["max_num_seqs"] = int(rec.number("max_num_seqs", lo=1, hi=MAX_NUM_SEQS, integer=True))
        if "token_budget" in rec.data:
            cond["token_budget"] = int(rec.number("token_budget", lo=16, hi=MAX_TOKEN_BUDGET, integer=True))
        if "chunked_prefill" in rec.data:
            cond["chunked_prefill"] = rec.flag("chunked_prefill")
        if "inprocess_stream" in rec.data:
            cond["inprocess_stream"] = rec.flag("inprocess_stream")
        if "enforce_eager" in rec.data:
            cond["enforce_eager"] = rec.flag("enforce_eager")
        if "custom_allreduce" in rec.data:
            cond["custom_allreduce"] = rec.flag("custom_allreduce")
        if "max_output_tokens" in rec.data:
            cond["max_output_tokens"] = int(rec.number("max_output_tokens", lo=1, hi=10**6, integer=True))
        if "output_tokens" in rec.data:
            cond["output_tokens"] = int(rec.number("output_tokens", lo=2, hi=10**6, integer=True))
        if "cached_prefix_tokens" in rec.data:
            cond["cached_prefix_tokens"] = int(rec.number("cached_prefix_tokens", lo=1, hi=10**6, integer=True))
        if "streamed" in rec.data:
            cond["streamed"] = rec.flag("streamed")
        if "concurrency" in rec.data:  # requests in flight at once, where the client did not keep the stated number
            cond["concurrency"] = int(rec.number("concurrency", lo=1, hi=4096, integer=True))
        if "statistic" in rec.data:
            cond["statistic"] = rec.text("statistic", choices=STATISTICS)
        if not cond:
            raise rec.fail("rows", f"an entry sets at least one of {', '.join(OVERRIDES)}")
        out.append((rec.text("rows"), cond))
    if len(out) > MAX_POSTHOC:
        raise DataFileError(path, "-", "conditions", f"{len(out)} entries, at most {MAX_POSTHOC} expected")
    return out


def with_posthoc(row: ServingRow, posthoc: list[tuple[str, dict]]) -> ServingRow:
    """`row` with every post-hoc condition whose pattern matches its id (later entries win)."""
    for pattern, cond in posthoc:
        if fnmatch.fnmatchcase(row.id, pattern):
            row = replace(row, **cond)
    return row


def _stats(errors: list[float]) -> dict:
    return {"rows": len(errors), "median_abs_error_pct": round(statistics.median(map(abs, errors)), 1),
            "median_bias_pct": round(statistics.median(errors), 1)}


def rescore(facts: Facts, to_predict: str | Path = SERVING_DIR / "to_predict",
            measured_path: str | Path = SERVING_DIR / "measured.yaml",
            posthoc_path: str | Path = POSTHOC_FILE) -> list[dict]:
    """Per source (the first word of its citation) and metric: today's planner's error on the conditions as
    entered ('as_entered') and with the post-hoc conditions ('posthoc'), over the rows with a measured value."""
    measured = {}
    for i, raw in enumerate(load_yaml(measured_path, "rows")):
        rec = Record.of(measured_path, i, raw)
        measured[rec.text("id")] = rec.number("value", lo=0)
    posthoc = load_posthoc(posthoc_path)
    groups: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for path in sorted(Path(to_predict).glob("*.yaml")):
        for row in load_rows(path):
            if row.id not in measured:
                continue
            value = measured[row.id]
            now = (predict(row, facts) - value) / value * 100
            late = (predict(with_posthoc(row, posthoc), facts) - value) / value * 100
            key = (row.source.split(" ")[0], row.metric)
            groups.setdefault(key, ([], []))[0].append(now)
            groups[key][1].append(late)
    return [{"source": s, "metric": m, "as_entered": _stats(a), "posthoc": _stats(b)}
            for (s, m), (a, b) in sorted(groups.items())]
