"""SkyPilot's optimizer on the planner's time model; run by SkyPilot's own Python, never imported by the planner.

SkyPilot pins click and uvicorn below what the planner's app runs with, so it lives in an environment of its own;
`planner.clients.skypilot_optimizer` runs this file there (`python -I skypilot_runner.py REQUEST ANSWER`), with JSON
files both ways. It imports nothing but the standard library and sky (a Python without
SkyPilot exits 1 with Python's ImportError, which the client reports as such).

The request: {"task": a SkyPilot task config whose resources are `any_of` the candidates, "seconds": {accelerator
name: the planner's seconds for the whole job on it}, "clouds": null or the cloud names to keep}. Each candidate is
an accelerator name once (the planner picks one count per plan), so the name keys the time estimator.

What it does, with SkyPilot's public API: `Task.from_yaml_config`, `Task.set_time_estimator` (the planner's seconds,
where SkyPilot would otherwise assume one hour for every candidate), `Optimizer.optimize(minimize=COST)` over every
cloud and region SkyPilot has enabled (`sky check`), less the clouds not kept (`blocked_resources`). Once per
candidate (its cheapest offer for that GPU, or why none: SkyPilot reads a name its catalogs lack as one containing
it, so such a name counts as no offer), then once with the candidates offered (SkyPilot's pick).
The answer: {"sky_version", "enabled_clouds", "chosen": offer, "candidates": [{"accelerator", "seconds", "offer" or
"error"}]} or {"error", "message"}; an offer is cloud, region, zone, instance type, accelerators, spot, $/node-hour,
nodes and the whole job's cost (SkyPilot's own `get_cost(seconds)` per node times the nodes).
"""

import copy
import json
import sys

import sky
import sky.exceptions
from sky import check
from sky.clouds import cloud as sky_cloud


def _offer(resources, seconds: float, num_nodes: int) -> dict:
    return {"cloud": str(resources.cloud), "region": resources.region, "zone": resources.zone,
            "instance_type": resources.instance_type, "accelerators": dict(resources.accelerators or {}),
            "use_spot": bool(resources.use_spot), "usd_per_node_hour": resources.get_cost(3600.0),
            "num_nodes": num_nodes, "seconds": seconds, "cost_usd": resources.get_cost(seconds) * num_nodes}


def _estimator(seconds: dict):
    def estimate(resources) -> float:
        (name, _count), = resources.accelerators.items()
        if name not in seconds:  # a name SkyPilot's lists lack is read as one containing it ('A10' as 'A100-80GB')
            raise _ReadAs(name)
        return float(seconds[name])
    return estimate


def _optimize(config: dict, seconds: dict, blocked: list):
    """Optimize one task config; its best resources and the task (the optimizer sets task.best_resources)."""
    task = sky.Task.from_yaml_config(copy.deepcopy(config))
    task.set_time_estimator(_estimator(seconds))
    dag = sky.Dag()
    dag.add(task)
    sky.Optimizer.optimize(dag, minimize=sky.OptimizeTarget.COST, blocked_resources=blocked or None, quiet=True)
    return task.best_resources, task


class _ReadAs(Exception):
    """SkyPilot read a candidate's accelerator name as another (the estimator was asked for a name it wasn't given)."""


def _blocked(enabled: list, keep) -> list:
    """Resources that block every enabled cloud the request does not keep (SkyPilot's own `blocked_resources`)."""
    if keep is None:
        return []
    wanted = {c.lower() for c in keep}
    return [sky.Resources(infra=str(c)) for c in enabled if str(c).lower() not in wanted]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:600]


def run(request: dict) -> dict:
    config, seconds = request["task"], request["seconds"]
    enabled = check.get_cached_enabled_clouds_or_refresh(sky_cloud.CloudCapability.COMPUTE)
    blocked = _blocked(enabled, request.get("clouds"))
    num_nodes = int(config.get("num_nodes") or 1)
    answer = {"sky_version": sky.__version__, "enabled_clouds": sorted(str(c) for c in enabled), "candidates": []}
    offered = []
    for option in config["resources"]["any_of"]:
        one = copy.deepcopy(config)
        one["resources"] = {**{k: v for k, v in config["resources"].items() if k != "any_of"}, **option}
        (name, _count), = option["accelerators"].items()
        row = {"accelerator": name, "seconds": float(seconds[name])}
        try:
            best, _ = _optimize(one, {name: seconds[name]}, blocked)
        except _ReadAs as read_as:
            row["error"] = f"no offer under this name (SkyPilot reads it as {read_as})"
        except sky.exceptions.ResourcesUnavailableError:
            row["error"] = "no offer on the enabled clouds"
        except Exception as exc:  # SkyPilot's own refusal for this GPU
            row["error"] = f"{type(exc).__name__}: {_one_line(exc)}"
        else:
            row["offer"] = _offer(best, float(seconds[name]), num_nodes)
            offered.append(option)
        answer["candidates"].append(row)
    if not offered:
        return {**answer, "error": "ResourcesUnavailableError", "message": "none of the candidates is offered"}
    config = {**config, "resources": {**config["resources"], "any_of": offered}}
    best, _ = _optimize(config, seconds, blocked)
    (name, _count), = best.accelerators.items()
    answer["chosen"] = _offer(best, float(seconds[name]), num_nodes)
    return answer


def main(argv: list) -> int:
    request_path, answer_path = argv[1], argv[2]
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    try:
        answer = run(request)
    except Exception as exc:  # SkyPilot's refusal (no cloud enabled, no offer at all): its name and message
        answer = {"error": type(exc).__name__, "message": _one_line(exc)}
    with open(answer_path, "w", encoding="utf-8") as f:
        json.dump(answer, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
