import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


import json  # noqa: E402

import pytest  # noqa: E402

from planner import DATA_DIR  # noqa: E402
from tests.fixtures import skypilot as skypilot_parser  # noqa: E402

CALIBRATION_EXAMPLES = sorted((DATA_DIR / "calibrations").glob("*_cpu-*.json"))


# The tiers (pyproject.toml registers the markers): `pytest -q -m "not slow and not e2e"` is the fast tier; .ci/run
# runs every test. Slow: modules whose tests start subprocesses (the bench, traces, a wheel), run a leave-one-source-out
# search, drive the page through AppTest or run SkyPilot's optimizer, about a second or more a test on the 2-core
# machine.
SLOW_MODULES = ("tests/test_app.py", "tests/test_app_providers.py", "tests/test_app_training_runtimes.py",
                "tests/test_fuzz.py", "tests/test_packaging.py",
                "tests/bench/", "tests/profiling/", "tests/clients/test_skypilot_optimizer.py",
                "tests/validation/test_loso.py", "tests/validation/test_validation.py")
NETWORK_LOCAL = ("tests/clients/",)  # they serve HTTP on 127.0.0.1 and talk to it
E2E = ("tests/e2e/",)
# Modules whose module-scoped fixtures take 15-40 s (a bench run, model traces): each module's tests share one xdist
# worker (--dist loadgroup), or every worker that runs one of them would build the fixture again.
ONE_WORKER = ("tests/bench/test_bench.py", "tests/profiling/test_profiler_references.py")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    root = Path(__file__).resolve().parent.parent
    for item in items:
        where = Path(item.fspath).resolve().relative_to(root).as_posix()
        for prefixes, mark in ((SLOW_MODULES, pytest.mark.slow), (NETWORK_LOCAL, pytest.mark.network_local),
                               (E2E, pytest.mark.e2e)):
            if where.startswith(prefixes):
                item.add_marker(mark)
        if where.startswith(ONE_WORKER):
            item.add_marker(pytest.mark.xdist_group(Path(where).stem))


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
