"""The hand-off to SkyPilot and RunPod: exported tasks parse with SkyPilot's own parser, in the planner's order."""

import ast
import json

import pytest
import yaml

from planner.engine.estimate import estimate_all
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.launch_names import load_skypilot_names
from planner.inputs.models import load_models
from planner.views import launch

FACTS = load_facts()
NAMES = load_skypilot_names()


def _ranking(model="llama-3-8b", tier="community", precision="bf16"):
    plan = Plan(load_models().get(model), Generate(10_000, 128, 256), precision, runtime="vllm", price_tier=tier)
    return estimate_all(plan, FACTS)


def test_the_task_parses_with_skypilots_parser_in_the_planners_order(skypilot):
    ranking = _ranking()
    task, _ = launch.skypilot_task(ranking, NAMES, spot=False, link="test")
    parsed = skypilot.parse(launch.skypilot_yaml(task, "a plan", "order"))
    assert "error" not in parsed, parsed  # SkyPilot's schema refuses anything it does not accept
    got = [next(iter(r["accelerators"])) for r in parsed["resources"]]
    expected = list(dict.fromkeys(NAMES[e.gpu.id] for e in ranking
                                  if e.feasible and e.gpu.id in NAMES and e.gpu.vendor == "NVIDIA"))
    assert got == expected[:launch.MAX_CANDIDATES]
    assert all(not r["use_spot"] for r in parsed["resources"])


def test_an_amd_gpu_is_left_out_of_a_cuda_image_with_the_reason():
    """MI300X can run Llama-3-8B (192 GB) and SkyPilot names it, but the exported image is a CUDA build."""
    ranking = _ranking()
    mi300x = next(e for e in ranking if e.gpu.id == "mi300x")
    assert mi300x.feasible and "mi300x" in NAMES
    task, left_out = launch.skypilot_task([mi300x] + [e for e in ranking if e is not mi300x], NAMES, False, "t")
    assert "MI300X" not in str(task["resources"]) and any(x.startswith("mi300x (AMD") for x in left_out)
    pod = launch.runpod_pod([mi300x] + ranking, "secure")
    assert not any("MI300X" in t for t in pod["gpuTypeIds"])
    with pytest.raises(ValueError, match="no NVIDIA GPU"):
        launch.skypilot_task([mi300x], NAMES, False, "t")


def test_spot_and_disk_follow_the_plan(skypilot):
    ranking = _ranking(tier="spot")
    task, _ = launch.skypilot_task(ranking, NAMES, spot=True, link="test")
    parsed = skypilot.parse(launch.skypilot_yaml(task, "p", "o"))
    assert all(r["use_spot"] for r in parsed["resources"])
    # Llama-3-8B in bf16: 8.03e9 x 2 B = 16.06 GB, twice = 32.1 GB, + 50 GB = 82.1 GB -> 90 GB
    assert {r["disk_size"] for r in parsed["resources"]} == {90}


def test_an_invalid_task_is_refused_by_skypilot(skypilot):
    task, _ = launch.skypilot_task(_ranking(), NAMES, spot=False, link="test")
    task["resources"]["ordered"][0]["use_spot"] = "maybe"
    assert "boolean" in skypilot.parse(yaml.safe_dump(task)).get("error", "")


def test_every_mapped_name_is_one_skypilot_knows(skypilot):
    """Names must be SkyPilot's: its RunPod catalog keys (read from its source, which imports runpod at run time)
    or the common names it uses on other clouds (GCP, AWS, Lambda)."""
    source = skypilot.package / "catalog" / "data_fetchers" / "fetch_runpod.py"
    tree = ast.parse(source.read_text())
    info = next(n for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") ==
                "DEFAULT_GPU_INFO")
    runpod_names = {k.value for k in info.value.keys}
    assert set(NAMES.values()) - runpod_names <= {"A100", "A10G", "A10", "T4"}


def test_a_blackwell_candidate_gets_a_cuda_12_8_image():
    ranking = [e for e in _ranking() if e.gpu.id in ("rtx-5090", "rtx-4090")]
    assert launch.image_for(ranking) == launch.BLACKWELL_IMAGE
    assert launch.image_for([e for e in ranking if e.gpu.id == "rtx-4090"]) == launch.DEFAULT_IMAGE


def test_the_runpod_request_lists_type_ids_in_order_and_spot_as_interruptible():
    ranking = _ranking(tier="spot")
    pod = json.loads(launch.runpod_json(launch.runpod_pod(ranking, "spot")))
    first = next(e for e in ranking if e.feasible and e.gpu.runpod)
    assert pod["gpuTypeIds"][0] == first.gpu.runpod.gpu_type_ids[0] and pod["interruptible"] is True
    assert pod["cloudType"] == "SECURE" and pod["gpuTypePriority"] == "custom"
    assert len(pod["gpuTypeIds"]) == len(set(pod["gpuTypeIds"])) <= launch.MAX_CANDIDATES


def test_nothing_to_launch_is_said_plainly():
    ranking = _ranking(model="llama-3-70b", precision="fp32")  # 280 GB of weights: no single GPU runs it
    with pytest.raises(ValueError, match="nothing to launch"):
        launch.skypilot_task(ranking, NAMES, spot=False, link="test")


def test_a_fleet_bench_is_one_valid_task_per_candidate_gpu_and_a_script_to_collect_them(skypilot):
    ranking = _ranking()
    tasks = launch.bench_tasks(ranking, NAMES)
    chosen, _ = launch.candidates([e for e in ranking if e.gpu.vendor == "NVIDIA"], NAMES)  # CUDA torch only
    assert [gpu_id for gpu_id, _ in tasks] == [c.gpu_id for c in chosen]
    for gpu_id, task in tasks:
        parsed = skypilot.parse(launch.skypilot_yaml(task, "bench", "x"))
        assert parsed["resources"][0]["accelerators"] == {NAMES[gpu_id]: 1}
        assert f"--out bench-{gpu_id}.json" in parsed["run"]
    script = launch.fleet_script(tasks)
    calls = [line.split() for line in script.splitlines() if line.startswith("bench ")]
    assert [c[1] for c in calls] == [t["name"] for _, t in tasks]  # each cluster launched, copied back, torn down


def test_the_fleet_script_tears_every_cluster_down_and_names_the_ones_that_failed(tmp_path):
    """Run the script with stand-ins for `sky` and `rsync` on PATH: the second launch fails (no capacity)."""
    import os
    import subprocess
    tasks = launch.bench_tasks(_ranking(), NAMES)[:3]
    bad = tasks[1][1]["name"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sky").write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/sky.log"\n'
                                 f'[ "$1" = launch ] && [ "$4" = "{bad}" ] && exit 1\nexit 0\n')
    (bin_dir / "rsync").write_text('#!/bin/sh\nsrc="$2"; touch "$3/${src##*/}"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    (tmp_path / "run_fleet.sh").write_text(launch.fleet_script(tasks, str(tmp_path)))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(tmp_path / "run_fleet.sh")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    log = (tmp_path / "sky.log").read_text().splitlines()
    assert done.returncode == 1 and f"failed: {bad}" in done.stderr
    assert sorted(line.split()[-1] for line in log if line.startswith("down")) == sorted(t["name"] for _, t in tasks)
    got = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert got == sorted(f"bench-{g}.json" for g, t in tasks if t["name"] != bad)
