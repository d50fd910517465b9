"""Hand-off to a serving engine: the chosen deployment's launch command (vllm serve, python -m
sglang.launch_server, trtllm-serve, llama-server, from data/serving.yaml's templates) and a SkyPilot SkyServe service
(`sky serve up service.yaml`): the replicas the search found, a readiness probe on the engine's health path, one
replica's resources (its GPUs, the engine's port) and the command as its `run`.
"""

from __future__ import annotations

import shlex

import yaml

from planner.engine.deployment import Candidate
from planner.inputs.launch_names import load_launch_setup, load_skypilot_names
from planner.inputs.serving_runtimes import Schedulers
from planner.views.launch import HF_SECRET, setup_script

# A replica downloads the weights and captures CUDA graphs before /health answers: SkyServe waits this long before
# the first probe may fail (its own default, 1200 s, sky/serve/constants.py DEFAULT_INITIAL_DELAY_SECONDS; kept).
INITIAL_DELAY_SECONDS = 1200
KV_HEADROOM = 0.95  # llama.cpp's --ctx-size: the KV cache the model found, less a margin for its own buffers


def model_repo(model_id: str) -> str:
    """The Hugging Face repo of a catalog model where data/launch_setup.yaml names one, else the id as given (a
    user's `--model owner/name`)."""
    return load_launch_setup().gated_models.get(model_id, model_id)


def launch_command(c: Candidate, schedulers: Schedulers, model: str, max_model_len: int,
                   port: int | None = None) -> str:
    """The engine's command line for one replica of `c` (listening on `port`, the engine's own by default), every
    value quoted for a shell, with its KV-cache dtype's flags when the plan chose one (data/serving.yaml
    kv_cache_dtypes)."""
    prof = schedulers.get(c.sched.id)
    kv = int(c.steps.kv_tokens * KV_HEADROOM) if c.steps is not None else max_model_len
    values = {"model": shlex.quote(model), "tp": c.tp, "max_num_seqs": c.sched.max_num_seqs,
              "token_budget": c.sched.token_budget, "max_model_len": max_model_len,
              "memory_fraction": f"{c.sched.memory_fraction:g}", "port": port or prof.port,
              "kv_tokens": max(kv, max_model_len)}
    command = prof.launch.format(**values)
    return f"{command} {c.kv_flags}" if c.kv_flags else command


def service(c: Candidate, schedulers: Schedulers, model: str, model_id: str,
            max_model_len: int) -> tuple[dict, list[str]]:
    """A SkyServe service for `c` (a dict for yaml) and notes (what the user must supply or know)."""
    prof = schedulers.get(c.sched.id)
    names = load_skypilot_names()
    accel = names.get(c.gpu.id)
    notes = []
    if accel is None:
        notes.append(f"{c.gpu.name} has no SkyPilot name in data/skypilot.yaml: set resources.accelerators by hand")
        accel = c.gpu.id
    setup, setup_notes = setup_script(c.sched.id, load_launch_setup())
    notes += setup_notes
    task: dict = {"name": f"serve-{c.sched.id}-{c.gpu.id}".replace(".", "-")[:60],
                  "service": {"readiness_probe": {"path": prof.readiness_path,
                                                  "initial_delay_seconds": INITIAL_DELAY_SECONDS},
                              "replicas": c.replicas or 1},
                  "resources": {"accelerators": {accel: c.tp}, "ports": prof.port}}
    if setup:
        task["setup"] = setup
    else:
        notes.append(f"no pinned install for {c.sched.id} in data/launch_setup.yaml: add a setup or an image that "
                     "has it")
    task["run"] = launch_command(c, schedulers, model, max_model_len)
    if c.sched.id == "llama.cpp":
        notes.append(f"llama-server reads GGUF files: replace {model} with a GGUF repository of the model "
                     "(--hf-repo owner/name-GGUF, optionally :QUANT)")
    if load_launch_setup().gated(model_id):
        task["secrets"] = {HF_SECRET: None}
        notes.append(f"{model} is gated on Hugging Face: `sky serve up service.yaml --secret {HF_SECRET}`")
    return task, notes


def service_yaml(c: Candidate, schedulers: Schedulers, model: str, model_id: str, max_model_len: int,
                 header: str) -> str:
    """service() as YAML text under a comment header (each line of `header` commented)."""
    task, notes = service(c, schedulers, model, model_id, max_model_len)
    return yaml_text(task, notes, header)


def yaml_text(task: dict, notes: list[str], header: str) -> str:
    """A SkyPilot task as YAML under comment lines: the header's, then each note."""
    lines = [f"# {line}" for line in header.splitlines()] + [f"# note: {n}" for n in notes]
    return "\n".join(lines) + "\n" + yaml.safe_dump(task, sort_keys=False, width=100, allow_unicode=False)
