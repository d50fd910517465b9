"""Benchmark: how long the page's script takes to rerun after an input changes, for the full GPU catalog, here and at
another commit, alternating so both see the same load.

    python3 benchmarks/app_rerun.py                        # this tree alone, 20 reruns per tab
    python3 benchmarks/app_rerun.py 6 --base 444696a       # and 444696a's page, in turns (3 rounds)

The figure is server-side: app.py stores (end - start) of each script run in st.session_state['_run_ms'];
this script drives the page with streamlit.testing.v1.AppTest (no browser), changes one input per rerun
(precision, sequences, price tier, runtime in turn) and prints the median and 90th percentile per open tab.
The page keeps rankings per distinct plan across sessions (st.cache_resource), so the script clears those caches
before each measured rerun: every one recomputes the ranking, as a plan nobody asked before does. The server's
constants (SERVER_CONSTANTS: the model picker's labels, the run slots), which a plan does not change and a server
computes once, are kept; `--clear-all` clears them too (every st.cache_resource, as this script did before
2026-11-27). The last column is a rerun of the same plan (a click on a tab or a row: the cached ranking). Target:
30 ms for every tab.
The other commit runs this same script from a temporary worktree (`--tree`), so both are measured by one code.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import streamlit as st
from streamlit.runtime.caching.cache_utils import CachedFunc
from streamlit.testing.v1 import AppTest

from base_tree import add_compare_arguments, alternated, run_in_tree

ROOT = Path(__file__).resolve().parent.parent

CHANGES = [("selectbox", "prec", ["fp16", "bf16", "fp32"]),
           ("number_input", "seqs", [500_000, 1_000_000, 250_000]),
           ("selectbox", "tier", ["community", "spot", "secure"]),
           ("selectbox", "rt", ["torch-compile", "pytorch-eager"])]
TABS = ("Explain a GPU", "Cost vs time", "Roofline", "Batch size", "Memory")


SERVER_CONSTANTS = ("run_slots", "model_labels", "validation_report")  # ui/resources.py: the same for every plan


def clear_plan_caches(clear_all: bool = False) -> None:
    """Empty the page's shared caches (ui/resources.py's st.cache_resource functions) as a plan nobody asked before
    finds them: all but SERVER_CONSTANTS, or every st.cache_resource with `clear_all`."""
    resources = sys.modules.get("ui.resources")
    if clear_all or resources is None:
        st.cache_resource.clear()
        return
    for name, obj in vars(resources).items():
        if isinstance(obj, CachedFunc) and name not in SERVER_CONSTANTS:
            obj.clear()


def _q(values: list[float], q: float) -> float:
    xs = sorted(values)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def measure(tree: Path, tab: str, reruns: int, clear_all: bool = False) -> tuple[list[float], list[float], list[float]]:
    """(script ms after an input change, AppTest wall ms of the same runs, script ms of a same-plan rerun)."""
    at = AppTest.from_file(str(tree / "app.py"), default_timeout=120)
    at.session_state["view"] = tab
    at.run()  # first run: imports, data files, caches
    at.run()
    script_ms, wall_ms, cached_ms = [], [], []
    for i in range(reruns):
        widget, key, values = CHANGES[i % len(CHANGES)]
        getattr(at, widget)(key=key).set_value(values[(i // len(CHANGES)) % len(values)])
        clear_plan_caches(clear_all)  # a new plan: the ranking is computed, not served from another run's cache
        t0 = time.perf_counter()
        at.run()
        wall_ms.append((time.perf_counter() - t0) * 1e3)
        assert not at.exception, at.exception
        script_ms.append(at.session_state["_run_ms"])
        at.run()  # the same plan again
        cached_ms.append(at.session_state["_run_ms"])
    return script_ms, wall_ms, cached_ms


def measure_all(tree: Path, reruns: int, clear_all: bool = False) -> dict[str, list[list[float]]]:
    logging.disable(logging.WARNING)  # AppTest's bare-mode warnings
    return {tab: list(measure(tree, tab, reruns, clear_all)) for tab in TABS}


def report(name: str, results: dict[str, list[list[float]]]) -> None:
    print(f"{name}: {'open tab':16} {'script median':>14} {'script p90':>11} {'AppTest wall median':>20} "
          f"{'same plan median':>17}")
    for tab, (script, wall, cached) in results.items():
        print(f"{'':{len(name) + 2}}{tab:16} {statistics.median(script):11.0f} ms {_q(script, 0.9):8.0f} ms "
              f"{statistics.median(wall):17.0f} ms {statistics.median(cached):14.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reruns", nargs="?", type=int, default=20, help="reruns per tab and round")
    ap.add_argument("--clear-all", action="store_true", help="clear the server's constants too (SERVER_CONSTANTS)")
    add_compare_arguments(ap)
    a = ap.parse_args()
    tree = Path(a.tree) if a.tree else ROOT
    if a.json:
        print(json.dumps(measure_all(tree, a.reruns, a.clear_all)))
        return
    results: dict[str, dict[str, list[list[float]]]] = {}
    again = [str(a.reruns)] + ["--clear-all"] * a.clear_all
    for name, figures in alternated(a.base, a.rounds, lambda t: run_in_tree(__file__, t, again)):
        for tab, lists in figures.items():
            into = results.setdefault(name, {}).setdefault(tab, [[], [], []])
            for acc, v in zip(into, lists):
                acc.extend(v)
    print(f"rerun after an input change, full catalog, {a.reruns} reruns per tab and round, "
          f"{'every cache' if a.clear_all else 'the plan caches'} cleared (load: {os.getloadavg()[0]:.1f})")
    for name, r in results.items():
        report(name, r)


if __name__ == "__main__":
    main()
