"""The repository's evidence files are read under caps of their own (planner.validation.measured): each committed file
fits under its cap, and a file past it is refused with a message naming the file, not parsed."""

from __future__ import annotations

import pytest

from planner.base.safe_parse import ParseError
from planner.validation.measured import (CONDITIONS_AFTER_FILE, CONDITIONS_AFTER_MAX_BYTES, MEASUREMENTS_FILE,
                                         MEASUREMENTS_MAX_BYTES, conditions_read_after)


def test_the_committed_evidence_fits_under_its_caps():
    assert MEASUREMENTS_FILE.stat().st_size < MEASUREMENTS_MAX_BYTES
    assert CONDITIONS_AFTER_FILE.stat().st_size < CONDITIONS_AFTER_MAX_BYTES


def test_a_conditions_file_past_its_cap_is_refused_by_name(tmp_path):
    path = tmp_path / "conditions.yaml"
    # one row padded past the cap: the size is checked before any YAML is built
    path.write_text("schema_version: 1\nrows:\n- id: x\n  source: '" + "a" * CONDITIONS_AFTER_MAX_BYTES + "'\n")
    with pytest.raises((ParseError, ValueError)) as err:
        conditions_read_after(path)
    assert "conditions.yaml" in str(err.value)
