"""A request trace for the serving simulation: one request per line, its input (prompt) and output token counts,
as `input,output` (CSV, a header line allowed) or JSON lines {"input": n, "output": n}. Capped in bytes and rows;
a malformed line is refused by its number."""

from __future__ import annotations

import json
from pathlib import Path

from planner.base.files import UserFileError, read_regular
from planner.inputs.jobs import BOUNDS

# how a request's lengths are drawn: every request at the given lengths, or spread around them as ShareGPT's are in
# the serving benchmarks, or uniform up to twice them as the benchmarks' random dataset draws them
# (planner.engine.serving_sim.Requests.spread)
LENGTH_SPREADS = ("fixed", "sharegpt", "uniform")

MAX_TRACE_BYTES = 4_000_000
MAX_TRACE_ROWS = 100_000
MAX_TOKENS = 1_000_000  # per request, input or output


def _count(value, line: int, field: str, lo: int) -> int:
    if isinstance(value, str):
        value = value.strip()
        if not value.isdigit() or len(value) > 9:
            raise ValueError(f"trace line {line}: {field} must be a whole number of tokens, got {value[:20]!r}")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"trace line {line}: {field} must be a whole number of tokens")
    if not lo <= value <= MAX_TOKENS:
        raise ValueError(f"trace line {line}: {field} {value:,} is outside {lo}..{MAX_TOKENS:,} tokens")
    return value


def parse_trace(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(input tokens, output tokens) per request of a trace's text; ValueError naming the line and field."""
    prompts, outputs = [], []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or (i == 1 and line.replace(" ", "").lower().startswith("input,")):
            continue
        if len(prompts) >= MAX_TRACE_ROWS:
            raise ValueError(f"trace: more than {MAX_TRACE_ROWS:,} requests; sample it down (the simulation draws "
                             "at most 20,000 per run)")
        if line.startswith("{"):
            try:
                row = json.loads(line)
            except ValueError:
                raise ValueError(f"trace line {i}: not a JSON object") from None
            if not isinstance(row, dict) or "input" not in row or "output" not in row:
                raise ValueError(f"trace line {i}: expected {{\"input\": n, \"output\": n}}")
            a, b = row["input"], row["output"]
        else:
            parts = line.split(",")
            if len(parts) != 2:
                raise ValueError(f"trace line {i}: expected 'input,output' (two numbers), got {len(parts)} fields")
            a, b = parts
        prompts.append(_count(a, i, "input", BOUNDS["prompt_tokens"].lo))
        outputs.append(_count(b, i, "output", 1))
    if not prompts:
        raise ValueError("trace: no requests (one 'input,output' line per request)")
    return tuple(prompts), tuple(outputs)


def load_trace(path: str | Path) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """parse_trace of a regular file of at most MAX_TRACE_BYTES; ValueError naming the path otherwise."""
    try:
        data = read_regular(path, MAX_TRACE_BYTES, "trace")
    except UserFileError as exc:
        raise ValueError(str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: the trace is not UTF-8 text") from None
    return parse_trace(text)
