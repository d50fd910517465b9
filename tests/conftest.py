import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


import json  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402

from planner import DATA_DIR  # noqa: E402
from tests.fixtures import skypilot as skypilot_parser  # noqa: E402

CALIBRATION_EXAMPLES = sorted((DATA_DIR / "calibrations").glob("*_cpu-*.json"))


# The tiers (pyproject.toml registers the markers): `pytest -q -m "not slow and not e2e"` is the fast tier; .ci/run
# runs every test. Slow: modules whose tests start subprocesses (the bench, traces, a wheel), run a leave-one-source-out
# search, drive the page through AppTest or run SkyPilot's optimizer, about a second or more a test on the 2-core
# machine.
SLOW_MODULES = ("tests/test_app.py", "tests/test_app_providers.py", "tests/test_app_training_runtimes.py",
                "tests/test_app_cluster.py",
                "tests/test_fuzz.py", "tests/test_packaging.py",
                "tests/bench/", "tests/profiling/", "tests/clients/test_skypilot_optimizer.py",
                "tests/validation/test_loso.py", "tests/validation/test_validation.py")
NETWORK_LOCAL = ("tests/clients/",)  # they serve HTTP on 127.0.0.1 and talk to it
E2E = ("tests/e2e/",)
# Expensive module-scoped fixtures (a bench run, a model's trace): the tests that use one share one xdist worker
# (--dist loadgroup: one group per fixture and parameter), or every worker that ran one of them would build it again;
# the two modules' other tests go wherever a worker is free.
SHARED_FIXTURES = {"tests/bench/test_bench.py": ("quick_run",),
                   "tests/profiling/test_profiler_references.py": ("sea", "betarho", "gpt2", "encoder")}
# Every browser test on one worker: one served app (whose caches then serve every page), one Chromium.
ONE_GROUP = {"tests/e2e/": "e2e"}
# Scheduling order, longest first (pyproject.toml runs xdist with --no-loadscope-reorder, so it hands the groups and
# tests out in this order, not by how many tests a group has): a long group handed out last would leave the other
# worker idle while it runs. Durations in benchmarks/RESULTS.md ('The test suite's schedule'); the rest follows in
# collection order.
HEAVY_FIRST = ("e2e", "test_bench-quick_run", "tests/bench/test_bench.py::test_your_own_model",
               "test_profiler_references-sea", "test_profiler_references-betarho-", "full_loso",
               "test_profiler_references-gpt2-", "tests/profiling/test_profiler.py", "tests/test_fuzz.py",
               "tests/clients/test_skypilot_optimizer.py", "tests/test_app.py", "tests/bench/", "tests/profiling/")


# Workers for `-n auto` (pyproject.toml's addopts): one per core plus one. The browser tests (the e2e group) hold one
# worker for minutes while using about a quarter of a core (the test waits on the served page: 283 s wall, 67 s of CPU
# for the whole group, benchmarks/RESULTS.md 'The suite with one worker more than cores'); with one worker per core
# that core sat mostly idle through them while the other worker ran the CPU-bound traces and bench runs alone.
EXTRA_WORKERS = 1


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config):
    """-n auto: the cores this process may run on, plus EXTRA_WORKERS (PYTEST_XDIST_AUTO_NUM_WORKERS still wins)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses != "auto":
        return None  # xdist's own rule
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + EXTRA_WORKERS


def _group(item, where: str) -> str | None:
    """The xdist group an item joins by where it is and which shared fixture it uses (None: no group)."""
    for prefix, group in ONE_GROUP.items():
        if where.startswith(prefix):
            return group
    for name in SHARED_FIXTURES.get(where, ()):
        if name in item.fixturenames:
            param = getattr(item, "callspec", None) and item.callspec.params.get(name)
            return f"{Path(where).stem}-{name}" + (f"-{param}" if param else "")
    return None


def _rank(item) -> int:
    """The item's place in HEAVY_FIRST: its group or its node id's start (len(HEAVY_FIRST) when not listed)."""
    names = [m.args[0] for m in item.iter_markers("xdist_group") if m.args] + [item.nodeid]
    for i, key in enumerate(HEAVY_FIRST):
        if any(n == key or n.startswith(key) for n in names):
            return i
    return len(HEAVY_FIRST)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    root = Path(__file__).resolve().parent.parent
    for item in items:
        where = Path(item.fspath).resolve().relative_to(root).as_posix()
        for prefixes, mark in ((SLOW_MODULES, pytest.mark.slow), (NETWORK_LOCAL, pytest.mark.network_local),
                               (E2E, pytest.mark.e2e)):
            if where.startswith(prefixes):
                item.add_marker(mark)
        group = _group(item, where)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=_rank)  # stable: within a rank, collection order (and pytest's grouping by fixture parameter)


@pytest.fixture(scope="session")
def skypilot():
    """SkyPilot's task parser in its own environment (tests/fixtures/skypilot.py), one process per test session."""
    parser = skypilot_parser.start()
    yield parser
    parser.close()


@pytest.fixture(scope="session")
def example():
    """The committed CPU bench result (data/calibrations/), parsed as JSON."""
    assert CALIBRATION_EXAMPLES, "data/calibrations/ needs a dated CPU example result"
    return json.loads(CALIBRATION_EXAMPLES[0].read_text())


@pytest.fixture
def refused():
    """refused(doc, needle, filename): parse_result must refuse `doc` with a message containing `needle`."""
    from planner.inputs.bench_result import CalibrationError, parse_result

    def check(doc, needle, filename="result.json"):
        data = doc if isinstance(doc, (bytes, str)) else json.dumps(doc)
        with pytest.raises(CalibrationError) as exc:
            parse_result(data, filename)
        assert needle.lower() in str(exc.value).lower(), str(exc.value)
        return str(exc.value)
    return check
