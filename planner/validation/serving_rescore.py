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
from planner.validation.serving_first import (LENGTHS, MAX_REQUEST_OVERHEAD_MS, MAX_ROW_CONCURRENCY, MAX_ROW_TOKENS,
                                              SERVING_DIR, STATISTICS, ServingRow, load_rows, predict, row_host_speed)

POSTHOC_FILE = SERVING_DIR / "posthoc.yaml"
MAX_POSTHOC = 150


def _count(lo: int, hi: int):
    """A parser of a whole-number condition within lo..hi."""
    return lambda rec, field: int(rec.number(field, lo=lo, hi=hi, integer=True))


def _flag(rec: Record, field: str) -> bool:
    return rec.flag(field)


def _text(rec: Record, field: str) -> str:
    return rec.text(field)


# the row conditions a post-hoc entry may set, each with its parser (the rows' own bounds: serving_first.load_rows)
PARSERS = {
    "precision": _text, "kv_dtype": _text, "scheduler_steps": _count(1, 64),
    "lengths": lambda rec, field: rec.text(field, choices=LENGTHS), "host_overlap": _flag, "engine": _text,
    "requests": _count(1, MAX_REQUESTS),
    "request_overhead_ms": lambda rec, field: rec.number(field, lo=0, hi=MAX_REQUEST_OVERHEAD_MS),
    "max_num_seqs": _count(1, MAX_NUM_SEQS), "token_budget": _count(16, MAX_TOKEN_BUDGET),
    "chunked_prefill": _flag, "inprocess_stream": _flag, "enforce_eager": _flag, "custom_allreduce": _flag,
    "max_output_tokens": _count(1, MAX_ROW_TOKENS), "output_tokens": _count(2, MAX_ROW_TOKENS),
    "cached_prefix_tokens": _count(1, MAX_ROW_TOKENS), "streamed": _flag,
    # requests in flight at once, where the client did not keep the stated number
    "concurrency": _count(1, MAX_ROW_CONCURRENCY),
    "statistic": lambda rec, field: rec.text(field, choices=STATISTICS),
    # the run's host CPU's single-thread speed over the reference hosts' (planner.engine.host_speed), where a source
    # names the CPU of the machine the rows ran on
    "host_speed": lambda rec, field: row_host_speed(rec),
}
OVERRIDES = tuple(PARSERS)


def load_posthoc(path: str | Path = POSTHOC_FILE) -> list[tuple[str, dict]]:
    """(row id pattern, conditions) per entry of `path`; DataFileError naming the entry and field."""
    out = []
    for i, raw in enumerate(load_yaml(path, "conditions")):
        rec = Record.of(path, i, raw)
        rec.check_keys(("rows", "why") + OVERRIDES)
        rec.text("why")
        cond = {field: parse(rec, field) for field, parse in PARSERS.items() if field in rec.data}
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
