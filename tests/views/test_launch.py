"""The hand-off to SkyPilot and RunPod: exported tasks parse with SkyPilot's own parser, in the planner's order."""

import ast
import dataclasses
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from planner.engine.estimate import estimate_all
from planner.engine.plan import Plan
from planner.inputs import cloud_prices
from planner.inputs.price_snapshot import snapshot_table
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.launch_names import SETUP_FILE, load_skypilot_names
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
    unrentable = set(launch.tier_gaps(ranking, "community", NAMES, launch.load_multi_node_names())[0])
    expected = list(dict.fromkeys(NAMES[e.gpu.id] for e in ranking if e.feasible and e.gpu.id in NAMES
                                  and e.gpu.vendor == "NVIDIA" and e.gpu.id not in unrentable))
    assert got == expected[:launch.MAX_CANDIDATES]
    assert all(not r["use_spot"] for r in parsed["resources"])


def test_an_amd_gpu_is_left_out_of_a_cuda_image_with_the_reason():
    """MI300X can run Llama-3-8B (192 GB) and SkyPilot names it, but the exported image is a CUDA build."""
    ranking = _ranking()
    mi300x = next(e for e in ranking if e.gpu.id == "mi300x")
    assert mi300x.feasible and "mi300x" in NAMES
    task, notes = launch.skypilot_task([mi300x] + [e for e in ranking if e is not mi300x], NAMES, False, "t")
    assert "MI300X" not in str(task["resources"]) and notes[0].startswith("left out: mi300x (AMD")
    pod, type_ids = launch.runpod_pod([mi300x] + ranking, "secure")
    assert not any("MI300X" in t for t in type_ids) and "MI300X" not in pod["gpu"]["id"]
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
    """Names must be SkyPilot's: its RunPod catalog keys (read from its source, which imports runpod at run time),
    the common names it uses on other clouds (GCP, AWS, Lambda), or its canonical GPU names (sky/utils/gpu_names.py:
    B300, GB200 and GB300, which RunPod does not list)."""
    source = skypilot.package / "catalog" / "data_fetchers" / "fetch_runpod.py"
    tree = ast.parse(source.read_text())
    info = next(n for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") ==
                "DEFAULT_GPU_INFO")
    runpod_names = {k.value for k in info.value.keys}
    canonical = next(n.value for n in ast.walk(ast.parse((skypilot.package / "utils" / "gpu_names.py").read_text()))
                     if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CANONICAL_GPU_NAMES")
    canonical_names = {e.value for e in canonical.elts}
    assert set(NAMES.values()) - runpod_names <= {"A100", "A10G", "A10", "T4"} | canonical_names


def test_a_blackwell_candidate_gets_a_cuda_12_8_image():
    ranking = [e for e in _ranking() if e.gpu.id in ("rtx-5090", "rtx-4090")]
    assert launch.image_for(ranking) == launch.BLACKWELL_IMAGE
    assert launch.image_for([e for e in ranking if e.gpu.id == "rtx-4090"]) == launch.DEFAULT_IMAGE


# RunPod's REST API v2, read 2026-11-27 from https://docs.runpod.io/api-reference-v2/pods/create-a-pod (schema
# CreatePodRequest in api.runpod.io/v2/openapi.json; runpod/docs api-reference-v2/openapi.json, Frontdoor v2.9.0):
# the body's fields (unknown ones are refused), those of `gpu`, and the two clouds.
V2_POD_FIELDS = {"name", "image", "cloud", "cpu", "gpu", "dataCenterIds", "globalNetworking", "mounts", "startJupyter",
                 "startSsh", "templateId", "args", "disk", "env", "ports", "registry"}
V2_GPU_FIELDS = {"id", "count", "allowedCudaVersions", "minCudaVersion"}
V2_CLOUDS = {"secure": "SECURE", "community": "COMMUNITY"}
# The GPU type ids RunPod lists: https://docs.runpod.io/references/gpu-types ("Table last generated: 2026-02-12"),
# read 2026-11-27; the NVIDIA rows and the one AMD row.
RUNPOD_GPU_IDS = {
    "AMD Instinct MI300X OAM", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB", "NVIDIA A30", "NVIDIA A40",
    "NVIDIA B200", "NVIDIA B300 SXM6 AC", "NVIDIA GeForce RTX 3070", "NVIDIA GeForce RTX 3080",
    "NVIDIA GeForce RTX 3080 Ti", "NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 4070 Ti",
    "NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4080 SUPER", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5080",
    "NVIDIA GeForce RTX 5090", "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA H100 PCIe", "NVIDIA H200",
    "NVIDIA H200 NVL", "NVIDIA L4", "NVIDIA L40", "NVIDIA L40S", "NVIDIA RTX 2000 Ada Generation",
    "NVIDIA RTX 4000 Ada Generation", "NVIDIA RTX 4000 SFF Ada Generation", "NVIDIA RTX 5000 Ada Generation",
    "NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX A2000", "NVIDIA RTX A4000", "NVIDIA RTX A4500", "NVIDIA RTX A5000",
    "NVIDIA RTX A6000", "NVIDIA RTX PRO 4500 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 1g.24gb",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition MIG 2g.48gb", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "Tesla V100-PCIE-16GB", "Tesla V100-SXM2-16GB",
    "Tesla V100-SXM2-32GB"}


@pytest.mark.parametrize("tier", ["secure", "community"])
def test_the_runpod_request_is_a_v2_create_pod_body(tier):
    """Two GPUs of Llama-3-8B in bf16: the body holds only v2 fields (none of v1's flat gpuTypeIds, imageName,
    containerDiskInGb, cloudType, interruptible, which v2 refuses), the tier's cloud, one GPU type id (the planner's
    first RunPod GPU) with the plan's count, the disk and the env as the docs type them."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(10_000, 128, 256), "bf16", runtime="vllm", gpus=2,
                price_tier=tier)
    ranking = estimate_all(plan, FACTS)
    pod, type_ids = launch.runpod_pod(ranking, tier, env={"PLANNER_PLAN": "python -m planner estimate"})
    pod = json.loads(launch.runpod_json(pod))
    assert set(pod) <= V2_POD_FIELDS and {"name", "image", "gpu"} <= set(pod)
    assert set(pod["gpu"]) <= V2_GPU_FIELDS and pod["gpu"]["count"] == 2
    assert pod["cloud"] == V2_CLOUDS[tier]
    first = next(e for e in ranking if e.feasible and e.gpu.vendor == "NVIDIA" and e.gpu.runpod)
    assert pod["gpu"]["id"] == type_ids[0] == first.gpu.runpod.gpu_type_ids[0]
    assert len(type_ids) == len(set(type_ids)) <= launch.MAX_CANDIDATES
    # Llama-3-8B in bf16: 8.03e9 x 2 B = 16.06 GB, twice = 32.1 GB, + 50 GB = 82.1 GB -> 90 GB of container disk
    assert pod["disk"] == 90 and isinstance(pod["disk"], int)
    assert pod["env"] == {"PLANNER_PLAN": "python -m planner estimate"}
    assert all(re.fullmatch(r"[0-9]+/(tcp|http)", p) for p in pod["ports"])
    assert launch.RUNPOD_PODS_URL == "https://api.runpod.io/v2/pods"
    assert shlex.split(launch.runpod_curl("my pod.json"))[:3] == ["curl", "-X", "POST"]
    assert shlex.split(launch.runpod_curl("my pod.json"))[-2:] == ["--data", "@my pod.json"]


def test_every_runpod_gpu_id_we_can_send_is_one_runpod_lists():
    ours = {t for g in FACTS.catalog.gpus if g.runpod for t in g.runpod.gpu_type_ids}
    assert ours and ours <= RUNPOD_GPU_IDS, sorted(ours - RUNPOD_GPU_IDS)
    assert set(launch.runpod_gpu_ids(_ranking())) <= RUNPOD_GPU_IDS


def test_a_spot_or_multi_machine_runpod_request_is_refused_with_the_way_out():
    """v2's create-pod body has no spot (interruptible) field; a pod is one machine."""
    with pytest.raises(ValueError, match="no spot .*--price-tier community or secure"):
        launch.runpod_pod(_ranking(tier="spot"), "spot")
    plan = Plan(load_models().get("llama-3-70b"), Generate(10_000, 128, 256), "bf16", runtime="vllm", gpus=16,
                price_tier="community")
    with pytest.raises(ValueError, match="one machine"):
        launch.runpod_pod(estimate_all(plan, FACTS), "community")


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
    calls = [line.split() for line in script.splitlines() if line.startswith("start ")]
    assert [c[1] for c in calls] == [t["name"] for _, t in tasks]  # each cluster launched, copied back, torn down
    with pytest.raises(ValueError, match="before its result is copied back"):
        launch.fleet_script(tasks, idle_min=0)  # autodown at once would lose the result


def _fake_tools(tmp_path, sky_body: str):
    """`sky` and `rsync` stand-ins on PATH: sky logs each call (one line: its arguments) to sky.log, then runs
    `sky_body`; rsync creates the file it was asked to copy, unless the cluster's name holds 'nores'."""
    import os
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sky").write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/sky.log"\n{sky_body}\nexit 0\n')
    (bin_dir / "rsync").write_text('#!/bin/sh\nsrc="$2"; case "$src" in *nores*) exit 23;; esac\n'
                                   'touch "$3/${src##*/}"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _fleet(tmp_path, n):
    """n bench tasks, the script written into tmp_path; the 2nd cluster's name marked 'nores' (its bench leaves no
    result file) where n > 2."""
    tasks = launch.bench_tasks(_ranking(), NAMES)[:n]
    if n > 2:
        tasks[2][1]["name"] = tasks[2][1]["name"] + "-nores"
    (tmp_path / "run_fleet.sh").write_text(launch.fleet_script(tasks, str(tmp_path), idle_min=7))
    return tasks


def _sky_calls(tmp_path, verb):
    lines = (tmp_path / "sky.log").read_text().splitlines() if (tmp_path / "sky.log").exists() else []
    return [line.split() for line in lines if line.split()[:1] == [verb]]


def test_the_fleet_script_tears_every_cluster_down_and_names_the_ones_that_failed(tmp_path):
    """Four benches: the 2nd launch fails (no capacity), the 3rd bench leaves no result file and the 4th cluster's
    first `sky down` fails. Each is torn down (the 4th by the exit trap's second try); only the two good results
    come back and the script names the two that failed."""
    import subprocess
    tasks = _fleet(tmp_path, 4)
    bad, nores, stuck = (t["name"] for _, t in tasks[1:])
    env = _fake_tools(tmp_path, f'[ "$1" = launch ] && [ "$4" = "{bad}" ] && exit 1\n'
                                f'if [ "$1" = down ] && [ "$3" = "{stuck}" ] && [ ! -e "{tmp_path}/once" ]; then\n'
                                f'  touch "{tmp_path}/once"; exit 1\nfi')
    done = subprocess.run(["bash", str(tmp_path / "run_fleet.sh")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert sorted(done.stderr.split("failed: ")[-1].split()) == sorted([bad, nores])
    launches = _sky_calls(tmp_path, "launch")
    assert sorted(c[3] for c in launches) == sorted(t["name"] for _, t in tasks)
    # idle autodown on every launch: SkyPilot's own guard should the script die without its trap
    assert all(c[4:7] == ["-i", "7", "--down"] and c[:3] == ["launch", "-y", "-c"] for c in launches)
    downs = [c[-1] for c in _sky_calls(tmp_path, "down")]
    assert sorted(downs) == sorted([t["name"] for _, t in tasks] + [stuck])  # once each, the stuck one retried
    got = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert got == sorted(f"bench-{g}.json" for g, t in tasks if t["name"] not in (bad, nores))
    assert f"could not tear down {stuck}" in done.stderr


def _wait_for(predicate, what):
    """Poll until predicate() holds; the deadline is only a safety net against a hang, not a verdict on speed."""
    import time
    deadline = time.monotonic() + 120
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def test_ctrl_c_mid_fleet_tears_down_every_cluster_launched_so_far(tmp_path):
    """The first bench finishes; the others are still provisioning (their `sky launch` blocks) when the terminal's
    Ctrl-C reaches the script's process group. All three were launched together (a script launching one after
    another would never reach the third), each is torn down, and no launch is left running."""
    import os
    import signal
    import subprocess
    tasks = _fleet(tmp_path, 3)
    first = tasks[0][1]["name"]
    env = _fake_tools(tmp_path, f'if [ "$1" = launch ] && [ "$4" != "{first}" ]; then\n'
                                f'  echo $$ > "{tmp_path}/pid-$4"; exec sleep 300\nfi')
    proc = subprocess.Popen(["bash", str(tmp_path / "run_fleet.sh")], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        names = [t["name"] for _, t in tasks]
        _wait_for(lambda: sorted(c[3] for c in _sky_calls(tmp_path, "launch")) == sorted(names)
                  and [first] == [c[-1] for c in _sky_calls(tmp_path, "down")]
                  and all((tmp_path / f"pid-{n}").exists() for n in names[1:]), "the launches")
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    downs = [c[-1] for c in _sky_calls(tmp_path, "down")]
    assert sorted(downs) == sorted(names)  # each once: the finished one by its job, the rest by the trap
    assert [p.name for p in (tmp_path / "results").iterdir()] == [f"bench-{tasks[0][0]}.json"]
    for n in names[1:]:  # the blocked launches were stopped, not left running
        pid = int((tmp_path / f"pid-{n}").read_text())
        try:
            state = (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:
            state = "gone"
        assert state in ("gone", "Z"), f"sky launch {n} still running"


def test_the_bench_setup_keeps_an_images_pinned_torch_and_installs_it_otherwise(tmp_path):
    """The setup run with a stand-in `python`: torch 2.13.0 (any CUDA build) in the image -> the planner alone;
    another torch, or none -> the planner with its bench extra (torch==2.13.0, pyproject.toml)."""
    import os
    import subprocess
    import tomllib
    extra = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    pin = next(r for r in extra["project"]["optional-dependencies"]["bench"] if r.startswith("torch"))
    assert pin == f"torch=={launch.BENCH_TORCH}"  # the setup's check and the pin are one version
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(
        '#!/bin/sh\nif [ "$1" = -c ]; then [ -n "$TORCH" ] || exit 1; echo "$TORCH"; exit 0; fi\n'
        f'echo "$@" >> "{tmp_path}/pip.log"\n')
    (bin_dir / "python").chmod(0o755)
    setup = launch.bench_tasks(_ranking(), NAMES)[0][1]["setup"]
    installs = {}
    for torch in ("2.13.0+cu126", "2.13.0", "2.5.1+cu124", "2.13.1", ""):
        (tmp_path / "pip.log").unlink(missing_ok=True)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TORCH": torch}
        subprocess.run(["bash", "-c", setup], env=env, check=True, timeout=60)
        installs[torch] = (tmp_path / "pip.log").read_text().split()
    for torch, words in installs.items():
        assert words[:2] == ["-m", "pip"] and words[2] == "install"
        assert words[-1] == ("." if torch.startswith("2.13.0") else ".[bench]"), (torch, words)


# ---------------------------------------------------------------- a task that runs as exported

SETUP_DATA = yaml.safe_load(SETUP_FILE.read_text())


def _parsed(skypilot, task, notes=(), words="a plan"):
    text = launch.skypilot_yaml(task, words, launch.accelerator_order(task), notes=notes)
    parsed = skypilot.parse(text)
    assert "error" not in parsed, parsed
    assert yaml.safe_load(text) == task  # the comment header stays a comment
    return parsed


def test_a_16_gpu_plan_is_two_nodes_of_eight_on_clouds_with_multi_node(skypilot):
    """16 GPUs do not fit the largest node (8 on one board): 16 / 8 = 2 nodes. RunPod runs no multi-node cluster,
    so its own names (H200-SXM, A100-80GB-SXM...) are left out, and the file says so; GPUs with no known multi-node
    network (H100 NVL, RTX 4090) can't run the plan's tensor-parallel all-reduces over 2 nodes at all."""
    plan = Plan(load_models().get("llama-3-70b"), Generate(10_000, 128, 256), "bf16", runtime="vllm", gpus=16,
                price_tier="community")
    ranking = estimate_all(plan, FACTS)
    task, notes = launch.skypilot_task(ranking, NAMES, spot=False, link="t")
    parsed = _parsed(skypilot, task, notes)
    assert parsed["num_nodes"] == 2
    assert all(list(r["accelerators"].values()) == [8] for r in parsed["resources"])
    got = {next(iter(r["accelerators"])) for r in parsed["resources"]}
    assert got and not got & {"H100-NVL", "RTX4090", "H200-SXM", "A100-80GB-SXM"}  # RunPod's names only
    text = launch.skypilot_yaml(task, "p", "o", notes=notes)
    assert "SkyPilot runs no multi-node cluster there" in text
    assert any("h200-sxm" in n and "no multi-node" in n for n in notes)
    assert not any(e.feasible for e in ranking if e.gpu.id in ("h100-nvl", "rtx-4090"))
    assert launch.node_layout(8) == (1, 8) and launch.node_layout(12) == (3, 4) and launch.node_layout(24) == (3, 8)
    assert launch.node_layout(16, 4) == (4, 4)  # a plan's own nodes of 4
    assert launch.node_layout(12, 8) == (3, 4)  # 8 does not divide 12: as without


def test_a_one_node_plan_has_no_num_nodes_and_keeps_runpods_gpus(skypilot):
    task, _ = launch.skypilot_task(_ranking(), NAMES, spot=False, link="t")
    parsed = _parsed(skypilot, task)
    assert parsed["num_nodes"] == 1 and "num_nodes" not in task
    assert all(list(r["accelerators"].values()) == [1] for r in parsed["resources"])


def test_a_vllm_plan_installs_the_pinned_vllm_and_llama_cpp_builds_on_a_devel_image(skypilot):
    pinned = {r["id"]: r for r in SETUP_DATA["runtimes"]}
    vllm = next(p for p in pinned["vllm"]["pins"] if p["package"] == "vllm")
    task, _ = launch.skypilot_task(_ranking(), NAMES, spot=False, link="t")
    parsed = _parsed(skypilot, task)
    install = next(line for line in parsed["setup"].splitlines() if "pip install" in line)
    assert f"vllm=={vllm['version']}" in shlex.split(install)
    assert vllm["source"].startswith("https://pypi.org/project/vllm/")
    plan = Plan(load_models().get("llama-3-8b"), Generate(10_000, 128, 256), "bf16", runtime="llama.cpp")
    task, _ = launch.skypilot_task(estimate_all(plan, FACTS), NAMES, spot=False, link="t")
    parsed = _parsed(skypilot, task)
    assert all(list(r["image_id"].values())[0].endswith("-devel") for r in parsed["resources"])  # nvcc for the build
    assert "CMAKE_ARGS=-DGGML_CUDA=on" in parsed["setup"]


def test_autostop_tears_the_cluster_down_by_default_and_can_be_changed_or_dropped(skypilot):
    ranking = _ranking()
    task, _ = launch.skypilot_task(ranking, NAMES, spot=False, link="t")
    # the default: down (not stop: RunPod can't stop a pod) after 10 idle minutes
    assert {str(r["autostop"]) for r in _parsed(skypilot, task)["resources"]} == {str({"idle_minutes": 10,
                                                                                       "down": True})}
    task, _ = launch.skypilot_task(ranking, NAMES, spot=False, link="t", autostop_min=45)
    assert all(r["autostop"] == {"idle_minutes": 45, "down": True} for r in _parsed(skypilot, task)["resources"])
    task, notes = launch.skypilot_task(ranking, NAMES, spot=False, link="t", autostop_min=None)
    assert all(r["autostop"] is None for r in _parsed(skypilot, task)["resources"])
    assert any("no autostop" in n for n in notes)


def test_a_gated_model_asks_for_the_hf_token_as_a_secret(skypilot):
    task, notes = launch.skypilot_task(_ranking("llama-3-8b"), NAMES, spot=False, link="t")
    assert _parsed(skypilot, task)["secrets"] == {"HF_TOKEN": None}
    assert "--secret HF_TOKEN" in launch.skypilot_yaml(task, "p", "o").splitlines()[0]
    task, _ = launch.skypilot_task(_ranking("gpt2-124m"), NAMES, spot=False, link="t")  # openly downloadable
    assert _parsed(skypilot, task)["secrets"] == {} and "secrets" not in task
    assert launch.load_launch_setup().gated("meta-llama/Llama-3.1-8B")  # a Hub id of a gated owner
    assert not launch.load_launch_setup().gated("Qwen/Qwen2-7B")


HOSTILE = ["$(touch /tmp/pwned)", "`id`", "; rm -rf ~", "a: # b", "{x}", "x'y\"z", "a b", "&& curl x | sh",
           "x\nname: pwned"]


@pytest.mark.parametrize("evil", HOSTILE)
def test_shell_and_yaml_metacharacters_reach_skypilot_as_the_same_text(skypilot, evil):
    """Each user text field: the model's id and name, --run, the plan's own words, a workdir and an image."""
    model = dataclasses.replace(load_models().get("gpt2-124m"), id=f"m{evil}", name=f"M {evil}")
    plan = Plan(model, Generate(1000, 128, 256), "bf16", runtime="vllm", price_tier="community")
    argv = ["launch", "--model", f"m{evil}", "--run", evil, "--sequences", "1000", f"--gpu={evil}"]
    command, _ = launch.plan_command(argv)
    run = f"python gen.py --tag {shlex.quote(evil)}\n{evil}"  # the user's own shell text, kept as written
    workdir = f"dir {evil}"
    refused = set(workdir) & launch.WORKDIR_REFUSED
    if refused:
        with pytest.raises(ValueError, match="not a folder SkyPilot can sync safely"):
            launch.skypilot_task(estimate_all(plan, FACTS), NAMES, False, command, run, workdir=workdir)
        workdir = "dir"
    task, notes = launch.skypilot_task(estimate_all(plan, FACTS), NAMES, False, command, run, workdir=workdir)
    parsed = _parsed(skypilot, task, notes + [f"about {evil}"], words=f"generate with {model.name}")
    assert parsed["run"] == run and parsed["workdir"] == workdir
    assert re.fullmatch(r"[a-z0-9-]+", parsed["name"])
    # the plan command quotes every word: a shell splits it back into exactly what was typed, less the launch's own
    assert shlex.split(parsed["envs"]["PLANNER_PLAN"]) == ["python", "-m", "planner", "estimate", "--model",
                                                           f"m{evil}", "--sequences", "1000", f"--gpu={evil}"]
    assert all(shlex.split(line) for line in parsed["setup"].splitlines())  # every setup line a shell can split
    with pytest.raises(ValueError, match="not a container image reference"):
        launch.skypilot_task(estimate_all(plan, FACTS), NAMES, False, command, run, image=f"pytorch/pytorch{evil}")
    with pytest.raises(ValueError, match="not a container image reference"):
        launch.runpod_pod(estimate_all(plan, FACTS), "community", image=f"img:1{evil}")


def test_a_chosen_image_is_used_and_a_local_path_in_the_plan_is_cut_to_its_file_name(skypilot):
    task, _ = launch.skypilot_task(_ranking(), NAMES, False, "t", image="ghcr.io/me/img:1.0")
    # SkyPilot keeps an image per region: {None: image}
    assert all(list(r["image_id"].values()) == ["docker:ghcr.io/me/img:1.0"]
               for r in _parsed(skypilot, task)["resources"])
    command, notes = launch.plan_command(["launch", "--model", "/home/me/models/x.yaml", "--calibration=../b/h100.json",
                                          "--out", "/home/me/task.yaml", "--model", "meta-llama/Llama-2-7b-hf"])
    assert shlex.split(command) == ["python", "-m", "planner", "estimate", "--model", "x.yaml",
                                    "--calibration=h100.json", "--model", "meta-llama/Llama-2-7b-hf"]
    assert "/home" not in command and len(notes) == 2 and "x.yaml" in notes[0]


def test_a_run_naming_a_script_here_syncs_this_folder(tmp_path):
    (tmp_path / "generate.py").write_text("print(1)\n")
    assert launch.default_workdir("python generate.py --n 10", tmp_path) == "."
    assert launch.default_workdir("python other.py", tmp_path) is None  # not here: nothing to sync
    assert launch.default_workdir(launch.RUN_PLACEHOLDER, tmp_path) is None


def test_a_community_plan_says_skypilot_rents_runpods_secure_cloud_and_leaves_out_what_it_cannot_rent(skypilot):
    """SkyPilot 0.14.1's RunPod catalog keeps secure-cloud offers only (fetch_runpod.py: 'community cloud instances
    are skipped'). A GPU with a community price and no secure price, under a name no other cloud rents, can't be
    rented through it; one another cloud rents under its name (A100 40GB: GCP, AWS, ...) stays."""
    ranking = _ranking(model="cfdna-gen", tier="community")
    community_only = [e for e in ranking if e.feasible and e.cost("community") is not None
                      and e.cost("secure") is None and e.gpu.id in NAMES]
    assert community_only, "the snapshot has GPUs RunPod offers only in its community cloud"
    elsewhere = launch.load_multi_node_names()
    task, notes = launch.skypilot_task(ranking, NAMES, spot=False, link="t")
    parsed = skypilot.parse(launch.skypilot_yaml(task, "p", launch.accelerator_order(task), notes=notes))
    asked = {next(iter(r["accelerators"])) for r in parsed["resources"]}
    unrentable = [e.gpu.id for e in community_only if NAMES[e.gpu.id] not in elsewhere]
    assert unrentable and all(NAMES[g] not in asked for g in unrentable)
    tier_note = next(n for n in notes if n.startswith("This plan is priced at RunPod community prices"))
    assert "secure-cloud offers only" in tier_note and unrentable[0] in tier_note
    # the secure tier is what SkyPilot rents: nothing to say, nothing left out for the tier
    _, secure_notes = launch.skypilot_task(_ranking(model="cfdna-gen", tier="secure"), NAMES, spot=False, link="t")
    assert not any("priced at RunPod" in n for n in secure_notes)
    assert launch.skypilot_tier_note(_ranking(model="cfdna-gen", tier="secure"), "secure") is None


@pytest.mark.parametrize("tier", ["secure", "community"])
def test_a_runpod_request_names_only_gpus_rented_in_that_tiers_cloud(tier):
    """RunPod lists some GPUs in one cloud only (its snapshot: a40, l4 secure only; rtx-3080, v100-sxm2-16gb
    community only): a pod asked for in the other cloud would never be placed, so its type id is not sent."""
    other_only = {"secure": ("rtx-3080", "v100-sxm2-16gb"), "community": ("a40", "l4")}[tier]
    plan = Plan(load_models().get("gpt2-124m"), Generate(10_000, 128, 256), "fp16", runtime="vllm", price_tier=tier)
    ranking = estimate_all(plan, FACTS, gpu_names=(*other_only, "rtx-4090"))
    table = snapshot_table(FACTS.catalog).prices
    gone = {t for g in other_only for t in FACTS.catalog.get(g).runpod.gpu_type_ids}
    assert gone <= set(launch.runpod_gpu_ids(ranking))  # all feasible: without the tier each would be sent
    pod, type_ids = launch.runpod_pod(ranking, tier, runpod_prices=table)
    assert type_ids == list(FACTS.catalog.get("rtx-4090").runpod.gpu_type_ids) == [pod["gpu"]["id"]]
    assert pod["cloud"] == V2_CLOUDS[tier]
    with pytest.raises(ValueError, match=f"rented in RunPod's {tier} cloud"):
        launch.runpod_pod(estimate_all(plan, FACTS, gpu_names=other_only), tier, runpod_prices=table)


def test_the_runpod_tier_note_speaks_of_runpods_prices_only():
    """SkyPilot's RunPod catalog is secure-only; a plan priced by another provider (here Vast.ai's marketplace, its
    community tier) rents there at that price, so no note about RunPod's tiers."""
    plan = Plan(load_models().get("gpt2-124m"), Generate(10_000, 128, 256), "fp16", runtime="vllm",
                price_tier="community")
    elsewhere = launch.load_multi_node_names()
    assert launch.tier_sentence(estimate_all(plan, FACTS), "community", NAMES, elsewhere) is not None
    vast = cloud_prices.with_providers(FACTS.prices, cloud_prices.load_cloud_prices(FACTS.catalog), ["vast.ai"])
    ranking = estimate_all(plan, dataclasses.replace(FACTS, prices=vast))
    assert any(e.cost("community") is not None for e in ranking)
    assert launch.tier_sentence(ranking, "community", NAMES, elsewhere) is None
