"""A cold `planner estimate`, start to exit, here and at another commit, alternating so both see the same load.

    python3 benchmarks/cli_start.py                 # this tree against HEAD~1's
    python3 benchmarks/cli_start.py --base 7d2d781 --runs 15

The other commit is checked out into a temporary worktree; each run is a fresh interpreter (`python -m planner`)
started from that tree with its own source first on PYTHONPATH. Prints the median, the fastest and the slowest.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from base_tree import base_worktree

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ("-m", "planner", "estimate", "--model", "gpt2-124m")


def _run_once(tree: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *COMMAND], cwd=tempfile.gettempdir(), env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _check_imports_from(tree: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    where = subprocess.run([sys.executable, "-c", "import planner; print(planner.__file__)"], cwd=tempfile.gettempdir(),
                           env=env, check=True, capture_output=True, text=True).stdout.strip()
    if not Path(where).is_relative_to(tree):
        raise SystemExit(f"{tree}: python imports planner from {where}, not from the tree")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="HEAD~1", help="the commit to compare with (default HEAD~1)")
    ap.add_argument("--runs", type=int, default=11)
    a = ap.parse_args()
    with base_worktree(a.base) as base:
        trees = {"this tree": ROOT, f"base {a.base}": base}
        for tree in trees.values():  # the tree's own planner is imported; bytecode compiled before timing
            _check_imports_from(tree)
            _run_once(tree)
        times = {name: [] for name in trees}
        for _ in range(a.runs):
            for name, tree in trees.items():
                times[name].append(_run_once(tree))
    print(f"cold `python {' '.join(COMMAND)}`, {a.runs} runs each, alternating")
    for name, ts in times.items():
        print(f"  {name:24} median {statistics.median(ts):.3f} s  (fastest {min(ts):.3f}, slowest {max(ts):.3f})")


if __name__ == "__main__":
    main()
