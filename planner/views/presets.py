"""Seed-question presets (data/presets.yaml): each is a share link (query string) named for its question.

A preset is validated on load by the same decoder a hand-edited link goes through: any parameter the
decoder would warn about is an error naming the file, the preset and the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import parse_qs

from planner import DATA_DIR
from planner.base.schema import DataFileError, Record, load_yaml, unique_ids
from planner.views.plan_inputs import Inputs
from planner.views.share import decode

PRESETS_FILE = DATA_DIR / "presets.yaml"
FIELDS = ("id", "question", "seed", "link", "answer_hint", "assumptions")


@dataclass(frozen=True)
class Preset:
    id: str
    question: str  # the button label: the question the preset answers
    seed: str  # the seed document it comes from (shared/seeds/)
    link: str  # query string: the preset IS a share link
    answer_hint: str  # where on the page the answer is
    assumptions: str  # inputs the seed does not state, and the values chosen
    inputs: Inputs


def parse_link(text: str) -> dict[str, list[str]]:
    """A query string ('a=1&b=2', with or without '?') as the multi-dict the decoder takes."""
    return parse_qs(text.strip().lstrip("?"), keep_blank_values=True, strict_parsing=False)


def parse_preset(rec: Record) -> Preset:
    rec.check_keys(FIELDS)
    text = rec.text("link")
    params = parse_link(text)
    if not params:
        raise rec.fail("link", "expected query parameters like 'model=cfdna-gen&job=generate'")
    inputs, warnings = decode(params)
    if warnings:
        raise rec.fail("link", "; ".join(str(w) for w in warnings))
    return Preset(rec.text("id"), rec.text("question"), rec.text("seed"), text, rec.text("answer_hint"),
                  rec.text("assumptions"), inputs)


@lru_cache(maxsize=4)
def load_all(path: str | Path = PRESETS_FILE) -> tuple[tuple[Preset, ...], tuple[DataFileError, ...]]:
    """Every valid preset, and an error (file, preset, field) for each invalid one: the page shows the
    good ones and names the broken ones. Raises DataFileError when the file itself is unreadable."""
    good, bad = [], []
    for i, raw in enumerate(load_yaml(path, "presets")):
        try:
            good.append(parse_preset(Record.of(path, i, raw)))
        except DataFileError as exc:
            bad.append(exc)
    unique_ids(path, (p.id for p in good))
    return tuple(good), tuple(bad)


def load_presets(path: str | Path = PRESETS_FILE) -> tuple[Preset, ...]:
    """Every preset, validated; the first invalid one raises DataFileError naming file, preset and field."""
    good, bad = load_all(path)
    if bad:
        raise bad[0]
    return good
