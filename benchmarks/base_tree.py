"""Another commit checked out in a temporary git worktree, for the benchmarks that alternate this tree with it
(cli_start.py, engine_catalog.py, new_session.py, app_rerun.py): one way to make it and to remove it, even after a
failure; the options every such benchmark takes, and one way to run it again with planner imported from a tree."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def base_worktree(ref: str) -> Iterator[Path]:
    """A detached worktree of `ref` in a temporary folder, removed when the block ends."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), ref], check=True,
                       capture_output=True)
        try:
            yield base
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=True)


def add_compare_arguments(ap: argparse.ArgumentParser) -> None:
    """--base and --rounds (what a run alternates with), and the hidden --tree/--json a re-run in one tree reads."""
    ap.add_argument("--base", help="a commit to compare with, run alternately from a temporary worktree")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds with --base")
    ap.add_argument("--tree", help=argparse.SUPPRESS)  # the tree this process imports planner from
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)


def run_in_tree(script: str, tree: Path, args: list[str]):
    """`script` run again in a process of its own with planner imported from `tree` (`--tree tree --json` added to
    `args`): its figures, the JSON of the last line it prints."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(Path(script).resolve()), *args, "--tree", str(tree), "--json"],
                          cwd=tempfile.gettempdir(), env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def alternated(base: str | None, rounds: int, run: Callable[[Path], object]) -> Iterator[tuple[str, object]]:
    """(tree name, run(tree)): this tree once without a base; with one, this tree and the base's worktree
    alternately for `rounds` rounds."""
    trees = {"this tree": ROOT}
    with base_worktree(base) if base else nullcontext() as worktree:
        if worktree:
            trees[f"base {base}"] = worktree
        for _ in range(rounds if base else 1):
            for name, tree in trees.items():
                yield name, run(tree)
