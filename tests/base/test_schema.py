"""Data-file validation helpers and name matching."""

import pytest

from planner.base.schema import DataFileError, Record, UnknownNameError, normalize_name, suggest


def test_names_match_across_case_spaces_and_punctuation():
    assert normalize_name("NVIDIA GeForce RTX-4090") == normalize_name("nvidia geforce rtx 4090")
    assert suggest("rtx 4900", ["rtx-4090", "rtx-3090", "h100-sxm"])[0] == "rtx-4090"


def test_record_number_checks_name_the_field():
    rec = Record("f.yaml", "'x'", {"a": float("nan"), "b": -1, "c": True, "d": 3.5})
    for field, needle in (("a", "finite"), ("b", ">= 0"), ("c", "number"), ("d", "whole")):
        with pytest.raises(DataFileError) as err:
            rec.number(field, lo=0, integer=(field == "d"))
        assert f"f.yaml: record 'x', field '{field}'" in str(err.value) and needle in str(err.value)


def test_unknown_name_error_reads_as_a_sentence():
    err = UnknownNameError("GPU", "rtx-4900", ["rtx-4090"])
    assert str(err) == "unknown GPU 'rtx-4900'; did you mean rtx-4090?"


def test_a_data_file_reads_under_its_own_cap_or_the_uploads(tmp_path):
    """A 1.2 MB rows file (12 rows of 100,000 characters) is over an upload's 1,000,000-byte cap; read with a cap of
    2,000,000 bytes it loads, and the refusal names the file and the cap."""
    from planner.base.schema import load_yaml
    path = tmp_path / "big.yaml"
    path.write_text("schema_version: 1\nrows:\n" + "".join(f"  - {{id: r{i}, text: {'x' * 100_000}}}\n"
                                                           for i in range(12)))
    with pytest.raises(DataFileError, match="1,000,000 bytes"):
        load_yaml(path, "rows")
    assert [r["id"] for r in load_yaml(path, "rows", max_bytes=2_000_000)] == [f"r{i}" for i in range(12)]
