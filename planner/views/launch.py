"""From ranking to running: the plan as a SkyPilot task (YAML) and as a RunPod pod request (JSON).

SkyPilot launches a task on whichever of its `resources` it can get, trying `ordered` candidates in turn; the
planner's time estimate is what SkyPilot lacks to rank GPUs by the cost of the whole job, so the candidates are the
GPUs that can run the plan, in the planner's order (cheapest job first). RunPod's REST API v2 pod request takes one
GPU type id: the planner's first, the others listed as what to try next. Neither export starts anything: `sky launch
task.yaml` or a POST to RunPod does.

The SkyPilot task is meant to run as exported: it syncs the folder holding the run's script (`workdir`), installs the
plan's runtime at pinned versions (`setup`, data/launch_setup.yaml), asks for HF_TOKEN for a gated model (`secrets`),
tears the cluster down when idle (`autostop`), spreads a plan beyond one node over `num_nodes` (only GPUs a cloud
with multi-node clusters rents) and carries the plan as a quoted `planner estimate` command without local paths.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from planner.base.safe_parse import shown
from planner.base.units import BYTES_PER_GB
from planner.engine.estimate import Estimate
from planner.inputs.catalog import RUNPOD_PROVIDER, Price
from planner.inputs.launch_names import (LaunchSetup, RuntimeSetup, load_launch_setup, load_multi_node_names,
                                         load_skypilot_names)

MAX_CANDIDATES = 8  # SkyPilot tries them in order; more rarely helps and makes failures slow
BASE_DISK_GB = 50  # image, Python environment and caches (SkyPilot's own default disk is 256 GB; RunPod's 20)
DISK_HEADROOM = 2.0  # the model's files twice (download + converted or checkpointed copy)
DEFAULT_IMAGE = "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"  # public; CUDA 12.4 wheels run SM 5.0-9.0
# Blackwell (SM 10.0, 12.0) needs PyTorch 2.7+ built with CUDA 12.8 (data/pytorch_builds.yaml)
BLACKWELL_IMAGE = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"
BLACKWELL_MIN_SM = (10, 0)
# The same builds with the CUDA compiler, for a runtime whose install compiles CUDA code (data/launch_setup.yaml
# needs_nvcc): pytorch/pytorch publishes each tag as -runtime and -devel.
RUNTIME_TAG, DEVEL_TAG = "-runtime", "-devel"
RUN_PLACEHOLDER = "# replace with your job's command, e.g.: python generate.py --n 1000000"
# A cluster left up after its job bills until someone notices: SkyPilot tears it down after this many idle minutes
# (no job running, no SSH session). `down`, not stop: RunPod can't stop a pod (sky/clouds/runpod.py: STOP is
# unsupported) and a stopped cluster still bills its disk.
DEFAULT_AUTOSTOP_MIN = 10
MAX_AUTOSTOP_MIN = 7 * 24 * 60
# The largest node clouds rent: 8 GPUs on one board (AWS p4d/p5, GCP a3, Azure ND, Lambda 8x: HGX boards). A plan
# beyond it is num_nodes nodes of the largest power of two up to 8 that divides its GPU count.
MAX_GPUS_PER_NODE = 8
NO_MULTI_NODE = ("no multi-node: rented only on clouds where SkyPilot runs one node per cluster; SkyPilot runs no "
                 "multi-node cluster on RunPod (data/skypilot.yaml multi_node; RunPod's own Instant Clusters are "
                 "ordered in its console: data/clusters.yaml)")
HF_SECRET = "HF_TOKEN"  # what huggingface_hub reads for a gated repo's token
SCRIPT_SUFFIXES = (".py", ".sh", ".ipynb", ".ts", ".js", ".rb", ".pl", ".R", ".jl", ".lua")
# What the launch's own options are (the value each takes, True or False): the plan command the task carries leaves
# them out; what remains is the plan.
LAUNCH_OPTIONS = {"--out": True, "--run": True, "--workdir": True, "--image": True, "--format": True,
                  "--autostop": True, "--no-autostop": False, "--bench": False, "--optimize": False,
                  "--dryrun": False, "--clouds": True, "--skypilot-python": True}
DATA_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl", ".csv", ".txt")
# A container image reference: [registry[:port]/]path[:tag][@sha256:digest] (the grammar of
# github.com/distribution/reference, without upper case in the path); nothing a shell would read as more.
_IMAGE = re.compile(r"(?:[A-Za-z0-9.-]+(?::[0-9]{1,5})?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
                    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                    r"(?:@sha256:[a-f0-9]{64})?")
MAX_WORKDIR_CHARS = 500
WORKDIR_REFUSED = frozenset("$`'\"\\\n\r")


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


def candidates(ranking: list[Estimate], names: dict[str, str],
               multi_node: frozenset[str] | None = None,
               max_candidates: int | None = MAX_CANDIDATES) -> tuple[list[Candidate], list[str]]:
    """The GPUs SkyPilot may use, in ranking order (feasible NVIDIA ones with a SkyPilot name, at most
    `max_candidates` (None: all), each accelerator once), and the feasible GPUs left out, each as 'gpu-id (why)'.
    With `multi_node` (a task of several nodes), only those names: a GPU rented only where a cluster is one node
    can't run it."""
    chosen, seen, left_out, single_node = [], set(), [], []
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
        elif multi_node is not None and name not in multi_node:
            single_node.append(e.gpu.id)
        elif name not in seen and (max_candidates is None or len(chosen) < max_candidates):
            seen.add(name)
            chosen.append(Candidate(e.gpu.id, name, e.plan.gpus, e.seconds, e.cost()))
    if single_node:
        left_out.append(f"{', '.join(single_node)} ({NO_MULTI_NODE})")
    return chosen, left_out


# SkyPilot 0.14.1's RunPod catalog keeps secure-cloud offers only: sky/catalog/data_fetchers/fetch_runpod.py
# ("Only secure cloud instances are included (community cloud instances are skipped)"; its spot price is
# secureSpotPrice). A plan priced at another tier launches there at secure prices, and a GPU RunPod offers only in
# its community cloud can't be rented through it.
SKYPILOT_RUNPOD_TIER = "secure"
SKYPILOT_RUNPOD_SOURCE = ("SkyPilot's RunPod catalog keeps secure-cloud offers only "
                          "(sky/catalog/data_fetchers/fetch_runpod.py)")


def tier_gaps(ranking: list[Estimate], tier: str, names: dict[str, str], elsewhere: frozenset[str]
              ) -> tuple[list[str], list[Estimate]]:
    """For a plan priced at `tier`: (the GPUs SkyPilot can't rent: no RunPod secure-cloud offer and a SkyPilot name
    no other cloud rents (`elsewhere`); the feasible GPUs that SkyPilot rents on RunPod at secure prices instead).
    Both empty for the secure tier."""
    if tier == SKYPILOT_RUNPOD_TIER:
        return [], []
    # only RunPod's prices: a price of another provider (--providers) is what that cloud rents at
    feasible = [e for e in ranking if e.feasible and e.gpu.kind != "cpu" and e.cost(tier) is not None
                and _runpod_price(e, tier)]
    return ([e.gpu.id for e in feasible if e.cost(SKYPILOT_RUNPOD_TIER) is None and names.get(e.gpu.id) and
             names[e.gpu.id] not in elsewhere],
            [e for e in feasible
             if e.cost(SKYPILOT_RUNPOD_TIER) is not None and _runpod_price(e, SKYPILOT_RUNPOD_TIER)])


def _runpod_price(e: Estimate, tier: str) -> bool:
    price = e.prices.get(tier)
    return price is not None and price.provider == RUNPOD_PROVIDER


def tier_sentence(ranking: list[Estimate], tier: str, names: dict[str, str], elsewhere: frozenset[str]) -> str | None:
    """One sentence for the page and the task's header when SkyPilot won't rent at the plan's tier; None otherwise."""
    unrentable, repriced = tier_gaps(ranking, tier, names, elsewhere)
    if not (unrentable or repriced):
        return None
    # spot: SkyPilot bids on secure-cloud spot, a price the planner does not keep apart, so no figure is compared
    first = repriced[0] if repriced and tier != "spot" else None
    change = (f" ({first.gpu.name}: ${first.cost(tier):.3g} of compute at {tier} prices, "
              f"${first.cost(SKYPILOT_RUNPOD_TIER):.3g} at secure)") if first else ""
    gone = (f"; {len(unrentable)} GPU(s) RunPod offers only outside its secure cloud, and no other cloud under that "
            f"name, can't be rented through it: {', '.join(unrentable[:8])}{' …' if len(unrentable) > 8 else ''}"
            ) if unrentable else ""
    rents = "secure-cloud spot prices" if tier == "spot" else "secure prices"
    return (f"This plan is priced at RunPod {tier} prices, but {SKYPILOT_RUNPOD_SOURCE}: on RunPod the task rents at "
            f"{rents}{change}{gone}.")


def skypilot_tier_note(ranking: list[Estimate], tier: str) -> str | None:
    """tier_sentence with the committed SkyPilot names (data/skypilot.yaml), for the page beside its download."""
    return tier_sentence(ranking, tier, load_skypilot_names(), load_multi_node_names())


def node_layout(gpus: int, node_gpus: int | None = None) -> tuple[int, int]:
    """(nodes, GPUs per node) for a plan's GPUs: in nodes of `node_gpus` (the plan's own cluster) when it is at most
    MAX_GPUS_PER_NODE and divides the count; else one node up to MAX_GPUS_PER_NODE, beyond it nodes of the largest
    power of two up to that which divides the count (16 -> 2 x 8, 12 -> 3 x 4)."""
    if node_gpus and node_gpus <= MAX_GPUS_PER_NODE and gpus % node_gpus == 0:
        return gpus // node_gpus, node_gpus
    if gpus <= MAX_GPUS_PER_NODE:
        return 1, gpus
    per_node = next(n for n in (8, 4, 2, 1) if n <= MAX_GPUS_PER_NODE and gpus % n == 0)
    return gpus // per_node, per_node


def disk_gb(e: Estimate) -> int:
    """Disk for the task: the model's weights in the plan's precision twice, plus a base; rounded up to 10 GB."""
    weights_gb = e.plan.model.params * e.setup.precision.weight_bytes / BYTES_PER_GB
    return int(math.ceil((BASE_DISK_GB + DISK_HEADROOM * weights_gb) / 10) * 10)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "plan"


def check_image(image: str) -> str:
    """The image, if it is a container image reference; ValueError saying what one looks like otherwise (it goes
    into SkyPilot's and RunPod's `docker pull`)."""
    if len(image) > 255 or not _IMAGE.fullmatch(image):
        raise ValueError(f"image {shown(image, 80)} is not a container image reference like {DEFAULT_IMAGE} "
                         "([registry/]name[:tag][@sha256:digest])")
    return image


def check_workdir(workdir: str) -> str:
    """A workdir SkyPilot can sync safely; ValueError otherwise. SkyPilot substitutes $VARS in it and puts it in its
    rsync command with Python's repr for quotes (sky/utils/command_runner.py): a name holding a single quote is then
    double-quoted, where the shell runs `$(...)` and backticks. So none of $ ` ' " \\ or a line break."""
    bad = sorted(set(workdir) & WORKDIR_REFUSED)
    if not workdir.strip() or bad or len(workdir) > MAX_WORKDIR_CHARS:
        why = f"it holds {' '.join(repr(c) for c in bad)}" if bad else f"give 1 to {MAX_WORKDIR_CHARS} characters"
        raise ValueError(f"workdir {shown(workdir, 80)} is not a folder SkyPilot can sync safely: {why} (SkyPilot "
                         "reads $ and quotes in it); rename the folder or give another")
    return workdir


def default_workdir(run: str, cwd: Path) -> str | None:
    """'.' when the run command names a script file that is here (it must reach the node), else None."""
    try:
        words = shlex.split(run, comments=True)
    except ValueError:  # unbalanced quotes: the user's own shell text, judged by SkyPilot's shell
        words = run.split()
    for w in words:
        if w.endswith(SCRIPT_SUFFIXES) and not w.startswith(("/", "~", "-")) and (cwd / w).is_file():
            return "."
    return None


def _local_path(text: str) -> bool:
    """A value that names a file on this machine (a model YAML, a bench file), not a preset or a Hub id."""
    return text.startswith(("/", "~", "./", "../")) or text.endswith(DATA_SUFFIXES) and ("/" in text or "\\" in text)


def plan_command(argv: list[str]) -> tuple[str, list[str]]:
    """The plan as the `planner estimate` command that ranks it, quoted for a shell (shlex), and notes. The launch's
    own options are left out; a local file path is replaced by its file name (the node has none of this machine's
    paths), each with a note."""
    words, notes, skip = ["python", "-m", "planner"], [], False
    for i, w in enumerate(argv):
        if skip:
            skip = False
            continue
        if i == 0 and w == "launch":
            words.append("estimate")
            continue
        flag, eq, value = w.partition("=")
        if flag in LAUNCH_OPTIONS:
            skip = LAUNCH_OPTIONS[flag] and not eq
            continue
        if _local_path(value if eq else w):
            name = Path((value if eq else w).replace("\\", "/")).name or "file"
            notes.append(f"the plan's file {shown(name, 80)} is named without its local path: put it in the workdir")
            w = f"{flag}={name}" if eq else name
        words.append(w)
    return shlex.join(words), notes


def setup_script(runtime_id: str, launch_setup: LaunchSetup) -> tuple[str | None, list[str]]:
    """The shell lines that install the runtime at its pinned versions (data/launch_setup.yaml), every word quoted,
    and notes; None when there is nothing to install."""
    rs = launch_setup.runtimes.get(runtime_id)
    if rs is None:
        return None, []
    if rs.manual:
        return (f"echo {shlex.quote('planner: ' + rs.manual)} >&2",
                [f"{runtime_id} has no pinned install: {rs.manual}"])
    lines = ["set -e"]
    if rs.apt:
        lines.append("apt-get update && apt-get install -y --no-install-recommends "
                     + " ".join(shlex.quote(p) for p in rs.apt))
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in rs.env)
    pins = " ".join(shlex.quote(f"{p.package}=={p.version}") for p in rs.pins)
    lines.append(f"{env + ' ' if env else ''}python -m pip install --no-cache-dir {pins}")
    return "\n".join(lines) + "\n", []


def _image(picked: list[Estimate], image: str | None, rs: RuntimeSetup | None) -> tuple[str, list[str]]:
    """The task's image and notes: the user's, checked, or the PyTorch build that runs every candidate (its -devel
    variant when the runtime's install compiles CUDA code)."""
    nvcc = rs is not None and rs.needs_nvcc
    if image is not None:
        note = [f"{rs.runtime_id}'s install compiles CUDA code: the image {image} needs nvcc"] if nvcc else []
        return check_image(image), note
    chosen = image_for(picked)
    return (chosen.replace(RUNTIME_TAG, DEVEL_TAG) if nvcc else chosen), []


def skypilot_task(ranking: list[Estimate], names: dict[str, str], spot: bool, link: str,
                  run: str = RUN_PLACEHOLDER, *, workdir: str | None = None, image: str | None = None,
                  autostop_min: int | None = DEFAULT_AUTOSTOP_MIN, launch_setup: LaunchSetup | None = None,
                  multi_node: frozenset[str] | None = None,
                  max_candidates: int | None = MAX_CANDIDATES) -> tuple[dict, list[str]]:
    """A SkyPilot task config (the dict `sky.Task.from_yaml_config` reads) and notes, each one line: the GPUs left
    out ('left out: gpu (why); ...') first, then what the user must know to launch it.

    The task syncs `workdir` (where the run's script is), installs the plan's runtime at pinned versions (`setup`),
    asks for HF_TOKEN as a secret for a gated model, tears the cluster down after `autostop_min` idle minutes (None:
    never) and, for a plan beyond one node, runs num_nodes nodes of GPUs per node, on GPUs a multi-node cloud rents.
    """
    launch_setup = launch_setup or load_launch_setup()
    plan = next((e.plan for e in ranking if e.feasible), None)
    nodes, per_node = node_layout(plan.gpus, plan.node_gpus) if plan else (1, 0)
    # the names clouds with multi-node clusters rent: a plan beyond one node needs them, and a GPU that RunPod offers
    # only outside its secure cloud is still rentable elsewhere under one of them
    multi_node = multi_node if multi_node is not None else load_multi_node_names()
    unrentable = set(tier_gaps(ranking, plan.price_tier, names, multi_node)[0]) if plan else set()
    chosen, left_out = candidates([e for e in ranking if e.gpu.id not in unrentable], names,
                                  multi_node if nodes > 1 else None, max_candidates)
    if unrentable:
        left_out.append(f"{', '.join(sorted(unrentable))} (RunPod offers them only outside its secure cloud, no "
                        f"other cloud under that name; {SKYPILOT_RUNPOD_SOURCE})")
    if not chosen:
        why = " on a cloud with multi-node clusters" if nodes > 1 else ""
        raise ValueError(f"no NVIDIA GPU that can run this plan has a SkyPilot name{why}: nothing to launch")
    first = next(e for e in ranking if e.gpu.id == chosen[0].gpu_id)
    picked = [e for e in ranking if e.gpu.id in {c.gpu_id for c in chosen}]
    notes = [f"left out: {'; '.join(left_out)}"] if left_out else []
    tier_note = tier_sentence(ranking, first.plan.price_tier, names, multi_node)
    if tier_note:
        notes.append(tier_note)
    setup, setup_notes = setup_script(first.plan.runtime, launch_setup)
    image_id, image_notes = _image(picked, image, launch_setup.runtimes.get(first.plan.runtime))
    resources = {"ordered": [{"accelerators": {c.accelerator: per_node}, "use_spot": spot} for c in chosen],
                 "disk_size": disk_gb(first), "image_id": f"docker:{image_id}"}
    if autostop_min is not None:
        if not 0 <= autostop_min <= MAX_AUTOSTOP_MIN:
            raise ValueError(f"autostop: {autostop_min} idle minutes is not between 0 and {MAX_AUTOSTOP_MIN:,}")
        resources["autostop"] = {"idle_minutes": int(autostop_min), "down": True}
    else:
        notes.append("no autostop: the cluster bills until `sky down` tears it down")
    task: dict = {"name": _slug(f"planner-{first.plan.model.id}")}
    if workdir is not None:
        task["workdir"] = check_workdir(workdir)
    if nodes > 1:
        task["num_nodes"] = nodes
        notes.append(f"{plan.gpus} GPUs: {nodes} nodes of {per_node} (num_nodes), on clouds with multi-node "
                     "clusters, RunPod's GPUs left out (SkyPilot runs no multi-node cluster there); `run` runs on "
                     "every node: "
                     "$SKYPILOT_NODE_RANK and $SKYPILOT_NODE_IPS tell them apart")
    task["resources"] = resources
    task["envs"] = {"PLANNER_PLAN": link}
    if launch_setup.gated(first.plan.model.id):
        task["secrets"] = {HF_SECRET: None}
        notes.append(f"{first.plan.model.id} is gated on Hugging Face: launch with `sky launch task.yaml --secret "
                     f"{HF_SECRET}` ({HF_SECRET} set in your shell to a token that was granted access)")
    if setup is not None:
        task["setup"] = setup
    task["run"] = run
    return task, notes + setup_notes + image_notes


def skypilot_yaml(task: dict, plan_sentence: str, chosen_note: str,
                  chosen_title: str = "GPUs in the planner's order (cheapest whole job first)",
                  notes: list[str] | tuple[str, ...] = ()) -> str:
    """The task as YAML under a comment header: how to launch it, the plan, the GPUs chosen and the notes."""
    secret = "".join(f" --secret {k}" for k in task.get("secrets") or {})
    header = (f"# SkyPilot task written by the GPU planner: launch with `sky launch task.yaml{secret}`.\n"
              f"# Plan: {' '.join(plan_sentence.split())[:300]}\n"
              f"# {chosen_title}: {chosen_note}\n"
              + "".join(f"# Note: {' '.join(n.split())}\n" for n in notes))
    return header + yaml.dump(task, Dumper=_TaskDumper, sort_keys=False, width=120)


class _TaskDumper(yaml.SafeDumper):
    """YAML as safe_dump writes it, with a multi-line command as a literal block (as a user would write it)."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None  # PyYAML falls back to quotes where a block can't hold the text
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_TaskDumper.add_representer(str, _text)


def accelerator_order(task: dict) -> str:
    """The task's candidates as 'H100:1, A100-80GB:1', in the order SkyPilot tries them (per node)."""
    return ", ".join(f"{k}:{v}" for r in task["resources"]["ordered"] for k, v in r["accelerators"].items())


def skypilot_text(ranking: list[Estimate], names: dict[str, str], spot: bool, link: str, plan_sentence: str) -> str:
    """The page's SkyPilot download: the task as YAML, or a one-line YAML comment saying why there is none."""
    try:
        task, notes = skypilot_task(ranking, names, spot, link)
    except ValueError as exc:
        return f"# {' '.join(str(exc).split())}\n"
    return skypilot_yaml(task, plan_sentence, accelerator_order(task), notes=notes)


def image_for(estimates: list[Estimate]) -> str:
    """A container image whose PyTorch build runs every candidate GPU (CUDA 12.8 once a Blackwell GPU is among them)."""
    sms = [e.gpu.compute_capability for e in estimates if e.gpu.compute_capability]
    return BLACKWELL_IMAGE if any(sm >= BLACKWELL_MIN_SM for sm in sms) else DEFAULT_IMAGE


# RunPod's REST API v2 (v1, rest.runpod.io/v1, is retired on 2026-12-01:
# https://docs.runpod.io/api-reference-v2/migrate-from-v1).
# Read 2026-11-27 from https://docs.runpod.io/api-reference-v2/pods/create-a-pod, whose schema is CreatePodRequest in
# https://api.runpod.io/v2/openapi.json (github.com/runpod/docs api-reference-v2/openapi.json, synced from RunPod's
# Frontdoor v2.9.0 on 2026-08-18): `name` and `image` required, `gpu: {id, count}` (ONE GPU type id, no priority
# list), `cloud` SECURE or COMMUNITY (default SECURE), `disk` (container disk, GB), `env` (an object of strings),
# `ports` ("22/tcp"), `startSsh`; unknown fields are refused (unevaluatedProperties: false). The body has no spot or
# interruptible field and the v2 catalog quotes secure and community prices only.
RUNPOD_PODS_URL = "https://api.runpod.io/v2/pods"
RUNPOD_DOCS = "https://docs.runpod.io/api-reference-v2/pods/create-a-pod"
RUNPOD_CLOUD = {"secure": "SECURE", "community": "COMMUNITY"}


def _offered(e: Estimate, tier: str | None, runpod_prices: Mapping[str, Mapping[str, Price | None]] | None) -> bool:
    """RunPod rents e's GPU in the tier's cloud: it has a RunPod price there (`runpod_prices`, RunPod's own table, or
    the catalog's listing). A pod asked for in a cloud that has no such GPU is never placed."""
    if tier is None:
        return True
    tiers = (runpod_prices or {}).get(e.gpu.id) or e.gpu.listed_prices()
    return tiers.get(tier) is not None


def runpod_gpu_ids(ranking: list[Estimate], tier: str | None = None,
                   runpod_prices: Mapping[str, Mapping[str, Price | None]] | None = None) -> list[str]:
    """RunPod GPU type ids of the NVIDIA GPUs that can run the plan, in the planner's order, each once (at most
    MAX_CANDIDATES); with `tier`, only GPUs RunPod rents in that tier's cloud (secure or community)."""
    ok = [e for e in ranking if e.feasible and _cuda_ready(e) and e.gpu.runpod and e.gpu.runpod.gpu_type_ids
          and _offered(e, tier, runpod_prices)]
    return list(dict.fromkeys(t for e in ok for t in e.gpu.runpod.gpu_type_ids))[:MAX_CANDIDATES]


def runpod_pod(ranking: list[Estimate], tier: str, image: str | None = None, env: dict[str, str] | None = None,
               runpod_prices: Mapping[str, Mapping[str, Price | None]] | None = None) -> tuple[dict, list[str]]:
    """A RunPod REST API v2 `POST /v2/pods` body (CreatePodRequest, see RUNPOD_DOCS) for the planner's first RunPod
    GPU, and the GPU type ids in the planner's order (that one first): v2 takes one GPU type per pod, so the others
    are what to put in `gpu.id` when RunPod has none of it free; only GPUs RunPod rents in the tier's cloud
    (`runpod_prices`: RunPod's price table, default the catalog's listing). ValueError for the spot tier (v2 creates no
    interruptible pod), a plan beyond one machine, or no NVIDIA GPU RunPod rents that can run the plan."""
    if tier not in RUNPOD_CLOUD:
        raise ValueError(f"RunPod's REST API v2 creates no {tier} (interruptible) pod: its create-pod body has only "
                         f"cloud SECURE or COMMUNITY ({RUNPOD_DOCS}); rank with --price-tier community or secure for "
                         "a RunPod request, or launch the SkyPilot task (use_spot)")
    type_ids = runpod_gpu_ids(ranking, tier, runpod_prices)
    if not type_ids:
        raise ValueError(f"no NVIDIA GPU that can run this plan is rented in RunPod's {tier} cloud: nothing to request")
    first = next(e for e in ranking if e.gpu.runpod and type_ids[0] in e.gpu.runpod.gpu_type_ids)
    if first.plan.gpus > MAX_GPUS_PER_NODE:
        raise ValueError(f"{first.plan.gpus} GPUs: a RunPod pod runs on one machine (at most {MAX_GPUS_PER_NODE} "
                         "GPUs); launch the SkyPilot task, which spreads the plan over nodes")
    ok = [e for e in ranking if e.gpu.runpod and set(e.gpu.runpod.gpu_type_ids) & set(type_ids)]
    pod = {"name": _slug(f"planner-{first.plan.model.id}"),
           "image": check_image(image) if image is not None else image_for(ok),
           "cloud": RUNPOD_CLOUD[tier], "gpu": {"id": type_ids[0], "count": first.plan.gpus},
           "disk": disk_gb(first), "ports": ["22/tcp"], "startSsh": True}
    if env:
        pod["env"] = {str(k): str(v) for k, v in env.items()}
    return pod, type_ids


def runpod_json(pod: dict) -> str:
    return json.dumps(pod, indent=2)


def runpod_curl(body_file: str) -> str:
    """The curl command that POSTs a saved body to RunPod's v2 pods endpoint (the key from $RUNPOD_API_KEY)."""
    return (f"curl -X POST {RUNPOD_PODS_URL} -H \"Authorization: Bearer $RUNPOD_API_KEY\" "
            f"-H 'Content-Type: application/json' --data @{shlex.quote(body_file)}")


# ---------------------------------------------------------------- calibrating a fleet

# The torch the bench is pinned to (pyproject.toml's `bench` extra; a test keeps the two equal). The task's setup
# keeps an image's torch of this version (any CUDA build: +cu126 and the like) instead of downloading it again.
BENCH_TORCH = "2.13.0"
BENCH_SETUP = f"""set -e
have=$(python -c 'import torch; print(torch.__version__)' 2>/dev/null || true)
if [ "${{have%%+*}}" = {BENCH_TORCH} ]; then
  python -m pip install --no-cache-dir -e .  # the image's torch is the pinned one: keep it
else
  python -m pip install --no-cache-dir -e ".[bench]"  # the planner with torch=={BENCH_TORCH}
fi
"""


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


# The script's shell functions. Every cluster is torn down however the script ends: by its bench job once the result
# is copied back (or the launch failed: SkyPilot keeps a cluster whose setup failed up, for debugging), else by the
# EXIT trap (Ctrl-C, kill, a failure), which stops the launches still running and runs `sky down -y` for every
# cluster started and not yet down. `-i IDLE --down` is the last guard: should the script die without its trap
# (kill -9, a closed laptop), SkyPilot tears a cluster down itself after IDLE idle minutes. A background job's
# commands ignore SIGINT (bash, without job control), so after a Ctrl-C the traps stop each `sky launch` with SIGTERM.
_FLEET_FUNCTIONS = r"""
down() {  # cluster: tear it down; a marker says so (the EXIT trap tries again without one)
  if sky down -y "$1" >>"$LOGS/$1.log" 2>&1; then
    touch "$STATE/$1"
  else
    echo "warning: could not tear down $1; run: sky down -y $1" >&2
  fi
}
bench() {  # cluster, task file, result file: launch, copy the result back, tear down (a background job)
  sky launch -y -c "$1" -i "$IDLE_MIN" --down "$2" >>"$LOGS/$1.log" 2>&1 &
  launch_pid=$!
  # the launch ignores SIGINT (a background job); this job may not (bash resets a trapped signal): either way the
  # launch is stopped, and the EXIT trap tears its cluster down
  trap 'kill -TERM "$launch_pid" 2>/dev/null; wait "$launch_pid"; exit 143' INT TERM
  local ok=0
  # sky launch writes an SSH config entry named for the cluster; its workdir there is ~/sky_workdir
  if wait "$launch_pid" && rsync -Pavz "$1:sky_workdir/$3" results/ >>"$LOGS/$1.log" 2>&1; then ok=1; fi
  trap '' INT TERM  # a teardown begun runs to its marker, else the EXIT trap would tear the cluster down again
  down "$1"
  if [ "$ok" = 1 ]; then echo "ok: results/$3"; else echo "failed: $1 (log: $LOGS/$1.log)" >&2; exit 1; fi
}
start() {  # cluster, task file, result file: the cluster counts as started before its launch begins
  started+=("$1")
  bench "$@" &
  pids+=("$!")
  echo "launching $1 (log: $LOGS/$1.log)"
}
teardown() {
  local rc=$?
  trap '' INT TERM  # a second Ctrl-C must not cut the teardown short
  if [ ${#pids[@]} -gt 0 ]; then kill -TERM "${pids[@]}" 2>/dev/null; fi
  wait
  local c
  for c in ${started[@]+"${started[@]}"}; do
    [ -e "$STATE/$c" ] || down "$c" &
  done
  wait
  rm -rf "$STATE"
  exit "$rc"
}
"""


def fleet_script(tasks: list[tuple[str, dict]], folder: str = ".", idle_min: int = DEFAULT_AUTOSTOP_MIN) -> str:
    """A bash script, run from the repository root (SkyPilot's workdir), that launches every bench task in `folder`
    at once, copies each result file into ./results and tears every cluster down, whether its launch or bench worked
    or not, and also after Ctrl-C or a kill (a cluster left up keeps billing). It exits 1 naming the clusters that
    failed, 130 after Ctrl-C. Each launch also carries `-i idle_min --down` (SkyPilot's autodown) in case the script
    dies without running its trap; `idle_min` must leave time to copy the result back (at least 1)."""
    if not 1 <= idle_min <= MAX_AUTOSTOP_MIN:
        raise ValueError(f"bench autostop: {idle_min} idle minutes is not between 1 and {MAX_AUTOSTOP_MIN:,} "
                         "(0 would tear a cluster down before its result is copied back)")
    logs = f"{folder}/logs"
    lines = ["#!/usr/bin/env bash",
             "# Written by `python -m planner launch --bench`: one bench per GPU type, all launched at once; results",
             "# in ./results, each cluster's log in " + logs + "; then upload the results all at once in the",
             "# planner's sidebar (5 · Calibration). Every cluster started here is torn down when the script ends,",
             "# Ctrl-C included.",
             "set -uo pipefail",
             f"IDLE_MIN={int(idle_min)}",
             f"LOGS={shlex.quote(logs)}",
             'mkdir -p results "$LOGS"',
             "STATE=$(mktemp -d)  # a file per cluster torn down",
             "started=()  # clusters whose launch began",
             "pids=()  # their bench jobs"]
    lines += _FLEET_FUNCTIONS.strip("\n").splitlines()
    lines += ["trap teardown EXIT", "trap 'exit 130' INT", "trap 'exit 143' TERM"]
    for gpu_id, task in tasks:
        cluster = task["name"]
        lines.append(f"start {shlex.quote(cluster)} {shlex.quote(f'{folder}/{cluster}.yaml')} "
                     f"{shlex.quote(f'bench-{gpu_id}.json')}")
    lines += ["failed=()",
              'for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${started[$i]}"); done',
              'if [ ${#failed[@]} -gt 0 ]; then echo "failed: ${failed[*]}" >&2; exit 1; fi']
    return "\n".join(lines) + "\n"
