"""Shareable links: every planner input (planner.views.plan_inputs.Inputs) as URL query parameters, read back
defensively.

A link is the whole plan. `decode(params)` never raises: an unknown parameter or an invalid value
becomes one warning naming the parameter, and only that value falls back to its default.
`encode(inputs)` always writes the plan itself (model, job and its sizes, precision, runtime, GPUs,
price tier), so a link keeps meaning the same plan when defaults change; view options (filters,
the explained GPU) are written only when they differ from their defaults. A custom decoder travels as its
architecture fields (m_*), any other custom profile packed (m_spec). Pure: no streamlit.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from dataclasses import dataclass, fields
from typing import Any
from collections.abc import Callable, Iterable, Mapping, Sequence
from urllib.parse import urlencode

from planner.base.safe_parse import clean_text, parse_number, shown, text_problem
from planner.base.schema import DataFileError, suggest
from planner.calibration.fit import Fleet
from planner.inputs.bench_result import CalibrationError
from planner.inputs.catalog import CUSTOM_MAX_USD_HR, CUSTOM_MIN_USD_HR
from planner.inputs.models.decoder_fields import ARCH_FIELDS as DECODER_ARCH_FIELDS, ArchField
from planner.inputs.own_gpu import OWN_ID_PREFIX, parse_own_gpu
from planner.inputs.ownership import owned_text, parse_owned
from planner.views.plan_inputs import (CUSTOM, DEFAULTS, MAX_CMP, SCALARS, Inputs, arch_items, choice_parser,
                                       custom_decoder, default_arch, default_size, gpu_ids, model_ids, number_text,
                                       parse_bool, resolve_model, spec_model)


@dataclass(frozen=True)
class LinkField(ArchField):
    """A decoder architecture field (planner.inputs.models.decoder_fields.ARCH_FIELDS) with its link parameter (m_*)."""

    param: str = ""


_PARAMS = {"name": "m_name", "layers": "m_layers", "hidden": "m_hidden", "heads": "m_heads", "kv_heads": "m_kv",
           "head_dim": "m_hd", "ffn": "m_ffn", "ffn_kind": "m_act", "experts": "m_experts",
           "experts_per_token": "m_topk", "shared_ffn": "m_shared", "vocab": "m_vocab", "context": "m_ctx",
           "tied_embeddings": "m_tied", "norm": "m_norm", "learned_pos_emb": "m_pos", "bias": "m_bias"}
ARCH_FIELDS = tuple(LinkField(f.name, f.kind, f.lo, f.hi, _PARAMS[f.name]) for f in DECODER_ARCH_FIELDS)
ARCH_PARAM = {f.name: f.param for f in ARCH_FIELDS}
# A link carries a non-decoder profile packed (zlib + base64). 16,000 characters keep the whole URL far under what
# browsers and Streamlit's server accept (an 877,617-character link was answered HTTP 400); a profile inflates to at
# most MAX_SPEC_BYTES, so a small link can't expand into a large document.
MAX_LINK_SPEC_CHARS = 16_000
MAX_SPEC_BYTES = 256_000
SPEC_PARAM = "m_spec"  # a non-decoder (generic) profile travels as its compressed YAML text
# A list parameter (cmp, own, myprice) names each catalog GPU at most once (49 GPUs and CPUs today): entries past
# MAX_LIST_ENTRIES are not read, so a link of 16,000 bad entries costs no more than one of 128 (each bad entry is a
# 'did you mean' search over the catalog)
MAX_LIST_ENTRIES = 128
MAX_UNKNOWN_NAMED = 5  # unknown parameters named one by one (each with its 'did you mean'); the rest are counted

JOB_FIELDS = {"generate": ("seqs", "prompt", "gen"), "infer": ("samples", "size"),
              "train": ("samples", "size", "epochs", "tokens", "opt", "ckpt", "accum", "shard", "lay",
                         "gbatch")}
VIEW_FIELDS = ("psrc", "myprice", "cal", "stale", "vendor", "minvram", "maxusd", "feasible", "priced", "cpus", "gpu",
               "cmp", "own", "tab", "srate", "sttft", "stpot", "slen")
CLUSTER_FIELDS = ("node", "fab")  # GPUs per node and Gb/s per node between nodes (0: the catalog's)
KNOWN_PARAMS = ({f.name for f in fields(Inputs)} - {"arch", "spec"}) | set(ARCH_PARAM.values()) | {SPEC_PARAM}


@dataclass(frozen=True)
class LinkWarning:
    param: str
    text: str

    def __str__(self) -> str:  # the name as typed may be anything: a short, plain excerpt of it
        return f"Link parameter {shown(clean_text(self.param))}: {self.text}"


def _entries(text: str) -> tuple[list[str], int]:
    """A list parameter's comma-separated entries, at most MAX_LIST_ENTRIES of them, and how many were not read."""
    items = text.split(",", MAX_LIST_ENTRIES)
    rest = items.pop().count(",") + 1 if len(items) > MAX_LIST_ENTRIES else 0
    return [s.strip() for s in items if s.strip()], rest


def _list_warning(problems: list[str], unread: int) -> str | None:
    """One line for a list parameter: its first problem, how many more there were and how many entries went unread."""
    if not problems and not unread:
        return None
    parts = [f"{problems[0]}; left out"] if problems else []
    if len(problems) > 1:
        parts.append(f"{len(problems) - 1:,} more left out")
    if unread:
        parts.append(f"{unread:,} more not read (a link's list is read up to {MAX_LIST_ENTRIES} entries)")
    return "; ".join(parts)


# ---------------------------------------------------------------- list values (raise nothing: problems listed)


def _gpu_list(items: list[str]) -> tuple[tuple[str, ...], list[str]]:
    """GPU ids: (the valid ones, problems with the others)."""
    ok, bad = [], []
    for item in items:
        try:
            gid = choice_parser(gpu_ids)(item)
            if gid not in ok:
                ok.append(gid)
        except ValueError as exc:
            bad.append(str(exc))
    if len(ok) > MAX_CMP:
        bad.append(f"at most {MAX_CMP} GPUs; kept the first {MAX_CMP}")
        ok = ok[:MAX_CMP]
    return tuple(ok), bad


def _prices(items: list[str]) -> tuple[tuple[tuple[str, float], ...], list[str]]:
    """['gpu-id:usd', ...] -> ((gpu_id, usd_hr), ...) sorted by id, and problems with bad entries."""
    out: dict[str, float] = {}
    bad = []
    for item in items:
        gid, sep, usd = item.partition(":")
        try:
            if not sep:
                raise ValueError(f"{shown(item)} is not gpu-id:dollars-per-hour")
            gid = choice_parser(gpu_ids)(gid)
            value = parse_number(usd, CUSTOM_MIN_USD_HR, CUSTOM_MAX_USD_HR, False)
            out[gid] = float(value)
        except ValueError as exc:
            bad.append(str(exc))
    return tuple(sorted(out.items())), bad


# ---------------------------------------------------------------- a custom profile packed


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
                arch[f.name] = parse_bool(text)
            elif f.kind == "text":
                if not text.strip():
                    raise ValueError("expected a name")
                arch[f.name] = text.strip()[:80]
            else:
                arch[f.name] = choice_parser(lambda f=f: f.kind.split("|"))(text)
            given.add(f.name)
        except ValueError as exc:
            fallback = "the default" if f.name in ("kv_heads", "head_dim") else shown(base[f.name])
            warn(f.param, f"{exc}; using {fallback}")
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
    unknown = [key for key in raw if key not in KNOWN_PARAMS]
    for key in unknown[:MAX_UNKNOWN_NAMED]:
        near = suggest(key, sorted(KNOWN_PARAMS))
        warn(key, "unknown parameter, ignored" + (f" (did you mean '{near[0]}'?)" if near else ""))
    if len(unknown) > MAX_UNKNOWN_NAMED:
        warn(unknown[MAX_UNKNOWN_NAMED], f"and {len(unknown) - MAX_UNKNOWN_NAMED:,} more unknown parameters from "
                                         "this one on, ignored")
    for key in [k for k in raw if k in KNOWN_PARAMS]:  # text no reader can see or no encoder can write
        problem = text_problem(raw[key])
        if problem:
            warn(key, f"the value {problem}; ignored")
            del raw[key]
    values: dict[str, Any] = {}
    model = DEFAULTS.model
    if "model" in raw:
        try:
            model = choice_parser(lambda: model_ids() + (CUSTOM,))(raw["model"])
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
    gpu = values.get("gpu", "")
    if gpu.startswith(OWN_ID_PREFIX) and gpu != (parse_own_gpu(values["mygpu"]).id if values.get("mygpu") else ""):
        warn("gpu", "names a GPU you described, but the link describes no such GPU (mygpu); using the top of the "
                    "ranking")
        values["gpu"] = ""
    if values.get("job", DEFAULTS.job) == "generate" and not profile.can_generate:
        if "job" in raw:
            warn("job", f"generate needs a model that decodes token by token; {profile.name} cannot ({profile.kind} "
                        "profile): using infer")
        values["job"] = "infer"
    for name in ("cmp", "own", "myprice"):
        if name not in raw:
            continue
        items, unread = _entries(raw[name])
        if name == "cmp":
            values[name], bad = _gpu_list(items)
        elif name == "own":
            values[name], bad = parse_owned(",".join(items), choice_parser(gpu_ids))
        else:
            values[name], bad = _prices(items)
        line = _list_warning(bad, unread)
        if line:
            warn(name, line)
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
    if name == "tf" and not value:
        return "a current release"
    if name == "mygpu" and not value:
        return "none of yours"
    if name in CLUSTER_FIELDS and not value:
        return "the catalog's"
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


def _text(value: Any) -> str:
    if isinstance(value, (bool, int, float)):
        return number_text(value)
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
    if inputs.tf:  # the transformers release, when stated
        out["tf"] = inputs.tf
    out.update(rt=inputs.rt, gpus=str(inputs.gpus), tier=inputs.tier, mem=_text(inputs.mem))
    if inputs.par != DEFAULTS.par:
        out["par"] = inputs.par
    for name in CLUSTER_FIELDS:  # your cluster's nodes and network, when stated
        if getattr(inputs, name):
            out[name] = _text(getattr(inputs, name))
    if inputs.host != DEFAULTS.host:  # the host CPU's speed, when stated
        out["host"] = _text(inputs.host)
    if inputs.prov != DEFAULTS.prov:  # the providers whose prices rank the plan
        out["prov"] = inputs.prov
    if inputs.mygpu:
        out["mygpu"] = inputs.mygpu
    for name in VIEW_FIELDS:
        value = getattr(inputs, name)
        if value == getattr(DEFAULTS, name):
            continue
        if name == "myprice":
            out[name] = ",".join(f"{g}:{number_text(v)}" for g, v in value)
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
