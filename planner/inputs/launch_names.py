"""SkyPilot's accelerator name for each catalog GPU (data/skypilot.yaml), validated against the catalog."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.schema import DataFileError, Record, load_sections, unique_ids
from planner.inputs.catalog import Catalog, load_catalog

SKYPILOT_FILE = DATA_DIR / "skypilot.yaml"


@lru_cache(maxsize=4)
def load_skypilot_names(path: str | Path = SKYPILOT_FILE, catalog: Catalog | None = None) -> dict[str, str]:
    """catalog GPU id -> SkyPilot accelerator name; DataFileError naming file, record and field."""
    catalog = catalog or load_catalog()
    ids = set(catalog.ids())
    out: dict[str, str] = {}
    records = load_sections(path, ("accelerators",), dated=True)["accelerators"]
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "name"))
        gpu_id = rec.text("id")
        if gpu_id not in ids:
            raise rec.fail("id", "not a GPU id in data/gpus.yaml")
        out[gpu_id] = rec.text("name", max_len=40)
    unique_ids(path, (r.get("id") for r in records))
    if not out:
        raise DataFileError(path, "-", "accelerators", "no GPU mapped")
    return out
