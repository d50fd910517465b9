import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


import json  # noqa: E402

import pytest  # noqa: E402

CALIBRATION_EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "data" / "calibrations").glob("*_cpu-*.json"))


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
