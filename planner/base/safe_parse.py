"""Parsing text that users send (uploads, links, hand-edited files): capped in size, depth and node count, YAML
without aliases, and user values described in messages without repr (type and a short, plain excerpt).

A YAML alias bomb (a few hundred bytes that expand to gigabytes), a deeply nested document (RecursionError in the
parser) and a 5,000-digit integer (ValueError when printed) each become one ParseError with a clear message.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml

MAX_TEXT_BYTES = 1_000_000  # an upload or a decompressed link: a model profile or bench result is far smaller
MAX_DEPTH = 32  # nesting of mappings and lists (a bench result nests 5 deep)
MAX_NODES = 200_000  # scalars, mappings and lists in one document
MAX_SHOWN_CHARS = 40  # how much of a user's value a message repeats
# libyaml's parser builds the same documents ~10x faster; PyYAML without libyaml falls back to its pure-Python one
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ParseError(ValueError):
    """Text that can't be parsed safely; the message says why, in words a user can act on."""


def shown(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """A user's value for a message: its kind and a short plain excerpt, never repr and never the whole of it."""
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "nothing"
    if isinstance(value, int):
        return str(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length():,} bits"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, str):
        flat = " ".join(value.split())
        cut = flat[:limit] + ("…" if len(flat) > limit else "")
        return f"'{cut}'"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value):,} items"
    if isinstance(value, dict):
        return f"a mapping of {len(value):,} keys"
    return f"a {type(value).__name__}"


def check_size(text: str | bytes, what: str, max_bytes: int = MAX_TEXT_BYTES) -> None:
    size = len(text.encode("utf-8") if isinstance(text, str) else text)
    if size > max_bytes:
        raise ParseError(f"{what} is {size:,} bytes; at most {max_bytes:,} are accepted")


def check_shape(doc: Any, what: str, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Refuse documents nested deeper than max_depth or with more than max_nodes values (iterative walk)."""
    stack = [(doc, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise ParseError(f"{what} has more than {max_nodes:,} values; a planner file has far fewer")
        if isinstance(node, (dict, list)):
            if depth > max_depth:
                raise ParseError(f"{what} is nested more than {max_depth} levels deep")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > 256:
            raise ParseError(f"{what} holds {shown(node)}; numbers that large are not accepted")


def _check_yaml_events(text: str, what: str, max_depth: int, max_nodes: int) -> None:
    depth = nodes = 0
    for event in yaml.parse(text, Loader=YAML_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise ParseError(f"{what} uses a YAML alias (*name); aliases are not accepted: write the value out")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > max_depth:
                raise ParseError(f"{what} is nested more than {max_depth} levels deep")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            nodes += 1
            if nodes > max_nodes:
                raise ParseError(f"{what} has more than {max_nodes:,} values; a planner file has far fewer")


def load_yaml_text(text: str, what: str, max_bytes: int = MAX_TEXT_BYTES, max_depth: int = MAX_DEPTH,
                   max_nodes: int = MAX_NODES) -> Any:
    """yaml.safe_load with caps; aliases are refused before anything is built. yaml.YAMLError passes through."""
    check_size(text, what, max_bytes)
    _check_yaml_events(text, what, max_depth, max_nodes)
    try:
        doc = yaml.load(text, Loader=YAML_LOADER)
    except ValueError:  # an integer longer than Python converts (4,300 digits): raised while the document is built
        raise ParseError(f"{what} holds a number too long to read; a planner file has none that long") from None
    check_shape(doc, what, max_depth, max_nodes)
    return doc


def load_json_text(text: str, what: str, max_bytes: int = MAX_TEXT_BYTES, max_depth: int = MAX_DEPTH,
                   max_nodes: int = MAX_NODES) -> Any:
    """json.loads with caps; json.JSONDecodeError passes through, every other parser failure is a ParseError."""
    check_size(text, what, max_bytes)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:  # deep nesting, or an integer too long to convert
        raise ParseError(f"{what} could not be read safely ({type(exc).__name__}: nesting or a number too "
                         "large)") from None
    check_shape(doc, what, max_depth, max_nodes)
    return doc


def parse_number(text: str, lo: float, hi: float, integer: bool) -> float | int:
    """A number a user typed ('1000000', '1e6', '1_000', '1,000'); ValueError naming the problem otherwise
    (not a number, not finite, not whole when it must be, outside [lo, hi])."""
    cleaned = str(text).strip().replace(",", "").replace("_", "")
    if len(cleaned) > 40:
        raise ValueError(f"expected a number, got {shown(text)}")
    try:
        value = float(cleaned)
    except ValueError:
        raise ValueError(f"expected a number, got {shown(text)}") from None
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {shown(text)}")
    if integer and value != int(value):
        raise ValueError(f"expected a whole number, got {shown(text)}")
    if not lo <= value <= hi:
        raise ValueError(f"must be between {lo:g} and {hi:g}, got {shown(text)}")
    return int(value) if integer else value


# Characters refused in user text: lone surrogates (no UTF-8 form: the text can't be sent to a browser or written to a
# file), C0 and C1 controls and DEL (ESC and BEL drive terminals, NUL and the rest make YAML that `sky launch`
# refuses), and the Unicode line and paragraph separators (a line break to YAML and JavaScript that a reader doesn't
# see). Tab and newline are refused too, except in a document's multi-line values (check_text_values).
_REFUSED = "\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\ud800-\\udfff"
REFUSED_IN_LINE = re.compile(f"[\\t\\n{_REFUSED}]")
REFUSED_IN_TEXT = re.compile(f"[{_REFUSED}]")


class TextError(ParseError):
    """User text holding a character it may not: `field` names where, `problem` says what (without the text)."""

    def __init__(self, what: str, field: str, problem: str):
        self.field, self.problem = field, problem
        super().__init__(f"{what}: field '{field}' {problem}")


def _char_name(ch: str) -> str:
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return f"a lone surrogate (U+{code:04X}, not a character: the text is not valid Unicode)"
    if ch in "\u2028\u2029":
        return f"a line or paragraph separator (U+{code:04X})"
    return f"a control character (U+{code:04X})"


def text_problem(text: str, multiline: bool = False) -> str | None:
    """Why `text` can't be used as user text (None when it can): the first refused character, named by its code
    point and position, never repeated. Tab and newline pass only when `multiline`."""
    m = (REFUSED_IN_TEXT if multiline else REFUSED_IN_LINE).search(text)
    if m is None:
        return None
    return f"holds {_char_name(m.group())} at character {m.start() + 1:,}; remove it"


def check_text(text: str, what: str, field: str, multiline: bool = False) -> str:
    """`text` when it holds no refused character; else a TextError naming the field."""
    problem = text_problem(text, multiline)
    if problem:
        raise TextError(what, field, problem)
    return text


def check_text_values(doc: Any, what: str) -> None:
    """Every key and string of a parsed document checked (keys on one line, values may span lines); TextError
    naming the first one's path ('models[0].name'). A walk without recursion over a document check_shape bounded."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            check_text(node, what, path or "-", multiline=True)
        elif isinstance(node, dict):
            for i, (key, value) in enumerate(node.items()):
                key_path = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and text_problem(key):
                    raise TextError(what, f"{path}[key #{i + 1}]" if path else f"key #{i + 1}",
                                    text_problem(key) or "")
                stack.append((value, key_path))
        elif isinstance(node, list):
            stack.extend((item, f"{path}[{i}]") for i, item in enumerate(node))


def clean_text(text: str) -> str:
    """`text` with every refused character (REFUSED_IN_TEXT) replaced by U+FFFD, for text that must be shown
    whatever it holds (a file's name, an unknown link parameter)."""
    return REFUSED_IN_TEXT.sub("\ufffd", text)
