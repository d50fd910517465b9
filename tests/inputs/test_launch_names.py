"""data/skypilot.yaml: SkyPilot names for catalog GPUs, checked on load."""

import pytest

from planner.base.schema import DataFileError
from planner.inputs.launch_names import load_skypilot_names


def test_the_committed_names_load_and_name_catalog_gpus():
    names = load_skypilot_names()
    assert names["rtx-4090"] == "RTX4090" and names["h100-sxm"] == "H100-SXM"


def test_a_name_for_a_gpu_the_catalog_lacks_is_refused_by_record(tmp_path):
    path = tmp_path / "sky.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-22\naccelerators:\n  - {id: rtx-9999, name: RTX9999}\n")
    with pytest.raises(DataFileError, match="record 'rtx-9999', field 'id'"):
        load_skypilot_names(path)
