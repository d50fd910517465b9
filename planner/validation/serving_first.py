"""Serving under load, predicted before measured: published serving benchmarks at a fixed concurrency (closed loop:
a new request as soon as one finishes) or a fixed request rate (Poisson), entered as conditions first
(validation/serving/to_predict/<source>.yaml, no values), predicted and committed with the planner's commit
(validation/serving/predictions/), and only then measured (validation/serving/measured.yaml: id -> value). The error
of the committed predictions, per source and metric, is the figure; nothing here is tuned on them.

A concurrency row is predicted by planner.engine.serving (a steady concurrency, prefills of replacing requests
charged), or, where it states its request count (`requests`), as that finite closed loop by the simulation
(serving_sim.closed_loop: the first burst, the server's queue beyond its request cap, the drain); a rate row by the
simulation (planner.engine.serving_sim, the engine's scheduler defaults of data/serving.yaml).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

import yaml

from planner import ROOT_DIR
from planner.base.files import write_atomic
from planner.base.schema import DataFileError, Record, load_yaml, unique_ids
from planner.engine.host_speed import REFERENCE_HOST_SPEED
from planner.engine.plan import Plan
from planner.engine.serving import serving_point
from planner.engine.serving_sim import (MAX_REQUESTS, Requests, benchmark_arrivals, burst_tokens_per_s, closed_loop_run,
                                       saturation_rate, serve_rate, simulate, step_times, summarize)
from planner.inputs.facts import Facts
from planner.inputs.jobs import BOUNDS, Generate
from planner.inputs.runtimes import eager_dispatch_us, nccl_only
from planner.inputs.serving_runtimes import (MAX_NUM_SEQS, MAX_TOKEN_BUDGET, Scheduler, SchedulerProfile,
                                             load_schedulers)
from planner.inputs.serving_trace import LENGTH_SPREADS
from planner.validation.measured import validation_models
from planner.validation.predict_first import PredictFirstError, git_state, slug

SERVING_DIR = ROOT_DIR / "validation" / "serving"
# at a concurrency or a rate: median TTFT and TPOT, output tokens/s; with neither: the output tokens/s the deployment
# completes with its queue never empty (offline throughput benchmarks: every request sent at once)
METRICS = ("ttft_median_ms", "tpot_median_ms", "output_tokens_per_s", "saturation_output_tokens_per_s")
# the statistic a TTFT or TPOT row's value is over its run's requests: the median its metric names, or the mean
# where the source publishes only that (a finite run's mean and median differ where its first burst queues)
STATISTICS = ("median", "mean")
MAX_ROWS = 500
MAX_ROW_TOKENS = 10**6  # the longest prompt, reply or cached prefix a row may state: beyond any model's context
MAX_ROW_CONCURRENCY = 4096  # requests in flight a row may state: beyond any benchmark client's
MAX_REQUEST_OVERHEAD_MS = 1000.0  # a second of front end per request: beyond any server's
# measured.yaml is the project's own file, growing with every source (1.07 MB on 2026-11-28),
# under a cap of its own rather than an upload's (safe_parse.MAX_TEXT_BYTES): room for a few times as many values
SERVING_MEASURED_MAX_BYTES = 4_000_000


@dataclass(frozen=True)
class ServingRow:
    id: str
    source: str
    model: str
    gpu: str
    runtime: str  # a serving engine of data/serving.yaml
    tp: int
    input_tokens: int
    output_tokens: int
    metric: str
    concurrency: int | None = None
    rate: float | None = None
    precision: str = "bf16"
    # conditions a row may carry beyond the defaults: the KV cache's dtype (the engine's flag, e.g. fp8), the
    # scheduler's steps per round (vLLM --num-scheduler-steps), and the lengths' spread ('fixed': every request at
    # the given lengths; 'sharegpt': serving_sim.Requests.sharegpt_like around them; 'uniform':
    # serving_sim.Requests.uniform, the benchmarks' random dataset)
    kv_dtype: str | None = None
    scheduler_steps: int = 1
    lengths: str = "fixed"
    # whether the engine's CPU work overlaps the GPU's step (None: data/serving.yaml's host_overlapped for the
    # runtime; False for a version before the overlap, e.g. SGLang before v0.4)
    host_overlap: bool | None = None
    # the server's engine generation when it is not the one data/serving.yaml's scheduler models (None), e.g.
    # vLLM's V0 engine ('v0', 'v0-sync': SchedulerProfile.engines): its CPU work per step and per sequence per step
    engine: str | None = None
    # the benchmark's request count (--num-prompts) when the row is scored as that finite run (None: the
    # simulation's defaults): a rate row simulates that many Poisson arrivals; a saturation row that many requests
    # sent at once, their output tokens over the time to the last completion (serving_sim.burst_tokens_per_s); a
    # concurrency row that many in the client's closed loop (serving_sim.closed_loop), which then takes the
    # simulation's conditions too (lengths, engine, limits, enforce_eager)
    requests: int | None = None
    # the front end's time per request before the scheduler sees it, in ms, where the run differs from the engine's
    # server (an in-process engine has no HTTP server); None: data/serving.yaml's request_overhead_ms
    request_overhead_ms: float | None = None
    # the run's own scheduler limits where they differ from data/serving.yaml's server defaults (None: those), as the
    # run's log or command states them: requests running at once, tokens a step carries, whether prompts are chunked
    # (e.g. trtllm-bench builds its engine for 2,048 requests and chunks contexts; trtllm-serve runs 256, whole)
    max_num_seqs: int | None = None
    token_budget: int | None = None
    chunked_prefill: bool | None = None
    # whether the run consumed each request's outputs token by token in the engine's own process and event loop
    # (vLLM's AsyncLLMEngine used as a library): data/serving.yaml's inprocess_stream_us_per_seq per sequence per step
    inprocess_stream: bool = False
    # whether the run passed --enforce-eager (vLLM): no CUDA/HIP graph captured, every step's kernels dispatched from
    # Python one by one (eager PyTorch's host time per kernel, decode steps as well as prefills)
    enforce_eager: bool = False
    # STATISTICS: 'mean' scores a TTFT or TPOT row by the mean over its finite run's requests (requests given)
    statistic: str = "median"
    # whether the run's engine all-reduced with its own kernel where data/custom_allreduce.yaml gives it one; False:
    # a build or version without it (upstream vLLM on ROCm before PR #14125, 2025-04; --disable-custom-all-reduce),
    # every tensor-parallel all-reduce through NCCL/RCCL's ring (planner.inputs.runtimes.nccl_only)
    custom_allreduce: bool = True
    # the client's cap on each reply (its max_tokens) where the lengths spread ('sharegpt'): no output of the run
    # is longer (serving_sim.Requests.sharegpt_like); None: the dataset's own cut only
    max_output_tokens: int | None = None
    # whether the client read each reply as a stream of tokens (vLLM's benchmark_serving, stream=true). False: the
    # reply came back whole, so the 'first token' the client timed arrived with the last one and a TTFT row is
    # scored by the simulated run's end-to-end latency (arrival to last token); TPOT rows stay the decode rate
    streamed: bool = True
    # tokens at the start of every prompt the run's engine served from its prefix cache (identical prompts under
    # vLLM V1's default prefix caching: the whole prompt; a shared system prompt: its length); each request then
    # prefills only the rest, in the engine's whole cache blocks (serving_sim.cached_prompt_tokens)
    cached_prefix_tokens: int = 0
    # the run's host CPU's single-thread speed over the reference hosts' where a source names its CPU
    # (planner.engine.host_speed; Plan.host_speed): every host time of the runtime and the scheduler divided by it
    host_speed: float = REFERENCE_HOST_SPEED


LENGTHS = LENGTH_SPREADS


def load_rows(path: str | Path) -> list[ServingRow]:
    """Rows of a to_predict file (conditions only; a `value` is refused: it must not be known yet)."""
    rows = []
    for i, raw in enumerate(load_yaml(path, "rows")):
        rec = Record.of(path, i, raw)
        rec.check_keys(("id", "source", "conditions", "model", "gpu", "runtime", "tp", "input_tokens", "output_tokens",
                        "metric", "concurrency", "rate", "precision", "kv_dtype", "scheduler_steps", "lengths",
                        "host_overlap", "engine", "requests", "max_num_seqs", "token_budget", "chunked_prefill",
                        "request_overhead_ms", "enforce_eager", "statistic", "custom_allreduce",
                        "max_output_tokens", "streamed", "cached_prefix_tokens", "host_speed"))
        conc = rec.number("concurrency", required=False, lo=1, hi=MAX_ROW_CONCURRENCY, integer=True)
        rate = rec.number("rate", required=False, lo=0.001, hi=1e5)
        saturation = rec.raw("metric", required=False) == "saturation_output_tokens_per_s"
        if not saturation and (conc is None) == (rate is None):
            raise rec.fail("concurrency", "give exactly one of concurrency and rate")
        if saturation and (conc is not None or rate is not None):
            raise rec.fail("metric", "a saturation row takes neither concurrency nor rate")
        rows.append(ServingRow(rec.text("id"), " ".join(rec.text("source").split()), rec.text("model"),
                               rec.text("gpu"), rec.text("runtime"),
                               int(rec.number("tp", lo=1, hi=64, integer=True)),
                               int(rec.number("input_tokens", lo=1, hi=MAX_ROW_TOKENS, integer=True)),
                               int(rec.number("output_tokens", lo=2, hi=MAX_ROW_TOKENS, integer=True)),
                               rec.text("metric", choices=METRICS), None if conc is None else int(conc), rate,
                               rec.text("precision", required=False) or "bf16",
                               rec.text("kv_dtype", required=False) or None,
                               int(rec.number("scheduler_steps", required=False, lo=1, hi=64, integer=True) or 1),
                               rec.text("lengths", required=False, choices=LENGTHS) or "fixed",
                               rec.flag("host_overlap") if "host_overlap" in rec.data else None,
                               rec.text("engine", required=False) or None,
                               _requests(rec), rec.number("request_overhead_ms", required=False, lo=0,
                                                          hi=MAX_REQUEST_OVERHEAD_MS), *_limits(rec),
                               enforce_eager=rec.flag("enforce_eager") if "enforce_eager" in rec.data else False,
                               statistic=rec.text("statistic", required=False, choices=STATISTICS) or "median",
                               custom_allreduce=rec.flag("custom_allreduce") if "custom_allreduce" in rec.data
                               else True, max_output_tokens=_max_output(rec),
                               streamed=rec.flag("streamed") if "streamed" in rec.data else True,
                               cached_prefix_tokens=int(rec.number("cached_prefix_tokens", required=False, lo=0,
                                                                   hi=MAX_ROW_TOKENS, integer=True) or 0),
                               host_speed=row_host_speed(rec)))
    if len(rows) > MAX_ROWS:
        raise DataFileError(path, "-", "rows", f"{len(rows):,} rows, at most {MAX_ROWS} expected")
    unique_ids(path, (r.id for r in rows))
    return rows


def _limits(rec: Record) -> tuple[int | None, int | None, bool | None]:
    """The run's own scheduler limits a row states (ServingRow.max_num_seqs, token_budget, chunked_prefill)."""
    seqs = rec.number("max_num_seqs", required=False, lo=1, hi=MAX_NUM_SEQS, integer=True)
    budget = rec.number("token_budget", required=False, lo=16, hi=MAX_TOKEN_BUDGET, integer=True)
    chunked = rec.flag("chunked_prefill") if "chunked_prefill" in rec.data else None
    return None if seqs is None else int(seqs), None if budget is None else int(budget), chunked


def _max_output(rec: Record) -> int | None:
    """The client's max_tokens a row states (ServingRow.max_output_tokens), at least its mean output."""
    n = rec.number("max_output_tokens", required=False, lo=1, hi=MAX_ROW_TOKENS, integer=True)
    if n is not None and n < rec.number("output_tokens", lo=1, hi=MAX_ROW_TOKENS, integer=True):
        raise rec.fail("max_output_tokens", "a cap on each reply can't be below the mean output (output_tokens)")
    return None if n is None else int(n)


def row_host_speed(rec: Record) -> float:
    """A row's host_speed (ServingRow.host_speed) within the plan's bounds (inputs.jobs BOUNDS); the reference's
    where it states none."""
    bound = BOUNDS["host_speed"]
    speed = rec.number("host_speed", required=False, lo=bound.lo, hi=bound.hi)
    return REFERENCE_HOST_SPEED if speed is None else float(speed)


def _requests(rec: Record) -> int | None:
    n = rec.number("requests", required=False, lo=1, hi=MAX_REQUESTS, integer=True)
    return None if n is None else int(n)


def with_limits(sched: Scheduler, row: ServingRow) -> Scheduler:
    """`sched` with the run's own scheduler limits where `row` states them (ServingRow.max_num_seqs, token_budget,
    chunked_prefill: Scheduler.with_chunked_prefill, so an engine that mixes only chunked prompts stops mixing),
    the server's defaults elsewhere."""
    limits = {"max_num_seqs": row.max_num_seqs, "token_budget": row.token_budget}
    sched = replace(sched, **{k: v for k, v in limits.items() if v is not None})
    return sched if row.chunked_prefill is None else sched.with_chunked_prefill(row.chunked_prefill)


def row_plan(row: ServingRow, sched: SchedulerProfile) -> Plan:
    """The plan of `row` under `sched` (its runtime's scheduler profile): the model, lengths, precision and tensor
    parallel degree it states, on its host (Plan.host_speed: the simulation and the concurrency model divide every
    host time by it, as estimates do)."""
    return Plan(validation_models().get(row.model), Generate(1, row.input_tokens, row.output_tokens), row.precision,
                runtime=sched.efficiency_of, gpus=row.tp, parallel="tensor" if row.tp > 1 else "auto",
                kv_dtype=row.kv_dtype, host_speed=row.host_speed)


def predict(row: ServingRow, facts: Facts) -> float:
    """The planner's value of `row`'s metric from its conditions alone."""
    if not row.custom_allreduce:
        facts = replace(facts, runtimes=nccl_only(facts.runtimes))
    sched = load_schedulers().get(row.runtime)
    gpu = facts.catalog.get(row.gpu)
    plan = row_plan(row, sched)
    if row.concurrency is not None and row.requests is None:
        limits = (row.max_num_seqs, row.token_budget, row.chunked_prefill)
        if row.scheduler_steps != 1 or row.lengths != "fixed" or row.engine is not None \
                or any(x is not None for x in limits) or row.enforce_eager or row.statistic != "median" \
                or not row.streamed or row.cached_prefix_tokens:
            raise ValueError(f"{row.id}: a concurrency row takes scheduler_steps, lengths, engine, max_num_seqs, "
                             f"token_budget, chunked_prefill, enforce_eager, statistic, streamed and "
                             f"cached_prefix_tokens only with requests (a finite closed loop, simulated)")
        if row.tp > 1:
            raise ValueError(f"{row.id}: planner.engine.serving does not model tensor parallel at a concurrency")
        on = sched.on(gpu.id, gpu.vram_gib)
        if row.host_overlap is not None:
            on = replace(on, host_overlapped=row.host_overlap)
        if row.request_overhead_ms is not None:
            on = replace(on, request_overhead_s=row.request_overhead_ms * 1e-3)
        p = serving_point(plan, gpu, facts, row.concurrency, row.input_tokens, row.output_tokens, on)
        return {"ttft_median_ms": p.ttft_s * 1e3, "tpot_median_ms": p.tpot_s * 1e3,
                "output_tokens_per_s": p.tokens_per_s}[row.metric]
    s = replace(sched.on(gpu.id, gpu.vram_gib), steps_per_round=row.scheduler_steps)
    if row.host_overlap is not None:
        s = replace(s, host_overlapped=row.host_overlap)
    if row.request_overhead_ms is not None:
        s = replace(s, request_overhead_s=row.request_overhead_ms * 1e-3)
    s = with_limits(s, row)
    if row.engine is not None:
        s = replace(s, host_us_per_seq=sched.host_us_per_seq(row.engine),
                    step_host_us=sched.step_host_us(row.engine, row.tp),
                    prefill_host_us_per_kernel=eager_dispatch_us(facts.runtimes) if sched.eager_prefill(row.engine)
                    else 0.0, first_token_steps=sched.first_token_steps(row.engine),
                    eager_decode_above=sched.eager_decode_above(row.engine))
    if row.enforce_eager:  # every step eager: its kernels dispatched one by one, decode steps too
        s = replace(s, prefill_host_us_per_kernel=eager_dispatch_us(facts.runtimes), eager_decode_from=1)
    if row.inprocess_stream:  # each streamed sequence's hand-off to its caller, in series with the engine's loop
        s = replace(s, host_us_per_seq=s.host_us_per_seq + sched.inprocess_stream_us_per_seq)
    if row.max_output_tokens is not None and row.max_output_tokens < row.output_tokens:
        raise ValueError(f"{row.id}: max_output_tokens {row.max_output_tokens:,} is below the mean output "
                         f"{row.output_tokens:,}: a cap on each reply can't be under their mean")
    # a finite benchmark run: its own number of requests, their lengths spread over exactly that many
    reqs = Requests.spread(row.input_tokens, row.output_tokens, row.lengths,
                           **({} if row.requests is None else {"rows": row.requests}),
                           max_output=row.max_output_tokens)
    if row.cached_prefix_tokens:
        if not s.prefix_cache_block_tokens:
            raise ValueError(f"{row.id}: cached_prefix_tokens: {sched.name} has no prefix cache modelled "
                             f"(data/serving.yaml prefix_cache_block_tokens)")
        reqs = replace(reqs, cached_prefix=row.cached_prefix_tokens)
    st = step_times(plan, gpu, facts, s, row.tp, reqs.mean_context)
    if row.metric == "saturation_output_tokens_per_s":
        if row.requests is not None:
            return burst_tokens_per_s(st, s, reqs, row.requests)
        return saturation_rate(st, s, reqs) * sum(reqs.outputs) / len(reqs.outputs)
    if row.concurrency is not None:  # the client's finite closed loop of row.requests at row.concurrency
        run = closed_loop_run(st, s, reqs, row.concurrency, row.requests)
    elif row.requests is not None:
        prompts, outputs = reqs.take(row.requests)
        run = simulate(st, s, benchmark_arrivals(row.rate, row.requests, 0), prompts, outputs,
                       cached_prefix=reqs.cached_prefix)
    else:
        run = None
    if row.statistic == "mean" and row.metric != "output_tokens_per_s":
        if run is None or not len(run.ttft_s):
            raise ValueError(f"{row.id}: statistic mean needs the run's own request count (requests)")
        first = run.ttft_s if row.streamed else run.e2e_s  # an unstreamed reply's first token comes with its last
        return statistics.fmean((first if row.metric == "ttft_median_ms" else run.tpot_s).tolist()) * 1e3
    pt = serve_rate(st, s, reqs, row.rate) if run is None else summarize(run, row.rate or 0.0, None, None)
    return {"ttft_median_ms": (pt.ttft if row.streamed else pt.e2e)[50] * 1e3, "tpot_median_ms": pt.tpot[50] * 1e3,
            "output_tokens_per_s": pt.tokens_per_s}[row.metric]


def predict_file(rows_path: str | Path, facts: Facts, out_dir: str | Path = SERVING_DIR / "predictions",
                 day: date | None = None) -> Path:
    """Predict every row of `rows_path` and write them with the planner's commit; refuses a dirty tree and an
    existing predictions file (never rewritten)."""
    state = git_state()
    if state.dirty:
        raise PredictFirstError(f"commit these first (the predictions must name what made them): "
                                f"{', '.join(state.dirty[:5])}")
    rows = load_rows(rows_path)
    day = day or date.today()
    out = Path(out_dir) / f"{day.isoformat()}_{slug(Path(rows_path).stem)}.yaml"
    if out.exists():
        raise PredictFirstError(f"{out} exists: predictions are never rewritten")
    doc = {"schema_version": 1, "read_on": day.isoformat(), "planner_commit": state.commit,
           "rule": "predicted before measured (planner.validation.serving_first)",
           "rows": [{"id": r.id, "metric": r.metric, "predicted": round(predict(r, facts), 4), "source": r.source}
                    for r in rows]}
    write_atomic(out, "# Serving predictions made BEFORE the values were looked up. Never edit.\n"
                 + yaml.safe_dump(doc, sort_keys=False, width=120))
    return out


def measured_values(measured_path: str | Path = SERVING_DIR / "measured.yaml") -> dict[str, float]:
    """The measured value of each serving row (validation/serving/measured.yaml: id, value, where), checked."""
    measured = {}
    for i, raw in enumerate(load_yaml(measured_path, "rows", max_bytes=SERVING_MEASURED_MAX_BYTES)):
        rec = Record.of(measured_path, i, raw)
        rec.check_keys(("id", "value", "where"))
        rec.text("where")
        measured[rec.text("id")] = rec.number("value", lo=0)
    return measured


def committed_predictions(directory: str | Path = SERVING_DIR / "predictions") -> dict[str, float]:
    """The committed prediction of each serving row, from every predictions file under `directory`."""
    return {r["id"]: float(r["predicted"]) for path in sorted(Path(directory).glob("*.yaml"))
            for r in load_yaml(path, "rows")}


def score(pred_path: str | Path, measured_path: str | Path) -> list[dict]:
    """Per source and metric: rows, median |error| % and median bias % (+ = predicted too high) of the committed
    predictions against the measured values (id -> value)."""
    preds = load_yaml(pred_path, "rows")
    measured = measured_values(measured_path)
    groups: dict[tuple[str, str], list[float]] = {}
    for p in preds:
        if p["id"] in measured:
            err = (p["predicted"] - measured[p["id"]]) / measured[p["id"]] * 100
            groups.setdefault((p["source"].split(" ")[0], p["metric"]), []).append(err)
    return [{"source": s, "metric": m, "rows": len(e),
             "median_abs_error_pct": round(statistics.median(map(abs, e)), 1),
             "median_bias_pct": round(statistics.median(e), 1)} for (s, m), e in sorted(groups.items())]

