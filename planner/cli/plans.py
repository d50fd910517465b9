"""The plan, devices, calibrations and whole-job assumptions that a command's options describe, built as the page
builds them."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from planner.calibration import fit as calibration
from planner.clients import hf_hub
from planner.engine.plan import Plan
from planner.inputs import cloud_prices
from planner.inputs.facts import Facts, facts_with_own_gpu
from planner.inputs.job_costs import load_job_costs, with_values
from planner.inputs.price_snapshot import utc_today
from planner.inputs.models import ModelProfile, load_model_file, load_models
from planner.views import plan_inputs


def resolve_model(name: str) -> ModelProfile:
    """A preset id or name, a model file (YAML profile or config.json), or a Hugging Face id (owner/name)."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return load_model_file(path)
    if hf_hub.is_repo_id(name):
        model, skipped = hf_hub.model_with_cross_check(name)
        for line in (model.cross_check, skipped):
            if line:
                print(f"{name}: {line}", file=sys.stderr)
        return model
    return load_models().get(name)


def plan_from_args(a: argparse.Namespace) -> Plan:
    """The plan the options describe, built as the page builds it (plan_inputs.to_plan)."""
    model = resolve_model(a.model)
    given = {f.name: getattr(a, f.name) for f in plan_inputs.PLAN_FIELDS}
    given.update(size=a.size or plan_inputs.default_size(model), gpus=a.gpus if isinstance(a.gpus, int) else 1,
                 rt=a.rt or ("torch-compile" if a.compile else plan_inputs.DEFAULTS.rt))
    return plan_inputs.to_plan(replace(plan_inputs.DEFAULTS, **given), model)


def device_names(a: argparse.Namespace) -> tuple[str, ...] | None:
    """The devices --gpu (and --gpus NAMES) name, in order, each once; None = the default selection."""
    given = [n for group in (a.gpu or ()) for n in group] + ([] if isinstance(a.gpus, int) else list(a.gpus))
    return tuple(dict.fromkeys(given)) or None


def load_calibrations(a: argparse.Namespace):
    """The --calibration files fitted (a CPU bench for --calibration-cpu's row), as one Fleet; None without any."""
    if not a.calibration:
        return None
    return calibration.Fleet(tuple(calibration.load_calibration(f, a.calibration_cpu) for f in a.calibration))


def job_overheads(a: argparse.Namespace, facts):
    """The whole job's assumptions (data/job_costs.yaml) with the user's --job-cost changes."""
    return with_values(load_job_costs(runtime_ids=tuple(r.id for r in facts.runtimes.runtimes)), dict(a.job_cost or ()))


def facts_of(a: argparse.Namespace) -> Facts:
    """The facts a command ranks on: the committed ones, with --my-gpu's GPU among them, priced by the --providers
    the user rents from."""
    facts = facts_with_own_gpu(getattr(a, "mygpu", "") or "", utc_today())
    chosen = tuple((getattr(a, "prov", None) or cloud_prices.RUNPOD).split(","))
    if chosen == (cloud_prices.RUNPOD,):
        return facts
    gpus = a.gpus if isinstance(getattr(a, "gpus", None), int) else 1
    return replace(facts, prices=cloud_prices.with_providers(facts.prices, cloud_prices.load_cloud_prices(
        facts.catalog), chosen, gpus))
