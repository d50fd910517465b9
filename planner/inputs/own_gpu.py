"""A GPU the catalog lacks, described by the user (a new card, an internal accelerator): its name, memory, bandwidth,
dense rates per precision, compute capability (or 'unknown') and price, as one line of text that a link, the CLI
(`--my-gpu`) and the page's form all carry:

    name=My ASIC;mem=64;memtype=hbm;bw=1600;fp32=50;bf16=400;cc=unknown;usd=1.2

or, uploaded in the page or given to `--my-gpu` as a file, as a small YAML document in data/gpus.yaml's words:

    name: My ASIC
    memory_gb: 64
    memory_type: hbm
    mem_bw_gbps: 1600
    dense_tflops: {fp32: 50, bf16: 400}
    compute_capability: unknown
    usd_hr: 1.2

It becomes a catalog GPU (id 'own-<name>', named '<name> (yours)', its figures cited as 'described by you'), ranked
with the rest. Every value is bounds-checked with the catalog's own bounds; a ValueError names the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import yaml

from planner.base.safe_parse import ParseError, load_yaml_text, parse_number, shown, text_problem
from planner.base.units import BYTES_PER_GB, BYTES_PER_GIB
from planner.inputs.catalog import (COMPUTE_PATHS, CUSTOM_MAX_USD_HR, CUSTOM_MIN_USD_HR, GPU, MAX_VRAM_GB, Catalog,
                                    Price, RunPodListing, derive_ceilings)

OWN_ID_PREFIX = "own-"
OWN_ID_RE = re.compile(r"own-[a-z0-9][a-z0-9-]{0,59}")  # what OwnGpu.id makes of a name
MAX_SPEC_CHARS = 400  # name and a dozen numbers: the form's fields and a link's parameter stay short
MAX_NAME_CHARS = 40
# the bounds data/gpus.yaml's records are checked against (planner.inputs.catalog.parse_gpu)
MEM_BW_GBPS = (10.0, 50_000.0)
TFLOPS = (0.1, 20_000.0)
UNKNOWN_ARCH = "unknown"
CC_RE = re.compile(r"(?:sm_?)?(\d{1,2})\.?(\d)", re.IGNORECASE)  # '8.9', 'sm_89', 'SM89'
GFX_RE = re.compile(r"gfx[0-9a-f]{3,4}", re.IGNORECASE)  # an AMD GPU's LLVM target, e.g. gfx942
MEMORY_TYPES = ("gddr", "hbm")  # the memory classes whose achievable bandwidth fractions differ (GPU.memory_class)
KEYS = ("name", "mem", "memtype", "bw", *COMPUTE_PATHS, "cc", "usd")
FORM_PATHS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")  # the rates the page's form asks for
MAX_YAML_BYTES = 4_096  # a description is a dozen lines
MAX_YAML_DEPTH = 3  # the document, dense_tflops, its values
# a YAML description's keys (data/gpus.yaml's words) -> the one-line description's; dense_tflops holds the paths
YAML_KEYS = {"name": "name", "memory_gb": "mem", "memory_type": "memtype", "mem_bw_gbps": "bw",
             "compute_capability": "cc", "usd_hr": "usd"}
SEPARATORS = (";", "=")  # the one-line form's: a name may hold neither


@dataclass(frozen=True)
class OwnGpu:
    """A user's description of one GPU: memory in decimal GB and its kind (MEMORY_TYPES), bandwidth in GB/s, dense
    TFLOPS per compute path (fp32 required; a path left out has no hardware rate), compute capability, AMD gfx target
    or UNKNOWN_ARCH, and a $/GPU-hour (None: unpriced, ranked by time after the priced ones)."""

    name: str
    mem_gb: float
    mem_type: str
    mem_bw_gbps: float
    tflops: tuple[tuple[str, float], ...]
    arch: str
    usd_hr: float | None

    @property
    def id(self) -> str:
        return OWN_ID_PREFIX + (re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")[:60] or "gpu")

    def text(self) -> str:
        """The one-line form parse_own_gpu reads back to the same description."""
        parts = [f"name={self.name}", f"mem={self.mem_gb:g}", f"memtype={self.mem_type}", f"bw={self.mem_bw_gbps:g}",
                 *(f"{p}={v:g}" for p, v in self.tflops), f"cc={self.arch}"]
        return ";".join(parts + ([f"usd={self.usd_hr:g}"] if self.usd_hr is not None else []))


def _number(fields: dict[str, str], key: str, lo: float, hi: float) -> float:
    try:
        return float(parse_number(fields[key], lo, hi, False))
    except ValueError as exc:
        raise ValueError(f"your GPU's {key}: {exc}") from None


def _arch(text: str) -> str:
    """'8.9' / 'sm_89' -> '8.9'; 'gfx942' -> 'gfx942'; 'unknown' (or empty) -> UNKNOWN_ARCH; ValueError otherwise."""
    text = text.strip()
    if not text or text.lower() == UNKNOWN_ARCH:
        return UNKNOWN_ARCH
    if GFX_RE.fullmatch(text):
        return text.lower()
    m = CC_RE.fullmatch(text)
    if not m or not 3 <= int(m.group(1)) <= 20:
        raise ValueError(f"your GPU's cc: expected a compute capability like 8.9 or sm_89, an AMD target like gfx942, "
                         f"or unknown; got {shown(text)}")
    return f"{int(m.group(1))}.{m.group(2)}"


def parse_own_gpu(text: str) -> OwnGpu:
    """The description in `text` ('key=value;...', keys KEYS); ValueError naming the field that is wrong."""
    text = str(text)
    if len(text) > MAX_SPEC_CHARS:
        raise ValueError(f"your GPU's description is {len(text):,} characters; at most {MAX_SPEC_CHARS} are read")
    problem = text_problem(text)
    if problem:
        raise ValueError(f"your GPU's description {problem}")
    fields: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in KEYS:
            raise ValueError(f"your GPU's description: expected key=value with a key among {', '.join(KEYS)}, got "
                             f"{shown(part)}")
        if key in fields:
            raise ValueError(f"your GPU's {key} is given twice")
        fields[key] = value.strip()
    for key in ("name", "mem", "bw", "fp32"):
        if not fields.get(key):
            raise ValueError(f"your GPU's {key} is missing: a description needs name, mem (GB), bw (GB/s) and fp32 "
                             "(dense TFLOPS)")
    name = " ".join(fields["name"].split())
    if len(name) > MAX_NAME_CHARS:
        raise ValueError(f"your GPU's name is {len(name)} characters; at most {MAX_NAME_CHARS}")
    if any(c in name for c in SEPARATORS):
        raise ValueError("your GPU's name: ';' and '=' separate a description's fields; leave them out of the name")
    tflops = tuple((p, _number(fields, p, *TFLOPS)) for p in COMPUTE_PATHS if fields.get(p))
    usd = _number(fields, "usd", CUSTOM_MIN_USD_HR, CUSTOM_MAX_USD_HR) if fields.get("usd") else None
    mem_type = (fields.get("memtype") or MEMORY_TYPES[0]).lower()
    if mem_type not in MEMORY_TYPES:
        raise ValueError(f"your GPU's memtype: expected one of {', '.join(MEMORY_TYPES)}, got {shown(mem_type)}")
    return OwnGpu(name, _number(fields, "mem", 1.0, MAX_VRAM_GB), mem_type, _number(fields, "bw", *MEM_BW_GBPS),
                  tflops, _arch(fields.get("cc", "")), usd)


def _vendor(arch: str) -> tuple[str, tuple[int, int] | None, str | None]:
    """(vendor, compute capability, gfx target): NVIDIA for a compute capability, AMD for a gfx target, 'other' when
    unknown (no CUDA or ROCm kernel is assumed: the engine's 'other' platform)."""
    if arch == UNKNOWN_ARCH:
        return "other", None, None
    if arch.startswith("gfx"):
        return "AMD", None, arch
    major, minor = arch.split(".")
    return "NVIDIA", (int(major), int(minor)), None


def own_gpu_device(own: OwnGpu, catalog: Catalog, day) -> GPU:
    """The description as a catalog GPU: rates as given (dense), matmul ceilings derived as the catalog derives them
    for a GPU without a published measurement, the price (if any) as the user's own in every tier, dated `day`."""
    vendor, cc, gfx = _vendor(own.arch)
    rates = dict(own.tflops)
    price = Price(own.usd_hr, day, "entered by you", "custom", "you") if own.usd_hr is not None else None
    gpu = GPU(id=own.id, name=f"{own.name} (yours)", aliases=(), vendor=vendor, architecture="as you described it",
              compute_capability=cc, gfx_target=gfx, market="yours", vram_gib=own.mem_gb * BYTES_PER_GB / BYTES_PER_GIB,
              reported_vram_mib=None, reported_vram_source="",
              memory_type=f"{own.mem_type.upper()} (as you described it)",
              mem_bw_gbps=own.mem_bw_gbps, fp32_tflops=rates["fp32"], tf32_tflops=rates.get("tf32"),
              fp16_tflops=rates.get("fp16"), bf16_tflops=rates.get("bf16"), fp8_tflops=rates.get("fp8"),
              int8_tops=rates.get("int8"), tdp_w=None, pcie_gen=None, pcie_unidir_gbps=None, nvlink_unidir_gbps=None,
              runpod=RunPodListing((), price, price, price) if price else None,
              source=f"described by you: {own.text()}",
              notes="Figures as you gave them (dense rates); no GPU-to-GPU link is known, so one GPU per job.")
    return derive_ceilings([*catalog.gpus, gpu])[-1]


def with_own_gpu(catalog: Catalog, gpu: GPU) -> Catalog:
    """The catalog with the user's GPU ranked among the GPUs (its id must not be a catalog id)."""
    if gpu.id in catalog.ids():
        raise ValueError(f"your GPU's name gives the id {gpu.id}, which the catalog already has; rename it")
    return replace(catalog, gpus=(*catalog.gpus, gpu))


def own_gpu_text(name: str, mem_gb: float, mem_type: str, mem_bw_gbps: float, tflops: dict[str, float], arch: str,
                 usd_hr: float) -> str:
    """A form's fields as the one-line description (a rate or price of 0 = none given), read back through
    parse_own_gpu so that the form and a link are checked alike; ValueError naming the field."""
    parts = [f"name={' '.join(str(name).split())}", f"mem={mem_gb:g}", f"memtype={mem_type}", f"bw={mem_bw_gbps:g}",
             *(f"{p}={v:g}" for p, v in tflops.items() if v), f"cc={arch.strip() or UNKNOWN_ARCH}"]
    return parse_own_gpu(";".join(parts + ([f"usd={usd_hr:g}"] if usd_hr else []))).text()


def own_gpu_from_yaml(text: str) -> str:
    """A YAML description (module docstring; at most MAX_YAML_BYTES) as the one-line description, read back through
    parse_own_gpu so that a file, the form and a link are checked alike; ValueError naming the file's field."""
    try:
        doc = load_yaml_text(text, "your GPU's YAML file", MAX_YAML_BYTES, MAX_YAML_DEPTH)
    except (ParseError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"your GPU's YAML file could not be read: {shown(first)}") from None
    if not isinstance(doc, dict):
        raise ValueError("your GPU's YAML file: expected a mapping of name, memory_gb, mem_bw_gbps, dense_tflops, ...")
    known = (*YAML_KEYS, "dense_tflops")
    stray = [k for k in doc if k not in known]
    if stray:
        raise ValueError(f"your GPU's YAML file: unknown field {shown(stray[0])}; expected some of {', '.join(known)}")
    rates = doc.get("dense_tflops") or {}
    if not isinstance(rates, dict) or any(p not in COMPUTE_PATHS for p in rates):
        raise ValueError(f"your GPU's dense_tflops: expected a mapping of {', '.join(COMPUTE_PATHS)} to TFLOPS")
    values = {k: v for k, v in doc.items() if k in YAML_KEYS} | {f"dense_tflops.{p}": v for p, v in rates.items()}
    bad = next((k for k, v in values.items() if isinstance(v, (dict, list)) or v is None), None)
    if bad:
        raise ValueError(f"your GPU's {bad}: expected one value")
    short = {k: YAML_KEYS.get(k) or k.split(".")[1] for k in values}
    if any(c in str(values.get("name", "")) for c in SEPARATORS):
        raise ValueError("your GPU's name: ';' and '=' separate a description's fields; leave them out of the name")
    try:
        return parse_own_gpu(";".join(f"{short[k]}={v}" for k, v in values.items())).text()
    except ValueError as exc:  # named by the one-line key: name the file's
        message = str(exc)
        for key, one_line in sorted(short.items(), key=lambda kv: -len(kv[1])):
            if message.startswith(f"your GPU's {one_line}"):
                message = f"your GPU's {key}" + message[len(f"your GPU's {one_line}"):]
                break
        raise ValueError(message) from None
