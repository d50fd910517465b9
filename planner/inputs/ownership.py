"""The GPUs a user owns ('rtx-a5000:3') and what owning costs: lifetime, power draw, electricity price and purchase
prices (data/ownership.yaml, every figure with its source)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from collections.abc import Callable, Iterable

from planner import DATA_DIR
from planner.base.safe_parse import parse_number, shown
from planner.base.schema import Record, bounded_assumptions, checked_changes, load_sections, unique_ids

OWNERSHIP_FILE = DATA_DIR / "ownership.yaml"
# assumption id -> (lower bound, upper bound) of what a user may set
LIMITS = {"lifetime_years": (0.25, 20.0), "utilization": (0.01, 1.5), "usd_per_kwh": (0.0, 5.0)}
MAX_OWNED = 4  # kinds of card in one link; each kind has its own verdict and row
MAX_CARDS = 64  # cards of one kind
MAX_PAID_USD = 500_000.0


@dataclass(frozen=True)
class OwnAssumptions:
    """Lifetime in years over which a card is written off; average draw as a fraction of TDP while a job runs;
    electricity in USD per kWh; purchase prices in USD per card by GPU id, with (source, date) each."""

    lifetime_years: float
    utilization: float
    usd_per_kwh: float
    purchase_usd: tuple[tuple[str, float], ...]
    sources: tuple[tuple[str, str], ...]  # assumption id or 'purchase_usd.<gpu id>' -> source (and date)

    def purchase(self, gpu_id: str) -> float | None:
        return dict(self.purchase_usd).get(gpu_id)

    def source(self, key: str) -> str:
        return dict(self.sources).get(key, "")


@dataclass(frozen=True)
class Owned:
    """Cards of one kind the user owns: GPU id, how many, and the price paid per card (None: the listed price)."""

    gpu_id: str
    count: int
    paid_usd: float | None = None

    def text(self) -> str:
        """The link and CLI form: 'rtx-a5000:3', or 'rtx-a5000:3:2100' with the price paid per card."""
        paid = "" if self.paid_usd is None else f":{self.paid_usd:g}"
        return f"{self.gpu_id}:{self.count}{paid}"


@lru_cache(maxsize=2)
def load_ownership(path: str | Path = OWNERSHIP_FILE, gpu_ids: tuple[str, ...] = ()) -> OwnAssumptions:
    """Validated assumptions; with gpu_ids, every purchase price must name a catalog GPU (DataFileError otherwise)."""
    doc = load_sections(path, ("assumptions", "purchase_usd"), dated=True)
    values, sources = bounded_assumptions(path, doc["assumptions"], LIMITS)
    prices = []
    for i, raw in enumerate(doc["purchase_usd"]):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "value", "date", "source"))
        gid = rec.text("id", choices=gpu_ids or None)
        prices.append((gid, rec.number("value", lo=1, hi=MAX_PAID_USD)))
        sources[f"purchase_usd.{gid}"] = f"{rec.text('source')}, {rec.day('date').isoformat()}"
    unique_ids(path, (p[0] for p in prices))
    return OwnAssumptions(**values, purchase_usd=tuple(sorted(prices)), sources=tuple(sorted(sources.items())))


def with_values(a: OwnAssumptions, changes: dict[str, float]) -> OwnAssumptions:
    """The assumptions with some values changed by the user, each checked against LIMITS (ValueError naming it)."""
    checked_changes("ownership", LIMITS, changes)
    return replace(a, **changes)


def parse_owned(text: str, gpu_id: Callable[[str], str]) -> tuple[tuple[Owned, ...], list[str]]:
    """'rtx-a5000:3,rtx-5090' -> the cards owned (count 1 when left out; an optional third field is the USD paid per
    card), and one problem per entry that can't be used. `gpu_id` resolves a name to a catalog id or raises
    ValueError. A GPU named twice keeps its last entry; at most MAX_OWNED kinds."""
    out: dict[str, Owned] = {}
    bad = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, _, rest = item.partition(":")
        count_text, _, paid_text = rest.partition(":")
        try:
            gid = gpu_id(name)
            count = int(parse_number(count_text, 1, MAX_CARDS, True)) if count_text.strip() else 1
            paid = float(parse_number(paid_text, 1, MAX_PAID_USD, False)) if paid_text.strip() else None
            out.pop(gid, None)
            out[gid] = Owned(gid, count, paid)
        except ValueError as exc:
            bad.append(f"{shown(item)}: {exc} (expected gpu-id:count, e.g. rtx-a5000:3)")
    owned = tuple(out.values())
    if len(owned) > MAX_OWNED:
        bad.append(f"at most {MAX_OWNED} kinds of GPU; kept the first {MAX_OWNED}")
        owned = owned[:MAX_OWNED]
    return owned, bad


def owned_text(owned: Iterable[Owned]) -> str:
    return ",".join(o.text() for o in owned)
