"""Benchmark: how much of a page rerun Streamlit spends walking the session state for its widgets, here and at another
commit, alternating so both see the same load.

    python3 benchmarks/rerun_state_share.py                     # this tree alone, 24 reruns
    python3 benchmarks/rerun_state_share.py --base 5b588e4      # and 5b588e4's page, in turns (3 rounds)
    python3 benchmarks/rerun_state_share.py --explained 20      # after explaining 20 GPUs in turn (a longer session)

Streamlit 1.67's selectbox, radio, number and text inputs, slider and date widgets each read
SessionState.filtered_state, which walks every session-state key and reads each value through __getitem__. This
script times that property (a wrapper adding perf_counter calls, ~1 us per call) while it drives the page as
app_rerun.py does (one input changed per rerun, the plan caches cleared, the "Explain a GPU" tab open) and prints,
per rerun: the script's time (st.session_state['_run_ms']), the calls, the session-state keys and the milliseconds
spent in filtered_state, medians.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from pathlib import Path

from streamlit.runtime.state.session_state import SessionState
from streamlit.testing.v1 import AppTest

from app_rerun import CHANGES, clear_plan_caches
from base_tree import add_compare_arguments, alternated, run_in_tree

ROOT = Path(__file__).resolve().parent.parent
SPENT = {"calls": 0, "s": 0.0, "keys": 0}


def _timed_filtered_state(original):
    def timed(self):
        t0 = time.perf_counter()
        out = original(self)
        SPENT["s"] += time.perf_counter() - t0
        SPENT["calls"] += 1
        SPENT["keys"] = len(self._keys())
        return out
    return property(timed)


def measure(tree: Path, reruns: int, explained: int = 0) -> dict[str, list[float]]:
    logging.disable(logging.WARNING)  # AppTest's bare-mode warnings
    SessionState.filtered_state = _timed_filtered_state(SessionState.filtered_state.fget)
    at = AppTest.from_file(str(tree / "app.py"), default_timeout=120)
    at.run()
    at.run()
    for gpu in at.selectbox(key="gpu").options[1:explained + 1]:  # a session that looked at several GPUs
        at.selectbox(key="gpu").set_value(gpu).run()
    out: dict[str, list[float]] = {"run_ms": [], "calls": [], "keys": [], "state_ms": []}
    for i in range(reruns):
        widget, key, values = CHANGES[i % len(CHANGES)]
        getattr(at, widget)(key=key).set_value(values[(i // len(CHANGES)) % len(values)])
        clear_plan_caches()
        SPENT.update(calls=0, s=0.0)
        at.run()
        assert not at.exception, at.exception
        calls, spent_ms = SPENT["calls"], SPENT["s"] * 1e3  # before reading _run_ms (itself a session-state read)
        out["run_ms"].append(at.session_state["_run_ms"])
        out["calls"].append(calls)
        out["keys"].append(SPENT["keys"])
        out["state_ms"].append(spent_ms)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reruns", nargs="?", type=int, default=24, help="reruns per round")
    ap.add_argument("--explained", type=int, default=0, help="GPUs explained in turn before the reruns")
    add_compare_arguments(ap)
    a = ap.parse_args()
    tree = Path(a.tree) if a.tree else ROOT
    if a.json:
        print(json.dumps(measure(tree, a.reruns, a.explained)))
        return
    results: dict[str, dict[str, list[float]]] = {}
    again = [str(a.reruns), "--explained", str(a.explained)]
    for name, figures in alternated(a.base, a.rounds, lambda t: run_in_tree(__file__, t, again)):
        for k, v in figures.items():
            results.setdefault(name, {}).setdefault(k, []).extend(v)
    print(f"a rerun after an input change, 'Explain a GPU' open, plan caches cleared, {a.explained} GPUs explained "
          f"before (load {os.getloadavg()[0]:.1f})")
    for name, r in results.items():
        med = {k: statistics.median(v) for k, v in r.items()}
        print(f"  {name:16} script median {med['run_ms']:5.1f} ms; filtered_state: {med['calls']:.0f} calls over "
              f"{med['keys']:.0f} keys, {med['state_ms']:4.1f} ms ({100 * med['state_ms'] / med['run_ms']:.0f} %); "
              f"{len(r['run_ms'])} reruns")


if __name__ == "__main__":
    main()
