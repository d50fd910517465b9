"""Validation helpers for data files: every error names the file, the record and the field."""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from collections.abc import Iterable, Mapping

import yaml

from planner.base.files import UserFileError, read_regular
from planner.base.safe_parse import MAX_TEXT_BYTES, ParseError, TextError, check_text_values, load_yaml_text, shown


class DataFileError(ValueError):
    """A data file is malformed; the message names file, record and field."""

    def __init__(self, path: str | Path, record: str, field: str, problem: str):
        self.path, self.record, self.field, self.problem = str(path), record, field, problem
        super().__init__(f"{path}: record {record}, field '{field}': {problem}")


class UnknownNameError(KeyError):
    """A name that matches nothing in a catalog; carries 'did you mean' suggestions."""

    def __init__(self, kind: str, name: str, suggestions: Iterable[str]):
        self.kind, self.name, self.suggestions = kind, name, tuple(suggestions)
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"unknown {kind} {shown(name)}{hint}")

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class AmbiguousNameError(UnknownNameError):
    """A name that matches several entries (a family name like 'A100'); lists every one of them."""

    def __init__(self, kind: str, name: str, matches: Iterable[str]):
        self.kind, self.name, self.suggestions = kind, name, tuple(matches)
        KeyError.__init__(self, f"{shown(name)} matches {len(self.suggestions)} {kind}s: "
                                f"{', '.join(self.suggestions)}; name one of them")


# Words people add to a GPU or model name that never tell two entries apart.
MAX_NOTE_CHARS = 600  # a data file's note that the page shows beside a figure: a sentence or two
GENERIC_NAME_TOKENS = frozenset({"nvidia", "geforce", "tesla", "amd", "instinct", "rtx", "radeon", "the", "gpu"})


def name_tokens(text: str) -> frozenset[str]:
    """'NVIDIA GeForce RTX 4090 24GB' -> {'nvidia', 'geforce', 'rtx', '4090', '24gb'}."""
    return frozenset(re.findall(r"[a-z0-9]+", str(text).lower()))


def resolve_name(query: str, entries: Iterable[tuple[str, Iterable[str]]], kind: str) -> str:
    """The key of the entry that `query` names, from (key, names) pairs.

    An exact name (ignoring case, spaces, hyphens and dots) wins. Otherwise the entries whose names hold every word
    of the query are the candidates ('a100 80gb' -> both A100 80GB cards): one candidate resolves; among several,
    the one whose key adds no word of its own (beyond vendor words) resolves ('3090' -> rtx-3090, not rtx-3090-ti);
    else AmbiguousNameError lists them all. Nothing matches: UnknownNameError with the closest names.
    """
    entries = [(key, tuple(names)) for key, names in entries]
    wanted = normalize_name(query)
    for key, names in entries:
        if wanted in {normalize_name(n) for n in (key, *names)}:
            return key
    words = name_tokens(query) - GENERIC_NAME_TOKENS
    if words:
        hits = [key for key, names in entries if words <= frozenset().union(*(name_tokens(n) for n in (key, *names)))]
        if len(hits) == 1:
            return hits[0]
        plain = [key for key in hits if name_tokens(key) - GENERIC_NAME_TOKENS <= words]
        if len(plain) == 1:
            return plain[0]
        if hits:
            raise AmbiguousNameError(kind, query, hits)
    raise UnknownNameError(kind, query, suggest(query, [n for key, names in entries for n in (key, *names)]))


def normalize_name(name: str) -> str:
    """Lower-case and drop spaces, hyphens, underscores and dots, so 'RTX 4090' == 'rtx-4090'."""
    return re.sub(r"[\s\-_.()/]+", "", str(name).lower())


def suggest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Close matches for an unknown name, compared in normalized form."""
    by_norm: dict[str, str] = {}
    for c in candidates:
        by_norm.setdefault(normalize_name(c), c)
    hits = difflib.get_close_matches(normalize_name(name), list(by_norm), n=n, cutoff=0.5)
    return [by_norm[h] for h in hits]


def parse_yaml(text: str, path: str | Path, max_bytes: int = MAX_TEXT_BYTES) -> Any:
    """YAML text from `path` (a file or an upload's name), parsed with the safe caps and every string checked
    (safe_parse.check_text_values); DataFileError otherwise."""
    try:
        doc = load_yaml_text(text, str(path), max_bytes)
        check_text_values(doc, str(path))
        return doc
    except TextError as exc:
        raise DataFileError(path, "-", exc.field, exc.problem) from None
    except ParseError as exc:
        raise DataFileError(path, "-", "-", str(exc).removeprefix(f"{path} ")) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "-"
        raise DataFileError(path, where, "-", f"not valid YAML ({getattr(exc, 'problem', None) or 'syntax'})") from None


def load_yaml(path: str | Path, top_key: str, dated: bool = False,
              max_bytes: int = MAX_TEXT_BYTES) -> list[Mapping[str, Any]]:
    """Parse a YAML data file and return its list under `top_key`, checking schema_version (and read_on); a file
    larger than `max_bytes` is refused."""
    return load_sections(path, (top_key,), dated, max_bytes)[top_key]


def read_file_bytes(path: str | Path, what: str = "data file", max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """A regular file of at most `max_bytes` (files.read_regular: a device, a pipe or a directory is refused
    before a byte is read); DataFileError naming the file otherwise."""
    try:
        return read_regular(path, max_bytes, what)
    except UserFileError as exc:
        raise DataFileError(path, "-", "-", str(exc).removeprefix(f"{path}: ")) from None


def load_document(path: str | Path, dated: bool = False, max_bytes: int = MAX_TEXT_BYTES) -> dict[str, Any]:
    """A YAML data file parsed once: a mapping with schema_version 1; `dated` files must say when their figures were
    read (top-level `read_on: YYYY-MM-DD`). DataFileError naming the file and field otherwise."""
    path = Path(path)
    try:
        text = read_file_bytes(path, max_bytes=max_bytes).decode("utf-8")
    except UnicodeDecodeError:
        raise DataFileError(path, "-", "-", "not UTF-8 text") from None
    doc = parse_yaml(text, path, max_bytes)
    if not isinstance(doc, dict):
        raise DataFileError(path, "-", "-", "expected a mapping at the top level")
    if doc.get("schema_version") != 1:
        raise DataFileError(path, "-", "schema_version", f"expected 1, got {shown(doc.get('schema_version'))}")
    if dated:
        Record(str(path), "-", doc).day("read_on")
    return doc


def sections_of(doc: Mapping[str, Any], path: str | Path, keys: Iterable[str]) -> dict[str, list[Mapping[str, Any]]]:
    """Each of `keys` of a loaded document, each a non-empty list; DataFileError naming the key otherwise."""
    out = {}
    for key in keys:
        records = doc.get(key)
        if not isinstance(records, list) or not records:
            raise DataFileError(path, "-", key, "expected a non-empty list")
        out[key] = records
    return out


def load_sections(path: str | Path, keys: Iterable[str], dated: bool = False,
                  max_bytes: int = MAX_TEXT_BYTES) -> dict[str, list[Mapping[str, Any]]]:
    """Parse a YAML data file once (load_document) and return each of `keys` (each a non-empty list)."""
    return sections_of(load_document(path, dated, max_bytes), path, keys)


@dataclass(frozen=True)
class Record:
    """One record of a data file, with typed accessors that raise DataFileError."""

    path: str
    label: str
    data: Mapping[str, Any]

    @classmethod
    def of(cls, path: str | Path, index: int, data: Any) -> Record:
        if not isinstance(data, dict):
            raise DataFileError(path, f"#{index}", "-", "expected a mapping")
        rid = data.get("id")
        label = f"'{rid}'" if isinstance(rid, str) else f"#{index}"
        return cls(str(path), label, data)

    def fail(self, field: str, problem: str) -> DataFileError:
        return DataFileError(self.path, self.label, field, problem)

    def check_keys(self, allowed: Iterable[str]) -> None:
        allowed = list(allowed)
        for key in self.data:
            if key not in allowed:
                near = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else ""
                raise self.fail(str(key), f"unknown field{hint}")

    def raw(self, field: str, required: bool = True) -> Any:
        if field not in self.data or self.data[field] is None:
            if required:
                raise self.fail(field, "missing")
            return None
        return self.data[field]

    def text(self, field: str, required: bool = True, choices: Iterable[str] | None = None,
             max_len: int | None = None) -> str | None:
        value = self.raw(field, required)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(field, f"expected a non-empty string, got {shown(value)}")
        if max_len is not None and len(value) > max_len:
            raise self.fail(field, f"expected a text of at most {max_len} characters, got {len(value):,}")
        if choices is not None and value not in tuple(choices):
            raise self.fail(field, f"expected one of {', '.join(choices)}, got {shown(value)}")
        return value

    def number(self, field: str, required: bool = True, lo: float | None = None,
               hi: float | None = None, integer: bool = False) -> float | None:
        value = self.raw(field, required)
        if value is None:
            return None
        return check_number(value, lo, hi, integer, lambda p: self.fail(field, p))

    def flag(self, field: str, default: bool | None = None) -> bool:
        value = self.raw(field, default is None)
        if value is None:
            return bool(default)
        if not isinstance(value, bool):
            raise self.fail(field, f"expected true or false, got {shown(value)}")
        return value

    def strings(self, field: str, required: bool = True) -> tuple[str, ...]:
        value = self.raw(field, required)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(field, "expected a list of non-empty strings")
        return tuple(value)

    def compute_capability(self, field: str, required: bool = True) -> tuple[int, int] | None:
        value = self.raw(field, required)
        if value is None:
            return None
        return parse_compute_capability(value, lambda p: self.fail(field, p))

    def day(self, field: str) -> date:
        value = self.raw(field)
        if isinstance(value, date):
            return value
        try:
            return date.fromisoformat(str(value))
        except ValueError:
            raise self.fail(field, f"expected a date YYYY-MM-DD, got {shown(value)}") from None

    def records(self, field: str, max_items: int) -> list[Record]:
        """A non-empty list of mappings (at most max_items), each as a Record labelled field[i]."""
        value = self.raw(field)
        if not isinstance(value, list) or not value:
            raise self.fail(field, "expected a non-empty list")
        if len(value) > max_items:
            raise self.fail(field, f"{len(value):,} entries, at most {max_items:,} expected")
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.fail(f"{field}[{i}]", "expected a mapping")
            out.append(Record(self.path, f"{self.label}.{field}[{i}]", item))
        return out

    def child(self, field: str, required: bool = True) -> Record | None:
        value = self.raw(field, required)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(field, "expected a mapping")
        return Record(self.path, f"{self.label}.{field}", value)


def check_number(value: Any, lo: float | None, hi: float | None, integer: bool, fail) -> float:
    """Return value as a number within [lo, hi], else raise fail(problem)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(f"expected a number, got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise fail(f"expected a finite number, got {shown(value)}")
    if integer and value != int(value):
        raise fail(f"expected a whole number, got {shown(value)}")
    if lo is not None and value < lo:
        raise fail(f"must be >= {lo:g}, got {shown(value)}")
    if hi is not None and value > hi:
        raise fail(f"must be <= {hi:g}, got {shown(value)}")
    return int(value) if integer else float(value)


COMPUTE_CAPABILITY_RE = re.compile(r"(\d{1,2})\.(\d)")  # CUDA compute capability 'major.minor', e.g. '8.6'


def parse_compute_capability(text: Any, fail) -> tuple[int, int]:
    """'8.6' -> (8, 6); anything else raises fail(problem)."""
    m = COMPUTE_CAPABILITY_RE.fullmatch(str(text))
    if not m:
        raise fail(f"expected a compute capability 'major.minor' like '8.6', got {shown(text)}")
    return int(m.group(1)), int(m.group(2))


def sm_label(cc: tuple[int, int] | None) -> str:
    """(9, 0) -> 'SM90'; '-' when there is none (AMD)."""
    return f"SM{cc[0]}{cc[1]}" if cc else "-"


def unique_ids(path: str | Path, ids: Iterable[str]) -> None:
    seen: set[str] = set()
    for rid in ids:
        if rid in seen:
            raise DataFileError(path, f"'{rid}'", "id", "duplicate id")
        seen.add(rid)


class CachedHash:
    """Mixin for frozen dataclasses used as cache keys: hash the fields once, not on every lookup."""

    def __hash__(self) -> int:
        h = self.__dict__.get("_cached_hash")
        if h is None:
            h = hash(tuple(getattr(self, f) for f in self.__dataclass_fields__))
            self.__dict__["_cached_hash"] = h  # frozen: bypass __setattr__, like functools.cached_property
        return h


def bounded_assumptions(path: str | Path, records: Iterable[Mapping[str, Any]],
                        limits: Mapping[str, tuple[float, float]]) -> tuple[dict[str, float], dict[str, str]]:
    """An `assumptions` section of `{id, value, unit, source}` records: every id of `limits` exactly once, each value
    within its (lo, hi); returns ({id: value}, {id: source}). Errors name the file, record and field."""
    records = list(records)
    values, sources = {}, {}
    for i, raw in enumerate(records):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "value", "unit", "source"))
        key = rec.text("id", choices=tuple(limits))
        lo, hi = limits[key]
        values[key], sources[key] = rec.number("value", lo=lo, hi=hi), rec.text("source")
        rec.text("unit")
    unique_ids(path, (r.get("id") for r in records))
    missing = sorted(set(limits) - set(values))
    if missing:
        raise DataFileError(path, "-", "assumptions", f"missing {', '.join(missing)}")
    return values, sources


def checked_changes(kind: str, limits: Mapping[str, tuple[float, float]], changes: Mapping[str, float]) -> None:
    """Raise ValueError naming the first user change that is not a known `kind` assumption or is out of its bounds."""
    for key, value in changes.items():
        if key not in limits:
            raise ValueError(f"unknown {kind} assumption '{key}'; known: {', '.join(limits)}")
        lo, hi = limits[key]
        if not lo <= value <= hi:
            raise ValueError(f"{kind} assumption {key} must be between {lo:g} and {hi:g}, got {value:g}")
