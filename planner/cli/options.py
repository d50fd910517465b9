"""The CLI's options: argparse types that check each value against the bounds the page uses, and the plan's options
generated from planner.views.plan_inputs.PLAN_FIELDS (one declaration per plan choice)."""

from __future__ import annotations

import argparse
import re

from planner.base.files import UserFileError, read_regular
from planner.base.safe_parse import parse_number
from planner.base.schema import UnknownNameError
from planner.inputs.catalog import MAX_STALE_DAYS
from planner.inputs.facts import load_facts
from planner.inputs.job_costs import LIMITS as JOB_COST_LIMITS
from planner.inputs.jobs import BOUNDS
from planner.inputs.own_gpu import MAX_YAML_BYTES, own_gpu_from_yaml
from planner.inputs.ownership import parse_owned
from planner.views import plan_inputs


class Parser(argparse.ArgumentParser):
    """argparse that never repeats a long user value whole in its error message (it quotes invalid choices), and
    takes options only by their full names: '--ou' is not '--out' (launch rebuilds the plan's command from the
    options it knows, so an abbreviation would slip past it)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        super().error(re.sub(r"'([^']{40})[^']{2,}'", r"'\1…'", message))


def bounded(name: str):
    """An argparse type for the job input `name`: a number within planner.inputs.jobs.BOUNDS, whole if it must be
    ('1.9 sequences' is refused, not rounded)."""
    bound = BOUNDS[name]

    def parse(text: str) -> float | int:
        try:
            return parse_number(text, bound.lo, bound.hi, bound.integer)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = name.replace("_", " ")  # argparse names the type in its message
    return parse


def number_in(lo: float, hi: float, what: str, integer: bool = False):
    """An argparse type for a finite number from lo to hi (inf, nan and 1e999 are refused, not passed on); with
    `integer`, a whole number (an int)."""
    def parse(text: str) -> float:
        try:
            value = parse_number(text, lo, hi, integer)
            return int(value) if integer else float(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = what  # argparse names the type in its message
    return parse


def key_value(limits: dict[str, tuple[float, float]]):
    """An argparse type for 'key=value' with a key of `limits` and a value within its bounds, e.g. pod_start_s=120
    (job-cost assumptions, data/job_costs.yaml) or usd_per_kwh=0.30 (ownership, data/ownership.yaml)."""
    def parse(text: str) -> tuple[str, float]:
        key, sep, value = text.partition("=")
        if not sep or key not in limits:
            raise argparse.ArgumentTypeError(f"expected key=value with a key among {', '.join(limits)}")
        lo, hi = limits[key]
        try:
            return key, float(parse_number(value, lo, hi, False))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{key}: {exc}") from None
    return parse


def _catalog_id(name: str) -> str:
    try:
        return load_facts().catalog.get(name).id
    except UnknownNameError as exc:
        raise ValueError(str(exc)) from None


def owned(text: str):
    """'rtx-a5000:3' (comma-separated, count 1 when left out, an optional :USD paid per card): the cards you own."""
    owned, bad = parse_owned(text, _catalog_id)
    if bad:
        raise argparse.ArgumentTypeError("; ".join(bad))
    return owned


def stale_days(text: str) -> int:
    """Days after which a price counts as stale: a whole number from 1 to MAX_STALE_DAYS."""
    try:
        return int(parse_number(text, 1, MAX_STALE_DAYS, True))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def names(text: str) -> tuple[str, ...]:
    """'epyc-9654, rtx-5090' -> ('epyc-9654', 'rtx-5090'): devices named in one argument."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected one or more GPU or CPU names, comma-separated")
    return names


def _gpus(text: str) -> int | tuple[str, ...]:
    """--gpus: a count (GPUs per job), or device names like --gpu (`--gpus amd-epyc-9654,rtx-5090`)."""
    if re.search(r"[a-df-z]", text, re.IGNORECASE):  # a name (a number has at most an exponent 'e')
        return names(text)
    return bounded("gpus")(text)


def _field_type(name: str):
    """An argparse type for a plan field: the link's parser (plan_inputs.SCALARS), its message kept."""
    parse = plan_inputs.SCALARS[name]

    def typed(text: str):
        try:
            return parse(text)
        except (ValueError, UnknownNameError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    typed.__name__ = plan_inputs.PLAN_FIELD[name].flag.lstrip("-")  # argparse names the type in its message
    return typed


# The CLI's own way of giving a field: a model's default input size, --compile for a runtime, devices by name
CLI_DEFAULTS = {"size": None, "rt": None}


YAML_SUFFIXES = (".yaml", ".yml")


def _my_gpu(text: str) -> str:
    """--my-gpu: the one-line description, or a path to a YAML description (planner.inputs.own_gpu)."""
    if not text.strip().lower().endswith(YAML_SUFFIXES):
        return _field_type("mygpu")(text)
    try:
        data = read_regular(text.strip(), MAX_YAML_BYTES, "GPU description").decode("utf-8")
        return own_gpu_from_yaml(data)
    except UnicodeDecodeError:
        raise argparse.ArgumentTypeError(f"{text.strip()}: not UTF-8 text") from None
    except (UserFileError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


CLI_TYPES = {"gpus": _gpus, "mygpu": _my_gpu}


def add_plan_args(p: argparse.ArgumentParser) -> None:
    """Every plan field of plan_inputs.PLAN_FIELDS as an option (defaults, bounds and choices from there), then the
    CLI's own: the model, devices, calibration and whole-job assumptions."""
    p.add_argument("--model", default=plan_inputs.DEFAULTS.model, help="preset id, a path to a model YAML or a "
                   "config.json, or a Hugging Face id (owner/name: its config.json is fetched and cached)")
    for f in plan_inputs.PLAN_FIELDS:
        default = CLI_DEFAULTS.get(f.name, getattr(plan_inputs.DEFAULTS, f.name))
        if isinstance(default, bool):
            p.add_argument(f.flag, dest=f.name, action="store_true", help=plan_inputs.field_help(f.name))
        else:
            shown = "" if default is None else f" (default: {default})"
            p.add_argument(f.flag, dest=f.name, type=CLI_TYPES.get(f.name) or _field_type(f.name), default=default,
                           metavar=f.flag.lstrip("-").upper().replace("-", "_"),
                           help=plan_inputs.field_help(f.name) + shown)
    p.add_argument("--compile", action="store_true", help="torch.compile with CUDA graphs (runtime torch-compile)")
    p.add_argument("--gpu", type=names, action="append", default=None, help="GPUs or CPUs to include, by id or "
                   "name, comma-separated or repeated (default: every GPU)")
    p.add_argument("--include-cpu", action="store_true", help="also rank the CPU devices of data/cpus.yaml (what a "
                   "CPU fallback costs); name one with --gpu to see it alone")
    p.add_argument("--job-cost", type=key_value(JOB_COST_LIMITS), action="append", default=None,
                   metavar="KEY=VALUE",
                   help="change a whole-job assumption of data/job_costs.yaml, e.g. pod_start_s=120 (repeatable)")
    p.add_argument("--calibration", action="append", default=None,
                   help="a benchmark result file from `python -m planner.bench` (repeatable: each for its own GPU)")
    p.add_argument("--calibration-cpu", default=None, metavar="CPU",
                   help="the catalog CPU (data/cpus.yaml) a CPU bench file was measured on; its fit then calibrates "
                        "that CPU's row (default: the CPU whose name the bench recorded, else only the measured "
                        "machine itself)")


def concurrencies(text: str) -> tuple[int, ...]:
    bound = BOUNDS["batch"]
    try:
        values = tuple(int(parse_number(x, bound.lo, bound.hi, True)) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not values or len(values) > 32:
        raise argparse.ArgumentTypeError("give 1 to 32 comma-separated concurrencies, like 1,8,64")
    return values


def milliseconds(text: str) -> float:
    try:
        return float(parse_number(text, 0.001, 3.6e6, False)) / 1e3
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
