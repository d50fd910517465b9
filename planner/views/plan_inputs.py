"""The plan's inputs: every choice on the page as one `Inputs` value, each declared once (`PLAN_FIELDS`: its link key,
command-line option and help; `SCALARS`: its parser), the custom models a plan may name, and the core Plan the inputs
describe, with the plan in one sentence. The link codec (planner.views.share) and the CLI read them from here. Pure: no
streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from collections.abc import Callable, Mapping, Sequence

from planner.base.safe_parse import TextError, check_text_values, parse_number, shown
from planner.base.schema import DataFileError, Record, UnknownNameError, suggest
from planner.engine.plan import MEMORY_TARGET_DEFAULT_PCT, PARALLEL_MODES, Plan
from planner.inputs.own_gpu import OWN_ID_PREFIX, OWN_ID_RE, parse_own_gpu
from planner.inputs.builds import load_builds
from planner.inputs.cloud_prices import RUNPOD, load_cloud_prices, parse_providers
from planner.inputs.catalog import (CUSTOM_MAX_USD_HR, MAX_STALE_DAYS, MAX_VRAM_GB, PRICE_TIERS, STALE_AFTER_DAYS,
                                    load_catalog)
from planner.inputs.jobs import AUTO_SHARDING, BOUNDS, OPTIMIZERS, SHARDINGS, Generate, Infer, Train
from planner.inputs.layouts import parse_layout
from planner.inputs.models import ModelProfile, load_models, parse_decoder, parse_model_text
from planner.inputs.models.decoder_fields import ARCH_FIELDS as DECODER_ARCH_FIELDS
from planner.inputs.ownership import Owned
from planner.inputs.precisions import load_rules
from planner.inputs.rotary_sync import parse_version
from planner.inputs.serving_trace import LENGTH_SPREADS
from planner.inputs.runtimes import RuntimeProfile, load_runtimes
from planner.views.format import fmt_count

CUSTOM = "custom"  # the model id of a model edited in the page or uploaded
JOBS = ("generate", "infer", "train")
VENDORS = ("all", "NVIDIA", "AMD", "Intel")
PRICE_SOURCES = ("snapshot", "live")
MAX_CMP = 6  # GPUs compared in the batch-size chart
# The Serving tab's bounds: requests per second to size for, p95 targets (ms)
MAX_SERVING_RATE = 100_000.0
MAX_TTFT_MS = 60_000.0
MAX_TPOT_MS = 10_000.0
# The page's tabs: link id -> label; the first one is open by default
TABS = {"explain": "Explain a GPU", "cost-time": "Cost vs time", "roofline": "Roofline", "batch": "Batch size",
        "memory": "Memory", "serving": "Serving", "accuracy": "Accuracy"}


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
    tokens: float = 0.0  # training tokens in place of samples x epochs (0 = not given)
    opt: str = "adamw"
    ckpt: bool = False
    accum: int = 1
    shard: str = "ddp"
    lay: str = ""  # the training layout as planner.inputs.layouts reads it: '' (none), 'auto', 'tp=2,pp=4,cp=1,v=2'
    gbatch: int = 0  # the global batch (0 = micro-batch x grad accumulation x data-parallel ranks)
    batch: int | None = None
    prec: str = "bf16"
    kv: str = "auto"
    attn: str = "sdpa"
    pt: str = ""
    tf: str = ""  # the Hugging Face transformers release pytorch-eager runs (Plan.transformers; '' = a current one)
    rt: str = "pytorch-eager"
    gpus: int = 1
    par: str = "auto"  # how the GPUs share the job (PARALLEL_MODES)
    node: int = 0  # GPUs per node of your cluster (0 = each GPU's catalog node)
    fab: float = 0.0  # network between nodes, Gb/s per node (0 = each GPU's catalog fabric)
    host: float = 1.0  # the host CPU's single-thread speed over the reference hosts' (planner.engine.host_speed)
    tier: str = "secure"
    prov: str = RUNPOD  # the providers whose prices rank the plan, comma-separated (planner.inputs.cloud_prices)
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
    mygpu: str = ""  # a GPU the catalog lacks, as planner.inputs.own_gpu reads it ('' = none)
    # the Serving tab: requests/s to size a deployment for (0 = none: latency per concurrency only) and the p95
    # latency targets, ms (time to first token, time per output token)
    srate: float = 0.0
    sttft: float = 1000.0
    stpot: float = 50.0
    slen: str = "fixed"  # the requests' lengths: each at the job's (fixed) or spread as ShareGPT's (sharegpt)

    @property
    def custom_prices(self) -> dict[str, float]:
        return dict(self.myprice)


DEFAULTS = Inputs()


# ---------------------------------------------------------------- value parsers (raise ValueError(problem))


def _bounded(name: str) -> Callable[[str], float | int]:
    """A parser for the job input `name` within its planner.inputs.jobs.BOUNDS."""
    b = BOUNDS[name]
    return lambda t: parse_number(t, b.lo, b.hi, b.integer)


def parse_bool(text: str) -> bool:
    """1, true, yes, on or 0, false, no, off, '' (any case) as a bool; ValueError otherwise."""
    t = text.strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected 1 or 0, got {shown(text)}")


def choice_parser(options: Callable[[], Sequence[str]], case: bool = False) -> Callable[[str], str]:
    """A parser for one of options() (any case unless `case`): ValueError naming the nearest ones, or listing them."""
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


def _unless_zero(name: str) -> Callable[[str], float | int]:
    """A parser for an optional input within BOUNDS[name]: '', '0' or 'auto' for none (0)."""
    parse = _bounded(name)
    return lambda t: 0 if str(t).strip().lower() in ("", "0", "auto") else parse(t)


def _batch(text: str) -> int | None:
    return None if text.strip().lower() in ("auto", "") else _bounded("batch")(text)


def gpu_ids() -> tuple[str, ...]:
    return load_catalog().ids()


def model_ids() -> tuple[str, ...]:
    return tuple(m.id for m in load_models().models)


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


def providers() -> tuple[str, ...]:
    """The providers with prices: RunPod, then every provider of data/prices/clouds."""
    return load_cloud_prices().providers()


def _providers(text: str) -> str:
    """Providers as one comma-separated text in the order given, each once ('all': every one); ValueError naming an
    unknown one."""
    return ",".join(parse_providers(text, providers()))


def _transformers(text: str) -> str:
    """A transformers release ('4.40.2'), or '' for a current one; ValueError naming the field otherwise."""
    text = str(text).strip()
    if text:
        parse_version(text)
    return text


def _explained_gpu(text: str) -> str:
    """The GPU Explain shows: a catalog id (did-you-mean otherwise), or the id of a GPU you described ('own-...',
    checked against that description where the link is read)."""
    if str(text).startswith(OWN_ID_PREFIX) and OWN_ID_RE.fullmatch(str(text)):
        return str(text)
    return choice_parser(gpu_ids)(text)


SCALARS: dict[str, Callable[[str], Any]] = {
    "job": choice_parser(lambda: JOBS),
    "seqs": _bounded("sequences"), "prompt": _bounded("prompt_tokens"), "gen": _bounded("gen_tokens"),
    "samples": _bounded("samples"), "size": _bounded("input_size"), "epochs": _bounded("epochs"),
    "tokens": _bounded("train_tokens"),
    "opt": choice_parser(lambda: sorted(OPTIMIZERS)), "ckpt": parse_bool, "accum": _bounded("grad_accum"),
    "shard": choice_parser(lambda: SHARDINGS),
    "lay": lambda t: parse_layout(t).text(), "gbatch": _bounded("global_batch"),
    "batch": _batch, "prec": choice_parser(_precisions), "kv": choice_parser(_kv_dtypes), "attn": _attention,
    "pt": _pytorch, "tf": _transformers,
    "rt": choice_parser(_runtimes), "gpus": _bounded("gpus"), "par": choice_parser(lambda: PARALLEL_MODES),
    "node": _unless_zero("node_gpus"), "fab": _unless_zero("fabric_gbits_per_node"),
    "host": lambda t: float(_bounded("host_speed")(t)),
    "tier": choice_parser(lambda: PRICE_TIERS), "prov": _providers,
    "mem": _bounded("memory_target_pct"),
    "psrc": choice_parser(lambda: PRICE_SOURCES), "vendor": choice_parser(lambda: VENDORS),
    "minvram": lambda t: float(parse_number(t, 0, MAX_VRAM_GB, False)),
    "maxusd": lambda t: float(parse_number(t, 0, CUSTOM_MAX_USD_HR, False)),
    "feasible": parse_bool, "priced": parse_bool, "cpus": parse_bool, "gpu": _explained_gpu,
    "mygpu": lambda t: parse_own_gpu(t).text() if str(t).strip() else "",
    "stale": lambda t: int(parse_number(t, 1, MAX_STALE_DAYS, True)),
    "tab": choice_parser(lambda: tuple(TABS)),
    "srate": lambda t: float(parse_number(t, 0, MAX_SERVING_RATE, False)),
    "sttft": lambda t: float(parse_number(t, 1, MAX_TTFT_MS, False)),
    "stpot": lambda t: float(parse_number(t, 1, MAX_TPOT_MS, False)),
    "slen": choice_parser(lambda: LENGTH_SPREADS),
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


def _span(name: str) -> str:
    """'1 to 72' for BOUNDS[name], as a field's help shows it."""
    b = BOUNDS[name]
    return f"{b.lo:,g} to {b.hi:,g}"


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
    PlanField("tokens", "--train-tokens", "train: tokens to train on, e.g. 1e12, in place of samples x epochs: the "
              "whole samples of the input size that hold them, one epoch (0 = samples and epochs); the job's time and "
              "cost are then those of training on that many tokens"),
    PlanField("opt", "--optimizer", "train: the optimizer, for its states' memory", lambda: sorted(OPTIMIZERS)),
    PlanField("ckpt", "--checkpointing", "train: activation checkpointing: recompute activations in the backward "
              "pass (less memory, about one more forward pass of time)"),
    PlanField("accum", "--grad-accum", "train: micro-batches per optimizer step"),
    PlanField("shard", "--sharding", "train on several GPUs: ddp keeps weights, gradients and optimizer states on "
              "every GPU and all-reduces gradients; zero1 partitions the optimizer states, zero2 the gradients too "
              "(DeepSpeed ZeRO stages 1 and 2); fsdp (ZeRO-3) shards weights too and all-gathers them per layer; "
              "auto picks the cheapest of these that fits",
              lambda: SHARDINGS),
    PlanField("lay", "--layout", "train: the model-parallel layout, e.g. tp=2,pp=4,v=2,cp=2: tensor parallel with "
              "sequence parallel (tp, inside a node), pipeline stages (pp; v virtual stages per GPU = interleaved "
              "1F1B), context parallel for long sequences (cp); the data-parallel ranks are the GPUs left over, "
              "sharded as --sharding says; auto picks the cheapest layout that fits; empty = none"),
    PlanField("gbatch", "--global-batch", "train: samples per optimizer step over all data-parallel ranks (0 = "
              "micro-batch x grad accum x data-parallel ranks); sets the gradient accumulation, i.e. a pipeline's "
              "micro-batches per step"),
    PlanField("batch", "--batch", "per GPU (the micro-batch when training): a number, or auto for the cheapest "
              "batch that fits"),
    PlanField("prec", "--precision", "weights and activations (data/precisions.yaml)", _precisions),
    PlanField("kv", "--kv-dtype", "generate: the KV cache's dtype (auto = the activation dtype)", _kv_dtypes),
    PlanField("attn", "--attention", "the attention backend; sdpa = PyTorch's pick per GPU (data/precisions.yaml)",
              _attention_ids),
    PlanField("pt", "--pytorch", "pin the PyTorch you have, e.g. 1.13.1+cu116, or a version for any of its variants: "
              "a GPU its build ships no kernels for can't run the plan (default: the latest; "
              "data/pytorch_builds.yaml)"),
    PlanField("tf", "--transformers", "the Hugging Face transformers release the model runs in (pytorch-eager), "
              "e.g. 4.40.2; blank = a current one. The FlashAttention-2 classes of Qwen2 and Mistral-family models in "
              "some releases (4.36-4.47: data/runtimes.yaml pytorch-eager rotary_sync) sync the host once a layer"),
    PlanField("rt", "--runtime", "the framework or runtime (data/runtimes.yaml): each reaches its own fraction of "
              "peak bandwidth and of each GPU's measured matmul ceiling", _runtimes),
    PlanField("gpus", "--gpus", "GPUs per job (how they share it: the parallelism)"),
    PlanField("par", "--parallel", "how the GPUs share the job: auto (tensor parallel only when the weights don't fit "
              "one GPU), data (a whole copy per GPU; training: DDP or FSDP) or tensor (split every layer, inference; "
              "2 all-reduces per layer over the GPU's link)", lambda: PARALLEL_MODES),
    PlanField("node", "--gpus-per-node", "GPUs per node (server) of your cluster, "
              f"{_span('node_gpus')}, e.g. 4 for 4-GPU boards: collectives of more GPUs cross the network between "
              "nodes; a GPU whose node holds fewer keeps its own (0 = each GPU's node as the catalog gives it)"),
    PlanField("fab", "--fabric-gbps", "your cluster's network between nodes in Gb/s (gigabits per second) per node "
              f"({_span('fabric_gbits_per_node')}), shared by the node's GPUs, e.g. 3200 for 8 x 400 Gb/s InfiniBand "
              "NDR; a GPU with no known network between nodes keeps none (0 = each GPU's fabric as the catalog gives "
              "it, data/interconnects.yaml)"),
    PlanField("host", "--host-speed", "your host CPU's single-thread speed over that of the hosts the runtimes' "
              f"host constants were measured on ({_span('host_speed')}; 1 = theirs, H100 and A100 servers of "
              "2023-25, e.g. the ratio of the two CPUs' PassMark single-thread ratings): each runtime's host-side "
              "time (Python dispatch per kernel, a serving engine's CPU work per step and per sequence, its front "
              "end's per request) is divided by it, the GPU's own time not (planner/engine/host_speed.py)"),
    PlanField("tier", "--price-tier", "secure (a data center's on-demand: RunPod secure cloud, Lambda, Nebius...), "
              "community (a marketplace's hosts: RunPod community cloud, Vast.ai) or spot", lambda: PRICE_TIERS),
    PlanField("prov", "--providers", "the providers you rent from, comma-separated, or all: per GPU and tier the "
              "cheapest of their prices ranks the plan (data/prices/clouds)", providers),
    PlanField("mygpu", "--my-gpu", "a GPU the catalog lacks, ranked with the rest and marked yours: "
              "'name=My GPU;mem=GB;bw=GB/s;fp32=TFLOPS[;tf32=..;fp16=..;bf16=..;fp8=..;int8=..];cc=8.9|gfx942|unknown"
              "[;usd=$/GPU-h]' (dense rates); the CLI also takes a YAML file of it (docs/SCHEMAS.md, your own GPU)"),
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
    """A profile's editable architecture fields (planner.inputs.models.decoder_fields.ARCH_FIELDS names), to edit or
    put in a link; None if it has none."""
    return m.architecture()


def arch_items(arch: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Architecture fields in planner.inputs.models.decoder_fields.ARCH_FIELDS order (the form Inputs.arch holds)."""
    return tuple((f.name, arch[f.name]) for f in DECODER_ARCH_FIELDS if f.name in arch)


def default_arch() -> dict[str, Any]:
    base = load_models().get(DEFAULTS.model)
    return arch_of(base) | {"name": "Custom model"}


def custom_decoder(arch: Mapping[str, Any], source: str = "custom model edited in the planner") -> ModelProfile:
    """Validate architecture fields with the core's model parser (raises DataFileError naming the field); a name
    typed in the page is checked as a link's or a file's is (safe_parse.check_text_values)."""
    data = {"id": CUSTOM, "kind": "decoder", "source": source, **dict(arch)}
    try:
        check_text_values(data, "custom model")
    except TextError as exc:
        raise DataFileError("custom model", f"'{CUSTOM}'", exc.field, exc.problem) from None
    return parse_decoder(Record("custom model", f"'{data.get('name', CUSTOM)}'", data))


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


# ---------------------------------------------------------------- plans and words


def number_text(x: float | int) -> str:
    """Shortest text that reads back as the same number (1000000, 0.44, 2.5)."""
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, int) or float(x).is_integer():
        return str(int(x))
    return repr(float(x))


# The plan sentence's words for a multi-GPU training layout (ddp: none, the default; auto: _sharding_phrase)
SHARDING_PHRASES = {"zero1": ", ZeRO-1 (optimizer states partitioned over the GPUs)",
                    "zero2": ", ZeRO-2 (optimizer states and gradients partitioned over the GPUs)",
                    "fsdp": ", FSDP-sharded over the GPUs"}
SHARDING_NAMES = {"ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2", "fsdp": "FSDP"}


def _sharding_phrase(shard: str, runtime: RuntimeProfile) -> str:
    """The plan sentence's words for `shard`; auto names the layouts the runtime runs (its training block)."""
    if shard != AUTO_SHARDING:
        return SHARDING_PHRASES.get(shard, "")
    names = [SHARDING_NAMES[s] for s in (runtime.training.shardings() if runtime.training else SHARDING_NAMES)]
    return f", the cheapest of {', '.join(names[:-1])} and {names[-1]} that fits" if len(names) > 1 else \
        f", {names[0]}"


def layout_phrase(text: str) -> str:
    """A layout's words for the plan sentence; a layout that does not parse is shown as typed (to_plan names the
    problem)."""
    try:
        return parse_layout(text).describe()
    except ValueError:
        return shown(text)


def to_plan(inputs: Inputs, model: ModelProfile) -> Plan:
    """The core Plan the inputs describe (check_plan in estimate_all validates it further)."""
    if inputs.job == "generate":
        workload = Generate(inputs.seqs, inputs.prompt, inputs.gen)
    elif inputs.job == "infer":
        workload = Infer(inputs.samples, inputs.size)
    elif inputs.tokens:
        workload = Train.for_tokens(inputs.tokens, inputs.size, optimizer=inputs.opt, checkpointing=inputs.ckpt,
                                    grad_accum=inputs.accum, sharding=inputs.shard, layout=parse_layout(inputs.lay),
                                    global_batch=inputs.gbatch)
    else:
        workload = Train(inputs.samples, inputs.size, inputs.epochs, inputs.opt, inputs.ckpt, inputs.accum,
                         inputs.shard, layout=parse_layout(inputs.lay), global_batch=inputs.gbatch)
    kv = inputs.kv if inputs.job == "generate" and inputs.kv != "auto" else None
    return Plan(model, workload, inputs.prec, kv, inputs.attn, inputs.rt, inputs.batch, inputs.gpus, inputs.tier,
                inputs.mem / 100, inputs.pt or None, inputs.par, inputs.node or None, inputs.fab or None,
                inputs.host, inputs.tf or None)


def cluster_phrase(inputs: Inputs) -> str:
    """'nodes of 4 GPUs with 800 Gb/s between nodes per node': the cluster the inputs state ('' for none)."""
    nodes = f"nodes of {inputs.node} GPUs" if inputs.node else "nodes"
    return nodes + (f" with {number_text(inputs.fab)} Gb/s between nodes per node" if inputs.fab else "")


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
        amount = (f"{inputs.tokens:,.0f} tokens ({Train.for_tokens(inputs.tokens, inputs.size).samples_per_epoch:,} "
                  f"samples of {inputs.size:,} {size_name(model)}, one epoch)" if inputs.tokens else
                  f"{inputs.samples:,} samples of {inputs.size:,} {size_name(model)} for "
                  f"{number_text(inputs.epochs)} epoch{'s' if inputs.epochs != 1 else ''}")
        job = (f"Train on {amount} ({inputs.opt}"
               f"{', activation checkpointing' if inputs.ckpt else ''}"
               f"{f', gradient accumulation {inputs.accum}' if inputs.accum > 1 else ''}"
               f"{f', global batch {inputs.gbatch:,}' if inputs.gbatch else ''}"
               f"{_sharding_phrase(inputs.shard, load_runtimes().get(inputs.rt)) if inputs.gpus > 1 else ''}"
               f"{f', layout {layout_phrase(inputs.lay)}' if inputs.lay and inputs.gpus > 1 else ''})")
    runtime = load_runtimes().get(inputs.rt).name
    batch = "auto batch" if inputs.batch is None else f"batch {inputs.batch}"
    gpus = f"{inputs.gpus} GPUs per job" if inputs.gpus > 1 else "1 GPU"
    if inputs.gpus > 1 and inputs.par != "auto":
        gpus += f" ({inputs.par} parallel)"
    if inputs.gpus > 1 and (inputs.node or inputs.fab):
        gpus += f" in {cluster_phrase(inputs)}"
    memory = (f", memory filled to at most {number_text(inputs.mem)} % of what each GPU reports"
              if inputs.mem != DEFAULTS.mem else "")
    host = (f", a host CPU {number_text(inputs.host)}x the reference hosts' single-thread speed"
            if inputs.host != DEFAULTS.host else "")
    trains_as = load_rules().precision(inputs.prec).train_as if inputs.job == "train" else None
    precision = (f"{inputs.prec} (trained as {trains_as}, Transformer Engine's FP8 recipe)" if trains_as
                 else inputs.prec)
    return (f"{job} with {model.name}, {fmt_count(model.params)} parameters, in {precision}, "
            f"{runtime}, {inputs.attn} attention{f', PyTorch {inputs.pt}' if inputs.pt else ''}"
            f"{f', transformers {inputs.tf}' if inputs.tf else ''}, {batch}, {gpus}"
            f"{memory}{host}, RunPod {inputs.tier} prices.")
