"""Benchmark: a new page session's first script run, server time, in a server that has already served one (imports
and data files done), here and at another commit, alternating so both see the same load.

    python3 benchmarks/new_session.py                      # this tree alone
    python3 benchmarks/new_session.py --base fc37635       # and fc37635's, in turns

Drives app.py with streamlit.testing.v1.AppTest (no browser): one session runs first (the server's start), then each
round opens new sessions on the default plan: one with the ranking already computed by another session
(st.cache_resource shares it), one with every shared cache of a plan cleared first (the first visitor of a plan:
app_rerun.clear_plan_caches, which keeps the server's constants; `--clear-all`: every one), and one with
the engine's own caches cleared too (a plan no session of this server has asked, as another model is: the model
profiles read again, untimed, as new objects; a server reads its data files once, at start). The figure is
st.session_state['_run_ms'], the script's own start-to-end time. Prints the medians. The other commit runs this same
script from a temporary worktree (`--tree`).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app_rerun import clear_plan_caches
from base_tree import add_compare_arguments, alternated, run_in_tree

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the engine's caches, of the tree this process imports planner from (engine_catalog reads --tree)
from engine_catalog import ROOT, clear_engine_caches  # noqa: E402
from planner.inputs.models import load_models  # noqa: E402


def measure(tree: Path, runs: int, clear_all: bool = False) -> dict[str, list[float]]:
    logging.disable(logging.WARNING)  # AppTest's bare-mode warnings

    def first_run() -> float:
        at = AppTest.from_file(str(tree / "app.py"), default_timeout=120)
        at.run()
        assert not at.exception, at.exception
        return at.session_state["_run_ms"]

    first_run()  # the server's first session: imports, data files
    out: dict[str, list[float]] = {"shared": [], "cleared": [], "cold": []}
    for _ in range(runs):
        out["shared"].append(first_run())
        clear_plan_caches(clear_all)
        out["cleared"].append(first_run())
        clear_plan_caches(clear_all)
        clear_engine_caches()  # load_models' too: its profiles, new objects, share no cache with the last run's
        load_models()
        out["cold"].append(first_run())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="new sessions of each kind per round")
    ap.add_argument("--clear-all", action="store_true", help="clear every st.cache_resource, the server's constants "
                    "too (app_rerun.SERVER_CONSTANTS)")
    add_compare_arguments(ap)
    a = ap.parse_args()
    tree = Path(a.tree) if a.tree else ROOT
    if a.json:
        print(json.dumps(measure(tree, a.runs, a.clear_all)))
        return
    results: dict[str, dict[str, list[float]]] = {}
    again = ["--runs", str(a.runs)] + ["--clear-all"] * a.clear_all
    for name, figures in alternated(a.base, a.rounds, lambda t: run_in_tree(__file__, t, again)):
        for k, v in figures.items():
            results.setdefault(name, {}).setdefault(k, []).extend(v)
    print("a new session's first script run (server time, default plan)")
    for name, r in results.items():
        print(f"  {name:16} ranking shared by another session: median {statistics.median(r['shared']):5.0f} ms; "
              f"every cache cleared first: median {statistics.median(r['cleared']):5.0f} ms "
              f"(fastest {min(r['cleared']):.0f}); engine's caches too: median {statistics.median(r['cold']):5.0f} ms; "
              f"{len(r['cleared'])} sessions each")


if __name__ == "__main__":
    main()
