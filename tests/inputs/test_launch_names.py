"""data/skypilot.yaml: SkyPilot names for catalog GPUs, checked on load."""

import re

import pytest

from planner.base.schema import DataFileError
from planner.inputs.launch_names import load_skypilot_names


def test_the_committed_names_load_and_name_catalog_gpus():
    names = load_skypilot_names()
    assert names["rtx-4090"] == "RTX4090" and names["h100-sxm"] == "H100-SXM"
    # SkyPilot 0.14.1 sky/utils/gpu_names.py CANONICAL_GPU_NAMES: 'GB300', 'GB200', 'B300'; none for A800 SXM4
    assert (names["b300"], names["gb200"], names["gb300"]) == ("B300", "GB200", "GB300")
    assert "a800-sxm-80gb" not in names and "h20" not in names


def test_a_name_for_a_gpu_the_catalog_lacks_is_refused_by_record(tmp_path):
    path = tmp_path / "sky.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-22\naccelerators:\n  - {id: rtx-9999, name: RTX9999}\n")
    with pytest.raises(DataFileError, match="record 'rtx-9999', field 'id'"):
        load_skypilot_names(path)


def test_the_committed_setup_pins_every_package_with_its_source_and_date():
    from planner.inputs.launch_names import load_launch_setup, load_multi_node_names
    setup = load_launch_setup()
    vllm = setup.runtimes["vllm"].pins[0]
    assert vllm.package == "vllm" and vllm.source.startswith("https://") and vllm.date.year >= 2025
    assert setup.runtimes["mlc-llm"].manual and not setup.runtimes["mlc-llm"].pins
    assert setup.gated("llama-3-8b") and not setup.gated("gpt2-124m")
    assert "H100" in load_multi_node_names() and "H100-NVL" not in load_multi_node_names()  # RunPod's name only


SETUP_HEAD = "schema_version: 1\nread_on: 2026-11-27\n"
GATED = "gated_models:\n  - {id: llama-3-8b, hf_repo: m/x, source: s, date: 2026-11-27}\n" \
        "gated_owners:\n  - {id: meta-llama, source: s, date: 2026-11-27}\n"


@pytest.mark.parametrize("runtime, record, field", [
    ("{id: vllm, source: s, pins: [{package: vllm, version: '1.0; rm -rf ~', source: 'https://x', date: 2026-11-27}]}",
     "'vllm'.pins[0]", "version"),
    ("{id: vlm, source: s, pins: [{package: vllm, version: '1.0', source: 'https://x', date: 2026-11-27}]}",
     "'vlm'", "id"),
    ("{id: vllm, source: s, pins: [{package: vllm, version: '1.0', source: 'pypi', date: 2026-11-27}]}",
     "'vllm'.pins[0]", "source"),
    ("{id: vllm, source: s, pins: [{package: vllm, version: '1.0', source: 'https://x'}]}", "'vllm'.pins[0]", "date"),
    ("{id: vllm, source: s, apt: ['libx; curl y'], pins: [{package: vllm, version: '1', source: 'https://x', "
     "date: 2026-11-27}]}", "'vllm'", "apt[0]"),
])
def test_a_bad_setup_record_is_refused_naming_file_record_and_field(tmp_path, runtime, record, field):
    from planner.inputs.launch_names import load_launch_setup
    path = tmp_path / "setup.yaml"
    path.write_text(f"{SETUP_HEAD}runtimes:\n  - {runtime}\n{GATED}")
    with pytest.raises(DataFileError, match=f"{path}: record {re.escape(record)}, field '{re.escape(field)}'"):
        load_launch_setup(path)


def test_a_multi_node_name_must_be_one_of_the_files_accelerators(tmp_path):
    from planner.inputs.launch_names import load_multi_node_names
    path = tmp_path / "sky.yaml"
    path.write_text("schema_version: 1\nread_on: 2026-11-22\naccelerators:\n  - {id: rtx-4090, name: RTX4090}\n"
                    "multi_node:\n  - {name: H100, clouds: [AWS]}\n")
    with pytest.raises(DataFileError, match="record multi_node\\[0\\], field 'name'"):
        load_multi_node_names(path)
