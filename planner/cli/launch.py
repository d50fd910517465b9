"""`planner launch`: the plan as a SkyPilot task or a RunPod (REST API v2) pod request, and a bench task per
candidate GPU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.base.files import write_atomic
from planner.cli.plans import device_names, facts_of, job_overheads, plan_from_args
from planner.engine.estimate import estimate_all
from planner.engine.plan import Plan
from planner.engine.ranking import rank
from planner.inputs.launch_names import load_skypilot_names
from planner.inputs.price_snapshot import snapshot_table
from planner.views import launch, launch_optimize


def _plan_words(plan: Plan, providers: str) -> str:
    w = plan.workload
    if providers != "runpod":
        return (f"{w.kind} {w.items:,} items with {plan.model.name} in {plan.precision}, {plan.runtime}, "
                f"{plan.gpus} GPU(s) per job, the cheapest {plan.price_tier} prices of {providers}")
    return (f"{w.kind} {w.items:,} items with {plan.model.name} in {plan.precision}, {plan.runtime}, "
            f"{plan.gpus} GPU(s) per job, RunPod {plan.price_tier} prices")


def cmd_launch(a: argparse.Namespace) -> int:
    """The plan as a SkyPilot task (YAML) or a RunPod pod request (JSON), GPUs in the planner's order."""
    if a.optimize and (a.bench or a.format == "runpod"):
        raise ValueError("--optimize picks among SkyPilot's clouds: it makes a SkyPilot task, not --bench or "
                         "--format runpod")
    if (a.dryrun or a.clouds or a.skypilot_python) and not a.optimize:
        raise ValueError("--dryrun, --clouds and --skypilot-python go with --optimize")
    plan, facts = plan_from_args(a), facts_of(a)
    # the order `planner estimate` and the page show: by what the whole job bills
    ranking = rank(estimate_all(plan, facts, gpu_names=device_names(a), include_cpus=a.include_cpu),
                   job_overheads(a, facts)).estimates
    if a.bench:
        return _launch_bench(ranking, a.out or "bench-fleet", a.autostop)
    if a.format == "runpod":
        command, notes = launch.plan_command(a.argv)
        # RunPod's own prices say which cloud rents which GPU (the ranking's may be another provider's)
        pod, type_ids = launch.runpod_pod(ranking, plan.price_tier, a.image, env={"PLANNER_PLAN": command},
                                          runpod_prices=snapshot_table(facts.catalog).prices)
        text = launch.runpod_json(pod)
        notes.append(f"create it with RunPod's REST API v2: {launch.runpod_curl(a.out or 'pod.json')}"
                     + ("" if a.out else " (save this JSON as pod.json)"))
        if len(type_ids) > 1:
            notes.append("a v2 pod takes one GPU type: if RunPod has none free, set gpu.id to the next in the "
                         f"planner's order: {', '.join(type_ids[1:])}")
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    else:
        command, notes = launch.plan_command(a.argv)
        workdir = a.workdir if a.workdir is not None else launch.default_workdir(a.run, Path.cwd())
        if workdir is not None and not Path(workdir).expanduser().is_dir():
            raise ValueError(f"--workdir {workdir}: no such folder here (SkyPilot copies it to the node)")
        names = load_skypilot_names()
        task, task_notes = launch.skypilot_task(ranking, names, plan.price_tier == "spot", command, a.run,
                                                workdir=workdir, image=a.image, autostop_min=a.autostop,
                                                max_candidates=None if a.optimize else launch.MAX_CANDIDATES)
        notes += task_notes
        title = "GPUs in the planner's order (cheapest whole job first)"
        if a.optimize:
            task = _optimize(a, ranking, names, task, plan.price_tier)
            if task is None:
                return 0
            title = "SkyPilot's offers, cheapest whole job first (its optimizer on the planner's time per GPU)"
        text = launch.skypilot_yaml(task, _plan_words(plan, a.prov or "runpod"), launch.accelerator_order(task), title,
                                    notes=notes)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    if a.out:
        write_atomic(a.out, text)
        print(f"wrote {a.out}", file=sys.stderr)
    else:
        print(text)
    return 0


def _clouds(text: str | None) -> list[str] | None:
    """--clouds as a list of names; ValueError for an empty or odd one."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")]
    if not all(n.replace("-", "").isalnum() and len(n) <= 40 for n in names) or len(names) > 40:
        raise ValueError(f"--clouds {text[:80]!r}: give SkyPilot cloud names separated by commas, e.g. lambda,runpod")
    return names


def _optimize(a: argparse.Namespace, ranking, names: dict[str, str], task: dict, tier: str) -> dict | None:
    """SkyPilot's optimizer on the planner's seconds: its report on stdout (--dryrun, then None) or on stderr, and
    the task with SkyPilot's offers as its candidates."""
    done = launch_optimize.optimize_task(task, ranking, names, tier, _clouds(a.clouds), a.skypilot_python)
    if a.dryrun:
        print(done.report)
        return None
    print(done.report, file=sys.stderr)
    return done.task


def _launch_bench(ranking, folder: str, autostop: int | None) -> int:
    """A bench task per candidate GPU and a script that runs them all at once and collects the result files. Each
    cluster keeps SkyPilot's idle autodown (`autostop` minutes; the default for 0 or --no-autostop, which would lose a
    result or leave a cluster billing should the script die)."""
    tasks = launch.bench_tasks(ranking, load_skypilot_names())
    if not tasks:
        raise ValueError("no NVIDIA GPU that can run this plan has a SkyPilot name: nothing to bench")
    idle = autostop or launch.DEFAULT_AUTOSTOP_MIN
    if autostop != idle:
        print(f"note: bench clusters keep autodown after {idle} idle minutes (--autostop 0 or --no-autostop would "
              "lose the result or leave a cluster billing if run_fleet.sh is killed)", file=sys.stderr)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for _, task in tasks:
        gpu = ", ".join(f"{k}:{v}" for k, v in task["resources"]["accelerators"].items())
        write_atomic(out / f"{task['name']}.yaml",
                     launch.skypilot_yaml(task, "python -m planner.bench (calibrate this GPU type)", gpu, "GPU"))
    write_atomic(out / "run_fleet.sh", launch.fleet_script(tasks, folder, idle))
    print(f"wrote {len(tasks)} bench tasks and run_fleet.sh to {out}/ (run it from the repository root: it launches "
          "them all at once and tears every cluster down when it ends, Ctrl-C included)", file=sys.stderr)
    return 0
