"""The bench result file: its format, its limits and every way an upload can be wrong."""

import copy
import pickle
from pathlib import Path

import pytest

from planner.inputs.bench_result import BENCH_VERSION, RESULT_SCHEMA_VERSION, parse_result

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "data" / "calibrations").glob("*_cpu-*.json"))




def test_example_file_is_valid_and_names_its_date_and_device(example):
    name = EXAMPLES[0].name
    assert name.startswith(example["environment"]["date"][:10]) and "_cpu-" in name
    assert example["schema_version"] == RESULT_SCHEMA_VERSION and example["bench_version"] == BENCH_VERSION
    parse_result(EXAMPLES[0].read_bytes(), name)
    parse_result(EXAMPLES[0].read_text(), name)  # str as well as bytes


# ---------------------------------------------------------------- bad uploads

def test_not_yaml_or_json(tmp_path, refused):
    refused(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not a text file", "result.png")
    refused("key: [unclosed\n  - : :", "neither JSON nor YAML", "result.yaml")
    refused('{"kind": "planner-bench-result", ', "not valid JSON", "result.json")
    refused("just a sentence", "mapping", "result.yaml")
    refused("- a\n- list\n", "mapping", "result.yaml")
    refused("[1, 2]", "mapping", "result.json")


def test_pickle_and_yaml_object_tags_are_never_executed(tmp_path, refused):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    refused(pickle.dumps(Evil()), "not", "result.pkl")
    refused(f"!!python/object/apply:builtins.open ['{marker}', 'w']\n", "neither JSON nor YAML", "result.yaml")
    assert not marker.exists()


def test_wrong_schema_kind_and_bench_versions(example, refused):
    for key, value, needle in (("schema_version", 2, "schema_version"), ("bench_version", BENCH_VERSION + 1, "bench_version"),
                               ("bench_version", None, "bench_version"), ("kind", "something-else", "not a planner bench result")):
        doc = copy.deepcopy(example)
        doc[key] = value
        refused(doc, needle)


@pytest.mark.parametrize("path, value, needle", [
    (("micro", "memory_bandwidth", "gbps"), float("nan"), "finite"),
    (("micro", "memory_bandwidth", "gbps"), -3.0, ">="),
    (("micro", "memory_bandwidth", "gbps"), 1e9, "<="),
    (("micro", "matmul", "fp32", "best_tflops"), float("inf"), "finite"),
    (("micro", "matmul", "fp32", "best_tflops"), 1e7, "<="),
    (("micro", "launch_overhead", "us_per_op"), "fast", "number"),
    (("workloads", 0, "measured_s"), -0.01, ">="),
    (("workloads", 0, "measured_s"), float("nan"), "finite"),
    (("workloads", 0, "batch"), 2.5, "whole number"),
    (("workloads", 0, "workload"), "dance", "one of"),
    (("workloads", 0, "model", "layers"), -4, "layers"),
    (("environment", "memory_gb"), 0, ">="),
    (("environment", "date"), "yesterday", "ISO date"),
])
def test_bad_figures_are_named(example, path, value, needle, refused):
    doc = copy.deepcopy(example)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    msg = refused(doc, needle)
    assert "re-run" in msg or "expected" in msg or "must" in msg


def test_missing_sections_and_no_measured_points(example, refused):
    doc = copy.deepcopy(example)
    del doc["micro"]
    refused(doc, "'micro' is missing")
    doc = copy.deepcopy(example)
    for w in doc["workloads"]:
        w["status"], w["reason"] = "unavailable", "test"
        w.pop("measured_s", None)
    refused(doc, "no eager workload point")
