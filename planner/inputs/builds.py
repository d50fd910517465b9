"""The PyTorch build matrix (data/pytorch_builds.yaml): which GPU architectures each official build ships kernels for,
and whether a build runs a given GPU.

A CUDA build runs an NVIDIA GPU of compute capability X.Z when it ships machine code for X.Y with Y <= Z (cubins are
binary compatible within a major version), or PTX for an older capability (JIT-compiled by the driver). A ROCm build
runs an AMD GPU whose gfx target it lists. Pure data: the engine turns these answers into a GPU's reasons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.safe_parse import shown
from planner.base.schema import CachedHash, Record, load_sections, parse_compute_capability, unique_ids

BUILDS_FILE = DATA_DIR / "pytorch_builds.yaml"
BUILD_ID_RE = re.compile(r"(\d+\.\d+\.\d+)\+(cu\d{3}|rocm\d+(?:\.\d+){0,2})")  # '1.13.1+cu116', '2.13.0+rocm7.2'
VERSION_RE = re.compile(r"\d+(?:\.\d+){1,2}")
GFX_RE = re.compile(r"gfx[0-9a-f]{3,4}")

# How a build runs a GPU (Build.fit): its own kernels, the kernels of a lower minor of the same major, its PTX, none.
NATIVE, COMPATIBLE, PTX = "native", "compatible", "ptx"


def parse_torch_version(text: str) -> tuple[int, ...]:
    """'2.4.1' or '2.0' -> (2, 4, 1) / (2, 0); ValueError otherwise."""
    t = str(text).strip()
    if not VERSION_RE.fullmatch(t):
        raise ValueError(f"expected a PyTorch version like 2.4.1, got {shown(text)}")
    return tuple(int(x) for x in t.split("."))


def version_text(v: tuple[int, ...]) -> str:
    return ".".join(str(x) for x in v)


def sm_text(cc: tuple[int, int]) -> str:
    """(8, 6) -> 'sm_86' (PyTorch's arch-list spelling)."""
    return f"sm_{cc[0]}{cc[1]}"


@dataclass(frozen=True)
class Fit:
    """How a build runs a GPU: `how` is NATIVE, COMPATIBLE (kernels of `arch`, a lower minor) or PTX (`arch`'s)."""

    how: str
    arch: str  # 'sm_86', 'compute_120' or a gfx target


@dataclass(frozen=True, eq=True)
class Build(CachedHash):
    """One official PyTorch build: version x CUDA (sm, ptx) or ROCm (gfx) variant."""

    __hash__ = CachedHash.__hash__  # a cache key of the engine's build checks

    id: str
    version: tuple[int, ...]
    variant: str  # 'cu116', 'rocm6.0'
    sm: tuple[tuple[int, int], ...]
    ptx: tuple[tuple[int, int], ...]
    gfx: tuple[str, ...]
    source: str
    read_on: str

    @property
    def platform(self) -> str:
        return "rocm" if self.variant.startswith("rocm") else "cuda"

    @property
    def toolkit(self) -> tuple[int, ...]:
        """CUDA 11.6 -> (11, 6); ROCm 6.0 -> (6, 0): orders the variants of one version."""
        if self.platform == "rocm":
            return tuple(int(x) for x in self.variant[4:].split("."))
        digits = self.variant[2:]
        return int(digits[:-1]), int(digits[-1])

    @property
    def toolkit_text(self) -> str:
        return ("ROCm " if self.platform == "rocm" else "CUDA ") + version_text(self.toolkit)

    @property
    def sort_key(self) -> tuple:
        return self.version, self.platform, self.toolkit

    def arch_list(self) -> str:
        """What the build ships, as torch.cuda.get_arch_list() spells it."""
        if self.platform == "rocm":
            return " ".join(self.gfx)
        return " ".join([sm_text(s) for s in self.sm] + [f"compute_{p[0]}{p[1]}" for p in self.ptx])

    def fit(self, cc: tuple[int, int] | None, gfx: str | None) -> Fit | None:
        """How this build runs a GPU of compute capability `cc` (NVIDIA) or target `gfx` (AMD); None: it doesn't."""
        if self.platform == "rocm":
            return Fit(NATIVE, gfx) if gfx and gfx in self.gfx else None
        if cc is None:
            return None
        if cc in self.sm:
            return Fit(NATIVE, sm_text(cc))
        same_major = [s for s in self.sm if s[0] == cc[0] and s[1] <= cc[1]]
        if same_major:
            return Fit(COMPATIBLE, sm_text(max(same_major)))
        older_ptx = [p for p in self.ptx if p <= cc]
        return Fit(PTX, "compute_{}{}".format(*max(older_ptx))) if older_ptx else None


@dataclass(frozen=True, eq=True)
class BuildMatrix(CachedHash):
    __hash__ = CachedHash.__hash__
    builds: tuple[Build, ...]  # oldest first

    def versions(self) -> tuple[tuple[int, ...], ...]:
        return tuple(sorted({b.version for b in self.builds}))

    @property
    def latest(self) -> tuple[int, ...]:
        return self.versions()[-1]

    def of_version(self, version: tuple[int, ...]) -> tuple[Build, ...]:
        return tuple(b for b in self.builds if b.version == version)

    def known_text(self) -> str:
        """'1.13.1 (+cu116, +cu117), 2.0.1 (+cu117, ...), ...': every version with its variants."""
        return ", ".join(f"{version_text(v)} ({', '.join('+' + b.variant for b in self.of_version(v))})"
                         for v in self.versions())

    def pin(self, text: str) -> tuple[Build, ...]:
        """The builds a user's pin names: one build ('2.4.1+cu124') or every variant of a version ('2.4.1').
        ValueError naming the known builds otherwise."""
        t = str(text).strip().lower()
        hits = [b for b in self.builds if b.id == t]
        if not hits and VERSION_RE.fullmatch(t):
            hits = list(self.of_version(parse_torch_version(t)))
        if not hits:
            raise ValueError(f"unknown PyTorch build {shown(text)}: give a version and variant as pip names it, "
                             f"e.g. 2.4.1+cu124 or 1.13.1+cu116 (or a version alone for all its variants); "
                             f"known: {self.known_text()}")
        return tuple(hits)

    def choices(self) -> tuple[str, ...]:
        """Every name a pin may use: the build ids, then the bare versions."""
        return tuple(b.id for b in self.builds) + tuple(version_text(v) for v in self.versions())

    def oldest_running(self, cc: tuple[int, int] | None, gfx: str | None) -> tuple[Build, Fit] | None:
        """The oldest build that runs the GPU (natively or not), or None when none does."""
        return next(((b, f) for b in self.builds if (f := b.fit(cc, gfx))), None)


def _archs(rec: Record, field: str) -> tuple[tuple[int, int], ...]:
    return tuple(sorted(parse_compute_capability(s, lambda p: rec.fail(field, p))
                        for s in rec.strings(field, required=False)))


def _build(rec: Record) -> Build:
    rec.check_keys(("id", "sm", "ptx", "gfx", "source", "read_on"))
    bid = rec.text("id")
    m = BUILD_ID_RE.fullmatch(bid)
    if not m:
        raise rec.fail("id", f"expected <version>+<variant> like 1.13.1+cu116 or 2.3.1+rocm6.0, got {shown(bid)}")
    sm, ptx, gfx = _archs(rec, "sm"), _archs(rec, "ptx"), rec.strings("gfx", required=False)
    rocm = m.group(2).startswith("rocm")
    if rocm and (sm or ptx or not gfx):
        raise rec.fail("gfx" if not gfx else "sm", "a ROCm build lists gfx targets (and no sm or ptx)")
    if not rocm and (gfx or not sm):
        raise rec.fail("sm" if not sm else "gfx", "a CUDA build lists sm capabilities (and no gfx targets)")
    bad = [g for g in gfx if not GFX_RE.fullmatch(g)]
    if bad:
        raise rec.fail("gfx", f"expected AMD targets like gfx90a, got {shown(bad[0])}")
    return Build(bid, parse_torch_version(m.group(1)), m.group(2), sm, ptx, gfx, rec.text("source"),
                 rec.day("read_on").isoformat())


@lru_cache(maxsize=4)
def load_builds(path: str | Path = BUILDS_FILE) -> BuildMatrix:
    """Load and validate the build matrix; DataFileError naming file, record and field."""
    records = load_sections(path, ("builds",))["builds"]
    builds = [_build(Record.of(path, i, raw)) for i, raw in enumerate(records)]
    unique_ids(path, (b.id for b in builds))
    return BuildMatrix(tuple(sorted(builds, key=lambda b: b.sort_key)))
