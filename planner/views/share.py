"""Shareable links and exports: every planner input as URL query parameters, read back defensively.

A link is the whole plan. `decode(params)` never raises: an unknown parameter or an invalid value
becomes one warning naming the parameter, and only that value falls back to its default.
`encode(inputs)` always writes the plan itself (model, job and its sizes, precision, runtime, GPUs,
price tier), so a link keeps meaning the same plan when defaults change; view options (filters,
the explained GPU) are written only when they differ from their defaults. The exports carry the
inputs, the link and the catalog and price dates. Pure: no streamlit.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import urlencode

from planner.base.schema import DataFileError, Record, UnknownNameError, suggest
from planner.engine.estimate import Estimate
from planner.engine.plan import MEMORY_TARGET_DEFAULT_PCT, PARALLEL_MODES, Plan
from planner.engine.ranking import Mine, Ranking
from planner.base.safe_parse import parse_number, shown
from planner.inputs.builds import load_builds
from planner.inputs.catalog import (CUSTOM_MAX_USD_HR, CUSTOM_MIN_USD_HR, MAX_STALE_DAYS, MAX_VRAM_GB, PRICE_TIERS,
                                    STALE_AFTER_DAYS, load_catalog)
from planner.inputs.models import ModelProfile, load_models, parse_decoder, parse_model_text
from planner.inputs.ownership import Owned, owned_text, parse_owned
from planner.inputs.models.decoder import ARCH_FIELDS as DECODER_ARCH_FIELDS, ArchField
from planner.inputs.precisions import load_rules
from planner.inputs.runtimes import load_runtimes
from planner.calibration.fit import CalibrationError, Fleet
from planner.views.format import fmt_count
from planner.views.report import csv_text, estimate_row, flat_row, own_fields
from planner.inputs.jobs import BOUNDS, OPTIMIZERS, SHARDINGS, Generate, Infer, Train

CUSTOM = "custom"  # the model id of a model edited in the page or uploaded
JOBS = ("generate", "infer", "train")
VENDORS = ("all", "NVIDIA", "AMD", "Intel")
PRICE_SOURCES = ("snapshot", "live")
MAX_CMP = 6  # GPUs compared in the batch-size chart
# The page's tabs: link id -> label; the first one is open by default
TABS = {"explain": "Explain a GPU", "cost-time": "Cost vs time", "roofline": "Roofline", "batch": "Batch size",
        "memory": "Memory", "serving": "Serving", "accuracy": "Accuracy"}


@dataclass(frozen=True)
class LinkField(ArchField):
    """A decoder architecture field (planner.inputs.models.decoder.ARCH_FIELDS) with its link parameter (m_*)."""

    param: str = ""


_PARAMS = {"name": "m_name", "layers": "m_layers", "hidden": "m_hidden", "heads": "m_heads", "kv_heads": "m_kv",
           "head_dim": "m_hd", "ffn": "m_ffn", "ffn_kind": "m_act", "experts": "m_experts", "experts_per_token": "m_topk",
           "shared_ffn": "m_shared", "vocab": "m_vocab", "context": "m_ctx",
           "tied_embeddings": "m_tied", "norm": "m_norm", "learned_pos_emb": "m_pos", "bias": "m_bias"}
ARCH_FIELDS = tuple(LinkField(f.name, f.kind, f.lo, f.hi, _PARAMS[f.name]) for f in DECODER_ARCH_FIELDS)
ARCH_PARAM = {f.name: f.param for f in ARCH_FIELDS}
# A link carries a non-decoder profile packed (zlib + base64). 16,000 characters keep the whole URL far under what
# browsers and Streamlit's server accept (an 877,617-character link was answered HTTP 400); a profile inflates to at
# most MAX_SPEC_BYTES, so a small link can't expand into a large document.
MAX_LINK_SPEC_CHARS = 16_000
MAX_SPEC_BYTES = 256_000
SPEC_PARAM = "m_spec"  # a non-decoder (generic) profile travels as its compressed YAML text


@dataclass(frozen=True)
class Inputs:
    """Everything on the page that decides what is shown. `arch` (decoder fields) or `spec` (a generic
    profile's YAML) describe the model when model == 'custom'. batch None = auto; kv 'auto' = the
    activation dtype; pt '' = no pinned PyTorch build (the latest); maxusd 0 = no limit; gpu '' = the top of the
    ranking; cmp () = the top three; cpus: the CPU devices (data/cpus.yaml) join the ranking."""

    model: str = "cfdna-gen"
    arch: tuple[tuple[str, Any], ...] = ()
    spec: str = ""
    job: str = "generate"
    seqs: int = 1_000_000
    prompt: int = 1
    gen: int = 165
    samples: int = 10_000
    size: int = 256
    epochs: float = 1.0
    opt: str = "adamw"
    ckpt: bool = False
    accum: int = 1
    shard: str = "ddp"
    batch: int | None = None
    prec: str = "bf16"
    kv: str = "auto"
    attn: str = "sdpa"
    pt: str = ""
    rt: str = "pytorch-eager"
    gpus: int = 1
    par: str = "auto"  # how the GPUs share the job (PARALLEL_MODES)
    tier: str = "secure"
    mem: float = float(MEMORY_TARGET_DEFAULT_PCT)  # percent of the reported memory a plan may fill
    psrc: str = "snapshot"
    myprice: tuple[tuple[str, float], ...] = ()
    cal: str = ""
    stale: int = STALE_AFTER_DAYS
    vendor: str = "all"
    minvram: float = 0.0
    maxusd: float = 0.0
    feasible: bool = False
    priced: bool = False
    cpus: bool = False
    gpu: str = ""
    cmp: tuple[str, ...] = ()
    own: tuple[Owned, ...] = ()
    tab: str = "explain"

    @property
    def custom_prices(self) -> dict[str, float]:
        return dict(self.myprice)


DEFAULTS = Inputs()
JOB_FIELDS = {"generate": ("seqs", "prompt", "gen"), "infer": ("samples", "size"),
              "train": ("samples", "size", "epochs", "opt", "ckpt", "accum", "shard")}
VIEW_FIELDS = ("psrc", "myprice", "cal", "stale", "vendor", "minvram", "maxusd", "feasible", "priced", "cpus", "gpu",
               "cmp", "own", "tab")
KNOWN_PARAMS = ({f.name for f in fields(Inputs)} - {"arch", "spec"}) | set(ARCH_PARAM.values()) | {SPEC_PARAM}


@dataclass(frozen=True)
class LinkWarning:
    param: str
    text: str

    def __str__(self) -> str:
        return f"Link parameter '{self.param}': {self.text}"


# ---------------------------------------------------------------- value parsers (raise ValueError(problem))


def _bounded(name: str) -> Callable[[str], float | int]:
    """A parser for the job input `name` within its planner.inputs.jobs.BOUNDS."""
    b = BOUNDS[name]
    return lambda t: parse_number(t, b.lo, b.hi, b.integer)


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected 1 or 0, got {shown(text)}")


def _choice(options: Callable[[], Sequence[str]], case: bool = False) -> Callable[[str], str]:
    def parse(text: str) -> str:
        opts = list(options())
        for o in opts:
            if text == o or (not case and text.strip().lower() == o.lower()):
                return o
        near = suggest(text, opts)
        listed = ", ".join(opts[:8]) + (", ..." if len(opts) > 8 else "")
        hint = f"; did you mean {', '.join(near)}?" if near else f"; expected one of {listed}"
        raise ValueError(f"unknown value {shown(text)}{hint}")
    return parse


def _batch(text: str) -> int | None:
    return None if text.strip().lower() in ("auto", "") else _bounded("batch")(text)


def gpu_ids() -> tuple[str, ...]:
    return load_catalog().ids()


def model_ids() -> tuple[str, ...]:
    return tuple(m.id for m in load_models().models)


def _gpu_list(text: str) -> tuple[tuple[str, ...], list[str]]:
    """Comma-separated GPU ids: (the valid ones, problems with the others)."""
    ok, bad = [], []
    for item in filter(None, (s.strip() for s in text.split(","))):
        try:
            gid = _choice(gpu_ids)(item)
            if gid not in ok:
                ok.append(gid)
        except ValueError as exc:
            bad.append(str(exc))
    if len(ok) > MAX_CMP:
        bad.append(f"at most {MAX_CMP} GPUs; kept the first {MAX_CMP}")
        ok = ok[:MAX_CMP]
    return tuple(ok), bad


def _prices(text: str) -> tuple[tuple[tuple[str, float], ...], list[str]]:
    """'gpu-id:usd,gpu-id:usd' -> ((gpu_id, usd_hr), ...) sorted by id, and problems with bad entries."""
    out: dict[str, float] = {}
    bad = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        gid, sep, usd = item.partition(":")
        try:
            if not sep:
                raise ValueError(f"{shown(item)} is not gpu-id:dollars-per-hour")
            gid = _choice(gpu_ids)(gid)
            value = parse_number(usd, CUSTOM_MIN_USD_HR, CUSTOM_MAX_USD_HR, False)
            out[gid] = float(value)
        except ValueError as exc:
            bad.append(str(exc))
    return tuple(sorted(out.items())), bad


def _runtimes() -> list[str]:
    return [r.id for r in load_runtimes().runtimes]


def _precisions() -> list[str]:
    return [p.id for p in load_rules().precisions]


def _kv_dtypes() -> list[str]:
    return ["auto"] + [k.id for k in load_rules().kv_dtypes]


def _attention(text: str) -> str:
    """An attention backend by id or alias ('auto' -> sdpa), as its id."""
    try:
        return load_rules().attention(text).id
    except UnknownNameError as exc:
        listed = ", ".join(a.id for a in load_rules().attention_backends)
        raise ValueError(f"{exc}" + ("" if exc.suggestions else f"; expected one of {listed}")) from None


def _pytorch(text: str) -> str:
    """A pinned PyTorch build ('1.13.1+cu116') or version ('2.4.1'); '' or 'latest' for none. ValueError listing the
    known builds otherwise."""
    t = text.strip().lower().replace(" ", "+")  # an unescaped '+' in a typed link arrives as a space
    if t in ("", "latest"):
        return ""
    load_builds().pin(t)
    return t


SCALARS: dict[str, Callable[[str], Any]] = {
    "job": _choice(lambda: JOBS),
    "seqs": _bounded("sequences"), "prompt": _bounded("prompt_tokens"), "gen": _bounded("gen_tokens"),
    "samples": _bounded("samples"), "size": _bounded("input_size"), "epochs": _bounded("epochs"),
    "opt": _choice(lambda: sorted(OPTIMIZERS)), "ckpt": _bool, "accum": _bounded("grad_accum"),
    "shard": _choice(lambda: SHARDINGS),
    "batch": _batch, "prec": _choice(_precisions), "kv": _choice(_kv_dtypes), "attn": _attention,
    "pt": _pytorch,
    "rt": _choice(_runtimes), "gpus": _bounded("gpus"), "par": _choice(lambda: PARALLEL_MODES), "tier": _choice(lambda: PRICE_TIERS),
    "mem": _bounded("memory_target_pct"),
    "psrc": _choice(lambda: PRICE_SOURCES), "vendor": _choice(lambda: VENDORS),
    "minvram": lambda t: float(parse_number(t, 0, MAX_VRAM_GB, False)),
    "maxusd": lambda t: float(parse_number(t, 0, CUSTOM_MAX_USD_HR, False)),
    "feasible": _bool, "priced": _bool, "cpus": _bool, "gpu": _choice(gpu_ids),
    "stale": lambda t: int(parse_number(t, 1, MAX_STALE_DAYS, True)),
    "tab": _choice(lambda: tuple(TABS)),
}


# ---------------------------------------------------------------- the plan's choices, declared once


@dataclass(frozen=True)
class PlanField:
    """One choice of the plan: its Inputs field (also the link's key), its command-line option and its help. The
    default is Inputs', the parser SCALARS' (bounds from planner.inputs.jobs.BOUNDS, choices from the data files);
    the page's widgets, the link codec and the CLI all read them from here."""

    name: str
    flag: str
    help: str
    choices: Callable[[], Sequence[str]] | None = None  # listed after the help, drawn from the data when asked


def _attention_ids() -> list[str]:
    return [a.id for a in load_rules().attention_backends]


PLAN_FIELDS = (
    PlanField("job", "--workload", "what to run: generate sequences, run inference over samples, or train",
              lambda: JOBS),
    PlanField("seqs", "--sequences", "generate: sequences to generate"),
    PlanField("prompt", "--prompt-tokens", "generate: prompt tokens per sequence (at least 1: a BOS token counts)"),
    PlanField("gen", "--gen-tokens", "generate: new tokens per sequence"),
    PlanField("samples", "--samples", "infer/train: samples (per epoch when training)"),
    PlanField("size", "--input-size", "infer/train: tokens per sample, or a profile's input size (default: the "
              "model's)"),
    PlanField("epochs", "--epochs", "train: epochs (fractions allowed)"),
    PlanField("opt", "--optimizer", "train: the optimizer, for its states' memory", lambda: sorted(OPTIMIZERS)),
    PlanField("ckpt", "--checkpointing", "train: activation checkpointing: recompute activations in the backward "
              "pass (less memory, about one more forward pass of time)"),
    PlanField("accum", "--grad-accum", "train: micro-batches per optimizer step"),
    PlanField("shard", "--sharding", "train on several GPUs: ddp keeps weights, gradients and optimizer states on "
              "every GPU and all-reduces gradients; fsdp (ZeRO-3) shards them and all-gathers weights per layer",
              lambda: SHARDINGS),
    PlanField("batch", "--batch", "per GPU (the micro-batch when training): a number, or auto for the cheapest "
              "batch that fits"),
    PlanField("prec", "--precision", "weights and activations (data/precisions.yaml)", _precisions),
    PlanField("kv", "--kv-dtype", "generate: the KV cache's dtype (auto = the activation dtype)", _kv_dtypes),
    PlanField("attn", "--attention", "the attention backend; sdpa = PyTorch's pick per GPU (data/precisions.yaml)",
              _attention_ids),
    PlanField("pt", "--pytorch", "pin the PyTorch you have, e.g. 1.13.1+cu116, or a version for any of its variants: "
              "a GPU its build ships no kernels for can't run the plan (default: the latest; "
              "data/pytorch_builds.yaml)"),
    PlanField("rt", "--runtime", "the framework or runtime (data/runtimes.yaml): each reaches its own fraction of "
              "peak bandwidth and of each GPU's measured matmul ceiling", _runtimes),
    PlanField("gpus", "--gpus", "GPUs per job (how they share it: the parallelism)"),
    PlanField("par", "--parallel", "how the GPUs share the job: auto (tensor parallel only when the weights don't fit "
              "one GPU), data (a whole copy per GPU; training: DDP or FSDP) or tensor (split every layer, inference; "
              "2 all-reduces per layer over the GPU's link)", lambda: PARALLEL_MODES),
    PlanField("tier", "--price-tier", "RunPod secure cloud, community cloud or spot", lambda: PRICE_TIERS),
    PlanField("mem", "--memory-target", "percent of the memory each GPU reports that a plan may fill (ECC keeps 1/16 "
              "of a data-center GDDR card); the default is vLLM's gpu_memory_utilization, the rest absorbs allocator "
              "fragmentation; an auto batch stays below it, a fixed batch above it runs out of memory"),
)
PLAN_FIELD = {f.name: f for f in PLAN_FIELDS}


def field_help(name: str) -> str:
    """A plan field's help with its choices, as the CLI and the page's tooltips show it."""
    f = PLAN_FIELD[name]
    return f.help + (f" (one of: {', '.join(f.choices())})" if f.choices else "")


# ---------------------------------------------------------------- custom models


def arch_of(m: ModelProfile) -> dict[str, Any] | None:
    """A profile's editable architecture fields (ARCH_FIELDS names), to edit or put in a link; None if it has none."""
    return m.architecture()


def arch_items(arch: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Architecture fields in ARCH_FIELDS order (the form Inputs.arch holds)."""
    return tuple((f.name, arch[f.name]) for f in ARCH_FIELDS if f.name in arch)


def default_arch() -> dict[str, Any]:
    base = load_models().get(DEFAULTS.model)
    return arch_of(base) | {"name": "Custom model"}


def custom_decoder(arch: Mapping[str, Any], source: str = "custom model edited in the planner") -> ModelProfile:
    """Validate architecture fields with the core's model parser (raises DataFileError naming the field)."""
    data = {"id": CUSTOM, "kind": "decoder", "source": source, **dict(arch)}
    return parse_decoder(Record("custom model", f"'{data.get('name', CUSTOM)}'", data))


def pack_spec(text: str) -> str:
    """YAML text -> a URL-safe compressed blob (for uploaded generic profiles)."""
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def spec_link_problem(text: str) -> str | None:
    """Why a model profile can't travel in a share link (None when it can): its packed size."""
    n = len(pack_spec(text))
    if n > MAX_LINK_SPEC_CHARS:
        return (f"this profile packs to {n:,} characters, more than a share link can carry ({MAX_LINK_SPEC_CHARS:,}): "
                "shorten its derivation text or share the file itself")
    return None


def unpack_spec(blob: str) -> str:
    """Inverse of pack_spec; ValueError when the blob is damaged, too long, or expands past MAX_SPEC_BYTES."""
    if len(blob) > MAX_LINK_SPEC_CHARS:
        raise ValueError(f"the model description in the link is {len(blob):,} characters, more than "
                         f"{MAX_LINK_SPEC_CHARS:,}")
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4)), MAX_SPEC_BYTES + 1)
        if len(raw) > MAX_SPEC_BYTES or inflate.unconsumed_tail:
            raise ValueError(f"the model description in the link expands past {MAX_SPEC_BYTES:,} bytes")
        return raw.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError):
        raise ValueError("the model description in the link is damaged (was it cut short?)") from None


@lru_cache(maxsize=32)
def spec_model(text: str) -> ModelProfile:
    """A model profile from YAML text (uploaded or from a link); DataFileError when invalid. Cached by text: a link
    that carries a profile is parsed once, not on every rerun of the page."""
    return parse_model_text(text, "model.yaml", "uploaded model profile")


def resolve_model(inputs: Inputs) -> ModelProfile:
    """The model the inputs name (a preset, or the custom one); raises DataFileError/UnknownNameError."""
    if inputs.model != CUSTOM:
        return load_models().get(inputs.model)
    if inputs.spec:
        return spec_model(inputs.spec)
    return custom_decoder(dict(inputs.arch) or default_arch())


def default_size(m: ModelProfile) -> int:
    """Infer/train input size when none is given: a decoder's context, a generic profile's default L."""
    return m.default_input_size


# ---------------------------------------------------------------- decode / encode


def _one(value: str | Sequence[str]) -> str:
    """A query value (string or list of repeats): the last one, as dict access to st.query_params does."""
    if isinstance(value, str):
        return value
    values = list(value)
    return str(values[-1]) if values else ""


def _derive(arch: dict[str, Any], given: Iterable[str]) -> dict[str, Any]:
    """Fill the fields a link may leave out: kv_heads = heads (multi-head attention), head_dim = hidden / heads
    (left out when it doesn't divide, so the core's message asks for it)."""
    out = dict(arch)
    if "kv_heads" not in given:
        out["kv_heads"] = out["heads"]
    if "head_dim" not in given:
        out.pop("head_dim", None)
        if out["hidden"] % out["heads"] == 0:
            out["head_dim"] = out["hidden"] // out["heads"]
    return out


def _decode_arch(raw: Mapping[str, str], warn: Callable[[str, str], None]) -> tuple[tuple[str, Any], ...] | None:
    """Custom decoder fields from m_* params; None when they can't make a valid model."""
    base = default_arch()
    arch = dict(base)
    given: set[str] = set()
    for f in ARCH_FIELDS:
        if f.param not in raw:
            continue
        text = raw[f.param]
        try:
            if f.kind == "int":
                arch[f.name] = parse_number(text, f.lo, f.hi, True)
            elif f.kind == "bool":
                arch[f.name] = _bool(text)
            elif f.kind == "text":
                if not text.strip():
                    raise ValueError("expected a name")
                arch[f.name] = text.strip()[:80]
            else:
                arch[f.name] = _choice(lambda f=f: f.kind.split("|"))(text)
            given.add(f.name)
        except ValueError as exc:
            warn(f.param, f"{exc}; using {'the default' if f.name in ('kv_heads', 'head_dim') else shown(base[f.name])}")
    for _ in ARCH_FIELDS:  # each round drops the one given value the core objects to
        full = _derive(arch, given)
        try:
            custom_decoder(full)
            return arch_items(full)
        except DataFileError as exc:
            if exc.field not in given:
                break
            given.discard(exc.field)
            arch[exc.field] = base[exc.field]
            warn(ARCH_PARAM.get(exc.field, exc.field), f"{exc.problem}; using the default")
    return None


def decode(params: Mapping[str, str | Sequence[str]]) -> tuple[Inputs, list[LinkWarning]]:
    """Inputs from query parameters, and one warning per parameter that was unknown or invalid."""
    raw = {str(k): _one(v) for k, v in params.items()}
    warnings: list[LinkWarning] = []
    warn = lambda p, t: warnings.append(LinkWarning(p, t))  # noqa: E731
    for key in raw:
        if key not in KNOWN_PARAMS:
            near = suggest(key, sorted(KNOWN_PARAMS))
            warn(key, "unknown parameter, ignored" + (f" (did you mean '{near[0]}'?)" if near else ""))
    values: dict[str, Any] = {}
    model = DEFAULTS.model
    if "model" in raw:
        try:
            model = _choice(lambda: model_ids() + (CUSTOM,))(raw["model"])
        except ValueError as exc:
            warn("model", f"{exc}; using {DEFAULTS.model}")
    if model == CUSTOM:
        if SPEC_PARAM in raw:
            try:
                text = unpack_spec(raw[SPEC_PARAM])
                spec_model(text)
                values["spec"] = text
            except (ValueError, DataFileError) as exc:
                warn(SPEC_PARAM, f"{exc}; using {DEFAULTS.model}")
                model = DEFAULTS.model
        else:
            arch = _decode_arch(raw, warn)
            if arch is None:
                warn("model", f"the custom architecture in the link is not a valid model; using {DEFAULTS.model}")
                model = DEFAULTS.model
            else:
                values["arch"] = arch
    values["model"] = model
    profile = resolve_model(Inputs(**values))
    values["size"] = default_size(profile)
    for name, parse in SCALARS.items():
        if name in raw:
            try:
                values[name] = parse(raw[name])
            except ValueError as exc:
                warn(name, f"{exc}; using {_shown(name, values.get(name, getattr(DEFAULTS, name)))}")
    if values.get("job", DEFAULTS.job) == "generate" and not profile.can_generate:
        if "job" in raw:
            warn("job", f"generate needs a decoder model; {profile.name} is a {profile.kind} profile: using infer")
        values["job"] = "infer"
    if "cmp" in raw:
        values["cmp"], bad = _gpu_list(raw["cmp"])
        for problem in bad:
            warn("cmp", f"{problem}; left out")
    if "own" in raw:
        values["own"], bad = parse_owned(raw["own"], _choice(gpu_ids))
        for problem in bad:
            warn("own", f"{problem}; left out")
    if "myprice" in raw:
        values["myprice"], bad = _prices(raw["myprice"])
        for problem in bad:
            warn("myprice", f"{problem}; left out")
    if raw.get("cal"):
        problem = calibration_problem(raw["cal"])
        if problem:
            warn("cal", f"{problem}; the plan uses the analytic estimate")
        else:
            values["cal"] = raw["cal"]
    return Inputs(**values), warnings


def _shown(name: str, value: Any) -> str:
    """A fallback value as a warning shows it."""
    if name == "batch" and value is None:
        return "auto"
    if name == "gpu" and not value:
        return "the top of the ranking"
    if name == "pt" and not value:
        return "the latest builds"
    return _text(value)


def calibration_problem(text: str) -> str | None:
    """Why a calibration string from a link can't be used (None when it can)."""
    try:
        Fleet.from_query(text)
    except CalibrationError as exc:
        return str(exc)
    except Exception as exc:  # a damaged string must not take the page down
        return f"could not be read ({type(exc).__name__})"
    return None


def _num(x: float | int) -> str:
    """Shortest text that reads back as the same number (1000000, 0.44, 2.5)."""
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return repr(float(x))


def _text(value: Any) -> str:
    if isinstance(value, (bool, int, float)):
        return _num(value)
    return str(value)


def encode(inputs: Inputs) -> dict[str, str]:
    """Query parameters for the inputs, in a stable, readable order."""
    out = {"model": inputs.model}
    if inputs.model == CUSTOM:
        if inputs.spec:
            out[SPEC_PARAM] = pack_spec(inputs.spec)
        else:
            arch = dict(inputs.arch) or default_arch()
            out.update({ARCH_PARAM[k]: _text(v) for k, v in arch.items() if k in ARCH_PARAM})
    out["job"] = inputs.job
    for name in JOB_FIELDS[inputs.job]:
        out[name] = _text(getattr(inputs, name))
    out["batch"] = "auto" if inputs.batch is None else str(inputs.batch)
    out["prec"] = inputs.prec
    if inputs.job == "generate" and inputs.kv != DEFAULTS.kv:
        out["kv"] = inputs.kv
    out["attn"] = inputs.attn
    if inputs.pt:
        out["pt"] = inputs.pt
    out.update(rt=inputs.rt, gpus=str(inputs.gpus), tier=inputs.tier, mem=_text(inputs.mem))
    if inputs.par != DEFAULTS.par:
        out["par"] = inputs.par
    for name in VIEW_FIELDS:
        value = getattr(inputs, name)
        if value == getattr(DEFAULTS, name):
            continue
        if name == "myprice":
            out[name] = ",".join(f"{g}:{_num(v)}" for g, v in value)
        elif name == "cmp":
            out[name] = ",".join(value)
        elif name == "own":
            out[name] = owned_text(value)
        else:
            out[name] = _text(value)
    return out


def query_string(inputs: Inputs) -> str:
    return urlencode(encode(inputs))


def link(base_url: str | None, inputs: Inputs) -> str:
    """The shareable URL: the app's address plus the query string."""
    base = (base_url or "http://localhost:8501/").split("?")[0]
    return f"{base}?{query_string(inputs)}"


# ---------------------------------------------------------------- plans and words


def to_plan(inputs: Inputs, model: ModelProfile) -> Plan:
    """The core Plan the inputs describe (check_plan in estimate_all validates it further)."""
    if inputs.job == "generate":
        workload = Generate(inputs.seqs, inputs.prompt, inputs.gen)
    elif inputs.job == "infer":
        workload = Infer(inputs.samples, inputs.size)
    else:
        workload = Train(inputs.samples, inputs.size, inputs.epochs, inputs.opt, inputs.ckpt, inputs.accum, inputs.shard)
    kv = inputs.kv if inputs.job == "generate" and inputs.kv != "auto" else None
    return Plan(model, workload, inputs.prec, kv, inputs.attn, inputs.rt, inputs.batch, inputs.gpus, inputs.tier,
                inputs.mem / 100, inputs.pt or None, inputs.par)


def size_name(model: ModelProfile) -> str:
    return model.input_size_name


def plan_sentence(inputs: Inputs, model: ModelProfile) -> str:
    """The plan in one plain sentence (page header, exports)."""
    if inputs.job == "generate":
        job = (f"Generate {inputs.seqs:,} sequence{'s' if inputs.seqs != 1 else ''} of {inputs.gen:,} new "
               f"token{'s' if inputs.gen != 1 else ''} "
               f"(prompt {inputs.prompt:,} token{'s' if inputs.prompt != 1 else ''})")
    elif inputs.job == "infer":
        job = (f"Run inference on {inputs.samples:,} sample{'s' if inputs.samples != 1 else ''} of {inputs.size:,} "
               f"{size_name(model)}")
    else:
        job = (f"Train on {inputs.samples:,} samples of {inputs.size:,} {size_name(model)} for "
               f"{_num(inputs.epochs)} epoch{'s' if inputs.epochs != 1 else ''} ({inputs.opt}"
               f"{', activation checkpointing' if inputs.ckpt else ''}"
               f"{f', gradient accumulation {inputs.accum}' if inputs.accum > 1 else ''}"
               f"{', FSDP-sharded over the GPUs' if inputs.shard == 'fsdp' and inputs.gpus > 1 else ''})")
    runtime = load_runtimes().get(inputs.rt).name
    batch = "auto batch" if inputs.batch is None else f"batch {inputs.batch}"
    gpus = f"{inputs.gpus} GPUs per job" if inputs.gpus > 1 else "1 GPU"
    if inputs.gpus > 1 and inputs.par != "auto":
        gpus += f" ({inputs.par} parallel)"
    memory = f", memory filled to at most {_num(inputs.mem)} % of what each GPU reports" if inputs.mem != DEFAULTS.mem else ""
    return (f"{job} with {model.name}, {fmt_count(model.params)} parameters, in {inputs.prec}, "
            f"{runtime}, {inputs.attn} attention{f', PyTorch {inputs.pt}' if inputs.pt else ''}, {batch}, {gpus}"
            f"{memory}, RunPod {inputs.tier} prices.")


# ---------------------------------------------------------------- exports


@dataclass(frozen=True)
class ExportContext:
    """What an export says about where its numbers come from."""

    link: str
    catalog_path: str
    price_source: str
    price_as_of: str
    extra_columns: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # gpu_id -> column -> value
    ranking: Ranking | None = None  # the ranking the rows come from: each GPU's whole-job bill
    mine: Sequence[Mine] = ()  # the user's own cards, rows on top of the ranking


def _header(inputs: Inputs, ctx: ExportContext, model: ModelProfile) -> dict[str, Any]:
    return {"plan": plan_sentence(inputs, model), "link": ctx.link, "inputs": encode(inputs),
            "catalog": ctx.catalog_path, "price_source": ctx.price_source, "prices_as_of": ctx.price_as_of}


def export_json(inputs: Inputs, model: ModelProfile, estimates: Iterable[Estimate], ctx: ExportContext) -> str:
    """The ranking as JSON: the inputs and their link, catalog and price dates, then one row per GPU."""
    rows = []
    for e in estimates:
        row = estimate_row(e, ctx.ranking, stale_after_days=inputs.stale)
        row.update(ctx.extra_columns.get(e.gpu.id, {}))
        rows.append(row)
    mine = [{"owned": m.owned.text(), **estimate_row(m.estimate, m.ranking, stale_after_days=inputs.stale),
             **own_fields(m.cost)} for m in ctx.mine]
    return json.dumps({**_header(inputs, ctx, model), **({"my_gpus": mine} if mine else {}), "ranking": rows},
                      indent=2, default=str)


def export_csv(inputs: Inputs, model: ModelProfile, estimates: Iterable[Estimate], ctx: ExportContext) -> str:
    """The ranking as plain CSV (the header row first, as every CSV reader expects), the user's own cards first
    (column 'yours'); each row also carries the plan's link, the price source and date, so a row alone still says
    where it comes from. Prices count as stale after the page's threshold (inputs.stale)."""
    mine = [(m.estimate, m.ranking, {"yours": m.owned.text()}, own_fields(m.cost)) for m in ctx.mine]
    rows = []
    for e, ranked, first, last in mine + [(e, ctx.ranking, {}, ctx.extra_columns.get(e.gpu.id, {})) for e in estimates]:
        row = {**first, **flat_row(e, ranked, stale_after_days=inputs.stale)}
        price = e.price
        row["price_date"] = price.date.isoformat() if price and price.date else None
        row["price_origin"] = price.origin if price else None
        row["price_source"] = price.source if price else None
        row.update(last)
        row.update(plan_link=ctx.link, prices=f"{ctx.price_source}, as of {ctx.price_as_of}")
        rows.append(row)
    return csv_text(rows)
