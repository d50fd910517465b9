"""SkyPilot's optimizer on the planner's time model: what it is asked, and its pick beside the planner's ranking.

The planner's task (planner.views.launch.skypilot_task, every feasible candidate) goes to SkyPilot with its
candidates as `any_of` and, per candidate, the seconds the planner estimates for the whole job on that GPU; SkyPilot
prices each on every cloud and region it has enabled and picks the cheapest whole job. SkyPilot names a GPU per
cloud: its 'H100' is the SXM part on AWS, GCP, Azure, Lambda and Nebius but the PCIe card on RunPod
(data/skypilot.yaml), so a candidate's seconds are those of the card the planner ranked under that name.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from planner.clients.skypilot_optimizer import Offer, OptimizerResult, optimize
from planner.engine.estimate import Estimate
from planner.views.format import fmt_seconds, fmt_usd


def optimizer_inputs(task: dict, ranking: list[Estimate], names: dict[str, str]) -> tuple[dict, dict[str, float]]:
    """The task with its `ordered` candidates as `any_of` (SkyPilot's optimizer chooses among them by cost, where
    `ordered` would make it try them in turn) and the planner's seconds for the whole job per accelerator name: the
    first feasible GPU in the ranking under that name, the one the task's candidate stands for."""
    ask = copy.deepcopy(task)
    resources = ask["resources"]
    resources["any_of"] = resources.pop("ordered")
    wanted = {name for r in resources["any_of"] for name in r["accelerators"]}
    seconds: dict[str, float] = {}
    for e in ranking:
        name = names.get(e.gpu.id)
        if e.feasible and e.seconds is not None and name in wanted and name not in seconds:
            seconds[name] = float(e.seconds)
    return ask, seconds


def optimized_task(task: dict, result: OptimizerResult) -> dict:
    """The task with SkyPilot's cheapest offer per candidate as its `ordered` resources, cheapest whole job first
    (SkyPilot's pick first), each pinned to the cloud, region and instance type SkyPilot priced; candidates without
    an offer are left out."""
    out = copy.deepcopy(task)
    resources = out["resources"]
    options = resources.pop("any_of", None) or resources.pop("ordered")
    spot = {name: o.get("use_spot", False) for o in options for name in o["accelerators"]}
    offers = sorted((c.offer for c in result.candidates if c.offer is not None), key=lambda o: o.cost_usd)
    resources["ordered"] = [{"infra": _infra(o), "instance_type": o.instance_type,
                             "accelerators": {o.accelerator: o.count}, "use_spot": spot.get(o.accelerator, o.use_spot)}
                            for o in offers]
    return out


@dataclass(frozen=True)
class Optimized:
    """SkyPilot's answer (`result`), the task with its offers (`task`) and the two side by side (`report`)."""

    result: OptimizerResult
    task: dict
    report: str


def optimize_task(task: dict, ranking: list[Estimate], names: dict[str, str], tier: str,
                  clouds: list[str] | None = None, python: str | None = None) -> Optimized:
    """The Python entry: SkyPilot's optimizer on `task` (planner.views.launch.skypilot_task, best with
    max_candidates=None) and the ranking's seconds, over SkyPilot's enabled clouds (only `clouds` when given), with
    SkyPilot's Python `python` (default: planner.clients.skypilot_optimizer.find_python). ValueError saying why not."""
    ask, seconds = optimizer_inputs(task, ranking, names)
    result = optimize(ask, seconds, clouds, python)
    return Optimized(result, optimized_task(task, result), optimizer_report(ranking, names, result, tier))


def _infra(o: Offer) -> str:
    return "/".join(p for p in (o.cloud.lower(), o.region, o.zone) if p)


def _planner_row(e: Estimate, tier: str) -> str:
    cost = e.cost(tier)
    return (f"{fmt_seconds(e.seconds)} on {e.plan.gpus} x {e.gpu.name}, "
            + (f"{fmt_usd(cost)} at RunPod {tier}" if cost is not None else f"no RunPod {tier} price")
            + f", limited by {e.bound}")


def optimizer_report(ranking: list[Estimate], names: dict[str, str], result: OptimizerResult, tier: str) -> str:
    """SkyPilot's pick and, per candidate, its cheapest offer beside the planner's estimate (plain text)."""
    first = {}
    for e in ranking:
        name = names.get(e.gpu.id)
        if e.feasible and name and name not in first:
            first[name] = e
    c = result.chosen
    lines = [f"SkyPilot {result.sky_version} optimizer (minimize cost) over its enabled clouds "
             f"({', '.join(result.enabled_clouds) or 'none'}), with the planner's time per GPU:",
             f"  chosen: {c.accelerator}:{c.count} x {c.num_nodes} node(s) on {c.where()}"
             f"{' (spot)' if c.use_spot else ''}: {fmt_usd(c.usd_per_node_hour)}/node-hour x "
             f"{fmt_seconds(c.seconds)} = {fmt_usd(c.cost_usd)} for the whole job",
             "  per candidate (planner's order): the planner's estimate | SkyPilot's cheapest offer"]
    unoffered: dict[str, list[str]] = {}
    for row in result.candidates:
        if row.offer is None:
            unoffered.setdefault(row.error or "no offer", []).append(row.accelerator)
            continue
        e, o = first.get(row.accelerator), row.offer
        mine = _planner_row(e, tier) if e is not None else fmt_seconds(row.seconds)
        lines.append(f"  - {row.accelerator}: {mine} | {o.where()}: {fmt_usd(o.usd_per_node_hour)}/node-hour, "
                     f"{fmt_usd(o.cost_usd)} for the job")
    lines += [f"  - {why}: {', '.join(names_)}" for why, names_ in unoffered.items()]
    top = next((e for e in ranking if e.feasible), None)
    if top is not None and names.get(top.gpu.id) != c.accelerator:
        lines.append(f"  The planner ranks {top.gpu.name} first at RunPod {tier} prices; SkyPilot's prices on its "
                     f"enabled clouds make {c.accelerator} on {c.cloud} the cheaper whole job.")
    lines.append("  Seconds are the planner's for the card it ranks under each name; SkyPilot's 'H100' is the SXM "
                 "part on AWS, GCP, Azure, Lambda and Nebius (faster than RunPod's PCIe 'H100').")
    return "\n".join(lines)
