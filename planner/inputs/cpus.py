"""CPU devices from data/cpus.yaml: cores, clocks, vector units, instruction-set extensions and memory channels, and
the peak rates and bandwidth they give (planner.inputs.catalog turns each into a catalog device of kind 'cpu').

Peaks are at the base clock, in TFLOPS (1e12 FLOP/s): fp32 = cores x GHz x FMA units x lanes x 2 / 1000; a path an
extension gives is a multiple of that or a per-core rate; a 16-bit path no extension gives runs in PyTorch's slow
fallback kernel (a fraction of fp32, with its note); other paths (tf32, fp8, int8 without VNNI/AMX) have none.
Bandwidth in GB/s (1e9 B/s) = channels x MT/s x 8 bytes per 64-bit DIMM channel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from collections.abc import Iterable

from planner import DATA_DIR
from planner.base.schema import DataFileError, Record, load_sections, unique_ids

CPUS_FILE = DATA_DIR / "cpus.yaml"
DIMM_CHANNEL_BYTES = 8  # a DDR4/DDR5 DIMM channel moves 64 bits per transfer (DDR5: two 32-bit subchannels)
FP32_LANE_BITS = 32
FLOPS_PER_FMA = 2
CPU_VENDORS = ("AMD", "Intel")
CPU_MARKETS = ("datacenter", "workstation", "consumer")
FMA_WIDTHS = (128, 256, 512)  # NEON/SSE, AVX2, AVX-512 datapaths


@dataclass(frozen=True)
class Extension:
    """An instruction-set extension that gives a matmul path: a multiple of the fp32 FMA rate, or a per-core rate."""

    id: str
    name: str
    path: str
    fp32_multiple: float | None
    ops_per_cycle_per_core: float | None
    source: str


@dataclass(frozen=True)
class SlowPath:
    """A 16-bit path no extension accelerates: PyTorch's fallback kernel at a fraction of the fp32 rate."""

    path: str
    fraction_of_fp32: float
    note: str
    source: str


@dataclass(frozen=True)
class CpuSpec:
    """One CPU model (one socket) and the host memory assumed with it."""

    id: str
    name: str
    aliases: tuple[str, ...]
    vendor: str
    architecture: str
    market: str
    cores: int
    threads: int
    base_ghz: float
    boost_ghz: float
    fma_units: int
    fma_bits: int
    extensions: tuple[Extension, ...]
    slow_paths: tuple[SlowPath, ...]
    no_path: tuple[tuple[str, str], ...]  # (path, why this CPU has no matmul path for it)
    memory_type: str
    memory_channels: int
    memory_mts: float
    memory_gib: float
    memory_config: str
    tdp_w: float | None
    source: str
    notes: str

    @property
    def fp32_tflops(self) -> float:
        """cores x base GHz x FMA units x fp32 lanes per unit x 2 FLOPs per FMA, in TFLOPS."""
        lanes = self.fma_bits / FP32_LANE_BITS
        return self.cores * self.base_ghz * self.fma_units * lanes * FLOPS_PER_FMA / 1000

    def _extension_tflops(self, ext: Extension) -> float:
        if ext.fp32_multiple is not None:
            return self.fp32_tflops * ext.fp32_multiple
        return self.cores * self.base_ghz * ext.ops_per_cycle_per_core / 1000

    def peak_tflops(self, path: str) -> float | None:
        """Peak of a compute path in TFLOPS (TOPS for int8): fp32, the best extension, the slow path, or None."""
        if path == "fp32":
            return self.fp32_tflops
        rates = [self._extension_tflops(e) for e in self.extensions if e.path == path]
        if rates:
            return max(rates)
        slow = self.slow_path(path)
        return self.fp32_tflops * slow.fraction_of_fp32 if slow else None

    def slow_path(self, path: str) -> SlowPath | None:
        """The fallback this CPU takes for `path` (None when an extension accelerates it or it has no path)."""
        if any(e.path == path for e in self.extensions):
            return None
        return next((s for s in self.slow_paths if s.path == path), None)

    def why_no_path(self, path: str) -> str:
        return dict(self.no_path).get(path, f"it has no {path} matmul path")

    @property
    def mem_bw_gbps(self) -> float:
        """Peak DRAM bandwidth: channels x MT/s x 8 bytes, in GB/s."""
        return self.memory_channels * self.memory_mts * DIMM_CHANNEL_BYTES / 1000

    def isa_text(self) -> str:
        """'2 x 256-bit FMA per core; AVX512-BF16, AVX512-VNNI' (or 'no AI extensions')."""
        ext = ", ".join(e.name for e in self.extensions) or "no bf16/int8 extensions"
        return f"{self.fma_units} x {self.fma_bits}-bit FMA per core; {ext}"

    def describe(self) -> str:
        """One line: cores, clock, vector units, memory channels and bandwidth."""
        return (f"{self.cores} cores ({self.threads} threads) at {self.base_ghz:g} GHz base, {self.isa_text()}; "
                f"{self.memory_channels} x {self.memory_type} = {self.mem_bw_gbps:,.1f} GB/s")


def _extension(rec: Record, paths: tuple[str, ...]) -> Extension:
    rec.check_keys(("id", "name", "path", "fp32_multiple", "ops_per_cycle_per_core", "source"))
    multiple = rec.number("fp32_multiple", required=False, lo=0.01, hi=64)
    per_core = rec.number("ops_per_cycle_per_core", required=False, lo=1, hi=1e5)
    if (multiple is None) == (per_core is None):
        raise rec.fail("fp32_multiple", "give exactly one of fp32_multiple and ops_per_cycle_per_core")
    return Extension(rec.text("id"), rec.text("name"), rec.text("path", choices=paths), multiple, per_core,
                     rec.text("source"))


def _slow_path(rec: Record, paths: tuple[str, ...]) -> SlowPath:
    rec.check_keys(("path", "fraction_of_fp32", "note", "source"))
    return SlowPath(rec.text("path", choices=paths), rec.number("fraction_of_fp32", lo=1e-4, hi=1.0),
                    " ".join(rec.text("note").split()), rec.text("source"))


def _no_path_reasons(paths: Iterable[str], extensions: tuple[Extension, ...], own: tuple[Extension, ...],
                     slow: tuple[SlowPath, ...]) -> tuple[tuple[str, str], ...]:
    """Why a CPU lacks a path: the extensions that would give it, or that no CPU extension does."""
    out = []
    for path in paths:
        if path == "fp32" or any(e.path == path for e in own) or any(s.path == path for s in slow):
            continue
        givers = [e.name for e in extensions if e.path == path]
        out.append((path, f"it has no {path} matmul instructions (they need {' or '.join(givers)})" if givers else
                    f"no CPU runs {path} matmuls (a GPU tensor-core format)"))
    return tuple(out)


def parse_cpu(rec: Record, extensions: dict[str, Extension], slow: tuple[SlowPath, ...],
              paths: tuple[str, ...]) -> CpuSpec:
    rec.check_keys(("id", "name", "aliases", "vendor", "architecture", "market", "cores", "threads", "base_ghz",
                    "boost_ghz", "fma_units", "fma_bits", "extensions", "memory_type", "memory_channels",
                    "memory_mts", "memory_gib", "memory_config", "tdp_w", "source", "notes"))
    cpu_id = rec.text("id")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", cpu_id):
        raise rec.fail("id", f"expected a slug of a-z, 0-9 and '-', got {cpu_id!r}")
    names = rec.raw("extensions")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise rec.fail("extensions", "expected a list of extension ids (may be empty)")
    unknown = [n for n in names if n not in extensions]
    if unknown:
        raise rec.fail("extensions", f"unknown extension {unknown[0]!r}; known: {', '.join(extensions)}")
    own = tuple(extensions[n] for n in names)
    cores = rec.number("cores", lo=1, hi=1024, integer=True)
    fma_bits = rec.number("fma_bits", integer=True, lo=128, hi=512)
    if fma_bits not in FMA_WIDTHS:
        raise rec.fail("fma_bits", f"expected a vector width of {', '.join(map(str, FMA_WIDTHS))} bits, got {fma_bits}")
    return CpuSpec(
        id=cpu_id, name=rec.text("name"), aliases=rec.strings("aliases", required=False),
        vendor=rec.text("vendor", choices=CPU_VENDORS), architecture=rec.text("architecture"),
        market=rec.text("market", choices=CPU_MARKETS), cores=cores,
        threads=rec.number("threads", lo=cores, hi=8 * cores, integer=True),
        base_ghz=rec.number("base_ghz", lo=0.5, hi=7.0), boost_ghz=rec.number("boost_ghz", lo=0.5, hi=7.0),
        fma_units=rec.number("fma_units", lo=1, hi=8, integer=True), fma_bits=fma_bits, extensions=own,
        slow_paths=slow, no_path=_no_path_reasons(paths, tuple(extensions.values()), own, slow),
        memory_type=rec.text("memory_type"), memory_channels=rec.number("memory_channels", lo=1, hi=32, integer=True),
        memory_mts=rec.number("memory_mts", lo=400, hi=20000), memory_gib=rec.number("memory_gib", lo=1, hi=2000),
        memory_config=rec.text("memory_config"), tdp_w=rec.number("tdp_w", required=False, lo=1, hi=2000),
        source=" ".join(rec.text("source").split()), notes=rec.text("notes", required=False) or "")


@lru_cache(maxsize=8)
def load_cpu_specs(path: str | Path, paths: tuple[str, ...]) -> tuple[CpuSpec, ...]:
    """Load and validate data/cpus.yaml; `paths` are the compute paths a peak may be given for (the catalog's)."""
    doc = load_sections(path, ("extensions", "slow_paths", "cpus"), dated=True)
    extensions = [_extension(Record.of(path, i, r), paths) for i, r in enumerate(doc["extensions"])]
    unique_ids(path, (e.id for e in extensions))
    slow = tuple(_slow_path(Record.of(path, i, r), paths) for i, r in enumerate(doc["slow_paths"]))
    seen = [s.path for s in slow]
    if len(set(seen)) != len(seen):
        raise DataFileError(path, "-", "slow_paths", "each path may have one slow path")
    by_id = {e.id: e for e in extensions}
    cpus = tuple(parse_cpu(Record.of(path, i, r), by_id, slow, paths) for i, r in enumerate(doc["cpus"]))
    unique_ids(path, (c.id for c in cpus))
    return cpus
