"""From ranking to running: the plan as a SkyPilot task (YAML) and as a RunPod pod request (JSON).

SkyPilot launches a task on whichever of its `resources` it can get, trying `ordered` candidates in turn; the
planner's time estimate is what SkyPilot lacks to rank GPUs by the cost of the whole job, so the candidates are the
GPUs that can run the plan, in the planner's order (cheapest job first). RunPod's pod request takes a list of GPU
type ids in priority order. Neither export starts anything: `sky launch task.yaml` or a POST to RunPod does.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass

import yaml

from planner.base.units import BYTES_PER_GB
from planner.engine.estimate import Estimate

MAX_CANDIDATES = 8  # SkyPilot tries them in order; more rarely helps and makes failures slow
BASE_DISK_GB = 50  # image, Python environment and caches (SkyPilot's own default disk is 256 GB; RunPod's 20)
DISK_HEADROOM = 2.0  # the model's files twice (download + converted or checkpointed copy)
DEFAULT_IMAGE = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"  # public; CUDA 12.4 wheels run SM 5.0-9.0
# Blackwell (SM 10.0, 12.0) needs PyTorch 2.7+ built with CUDA 12.8 (data/pytorch_builds.yaml)
BLACKWELL_IMAGE = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"
BLACKWELL_MIN_SM = (10, 0)
RUN_PLACEHOLDER = "# replace with your job's command, e.g.: python generate.py --n 1000000"


@dataclass(frozen=True)
class Candidate:
    gpu_id: str
    accelerator: str
    count: int
    seconds: float
    cost_usd: float | None


def _cuda_ready(e: Estimate) -> bool:
    """The exported image is a CUDA build of PyTorch: only NVIDIA GPUs run it (an AMD GPU needs a ROCm build)."""
    return e.gpu.vendor == "NVIDIA"


def candidates(ranking: list[Estimate], names: dict[str, str]) -> tuple[list[Candidate], list[str]]:
    """The GPUs SkyPilot may use, in ranking order (feasible NVIDIA ones with a SkyPilot name, at most MAX_CANDIDATES,
    each accelerator once), and the feasible GPUs left out, each as 'gpu-id (why)'."""
    chosen, seen, left_out = [], set(), []
    for e in ranking:
        if not e.feasible:
            continue
        name = names.get(e.gpu.id)
        if e.gpu.kind == "cpu":
            left_out.append(f"{e.gpu.id} (a CPU: this task asks SkyPilot for a GPU)")
        elif not _cuda_ready(e):
            left_out.append(f"{e.gpu.id} ({e.gpu.vendor}: the task's image is a CUDA build of PyTorch)")
        elif name is None:
            left_out.append(f"{e.gpu.id} (no SkyPilot name in data/skypilot.yaml)")
        elif name not in seen and len(chosen) < MAX_CANDIDATES:
            seen.add(name)
            chosen.append(Candidate(e.gpu.id, name, e.plan.gpus, e.seconds, e.cost()))
    return chosen, left_out


def disk_gb(e: Estimate) -> int:
    """Disk for the task: the model's weights in the plan's precision twice, plus a base; rounded up to 10 GB."""
    weights_gb = e.plan.model.params * e.setup.precision.weight_bytes / BYTES_PER_GB
    return int(math.ceil((BASE_DISK_GB + DISK_HEADROOM * weights_gb) / 10) * 10)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "plan"


def skypilot_task(ranking: list[Estimate], names: dict[str, str], spot: bool, link: str,
                  run: str = RUN_PLACEHOLDER) -> tuple[dict, list[str]]:
    """A SkyPilot task config (the dict `sky.Task.from_yaml_config` reads) and the GPUs left out."""
    chosen, left_out = candidates(ranking, names)
    if not chosen:
        raise ValueError("no NVIDIA GPU that can run this plan has a SkyPilot name: nothing to launch")
    first = next(e for e in ranking if e.gpu.id == chosen[0].gpu_id)
    picked = [e for e in ranking if e.gpu.id in {c.gpu_id for c in chosen}]
    task = {
        "name": _slug(f"planner-{first.plan.model.id}"),
        "resources": {
            "ordered": [{"accelerators": {c.accelerator: c.count}, "use_spot": spot} for c in chosen],
            "disk_size": disk_gb(first),
            "image_id": f"docker:{image_for(picked)}",
        },
        "envs": {"PLANNER_PLAN": link},
        "run": run,
    }
    return task, left_out


def skypilot_yaml(task: dict, plan_sentence: str, chosen_note: str,
                  chosen_title: str = "GPUs in the planner's order (cheapest whole job first)") -> str:
    """The task as YAML under a comment header: how to launch it, the plan, and the GPUs chosen."""
    header = ("# SkyPilot task written by the GPU planner: launch with `sky launch task.yaml`.\n"
              f"# Plan: {' '.join(plan_sentence.split())[:300]}\n"
              f"# {chosen_title}: {chosen_note}\n")
    return header + yaml.safe_dump(task, sort_keys=False, width=120)


def accelerator_order(task: dict) -> str:
    """The task's candidates as 'H100:1, A100-80GB:1', in the order SkyPilot tries them."""
    return ", ".join(f"{k}:{v}" for r in task["resources"]["ordered"] for k, v in r["accelerators"].items())


def skypilot_text(ranking: list[Estimate], names: dict[str, str], spot: bool, link: str, plan_sentence: str) -> str:
    """The page's SkyPilot download: the task as YAML, or a one-line YAML comment saying why there is none."""
    try:
        task, _ = skypilot_task(ranking, names, spot, link)
    except ValueError as exc:
        return f"# {exc}\n"
    return skypilot_yaml(task, plan_sentence, accelerator_order(task))


def image_for(estimates: list[Estimate]) -> str:
    """A container image whose PyTorch build runs every candidate GPU (CUDA 12.8 once a Blackwell GPU is among them)."""
    sms = [e.gpu.compute_capability for e in estimates if e.gpu.compute_capability]
    return BLACKWELL_IMAGE if any(sm >= BLACKWELL_MIN_SM for sm in sms) else DEFAULT_IMAGE


def runpod_pod(ranking: list[Estimate], tier: str, image: str | None = None) -> dict:
    """A RunPod REST v1 `POST /pods` body: NVIDIA GPU type ids in the planner's order, the tier's cloud, spot as
    interruptible (fields per rest.runpod.io/v1/openapi.json, as listed in shared/reference/runpod_api.md)."""
    ok = [e for e in ranking if e.feasible and _cuda_ready(e) and e.gpu.runpod and e.gpu.runpod.gpu_type_ids]
    if not ok:
        raise ValueError("no NVIDIA GPU that can run this plan is rented by RunPod: nothing to request")
    type_ids = list(dict.fromkeys(t for e in ok for t in e.gpu.runpod.gpu_type_ids))[:MAX_CANDIDATES]
    return {"name": _slug(f"planner-{ok[0].plan.model.id}"), "imageName": image or image_for(ok), "computeType": "GPU",
            "gpuTypeIds": type_ids, "gpuTypePriority": "custom", "gpuCount": ok[0].plan.gpus,
            "cloudType": "COMMUNITY" if tier == "community" else "SECURE", "interruptible": tier == "spot",
            "containerDiskInGb": disk_gb(ok[0]), "volumeInGb": 0, "ports": ["22/tcp"]}


def runpod_json(pod: dict) -> str:
    return json.dumps(pod, indent=2)


# ---------------------------------------------------------------- calibrating a fleet

BENCH_SETUP = 'pip install -e ".[bench]"'  # the planner and its pinned torch, in SkyPilot's workdir (this repo)


def bench_tasks(ranking: list[Estimate], names: dict[str, str]) -> list[tuple[str, dict]]:
    """One SkyPilot task per candidate GPU type (the launch order): run `python -m planner.bench` on it and leave
    its result file in the workdir, named for the GPU."""
    nvidia = [e for e in ranking if e.gpu.vendor == "NVIDIA"]  # the bench installs a CUDA build of torch
    chosen, _ = candidates(nvidia, names)
    out = []
    for c in chosen:
        task = {"name": _slug(f"bench-{c.gpu_id}"), "workdir": ".",
                "resources": {"accelerators": {c.accelerator: 1}, "disk_size": BASE_DISK_GB,
                              "image_id": f"docker:{image_for([e for e in ranking if e.gpu.id == c.gpu_id])}"},
                "setup": BENCH_SETUP,
                "run": f"python -m planner.bench --out bench-{c.gpu_id}.json"}
        out.append((c.gpu_id, task))
    return out


def fleet_script(tasks: list[tuple[str, dict]], folder: str = ".") -> str:
    """A shell script, run from the repository root (SkyPilot's workdir), that runs each bench task in `folder`,
    copies its result file into ./results and tears the cluster down, whether or not the launch worked (a cluster
    left up keeps billing); it goes on to the next GPU after a failure and exits 1 naming the GPUs that failed."""
    lines = ["#!/usr/bin/env bash", "# Written by `python -m planner launch --bench`: one bench per GPU type, results "
             "in ./results;", "# then upload them all at once in the planner's sidebar (5 · Calibration).",
             "set -uo pipefail", "mkdir -p results", "failed=()",
             "bench() {  # cluster, task file, result file",
             '  if sky launch -y -c "$1" "$2" && rsync -Pavz "$1:sky_workdir/$3" results/; then',
             '    echo "ok: results/$3"',
             "  else",
             '    failed+=("$1")',
             "  fi",
             '  sky down -y "$1" || echo "warning: could not tear down $1; run: sky down $1" >&2',
             "}"]
    for gpu_id, task in tasks:
        cluster = task["name"]
        lines.append(f"bench {shlex.quote(cluster)} {shlex.quote(f'{folder}/{cluster}.yaml')} "
                     f"{shlex.quote(f'bench-{gpu_id}.json')}")
    lines += ['if [ ${#failed[@]} -gt 0 ]; then echo "failed: ${failed[*]}" >&2; exit 1; fi']
    return "\n".join(lines) + "\n"
