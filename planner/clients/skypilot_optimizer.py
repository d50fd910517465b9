"""SkyPilot's optimizer on the planner's time model: the planner's candidates and seconds in, SkyPilot's pick out.

SkyPilot ranks the offers of every cloud and region it has enabled by cost, but without a time model it assumes one
hour for every candidate; the planner knows how long the job takes on each GPU. SkyPilot can't be installed beside
the planner's app (it pins click<8.2 and uvicorn<0.36), so this module runs `skypilot_runner.py` with SkyPilot's own
Python (`--skypilot-python`, $PLANNER_SKYPILOT_PYTHON, or the interpreter of the `sky` command on PATH) and reads
its answer, a JSON file. Whatever fails (no SkyPilot, no cloud enabled, no offer, a timeout) is a ValueError in the
planner's words, with SkyPilot's own message where it gave one (controls removed, cut to one line).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from planner.base.safe_parse import ParseError, clean_text, load_json_text

RUNNER = Path(__file__).with_name("skypilot_runner.py")
PYTHON_ENV = "PLANNER_SKYPILOT_PYTHON"
TIMEOUT_S = 300.0  # SkyPilot reads each enabled cloud's catalog once (a few seconds each, more on first download)
MAX_ANSWER_BYTES = 1_000_000  # a few kB per candidate
MAX_MESSAGE_CHARS = 400
INSTALL_HINT = ("install SkyPilot in an environment of its own (python -m venv ~/.venv-sky && ~/.venv-sky/bin/pip "
                "install 'skypilot[aws,gcp,lambda,runpod]'; `sky check` enables the clouds you have accounts with), "
                f"then pass --skypilot-python ~/.venv-sky/bin/python or set ${PYTHON_ENV}")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass(frozen=True)
class Offer:
    """One SkyPilot offer for the job: where, what, and what the whole job costs there (SkyPilot's prices, the
    planner's seconds): cost_usd = usd_per_node_hour x seconds / 3600 x num_nodes."""

    cloud: str
    region: str | None
    zone: str | None
    instance_type: str | None
    accelerator: str
    count: int
    use_spot: bool
    usd_per_node_hour: float
    num_nodes: int
    seconds: float
    cost_usd: float

    def where(self) -> str:
        """'RunPod CA (1x_A100-80GB_SECURE)'."""
        place = " ".join(p for p in (self.cloud, self.zone or self.region) if p)
        return f"{place} ({self.instance_type})" if self.instance_type else place


@dataclass(frozen=True)
class CandidateOffer:
    """SkyPilot's cheapest offer for one candidate GPU, or why it has none (its own message)."""

    accelerator: str
    seconds: float
    offer: Offer | None
    error: str | None


@dataclass(frozen=True)
class OptimizerResult:
    sky_version: str
    enabled_clouds: tuple[str, ...]
    chosen: Offer
    candidates: tuple[CandidateOffer, ...]


def _shebang_python(command: str) -> Path | None:
    """The interpreter a console script (`sky`) starts with, from its #! line; None if it has none."""
    try:
        with open(command, "rb") as f:
            first = f.readline(1000).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    return Path(words[0]) if words and Path(words[0]).is_absolute() and "env" not in Path(words[0]).name else None


def find_python(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """SkyPilot's Python: `explicit`, else $PLANNER_SKYPILOT_PYTHON, else the interpreter of `sky` on PATH.
    ValueError with how to install SkyPilot when none is found."""
    environ = os.environ if environ is None else environ
    given = explicit or environ.get(PYTHON_ENV, "").strip() or None
    if given is not None:
        path = Path(given).expanduser()
        if not path.is_file():
            raise ValueError(f"SkyPilot's Python {clean_text(str(path))[:200]} is not a file: {INSTALL_HINT}")
        return path
    sky = shutil.which("sky", path=environ.get("PATH"))
    found = _shebang_python(sky) if sky else None
    if found is None or not found.is_file():
        raise ValueError(f"SkyPilot is not installed where the planner can find it: {INSTALL_HINT}")
    return found


def _message(text: str) -> str:
    """SkyPilot's text as one printable line, cut to MAX_MESSAGE_CHARS."""
    return " ".join(clean_text(_ANSI.sub("", text)).split())[:MAX_MESSAGE_CHARS]


def _why(answer: dict) -> str:
    kind, said = str(answer.get("error")), _message(str(answer.get("message", "")))
    if kind == "NoCloudAccessError":
        return f"SkyPilot has no cloud enabled: run `sky check` (SkyPilot said: {said})"
    if kind == "ResourcesUnavailableError":
        return f"no enabled cloud offers any of the candidate GPUs (SkyPilot said: {said})"
    return f"SkyPilot's optimizer failed ({_message(kind)}: {said})"


def _offer(raw: dict) -> Offer:
    (name, count), = raw["accelerators"].items()
    return Offer(str(raw["cloud"]), raw["region"] and str(raw["region"]), raw["zone"] and str(raw["zone"]),
                 raw["instance_type"] and str(raw["instance_type"]), str(name), int(count), bool(raw["use_spot"]),
                 float(raw["usd_per_node_hour"]), int(raw["num_nodes"]), float(raw["seconds"]),
                 float(raw["cost_usd"]))


def read_answer(text: str) -> OptimizerResult:
    """The runner's answer file as a result; ValueError naming what is wrong (a refusal or an unreadable answer)."""
    try:
        answer = load_json_text(text, "SkyPilot's answer", MAX_ANSWER_BYTES)
    except (ParseError, json.JSONDecodeError) as exc:
        raise ValueError(f"SkyPilot's optimizer gave an unreadable answer ({_message(str(exc))})") from None
    if not isinstance(answer, dict):
        raise ValueError("SkyPilot's optimizer gave an unreadable answer (not an object)")
    if "error" in answer:
        raise ValueError(_why(answer))
    try:
        rows = tuple(CandidateOffer(str(c["accelerator"]), float(c["seconds"]),
                                    _offer(c["offer"]) if c.get("offer") else None,
                                    _message(str(c["error"])) if c.get("error") else None)
                     for c in answer["candidates"])
        return OptimizerResult(_message(str(answer["sky_version"])),
                               tuple(_message(str(c)) for c in answer["enabled_clouds"]), _offer(answer["chosen"]),
                               rows)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"SkyPilot's optimizer gave an unreadable answer (field {_message(str(exc))})") from None


def optimize(task: dict, seconds: Mapping[str, float], clouds: list[str] | None = None, python: str | None = None,
             timeout_s: float = TIMEOUT_S, environ: Mapping[str, str] | None = None) -> OptimizerResult:
    """Run SkyPilot's optimizer (minimize cost) on `task` (a task config whose resources are `any_of` the
    candidates) with `seconds` (accelerator name -> the planner's seconds for the whole job) as its time estimator,
    over the clouds SkyPilot has enabled (only `clouds` when given). ValueError saying why when it can't."""
    environ = dict(os.environ if environ is None else environ)
    exe = find_python(python, environ)
    environ["SKYPILOT_DISABLE_USAGE_COLLECTION"] = "1"  # nothing leaves this machine but what SkyPilot needs
    request = {"task": task, "seconds": dict(seconds), "clouds": clouds}
    with tempfile.TemporaryDirectory(prefix="planner-sky-") as tmp:
        ask, answer, runner = (Path(tmp) / n for n in ("request.json", "answer.json", RUNNER.name))
        ask.write_text(json.dumps(request), encoding="utf-8")
        # a copy, run alone: beside it here are modules named like the standard library's (http.py), and Pythons
        # before 3.11 put a script's folder first on sys.path even with -I
        shutil.copyfile(RUNNER, runner)
        try:
            done = subprocess.run([str(exe), "-I", str(runner), str(ask), str(answer)], env=environ,
                                  capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ValueError(f"SkyPilot's optimizer gave no answer in {timeout_s:g} s") from None
        except OSError as exc:
            raise ValueError(f"could not start SkyPilot's Python {clean_text(str(exe))[:200]} "
                             f"({exc.strerror or type(exc).__name__}): {INSTALL_HINT}") from None
        if not answer.is_file():
            tail = _message(done.stderr[-2000:])
            if "No module named 'sky'" in done.stderr:
                raise ValueError(f"{clean_text(str(exe))[:200]} has no SkyPilot: {INSTALL_HINT}")
            raise ValueError(f"SkyPilot's optimizer exited {done.returncode} without an answer ({tail})")
        return read_answer(answer.read_text(encoding="utf-8", errors="replace")[:MAX_ANSWER_BYTES + 1])
