"""How figures read on the page and in exports: durations, dollars, counts, GPU names."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from planner.base.safe_parse import clean_text

# (unit, seconds per unit, shown in this unit below this many seconds): 2 min, 2 h, 2 days, then days
DURATION_UNITS = (("s", 1.0, 120.0), ("min", 60.0, 7200.0), ("h", 3600.0, 172800.0), ("days", 86400.0, 63_115_200.0),
                  ("years", 31_557_600.0, math.inf))  # a Julian year; a table of 2.78e+06 days reads as years


def duration_unit(seconds: float) -> tuple[str, float]:
    """(unit, seconds per unit) a person would read `seconds` in."""
    return next((unit, div) for unit, div, below in DURATION_UNITS if seconds < below)


def time_unit(seconds: Iterable[float | None]) -> tuple[str, float]:
    """(unit, seconds per unit) for a column of durations: the unit of the typical (median) one."""
    ok = sorted(s for s in seconds if s)
    return duration_unit(ok[len(ok) // 2] if ok else 1.0)


def fmt_seconds(s: float | None) -> str:
    """A duration in the unit a person would use: '42 s', '18.3 min', '5.2 h', '3.1 days'; '-' for none."""
    if s is None or not math.isfinite(s):
        return "-"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    unit, div = duration_unit(s)
    value = s / div
    return f"{value:,.0f} {unit}" if value >= 1000 else f"{value:.3g} {unit}"


def fmt_usd(x: float | None) -> str:
    if x is None:
        return "-"
    return f"${x:,.2f}" if x >= 0.995 else f"${x:.3g}"


def fmt_count(n: float) -> str:
    """Three significant figures with a k/M/B/T suffix: 132192000 -> '132M', 25.37 -> '25.4'."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:.3g}"


def fmt_sig(x: float | None, digits: int = 4) -> str:
    """`digits` significant figures in plain decimal, thousands separated and without an exponent, so a table cell
    never breaks inside a number ('1.2e-05' wraps at its hyphen): 12345.6 -> '12,346', 0.3330 -> '0.333',
    1.234e-5 -> '0.00001234'; below 1e-9 or not finite, the exponent form; '-' for none."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x == 0 or not math.isfinite(x) or abs(x) < 1e-9:
        return f"{x:.{digits}g}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def short_name(name: str) -> str:
    """'NVIDIA GeForce RTX 4090 24GB' -> 'RTX 4090 24GB' (chart labels, call-outs)."""
    return name.replace("NVIDIA ", "").replace("GeForce ", "").replace("Tesla ", "")


# CommonMark lets a backslash escape any ASCII punctuation; these are the ones Streamlit's Markdown gives a meaning
# (emphasis, links and images, HTML, headings, lists, tables, LaTeX '$', ':material/...:' and ':red[...]' directives).
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")
# GitHub-flavoured Markdown (Streamlit's remark-gfm) links bare 'http(s)://', 'www.' and 'name@host.tld' in text after
# backslash escapes are resolved, so escaping can't stop it; a WORD JOINER (U+2060: invisible, no line break) after a
# scheme's colon, after 'www' and after '@' breaks each pattern while the text reads the same.
_AUTOLINK = re.compile(r"(?i)(?<=:)(?=//)|(?<=\bwww)(?=\.)|(?<=@)")
WORD_JOINER = "\u2060"


def md_escape(text: str, limit: int = 300) -> str:
    """User or server text made safe to put in Markdown: one line, at most `limit` characters, every markup
    character escaped and every autolink broken, so '[x](http://evil)', '![](http://img)' or a bare
    'https://evil.example' shows as typed, links nowhere and fetches nothing; a character no page can send (a lone
    surrogate, a control) shows as U+FFFD."""
    flat = " ".join(clean_text(str(text)).split())
    flat = flat[:limit] + ("…" if len(flat) > limit else "")
    return _MARKUP.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, flat))
