"""data/ownership.yaml and the 'gpu-id:count' form of the cards a user owns."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.catalog import load_catalog
from planner.inputs.ownership import MAX_OWNED, Owned, load_ownership, owned_text, parse_owned, with_values

IDS = load_catalog().ids()


def _gid(name: str) -> str:
    if name.strip() not in IDS:
        raise ValueError(f"unknown GPU '{name}'")
    return name.strip()


def test_the_committed_file_loads_with_sources():
    a = load_ownership(gpu_ids=IDS)
    assert 0 < a.utilization <= 1 and a.lifetime_years > 0 and a.usd_per_kwh > 0
    for gid in ("rtx-a5000", "rtx-4070-ti-super", "rtx-5090"):  # the seeds' own cards
        assert a.purchase(gid) and a.source(f"purchase_usd.{gid}")
    assert all(a.source(k) for k in ("lifetime_years", "utilization", "usd_per_kwh"))


def test_a_broken_file_names_record_and_field(tmp_path):
    p = tmp_path / "own.yaml"
    p.write_text("schema_version: 1\nread_on: 2026-11-22\nassumptions:\n"
                 "  - {id: lifetime_years, value: 4, unit: y, source: s}\n"
                 "  - {id: utilization, value: 7, unit: x, source: s}\n"
                 "  - {id: usd_per_kwh, value: 0.1, unit: x, source: s}\n"
                 "purchase_usd:\n  - {id: rtx-a5000, value: 1, date: 2021-01-01, source: s}\n")
    with pytest.raises(DataFileError) as exc:
        load_ownership(p)
    assert exc.value.record == "'utilization'" and exc.value.field == "value"
    p.write_text(p.read_text().replace("value: 7", "value: 0.7").replace("rtx-a5000", "rtx-a5001"))
    with pytest.raises(DataFileError) as exc:
        load_ownership(p, gpu_ids=IDS)
    assert exc.value.record == "'rtx-a5001'" and exc.value.field == "id"


def test_parse_counts_prices_and_problems():
    owned, bad = parse_owned("rtx-a5000:3, rtx-5090, rtx-4090:2:1500", _gid)
    assert owned == (Owned("rtx-a5000", 3), Owned("rtx-5090", 1), Owned("rtx-4090", 2, 1500.0)) and not bad
    assert owned_text(owned) == "rtx-a5000:3,rtx-5090:1,rtx-4090:2:1500"
    owned, bad = parse_owned("rtx-a5000:0,rtx-9999:1,rtx-5090:two,rtx-a6000:1", _gid)
    assert owned == (Owned("rtx-a6000", 1),) and len(bad) == 3
    assert "'rtx-a5000:0'" in bad[0] and "between 1 and 64" in bad[0]
    many = ",".join(f"{g}:1" for g in IDS[:MAX_OWNED + 1])
    owned, bad = parse_owned(many, _gid)
    assert len(owned) == MAX_OWNED and "at most" in bad[-1]


def test_user_changes_are_bounded():
    a = load_ownership(gpu_ids=IDS)
    assert with_values(a, {"usd_per_kwh": 0.3}).usd_per_kwh == 0.3
    with pytest.raises(ValueError, match="utilization"):
        with_values(a, {"utilization": 3})
