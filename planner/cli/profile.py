"""`planner profile`: trace a PyTorch model (MODULE:FACTORY) into a traced profile file. This module imports torch
(through the tracer); the CLI loads it only for this command and says how to install torch when it is missing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.base.files import write_atomic
from planner.profiling import tracer
from planner.views.report import emit


def cmd_profile(a: argparse.Namespace) -> int:
    """Trace a PyTorch model (MODULE:FACTORY) into a traced profile file (written atomically)."""
    size_name, sizes = tracer.parse_input_spec(a.input)
    args = tuple(tracer.parse_factory_arg(x) for x in a.arg or ())
    req = tracer.Request(a.factory, sizes, args, size_name, a.max_seconds, a.max_host_gb)
    text, model, warnings = tracer.profile(req, a.default_size, a.id, a.name, a.tolerance)
    out = Path(a.out or f"{model.id}.yaml")
    write_atomic(out, text)
    print(f"wrote {out} ({len(text):,} bytes): {model.describe()}", file=sys.stderr)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(emit(tracer.summary_rows(model), a.format))
    return 0
