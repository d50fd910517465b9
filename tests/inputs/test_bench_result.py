"""The bench result file: its format, its limits and every way an upload can be wrong."""

import copy
import json
import pickle
from pathlib import Path

import pytest

from planner import DATA_DIR
from planner.inputs.bench_result import (BENCH_VERSION, MAX_MODEL_ARGS, READABLE_SCHEMA_VERSIONS,
                                         RESULT_SCHEMA_VERSION, parse_result)
from tests.fixtures.bench_docs import cpu_result, model_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((DATA_DIR / "calibrations").glob("*_cpu-*.json"))




def test_example_file_is_valid_and_names_its_date_and_device(example):
    name = EXAMPLES[0].name
    assert name.startswith(example["environment"]["date"][:10]) and "_cpu-" in name
    # written before model runs existed (schema 1): still read, as every schema in READABLE_SCHEMA_VERSIONS
    assert example["schema_version"] in READABLE_SCHEMA_VERSIONS and example["bench_version"] == BENCH_VERSION
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
    for key, value, needle in (("schema_version", RESULT_SCHEMA_VERSION + 1, "schema_version"),
                               ("schema_version", True, "schema_version"),
                               ("bench_version", BENCH_VERSION + 1, "bench_version"),
                               ("bench_version", None, "bench_version"),
                               ("kind", "something-else", "not a planner bench result")):
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


# ---------------------------------------------------------------- model runs (schema 2: `planner.bench --model`)

def test_a_model_run_is_read_with_or_without_decoder_workloads(example):
    doc = cpu_result(example)
    assert parse_result(json.dumps(doc), "run.json")["model_runs"][0]["profile"]["kind"] == "traced"
    doc["workloads"] = []  # `--model --no-anchors`: only the model's own points
    parse_result(json.dumps(doc), "run.json")


def test_schema_1_has_no_model_runs(example, refused):
    doc = cpu_result(example)
    doc["schema_version"] = 1
    refused(doc, "model_runs needs schema_version 2")


def _run_doc(example, **changes):
    doc = cpu_result(example)
    run = doc["model_runs"][0]
    for key, value in changes.items():
        if key.startswith("point_"):
            run["points"][0][key.removeprefix("point_")] = value
        else:
            run[key] = value
    return doc


@pytest.mark.parametrize("changes, needle", [
    ({"point_workload": "decode"}, "model_runs[0].points[0].workload"),  # a model run times forward and train only
    ({"point_size": 0}, ">="),
    ({"point_size": 2.5}, "whole number"),
    ({"point_measured_s": -1.0}, "model_runs[0].points[0].measured_s"),
    ({"point_measured_s": float("nan")}, "finite"),
    ({"point_status": "maybe"}, "one of"),
    ({"point_colour": "red"}, "colour"),
    ({"precision": "tf32"}, "no matmul measurement"),  # the example CPU measured fp32, fp16, bf16
    ({"batch": 0}, "batch"),
    ({"points": []}, "non-empty"),
    ({"profile": "gpt2.yaml"}, "mapping"),
    ({"args": {f"a{i}": i for i in range(MAX_MODEL_ARGS + 1)}}, "factory arguments"),
])
def test_bad_model_runs_are_named(example, refused, changes, needle):
    refused(_run_doc(example, **changes), needle)


def test_a_hand_edited_profile_in_a_run_names_its_field(example, refused):
    doc = cpu_result(example)
    law = doc["model_runs"][0]["profile"]["work"]["forward"]["attention"]["flops"]
    law["points"][1] = -law["points"][1]  # a negative FLOP count at the second traced size
    msg = refused(doc, "negative")
    assert "model_runs[0].profile" in msg and "flops" in msg
    doc = cpu_result(example)
    doc["model_runs"][0]["profile"]["kind"] = "magic"
    refused(doc, "model_runs[0].profile")
    doc = cpu_result(example)
    doc["model_runs"] = [model_run() for _ in range(5)]  # MAX_MODEL_RUNS is 4
    refused(doc, "at most")


@pytest.mark.parametrize("text", ["cpu\\u001b[2J", "cpu\\ud800", "cpu\\u2028x", "cpu\\u0000"])
def test_a_control_character_or_a_surrogate_in_a_bench_file_is_refused_naming_the_field(example, refused, text):
    doc = copy.deepcopy(example)
    doc["environment"]["device_name"] = "MARK"
    doc = json.dumps(doc).replace('"MARK"', f'"{text}"')  # JSON escapes, as a hand-edited file would hold them
    msg = refused(doc, "environment.device_name")
    assert "U+" in msg
    msg.encode("utf-8")
