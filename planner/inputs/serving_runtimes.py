"""Serving engines' schedulers from data/serving.yaml: each one's default step budget and request cap (per GPU memory
tier), whether a step mixes prompt chunks with decodes, whether a prompt may be split, the GPU memory share it plans
for, and its launch command. planner.engine.serving_sim simulates them; planner.views.skyserve hands them off.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, replace
from typing import NamedTuple
from functools import lru_cache
from pathlib import Path

from planner import DATA_DIR
from planner.base.schema import Record, UnknownNameError, load_yaml, suggest, unique_ids

SERVING_FILE = DATA_DIR / "serving.yaml"
MAX_TIERS = 8
MAX_KV_DTYPES = 8
MAX_ENGINES = 8
MAX_HOST_US_PER_SEQ = 1_000.0  # a millisecond of CPU per sequence per step: beyond any engine's profile
MAX_GRAPH_CONTEXT = 10_000_000  # tokens: beyond any model's context
MAX_STEP_HOST_US = 100_000.0  # 0.1 s of CPU per step: beyond any engine's loop
MAX_NUM_SEQS = 65_536  # requests running at once: beyond any engine's cap
MAX_TOKEN_BUDGET = 1 << 20  # tokens one step carries: beyond any engine's budget
MAX_DISPATCH_US = 1_000.0  # a millisecond of CPU to launch one kernel: beyond any Python dispatcher
MAX_TOKENIZE_US_PER_TOKEN = 1_000.0  # a millisecond of CPU per prompt token: beyond any tokenizer
MAX_PREFIX_BLOCK_TOKENS = 4_096  # tokens per prefix-cache block: beyond any engine's KV block
# a first token waits for no later step's host work, or for the next one's (outputs processed one step late)
FIRST_TOKEN_STEPS = (0, 1)
# a generation without CUDA graphs (engines' eager_decode) decodes eagerly from the first KV position on
EAGER_FROM_FIRST_POSITION = 1


class EngineGeneration(NamedTuple):
    """One engine generation of SchedulerProfile.engines (data/serving.yaml `engines`; _engines parses it)."""
    id: str
    host_us_per_seq: float
    step_host_us: float | None  # None: the runtime profile's (the current generation's)
    eager_prefill: bool
    first_token_steps: int
    eager_decode: bool
    tp_step_host_us: float


# the placeholders a launch command may use (planner.views.skyserve fills them)
LAUNCH_FIELDS = ("model", "tp", "max_num_seqs", "token_budget", "max_model_len", "memory_fraction", "port",
                 "kv_tokens")


@dataclass(frozen=True)
class Tier:
    """The scheduler's defaults on a GPU of at least `min_vram_gib` whose id contains none of `except_gpus`."""

    min_vram_gib: float
    max_num_seqs: int  # requests running at once (vLLM max_num_seqs, SGLang max_running_requests, llama.cpp slots)
    token_budget: int  # tokens one step may carry (max_num_batched_tokens, chunked_prefill_size, max_num_tokens)
    except_gpus: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scheduler:
    """One serving engine's scheduling as the simulation needs it, resolved for one GPU (see SchedulerProfile)."""

    id: str
    name: str
    efficiency_of: str  # the runtime profile (data/runtimes.yaml) whose efficiencies time its steps
    max_num_seqs: int
    token_budget: int
    mixed_batches: bool  # a step carries prompt chunks and decodes together (False: a step prefills or decodes)
    chunked_prefill: bool  # a prompt may be split over steps (False: it enters whole, within the token budget)
    memory_fraction: float  # share of the GPU's memory the engine plans for (weights, activations, KV cache)
    # share of the running requests' remaining output tokens kept free in the KV cache when admitting a request
    # (SGLang's new_token_ratio; 1.0: TensorRT-LLM's GUARANTEED_NO_EVICT, every remaining output reserved, so
    # nothing is preempted); 0: admit on the prompt alone and preempt when decodes run out (vLLM)
    reserve_output_share: float = 0.0
    # the engine can split prefill and decode over separate servers, moving each prompt's KV cache between them
    disaggregated: bool = False
    # a step's CPU work (scheduling, metadata) runs under the GPU's previous step instead of before it (SGLang's
    # overlap scheduler): the runtime profile's step_host_us is not added to its steps
    host_overlapped: bool = False
    # decode steps per scheduling round (vLLM 0.5.4-0.6's --num-scheduler-steps, multi-step scheduling): the
    # scheduler runs, and admits new requests, only once per round; its per-step CPU work is paid once per round
    steps_per_round: int = 1
    # seconds a request spends in the engine's front end before the scheduler sees it (HTTP and OpenAI server,
    # tokenisation), one request at a time (serving_sim.front_end_entries): added to its TTFT and end-to-end time,
    # not to the GPU's steps
    request_overhead_s: float = 0.0
    # microseconds of serial CPU work per sequence in a step (scheduling it, building its inputs, processing its
    # output), on top of the runtime profile's per-step step_host_us; an engine generation's (SchedulerProfile.engines)
    host_us_per_seq: float = 0.0
    # an engine generation's own serial CPU microseconds per step, in place of the runtime profile's step_host_us
    # (vLLM's V0 loop, SchedulerProfile.step_host_us); None: the runtime profile's, the current generation's
    step_host_us: float | None = None
    # an engine generation's CPU microseconds to dispatch each kernel of a prefill step, run eagerly (vLLM V0:
    # SchedulerProfile.eager_prefill, eager PyTorch's per-kernel time); 0: its prefills launched as its decodes
    prefill_host_us_per_kernel: float = 0.0
    # the most sequences a decode step replays a CUDA graph for; a decode step of more is dispatched eagerly, at
    # prefill_host_us_per_kernel a kernel (SchedulerProfile.eager_decode_above: vLLM V0, 256); 0: no such limit
    eager_decode_above: int = 0
    # the KV position from which its decode steps are dispatched eagerly too, at prefill_host_us_per_kernel a kernel
    # (Efficiency.eager_decode_from; 1: every decode step, a run with vLLM's --enforce-eager: no CUDA/HIP graph is
    # captured); 0: its decode steps replay graphs
    eager_decode_from: int = 0
    # steps of host work a request's first token waits for after its prefill step (SchedulerProfile.first_token_steps:
    # vLLM V0 0.6-0.10 turns a step's tokens into outputs during the next step); 0: at the end of that step
    first_token_steps: int = 0
    # seconds of the front end's CPU work per prompt token (tokenising the prompt text), on top of request_overhead_s
    tokenize_s_per_token: float = 0.0
    # the engine mixes prompts with decodes in a step only while chunked prefill is on; with it off a step prefills
    # or decodes, prefills first (vLLM V0's _schedule_default: SchedulerProfile.mixes_only_chunked)
    mixes_only_chunked: bool = False
    # tokens per block of the engine's prefix cache: a prompt's cached prefix is reused in whole blocks only (vLLM's
    # automatic prefix caching); 0: no prefix cache modelled
    prefix_cache_block_tokens: int = 0

    def front_end_s(self, prompt_tokens: int) -> float:
        """Seconds the front end works on one request of `prompt_tokens` before the scheduler sees it
        (front_end_seconds)."""
        return front_end_seconds(self.request_overhead_s, self.tokenize_s_per_token, prompt_tokens)

    def with_chunked_prefill(self, on: bool) -> Scheduler:
        """The scheduler with chunked prefill `on` or off, as a run's flag sets it: an engine that mixes prompts
        with decodes only while it chunks them (mixes_only_chunked) runs prefill-only steps without it."""
        mixed = self.mixed_batches and (on or not self.mixes_only_chunked)
        return replace(self, chunked_prefill=on, mixed_batches=mixed)


def front_end_seconds(request_overhead_s: float, tokenize_s_per_token: float, prompt_tokens: int) -> float:
    """Seconds an OpenAI-compatible server's front end spends on one request before its engine schedules it: the
    per-request part (HTTP, the hop to the engine and the first token's way back) plus the prompt's tokenisation,
    linear in its tokens. The one formula the serving simulation (its queue of entries) and a streamed time to
    first token (planner.validation.measured.first_token_lag_s) both charge."""
    return request_overhead_s + prompt_tokens * tokenize_s_per_token


@dataclass(frozen=True)
class SchedulerProfile:
    id: str
    name: str
    efficiency_of: str
    mixed_batches: bool
    chunked_prefill: bool
    memory_fraction: float
    tiers: tuple[Tier, ...]
    launch: str
    port: int
    readiness_path: str
    source: str
    efficiency_note: str = ""
    reserve_output_share: float = 0.0
    disaggregated: bool = False
    disaggregation_source: str = ""
    host_overlapped: bool = False
    host_overlap_source: str = ""
    # (the planner's KV-cache dtype id, the flags that make the engine store its cache so); a dtype not listed, other
    # than the model's own, is one the engine can't serve with
    kv_cache_flags: tuple[tuple[str, str], ...] = ()
    kv_cache_source: str = ""
    request_overhead_s: float = 0.0
    request_overhead_source: str = ""
    # (engine generation id, serial CPU microseconds per sequence per step, serial CPU microseconds per step or None
    # for the runtime profile's, whether its prefill steps run eagerly (no CUDA graph: each kernel dispatched from
    # Python), the steps whose host work a request's first token waits for after its prefill) of the generations of
    # the same server (vLLM's V0 engine and V1); the scheduler as `on` gives it is the current generation's: no
    # per-sequence term, the runtime profile's per-step time
    engines: tuple[EngineGeneration, ...] = ()
    engines_source: str = ""
    # serial CPU microseconds per streamed sequence per step where the caller runs the engine in its own process and
    # event loop and consumes each request's outputs token by token (vLLM's AsyncLLMEngine used as a library): the
    # outputs' hand-off to each request's stream and its coroutine's wake-up, in series with the engine's loop; a
    # server's front end does this in another process (0 where no source times it)
    inprocess_stream_us_per_seq: float = 0.0
    inprocess_stream_source: str = ""
    # per engine generation, the longest context its decode steps replay a captured CUDA graph for; a decode step
    # past it is dispatched eagerly, kernel by kernel (vLLM V0's max_seq_len_to_capture); a generation not listed:
    # no such limit
    graph_max_context: tuple[tuple[str, int], ...] = ()
    graph_max_context_source: str = ""
    # seconds of the front end's CPU work per prompt token: tokenising the prompt's text (Scheduler.front_end_s)
    tokenize_s_per_token: float = 0.0
    tokenize_source: str = ""
    # per engine generation, the most tokens a step replays a captured CUDA graph for; a step with more (a longer
    # prompt's prefill chunk) runs its compiled model without one, each kernel dispatched from Python at
    # compiled_dispatch_us (vLLM V1: max_cudagraph_capture_size); a generation not listed: no such limit
    graph_max_tokens: tuple[tuple[str, int], ...] = ()
    graph_max_tokens_source: str = ""
    compiled_dispatch_us: float = 0.0  # CPU microseconds per kernel of such a step (torch.compile's wrapper code)
    compiled_dispatch_source: str = ""
    # a step mixes prompt chunks with decodes only while chunked prefill is on (Scheduler.with_chunked_prefill): with
    # it off the engine's scheduler runs a step of prompts whenever one is admitted, the decodes waiting (vLLM V0)
    mixes_only_chunked: bool = False
    mixes_only_chunked_source: str = ""
    prefix_cache_block_tokens: int = 0  # Scheduler.prefix_cache_block_tokens
    prefix_cache_source: str = ""
    # per engine generation, the most sequences a decode step replays a captured CUDA graph for; a decode step of
    # more is dispatched eagerly, kernel by kernel (vLLM V0's largest _BATCH_SIZES_TO_CAPTURE, 256); a generation not
    # listed: no such limit
    graph_max_batch: tuple[tuple[str, int], ...] = ()
    graph_max_batch_source: str = ""

    def front_end_s(self, prompt_tokens: int) -> float:
        """Seconds the front end works on one request of `prompt_tokens` before the scheduler sees it
        (front_end_seconds)."""
        return front_end_seconds(self.request_overhead_s, self.tokenize_s_per_token, prompt_tokens)

    def _engine(self, engine: str) -> EngineGeneration:
        for row in self.engines:
            if row.id == engine:
                return row
        known = ", ".join(e.id for e in self.engines) or "none"
        raise ValueError(f"engine: {self.id} has no engine generation {engine[:40]!r} (known: {known})")

    def host_us_per_seq(self, engine: str) -> float:
        """Serial CPU microseconds per sequence per step of `engine`, one of `engines`; ValueError naming it
        otherwise."""
        return self._engine(engine).host_us_per_seq

    def step_host_us(self, engine: str, gpus: int = 1) -> float | None:
        """Serial CPU microseconds per step of `engine` (one of `engines`; ValueError naming it otherwise) on an
        engine that spans `gpus` GPUs: its loop's, plus its tp_step_host_us where it spans more than one (vLLM before
        0.2.6 calls each GPU's Ray worker every step); None where the generation runs the runtime profile's (data/
        runtimes.yaml step_host_us: the current one's)."""
        gen = self._engine(engine)
        if gen.step_host_us is None:
            return None
        return gen.step_host_us + (gen.tp_step_host_us if gpus > 1 else 0.0)

    def eager_prefill(self, engine: str) -> bool:
        """Whether `engine` (one of `engines`; ValueError naming it otherwise) runs its prefill steps eagerly, each
        kernel dispatched from Python (vLLM V0 captures CUDA graphs for decode steps only)."""
        return self._engine(engine).eager_prefill

    def eager_decode_from(self, engine: str) -> int:
        """The KV position from which `engine`'s decode steps run eagerly, each kernel dispatched from Python, its
        CUDA graphs captured only up to that context (graph_max_context; vLLM V0's max_seq_len_to_capture, 8,192
        tokens); 0 where its decode steps always replay a graph; the first position where the generation captures
        no CUDA graph at all (engines' eager_decode: vLLM before 0.2.6). ValueError naming `engine` when it is
        unknown."""
        if self._engine(engine).eager_decode:
            return EAGER_FROM_FIRST_POSITION
        return dict(self.graph_max_context).get(engine, 0)

    def eager_decode_above(self, engine: str) -> int:
        """The most sequences a decode step of `engine` replays a captured CUDA graph for (graph_max_batch: vLLM V0's
        largest captured batch, 256); a decode step of more is dispatched eagerly, each kernel from Python. 0 where
        no such limit is known. ValueError naming `engine` when it is unknown."""
        self._engine(engine)
        return dict(self.graph_max_batch).get(engine, 0)

    def ungraphed_prefill(self, engine: str) -> tuple[int, float]:
        """(the most tokens a step of `engine` replays a CUDA graph for, CPU microseconds per kernel of a step with
        more) where the generation graphs its steps only up to a size (graph_max_tokens: vLLM V1's
        max_cudagraph_capture_size), else (0, 0.0). ValueError naming `engine` when it is unknown."""
        self._engine(engine)
        limit = dict(self.graph_max_tokens).get(engine, 0)
        return (limit, self.compiled_dispatch_us) if limit else (0, 0.0)

    def first_token_steps(self, engine: str) -> int:
        """Steps of host work (scheduling and input preparation) a request's first token waits for after its prefill
        step in `engine` (one of `engines`; ValueError naming it otherwise): 1 where the outputs of a step are
        processed in the next step's callback (vLLM V0 0.6-0.10's asynchronous output processing), else 0."""
        return self._engine(engine).first_token_steps

    def kv_flags(self, kv_dtype: str) -> str | None:
        """The launch flags that give this engine a `kv_dtype` KV cache (None: it has none)."""
        return dict(self.kv_cache_flags).get(kv_dtype)

    def on(self, gpu_id: str, vram_gib: float) -> Scheduler:
        """The scheduler with the defaults of the last tier this GPU qualifies for."""
        tier = self.tiers[0]
        for t in self.tiers:
            if vram_gib >= t.min_vram_gib and not any(x in gpu_id for x in t.except_gpus):
                tier = t
        return Scheduler(self.id, self.name, self.efficiency_of, tier.max_num_seqs, tier.token_budget,
                         self.mixed_batches, self.chunked_prefill, self.memory_fraction,
                         self.reserve_output_share, self.disaggregated, self.host_overlapped,
                         request_overhead_s=self.request_overhead_s, tokenize_s_per_token=self.tokenize_s_per_token,
                         mixes_only_chunked=self.mixes_only_chunked,
                         prefix_cache_block_tokens=self.prefix_cache_block_tokens)


@dataclass(frozen=True)
class Schedulers:
    profiles: tuple[SchedulerProfile, ...]

    def serving(self, runtime: str, gpu_id: str, vram_gib: float) -> Scheduler | None:
        """The serving engine named `runtime` on a GPU (SchedulerProfile.on); None for a runtime that is no serving
        engine here (no HTTP server or scheduler modelled: planner.engine.serving's plain loop)."""
        for p in self.profiles:
            if p.id == runtime.lower():
                return p.on(gpu_id, vram_gib)
        return None

    def get(self, name: str) -> SchedulerProfile:
        for p in self.profiles:
            if p.id == name.lower():
                return p
        raise UnknownNameError("serving runtime", name, suggest(name, [p.id for p in self.profiles]))

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.profiles)


def _tier(rec: Record) -> Tier:
    rec.check_keys(("min_vram_gib", "max_num_seqs", "token_budget", "except_gpus"))
    return Tier(rec.number("min_vram_gib", lo=0, hi=10_000), int(rec.number("max_num_seqs", lo=1, hi=MAX_NUM_SEQS,
                                                                              integer=True)),
                int(rec.number("token_budget", lo=16, hi=MAX_TOKEN_BUDGET, integer=True)),
                rec.strings("except_gpus", required=False))


def _launch(rec: Record) -> str:
    """The launch command template: its placeholders must be LAUNCH_FIELDS."""
    text = " ".join(rec.text("launch").split())
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        raise rec.fail("launch", f"not a command template: {exc}") from None
    for name in names:
        if name not in LAUNCH_FIELDS:
            raise rec.fail("launch", f"unknown placeholder {{{name}}}; expected among {', '.join(LAUNCH_FIELDS)}")
    return text


def _kv_flags(rec: Record) -> tuple[tuple[str, str], ...]:
    """kv_cache_dtypes: {KV dtype id: launch flags}, at most MAX_KV_DTYPES of them."""
    raw = rec.data.get("kv_cache_dtypes") or {}
    if not isinstance(raw, dict) or len(raw) > MAX_KV_DTYPES:
        raise rec.fail("kv_cache_dtypes", f"expected a mapping of at most {MAX_KV_DTYPES} KV dtype ids to flags")
    out = []
    for kv, flags in raw.items():
        if not isinstance(kv, str) or not isinstance(flags, str) or not flags.startswith("--"):
            raise rec.fail("kv_cache_dtypes",
                           f"expected 'dtype: --flag value', got {str(kv)[:20]!r}: {str(flags)[:40]!r}")
        out.append((kv.lower(), " ".join(flags.split())))
    return tuple(out)


def _microseconds(value: object, hi: float) -> bool:
    """Whether `value` is a number of microseconds in 0..hi (a bool is not)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= hi


def _engines(rec: Record) -> tuple[EngineGeneration, ...]:
    """engines: {generation id: {host_us_per_seq: us[, step_host_us: us][, eager_prefill: bool][,
    first_token_steps: 0 or 1][, eager_decode: bool][, tp_step_host_us: us, with step_host_us]}}, at most
    MAX_ENGINES of them."""
    raw = rec.data.get("engines") or {}
    if not isinstance(raw, dict) or len(raw) > MAX_ENGINES:
        raise rec.fail("engines", f"expected a mapping of at most {MAX_ENGINES} engine generation ids to "
                                  "{host_us_per_seq: microseconds, step_host_us: microseconds (optional)}")
    out = []
    for name, spec in raw.items():
        ok = isinstance(name, str) and isinstance(spec, dict) and "host_us_per_seq" in spec \
            and set(spec) <= {"host_us_per_seq", "step_host_us", "eager_prefill", "first_token_steps",
                              "eager_decode", "tp_step_host_us"} \
            and _microseconds(spec["host_us_per_seq"], MAX_HOST_US_PER_SEQ) \
            and _microseconds(spec.get("step_host_us", 0), MAX_STEP_HOST_US) \
            and _microseconds(spec.get("tp_step_host_us", 0), MAX_STEP_HOST_US) \
            and ("tp_step_host_us" not in spec or "step_host_us" in spec) \
            and isinstance(spec.get("eager_prefill", False), bool) \
            and isinstance(spec.get("eager_decode", False), bool) \
            and spec.get("first_token_steps", 0) in FIRST_TOKEN_STEPS and not isinstance(
                spec.get("first_token_steps", 0), bool)
        if not ok:
            raise rec.fail("engines", f"expected '{str(name)[:20]}: {{host_us_per_seq: 0..{MAX_HOST_US_PER_SEQ:g}, "
                                      f"step_host_us: 0..{MAX_STEP_HOST_US:g} (optional), eager_prefill: true/false "
                                      f"(optional), first_token_steps: 0 or 1 (optional), eager_decode: true/false "
                                      f"(optional), tp_step_host_us: 0..{MAX_STEP_HOST_US:g} (optional, with "
                                      f"step_host_us)}}', got {str(spec)[:60]!r}")
        step = spec.get("step_host_us")
        out.append(EngineGeneration(name.lower(), float(spec["host_us_per_seq"]), None if step is None else float(step),
                                    spec.get("eager_prefill", False), int(spec.get("first_token_steps", 0)),
                                    spec.get("eager_decode", False), float(spec.get("tp_step_host_us", 0))))
    return tuple(out)


def _graph_limits(rec: Record, field: str = "graph_max_context") -> tuple[tuple[str, int], ...]:
    """graph_max_context: {generation id of `engines`: tokens, 1..MAX_GRAPH_CONTEXT}: the longest context a
    generation's decode steps replay a CUDA graph for; graph_max_tokens, the same shape: the most tokens a step
    replays one for; graph_max_batch: the most sequences a decode step replays one for."""
    raw = rec.data.get(field) or {}
    known = {e.id for e in _engines(rec)}
    ok = isinstance(raw, dict) and len(raw) <= MAX_ENGINES and all(
        isinstance(k, str) and k.lower() in known and not isinstance(v, bool) and isinstance(v, int)
        and 1 <= v <= MAX_GRAPH_CONTEXT for k, v in raw.items())
    if not ok:
        unit = "sequences" if field == "graph_max_batch" else "tokens"
        raise rec.fail(field, f"expected {{engine generation id of engines: {unit}, 1.."
                              f"{MAX_GRAPH_CONTEXT:,}}}, got {str(raw)[:60]!r}")
    return tuple((k.lower(), int(v)) for k, v in raw.items())


def _sourced(rec: Record, flag: str, source: str) -> str:
    """The source text of a yes/no fact (required once the flag is given)."""
    return " ".join((rec.text(source, required=flag in rec.data) or "").split())


@lru_cache(maxsize=4)
def load_schedulers(path: str | Path = SERVING_FILE) -> Schedulers:
    """The serving engines of `path` (data/serving.yaml); DataFileError naming file, record and field."""
    out = []
    for i, raw in enumerate(load_yaml(path, "schedulers", dated=True)):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "name", "efficiency_of", "efficiency_note", "mixed_batches", "chunked_prefill",
                        "memory_fraction", "tiers", "launch", "port", "readiness_path", "source",
                        "reserve_output_share", "disaggregated", "disaggregation_source", "host_overlapped",
                        "host_overlap_source", "kv_cache_dtypes", "kv_cache_source", "request_overhead_ms",
                        "request_overhead_source", "engines", "engines_source", "inprocess_stream_us_per_seq",
                        "inprocess_stream_source", "graph_max_context", "graph_max_context_source",
                        "tokenize_us_per_token", "tokenize_source", "graph_max_tokens", "graph_max_tokens_source",
                        "compiled_dispatch_us", "compiled_dispatch_source", "mixes_only_chunked",
                        "mixes_only_chunked_source", "prefix_cache_block_tokens", "prefix_cache_source",
                        "graph_max_batch", "graph_max_batch_source"))
        tiers = tuple(_tier(t) for t in rec.records("tiers", MAX_TIERS))
        path_text = rec.text("readiness_path")
        if not path_text.startswith("/"):
            raise rec.fail("readiness_path", f"expected an HTTP path starting with '/', got {path_text[:40]!r}")
        out.append(SchedulerProfile(
            rec.text("id"), rec.text("name"), rec.text("efficiency_of"), rec.flag("mixed_batches"),
            rec.flag("chunked_prefill"), rec.number("memory_fraction", lo=0.05, hi=1.0), tiers, _launch(rec),
            int(rec.number("port", lo=1, hi=65_535, integer=True)), path_text, " ".join(rec.text("source").split()),
            " ".join((rec.text("efficiency_note", required=False) or "").split()),
            rec.number("reserve_output_share", required=False, lo=0, hi=1) or 0.0,
            rec.flag("disaggregated", default=False), _sourced(rec, "disaggregated", "disaggregation_source"),
            rec.flag("host_overlapped", default=False), _sourced(rec, "host_overlapped", "host_overlap_source"),
            _kv_flags(rec), _sourced(rec, "kv_cache_dtypes", "kv_cache_source"),
            (rec.number("request_overhead_ms", required=False, lo=0, hi=10_000) or 0.0) / 1e3,
            _sourced(rec, "request_overhead_ms", "request_overhead_source"), _engines(rec),
            _sourced(rec, "engines", "engines_source"),
            rec.number("inprocess_stream_us_per_seq", required=False, lo=0, hi=MAX_HOST_US_PER_SEQ) or 0.0,
            _sourced(rec, "inprocess_stream_us_per_seq", "inprocess_stream_source"), _graph_limits(rec),
            _sourced(rec, "graph_max_context", "graph_max_context_source"),
            (rec.number("tokenize_us_per_token", required=False, lo=0, hi=MAX_TOKENIZE_US_PER_TOKEN) or 0.0) / 1e6,
            _sourced(rec, "tokenize_us_per_token", "tokenize_source"), _graph_limits(rec, "graph_max_tokens"),
            _sourced(rec, "graph_max_tokens", "graph_max_tokens_source"),
            rec.number("compiled_dispatch_us", required=False, lo=0, hi=MAX_DISPATCH_US) or 0.0,
            _sourced(rec, "compiled_dispatch_us", "compiled_dispatch_source"),
            rec.flag("mixes_only_chunked", default=False),
            _sourced(rec, "mixes_only_chunked", "mixes_only_chunked_source"),
            int(rec.number("prefix_cache_block_tokens", required=False, lo=1, hi=MAX_PREFIX_BLOCK_TOKENS,
                           integer=True) or 0),
            _sourced(rec, "prefix_cache_block_tokens", "prefix_cache_source"), _graph_limits(rec, "graph_max_batch"),
            _sourced(rec, "graph_max_batch", "graph_max_batch_source")))
    unique_ids(path, (p.id for p in out))
    return Schedulers(tuple(out))
