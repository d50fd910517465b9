"""Command line: `planner estimate|serve|launch|gpus|models|backends|prices|validate|profile|calibration` (an entry
point: it may import from every layer; nothing imports it). The parser is `parser.py`; each subcommand lives in its
own module, imported when it runs."""

from __future__ import annotations

import importlib
import sys

from planner.base.files import UserFileError
from planner.base.schema import DataFileError, UnknownNameError
from planner.cli.parser import COMMANDS, build_parser

TORCH_HINT = "traces with PyTorch, which is not installed: pip install \".[bench]\" (torch 2.13.0)"


def _handler(command: str):
    """The function behind a subcommand; ModuleNotFoundError('torch') when it needs torch and torch is missing."""
    module, function = COMMANDS[command]
    return getattr(importlib.import_module(module), function)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what the user typed (launch repeats it)
    try:
        handler = _handler(args.command)
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        print(f"error: `planner {args.command}` {TORCH_HINT}", file=sys.stderr)
        return 2
    try:
        return handler(args)
    except (UnknownNameError, DataFileError, UserFileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}", file=sys.stderr)
        return 2


def main_exit() -> None:
    """The `planner` console command (pyproject.toml): main() with its exit code."""
    sys.exit(main())
