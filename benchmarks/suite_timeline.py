"""The whole test suite's timeline per xdist worker: what each worker ran when, how long each xdist group or module
held it, and how long a worker sat idle at the end while the other finished.

    python3 benchmarks/suite_timeline.py [--top 25] [-- PYTEST_ARGS...]

runs `python3 -m pytest -q` (the suite as .ci/run runs it, plus PYTEST_ARGS) with this file loaded as a plugin, then
prints the wall time, each worker's busy seconds and its idle tail, and the heaviest scheduling units (an xdist group,
or a module's ungrouped tests summed). Wall times on a shared machine: print `uptime` beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR_ENV = "SUITE_TIMELINE_DIR"


# ---------------------------------------------------------------- the plugin (loaded in each worker with -p)


def _log_path() -> Path | None:
    where = os.environ.get(LOG_DIR_ENV)
    if not where:
        return None
    return Path(where) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001 (pytest's hook signature)
    """Record each test's start and end (setup through teardown) in this worker's log."""
    start = time.time()
    result = yield
    path = _log_path()
    if path is not None:
        groups = [m.args[0] for m in item.iter_markers("xdist_group") if m.args]
        with open(path, "a") as f:
            f.write(json.dumps({"nodeid": item.nodeid, "group": groups[0] if groups else None, "start": start,
                                "end": time.time()}) + "\n")
    return result


# ---------------------------------------------------------------- the report


def _unit(row: dict) -> str:
    return f"group {row['group']}" if row["group"] else row["nodeid"].split("::")[0]


def report(log_dir: Path, wall_s: float, top: int) -> None:
    rows = [json.loads(line) for p in sorted(log_dir.glob("*.jsonl")) for line in p.read_text().splitlines()]
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for p in sorted(log_dir.glob("*.jsonl")):
        by_worker[p.stem] = [json.loads(line) for line in p.read_text().splitlines()]
    t0 = min(r["start"] for r in rows)
    t_end = max(r["end"] for r in rows)
    print(f"pytest wall {wall_s:.1f} s; first test to last {t_end - t0:.1f} s; {len(rows)} tests")
    for worker, rs in sorted(by_worker.items()):
        busy = sum(r["end"] - r["start"] for r in rs)
        last = max(r["end"] for r in rs)
        print(f"  {worker}: {len(rs)} tests, busy {busy:.1f} s, first at +{min(r['start'] for r in rs) - t0:.1f} s,"
              f" idle at the end {t_end - last:.1f} s")
    units: dict[str, list] = defaultdict(lambda: [0.0, 0, set(), None, None])
    for worker, rs in by_worker.items():
        for r in rs:
            u = units[_unit(r)]
            u[0] += r["end"] - r["start"]
            u[1] += 1
            u[2].add(worker)
            u[3] = min(u[3] if u[3] is not None else r["start"], r["start"])
            u[4] = max(u[4] if u[4] is not None else r["end"], r["end"])
    print(f"heaviest {top} units (an xdist group or a module's ungrouped tests): seconds, tests, workers, span")
    for name, (secs, n, workers, a, b) in sorted(units.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"  {secs:7.1f} s {n:4d}  {','.join(sorted(workers)):9s} +{a - t0:6.1f} .. +{b - t0:6.1f}  {name}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("pytest_args", nargs="*")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, LOG_DIR_ENV: tmp,
               "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")])}
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "suite_timeline", *a.pytest_args],
                              cwd=ROOT, env=env)
        wall = time.perf_counter() - start
        report(Path(tmp), wall, a.top)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
