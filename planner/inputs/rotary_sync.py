"""Hugging Face transformers' per-layer device-to-host sync in some FlashAttention-2 attention classes, by release.

From data/runtimes.yaml (the runtime's `rotary_sync` block): in the releases listed per model family (config.json's
`model_type`), the family's FlashAttention-2 attention class runs `position_ids[:, -1].max().item()` in every layer
of every forward, so the host waits once a layer for the GPU to drain. A plan states the transformers release it runs
(Plan.transformers); none stated: a current release, which has no such sync.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.base.safe_parse import shown
from planner.base.schema import Record

VERSION_RE = re.compile(r"(\d{1,3})\.(\d{1,4})(?:\.(\d{1,4}))?")  # a release 'major.minor[.patch]', e.g. '4.40.2'
MAX_FAMILIES = 64  # model families a `rotary_sync` block may list


def parse_version(text: object, field: str = "transformers") -> tuple[int, int, int]:
    """'4.40.2' -> (4, 40, 2), '4.40' -> (4, 40, 0); ValueError naming `field` otherwise."""
    m = VERSION_RE.fullmatch(str(text).strip()) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"{field}: expected a release 'major.minor' or 'major.minor.patch' like '4.40.2', got "
                         f"{shown(text)}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


@dataclass(frozen=True)
class RotarySync:
    """The releases in which a family's attention class on `attention` syncs once a layer: per model_type, the
    first release read with the sync and the first read without it, [since, until)."""

    attention: str
    families: tuple[tuple[str, tuple[int, int, int], tuple[int, int, int]], ...]
    source: str

    def model_types(self, version: str | None, attention: str) -> tuple[str, ...]:
        """The model types whose attention class syncs per layer at `version` on `attention`; () for no version."""
        if version is None or attention != self.attention:
            return ()
        v = parse_version(version)
        return tuple(t for t, since, until in self.families if since <= v < until)


def parse_rotary_sync(rec: Record) -> RotarySync | None:
    """The optional `rotary_sync` block: attention, families {model_type: [since, until]}, source."""
    sub = rec.child("rotary_sync", required=False)
    if sub is None:
        return None
    sub.check_keys(("attention", "families", "source"))
    if not rec.raw("host_sync_us", required=False):
        raise rec.fail("rotary_sync", "needs host_sync_us: the round trip each layer's sync costs")
    raw = sub.raw("families")
    if not isinstance(raw, dict) or not raw or len(raw) > MAX_FAMILIES:
        raise sub.fail("families", f"expected a mapping of 1 to {MAX_FAMILIES} model types to [since, until]")
    families = []
    for name, span in raw.items():
        if not isinstance(span, list) or len(span) != 2:
            raise sub.fail(f"families.{name}", f"expected [since, until] releases, got {shown(span)}")
        try:
            since, until = (parse_version(v, f"families.{name}") for v in span)
        except ValueError as e:
            raise sub.fail(f"families.{name}", str(e)) from None
        if not since < until:
            raise sub.fail(f"families.{name}", f"expected since before until, got {shown(span)}")
        families.append((str(name), since, until))
    return RotarySync(sub.text("attention"), tuple(families), " ".join(sub.text("source").split()))
