"""What a SkyPilot task names and installs: SkyPilot's accelerator name for each catalog GPU and the names a cloud
with multi-node clusters offers (data/skypilot.yaml), validated against the catalog; the pinned setup per runtime and
the gated models (data/launch_setup.yaml)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.safe_parse import shown
from planner.base.schema import DataFileError, Record, load_sections, unique_ids
from planner.inputs.catalog import Catalog, load_catalog
from planner.inputs.models import load_models
from planner.inputs.runtimes import load_runtimes

SKYPILOT_FILE = DATA_DIR / "skypilot.yaml"


@lru_cache(maxsize=4)
def load_skypilot_names(path: str | Path = SKYPILOT_FILE, catalog: Catalog | None = None) -> dict[str, str]:
    """catalog GPU id -> SkyPilot accelerator name; DataFileError naming file, record and field."""
    catalog = catalog or load_catalog()
    ids = set(catalog.ids())
    out: dict[str, str] = {}
    records = load_sections(path, ("accelerators",), dated=True)["accelerators"]
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "name"))
        gpu_id = rec.text("id")
        if gpu_id not in ids:
            raise rec.fail("id", "not a GPU id in data/gpus.yaml")
        out[gpu_id] = rec.text("name", max_len=40)
    unique_ids(path, (r.get("id") for r in records))
    if not out:
        raise DataFileError(path, "-", "accelerators", "no GPU mapped")
    return out


@lru_cache(maxsize=4)
def load_multi_node_names(path: str | Path = SKYPILOT_FILE) -> frozenset[str]:
    """The accelerator names that some cloud running multi-node clusters offers (data/skypilot.yaml `multi_node`:
    each name with those clouds); a name not listed is rented only where a cluster is one node (RunPod, Vast...)."""
    names = set(load_skypilot_names(path).values())
    out = set()
    for i, raw in enumerate(load_sections(path, ("multi_node",), dated=True)["multi_node"]):
        rec = Record(str(path), f"multi_node[{i}]", raw) if isinstance(raw, dict) else Record.of(path, i, raw)
        rec.check_keys(("name", "clouds"))
        name = rec.text("name", max_len=40)
        if name not in names:
            raise rec.fail("name", "not an accelerator name of this file's `accelerators`")
        if not rec.strings("clouds"):
            raise rec.fail("clouds", "expected at least one cloud")
        out.add(name)
    return frozenset(out)


# ---------------------------------------------------------------- what a task installs and asks for

SETUP_FILE = DATA_DIR / "launch_setup.yaml"
# What a pinned install may name: each piece lands in a shell command (quoted there too), so a data file can't
# smuggle anything else into it.
_PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # a PyPI project name (PEP 508)
_VERSION = re.compile(r"[0-9][0-9A-Za-z.+!-]{0,39}")  # a PEP 440 version
_APT = re.compile(r"[a-z0-9][a-z0-9.+-]{0,99}")  # a Debian package name
_ENV = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")


@dataclass(frozen=True)
class Pin:
    """One package at one version, where that version was read and when."""
    package: str
    version: str
    source: str
    date: date


@dataclass(frozen=True)
class RuntimeSetup:
    """What installs a runtime on the task's image: pinned pip packages, Debian packages, build variables; or,
    where there is no pinned install (`manual`), what to do instead."""
    runtime_id: str
    pins: tuple[Pin, ...]
    apt: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    needs_nvcc: bool = False
    manual: str | None = None


@dataclass(frozen=True)
class LaunchSetup:
    runtimes: dict[str, RuntimeSetup]
    gated_models: dict[str, str]  # catalog model id -> its Hugging Face repo
    gated_owners: frozenset[str]  # Hub owners whose every repo is gated

    def gated(self, model_id: str) -> bool:
        """Whether downloading the model needs a Hugging Face token: a listed model, or a Hub id of a listed owner."""
        return model_id in self.gated_models or model_id.split("/", 1)[0] in self.gated_owners and "/" in model_id


def _matching(rec: Record, field: str, pattern: re.Pattern, what: str, value: str | None = None) -> str:
    value = rec.text(field, max_len=100) if value is None else value
    if not pattern.fullmatch(value):
        raise rec.fail(field, f"{shown(value)} is not {what}")
    return value


def _url(rec: Record, field: str) -> str:
    value = rec.text(field, max_len=600)
    if not value.startswith("https://"):
        raise rec.fail(field, "expected the https:// address the figure was read from")
    return value


def _runtime_setup(rec: Record, runtime_ids: set[str]) -> RuntimeSetup:
    rec.check_keys(("id", "source", "pins", "apt", "env", "needs_nvcc", "manual"))
    rid = rec.text("id")
    if rid not in runtime_ids:
        raise rec.fail("id", f"not a runtime id in data/runtimes.yaml ({', '.join(sorted(runtime_ids))})")
    rec.text("source", max_len=600)
    manual = rec.text("manual", required=False, max_len=300)
    if manual is not None:
        if rec.raw("pins", required=False) is not None:
            raise rec.fail("pins", "a runtime with `manual` has no pinned install: give one or the other")
        return RuntimeSetup(rid, (), manual=manual)
    pins = []
    for p in rec.records("pins", 20):
        p.check_keys(("package", "version", "source", "date"))
        pins.append(Pin(_matching(p, "package", _PACKAGE, "a PyPI project name"),
                        _matching(p, "version", _VERSION, "a version like 1.2.3"), _url(p, "source"), p.day("date")))
    apt = tuple(_matching(rec, f"apt[{i}]", _APT, "a Debian package name", v) for i, v in
                enumerate(rec.strings("apt", required=False)))
    env_rec = rec.child("env", required=False)
    env = ()
    if env_rec is not None:
        env = tuple((_matching(env_rec, str(k), _ENV, "an environment variable name", str(k)),
                     env_rec.text(str(k), max_len=200)) for k in env_rec.data)
    return RuntimeSetup(rid, tuple(pins), apt, env, rec.flag("needs_nvcc", default=False))


@lru_cache(maxsize=4)
def load_launch_setup(path: str | Path = SETUP_FILE) -> LaunchSetup:
    """data/launch_setup.yaml: the pinned setup per runtime and the gated models; DataFileError naming file, record
    and field."""
    sections = load_sections(path, ("runtimes", "gated_models", "gated_owners"), dated=True)
    runtime_ids = {r.id for r in load_runtimes().runtimes}
    runtimes = {}
    for i, raw in enumerate(sections["runtimes"]):
        setup = _runtime_setup(Record.of(path, i, raw), runtime_ids)
        runtimes[setup.runtime_id] = setup
    unique_ids(path, (r.get("id") for r in sections["runtimes"]))
    model_ids = {m.id for m in load_models().models}
    gated = {}
    for i, raw in enumerate(sections["gated_models"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "hf_repo", "source", "date"))
        mid = rec.text("id")
        if mid not in model_ids:
            raise rec.fail("id", "not a model id in data/models.yaml")
        gated[mid] = rec.text("hf_repo", max_len=200)
        rec.text("source", max_len=600)
        rec.day("date")
    owners = set()
    for i, raw in enumerate(sections["gated_owners"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "source", "date"))
        owners.add(rec.text("id", max_len=100))
        rec.text("source", max_len=600)
        rec.day("date")
    return LaunchSetup(runtimes, gated, frozenset(owners))
