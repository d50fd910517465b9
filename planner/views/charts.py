"""Charts of a ranking: cost vs time with the Pareto front, roofline, batch-size sweep, memory.

Each chart has a pure data builder (estimates -> pandas DataFrame, testable by value) and a chart builder
(DataFrames -> a Vega-Lite spec as a plain dict, its datasets the DataFrames themselves, named by a digest of their
content). The page draws those with st.vega_lite_chart: building the same spec through Altair's objects cost 10-25 ms
a chart, most of a chart tab's rerun. Axis titles carry units; titles name where the numbers come from. The
validation plot, drawn once per server and saved to HTML by the CLI, stays an Altair chart. No streamlit here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import altair as alt
import pandas as pd

from planner.inputs.catalog import GPU
from planner.engine import ranking, sweep
from planner.engine.estimate import EfficiencyAdjust, Estimate
from planner.engine.plan import Plan
from planner.inputs.facts import Facts
from planner.engine.roofline import attainable_tflops, ridge_point
from planner.validation.measured import ValidationReport
from planner.views.cache_key import content_key
from planner.views.format import short_name

ESTIMATE_SOURCE = "planner estimate (roofline model, data/gpus.yaml datasheet peaks, data/runtimes.yaml efficiencies)"
MEMORY_ORDER = ("weights", "gradients", "optimizer", "kv_cache", "activations", "cuda_context")
# One colour per memory consumer whatever the plan holds, so a colour keeps its meaning between plans (tableau10)
MEMORY_COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#9c755f")


# The Vega-Lite version the specs are written for: the one Altair 6 (installed with streamlit) validates against and
# Streamlit's frontend draws (tests/views/test_charts.py validates every spec against that schema)
VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.4.1.json"
# Vega-Lite's default view size, which Altair writes into every spec; kept so the specs are what they were
VIEW_CONFIG = {"view": {"continuousWidth": 300, "continuousHeight": 300}}
FIELD_TYPES = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}


def _title(text: str, *subtitle: str) -> dict:
    return {"text": text, "anchor": "start", "subtitle": list(subtitle), "subtitleColor": "#666"}


def _f(shorthand: str, **props) -> dict:
    """A channel's definition from Altair's shorthand: "sum(gb):Q" -> aggregate, field and type, then `props`."""
    name, kind = shorthand.rsplit(":", 1)
    agg = re.fullmatch(r"(\w+)\((\w+)\)", name)
    head = {"aggregate": agg[1], "field": agg[2]} if agg else {"field": name}
    return {**head, "type": FIELD_TYPES[kind], **props}


def _dataset(df: pd.DataFrame, datasets: dict) -> dict:
    """A layer's data: `df` named by a digest of its content in `datasets` (equal data, one dataset and one name, as
    Altair names them; a new plan's data gets a new name, so the browser draws the chart anew)."""
    name = f"data-{content_key(df)}"
    datasets[name] = df
    return {"name": name}


def _layered(layers: list[tuple], **props) -> dict:
    """A layer chart's spec from (data, mark, encoding[, transform]) per layer and its top-level properties."""
    datasets: dict = {}
    named: dict[int, dict] = {}  # layers drawing the same frame (the batch chart's three): its digest once
    specs = []
    for df, mark, enc, *transform in layers:
        data = named.get(id(df)) or named.setdefault(id(df), _dataset(df, datasets))
        specs.append({"data": dict(data), "mark": mark, "encoding": enc,
                      **({"transform": transform[0]} if transform else {})})
    return {"config": VIEW_CONFIG, "layer": specs, **props, "$schema": VEGA_LITE_SCHEMA, "datasets": datasets}


def _single(df: pd.DataFrame, mark: dict, encoding: dict, **props) -> dict:
    """A one-layer chart's spec."""
    datasets: dict = {}
    return {"config": VIEW_CONFIG, "data": _dataset(df, datasets), "mark": mark, "encoding": encoding, **props,
            "$schema": VEGA_LITE_SCHEMA, "datasets": datasets}


# Streamlit sizes charts with Vega-Lite's autosize "fit": a fixed height includes the title, axes and legends, so a
# chart with a long title and a legend can leave its bars no height at all. Charts with one bar per GPU or phase
# size the plot by a step per bar instead, which grows the chart with its rows.
BAND_PX = 30
# "fit" squeezes a tall title and a legend into the given height and can push the title out of the SVG; fit-x fits
# the width and lets the height grow by what surrounds the plot
FIT_WIDTH = {"contains": "padding", "type": "fit-x"}

# ---------------------------------------------------------------- Pareto front


def pareto_front(points: Iterable[tuple[str, float, float]]) -> list[str]:
    """Keys of the (key, seconds, cost) points no other point beats on both time and cost, fastest first.

    A point is dominated when another is no slower and no dearer, and strictly better in one of the two
    (of two identical points, the first by key is kept).
    """
    pts = sorted((s, c, k) for k, s, c in points if s is not None and c is not None)
    front, best_cost = [], math.inf
    for _s, c, k in pts:  # by time, then cost: a point is on the front iff it is cheaper than every faster one
        if c < best_cost:
            front.append(k)
            best_cost = c
    return front


# ---------------------------------------------------------------- cost vs time


COST_TIME_COLUMNS = ("gpu_id", "gpu", "label", "estimate", "seconds", "time", "cost_usd", "usd_hr", "on_front")


def cost_time_rows(estimates: Iterable[Estimate], calibrated: Mapping[str, Estimate] | None = None,
                   unit: tuple[str, float] = ("s", 1.0)) -> list[dict]:
    """One row (a dict of COST_TIME_COLUMNS) per feasible, priced GPU (and per calibrated estimate): time in `unit`,
    cost, on_front. Plain rows, no DataFrame: a rerun keys the chart on them and builds its frame only on a miss."""
    rows = []
    for kind, ests in (("analytic", list(estimates)), ("calibrated", list((calibrated or {}).values()))):
        part = []
        for e in ests:
            cost = e.cost()
            if e.feasible and e.seconds and cost is not None:
                part.append({"gpu_id": e.gpu.id, "gpu": e.gpu.name, "label": short_name(e.gpu.name),
                             "estimate": kind, "seconds": e.seconds, "time": e.seconds / unit[1], "cost_usd": cost,
                             "usd_hr": e.price.usd_hr if e.price else None, "on_front": False})
        front = set(pareto_front((r["gpu_id"], r["seconds"], r["cost_usd"]) for r in part))
        for r in part:
            r["on_front"] = r["gpu_id"] in front
        rows += part
    return rows


def cost_time_data(estimates: Iterable[Estimate], calibrated: Mapping[str, Estimate] | None = None,
                   unit: tuple[str, float] = ("s", 1.0)) -> pd.DataFrame:
    """cost_time_rows as a DataFrame (columns COST_TIME_COLUMNS)."""
    return pd.DataFrame(cost_time_rows(estimates, calibrated, unit), columns=list(COST_TIME_COLUMNS))


def _log_span(values: list[float]) -> list[float]:
    return [min(values) / 1.3, max(values) * 1.3]


def cost_time_chart(rows: Sequence[Mapping], tier: str, unit: str = "s") -> dict:
    """Job cost vs job time for every GPU (log-log) from cost_time_rows, the Pareto front joined by a line and
    labelled. The rows are read in Python and made a DataFrame once (pandas' column reads were a third of the
    spec's time)."""
    # the analytic front's labels, fastest first: neighbours on the front sit close together, so the labels
    # alternate above and below their points
    named = sorted((r["time"], i) for i, r in enumerate(rows) if r["on_front"] and r["estimate"] == "analytic")
    side = [""] * len(rows)
    for n, (_t, i) in enumerate(named):
        side[i] = ("above", "below")[n % 2]
    df = pd.DataFrame(rows, columns=list(COST_TIME_COLUMNS)).assign(label_side=side)
    x = _f("time:Q", scale={"domain": _log_span([r["time"] for r in rows]), "nice": False, "type": "log"},
           title=f"Time for the whole job ({unit}, log scale)")
    y = _f("cost_usd:Q", scale={"domain": _log_span([r["cost_usd"] for r in rows]), "nice": False, "type": "log"},
           title=f"Cost of the job ($, RunPod {tier}, log scale)")
    tip = [_f("gpu:N", title="GPU"), _f("estimate:N"), _f("time:Q", format=".3g", title=unit),
           _f("cost_usd:Q", format=",.3g", title="$"), _f("usd_hr:Q", format=".3g", title="$/GPU-h"),
           _f("on_front:N", title="Pareto front")]
    enc = dict(color=_f("on_front:N", scale={"domain": [True, False], "range": ["#d62728", "#9e9e9e"]},
                        title="On the Pareto front"), tooltip=tip, x=x, y=y)
    if any(r["estimate"] == "calibrated" for r in rows):  # analytic and calibrated side by side
        enc["shape"] = _f("estimate:N", scale={"domain": ["analytic", "calibrated"], "range": ["circle", "diamond"]},
                          title="Estimate")
    at = dict(text=_f("label:N"), x=_f("time:Q"), y=_f("cost_usd:Q"))
    # one dataset, each layer taking its rows with a Vega-Lite filter: one Arrow conversion, not four
    return _layered([
        (df, {"type": "point", "filled": True, "opacity": 0.85, "size": 70}, enc),
        (df, {"type": "line", "color": "#d62728", "strokeDash": [4, 3]},
         dict(detail=_f("estimate:N"), order=_f("time:Q"), x=_f("time:Q"), y=_f("cost_usd:Q")),
         [{"filter": {"field": "on_front", "equal": True}}]),
        (df, {"type": "text", "align": "left", "dx": 7, "dy": -9, "fontSize": 11}, at,
         [{"filter": {"field": "label_side", "equal": "above"}}]),
        (df, {"type": "text", "align": "right", "dx": -7, "dy": 12, "fontSize": 11}, at,
         [{"filter": {"field": "label_side", "equal": "below"}}])],
        autosize=FIT_WIDTH, height=480, title=_title("Cost vs time: every GPU that can run the job",
                                                     "Red: the Pareto front (nothing else is both faster and cheaper). "
                                                     "Down-left is better.",
                                                     f"Source: {ESTIMATE_SOURCE}; prices per GPU-hour x GPUs x hours."))



# ---------------------------------------------------------------- roofline


def work_totals(e: Estimate) -> tuple[float, float]:
    """(FLOPs, bytes) the whole job moves on one GPU, summed over phases and op groups."""
    flops = sum(g.flops * ph.passes for ph in e.phases for g in ph.groups)
    nbytes = sum(g.bytes * ph.passes for ph in e.phases for g in ph.groups)
    return flops, nbytes


def roofline_data(estimates: Sequence[Estimate]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ceilings, points): each GPU's datasheet roofline for the plan's compute path (three corners: low
    intensity, ridge, high intensity) and the job's operating point (FLOPs / bytes, average TFLOPS)."""
    ceilings, points = [], []
    for e in estimates:
        if not e.feasible or not e.seconds:
            continue
        path = e.setup.precision.compute_path
        flops, nbytes = work_totals(e)
        if not flops or not nbytes:
            continue
        intensity = flops / nbytes
        points.append({"gpu": e.gpu.name, "intensity": intensity, "tflops": flops / e.seconds / 1e12,
                       "bound": e.bound, "path": path})
    lo = min([0.1] + [p["intensity"] / 3 for p in points])
    hi = max([1e4] + [p["intensity"] * 3 for p in points])
    for e in estimates:
        path = e.setup.precision.compute_path
        ridge = ridge_point(e.gpu, path)
        if ridge is None or not any(p["gpu"] == e.gpu.name for p in points):
            continue
        for x in sorted({lo, min(max(ridge, lo), hi), hi}):
            ceilings.append({"gpu": e.gpu.name, "intensity": x, "tflops": attainable_tflops(e.gpu, path, x),
                             "peak_tflops": e.gpu.run_peak_tflops(path), "mem_bw_gbps": e.gpu.mem_bw_gbps,
                             "path": path})
    return pd.DataFrame(ceilings), pd.DataFrame(points)


def roofline_chart(ceilings: pd.DataFrame, points: pd.DataFrame) -> dict:
    """Attainable TFLOPS vs arithmetic intensity (log-log), one ceiling per GPU, the job's point on each."""
    path = points.path.iloc[0] if len(points) else "-"
    x = _f("intensity:Q", scale={"type": "log"}, title="Arithmetic intensity (FLOP per byte of DRAM traffic, log)")
    y = _f("tflops:Q", scale={"type": "log"}, title=f"Attainable TFLOPS ({path}, dense, log)")
    color = _f("gpu:N", legend={"labelLimit": 280}, scale={"scheme": "tableau10"}, title="GPU")
    roof = dict(color=color, tooltip=[_f("gpu:N", title="GPU"), _f("peak_tflops:Q", format=".4g", title="peak TFLOPS"),
                                      _f("mem_bw_gbps:Q", format=",.0f", title="bandwidth GB/s")], x=x, y=y)
    dots = dict(color=color, shape=_f("bound:N", title="Limited by"),
                tooltip=[_f("gpu:N", title="GPU"), _f("intensity:Q", format=".3g", title="FLOP/byte"),
                         _f("tflops:Q", format=".3g", title="average TFLOPS"), _f("bound:N", title="limited by")],
                x=x, y=y)
    return _layered([
        (ceilings, {"type": "line", "strokeWidth": 2}, roof),
        (points, {"type": "point", "filled": True, "size": 110, "stroke": "black", "strokeWidth": 1}, dots)],
        autosize=FIT_WIDTH, height=480, title=_title("Roofline: where the job sits on each GPU",
                                 "Lines: min(peak TFLOPS, intensity x bandwidth). Points: the job's FLOPs / bytes "
                                 "and its average TFLOPS over the whole run. Left of a line's bend = memory-bound; "
                                 "right = compute-bound.",
                                 "Source: ceilings from data/gpus.yaml datasheet peaks; points from the "
                                 f"{ESTIMATE_SOURCE}."))



# ---------------------------------------------------------------- batch-size sweep


def batch_sweep(plan: Plan, gpus: Iterable[GPU], facts: Facts, adjust: EfficiencyAdjust | None = None) -> pd.DataFrame:
    """Throughput, cost, bound and memory for each GPU at each batch of planner.engine.ranking.batch_sweep (the
    plan's batch replaced, each batch a sweep on arrays: planner.engine.sweep); rows past the memory limit are kept
    with feasible False."""
    rows = [{"gpu": p.gpu.name, "gpu_id": p.gpu.id, "batch": p.batch, "feasible": e.feasible,
             "items_per_s": e.items_per_s, "tokens_per_s": e.tokens_per_s, "cost_usd": e.cost(),
             "seconds": e.seconds, "bound": e.bound if e.feasible else "out of memory",
             "memory_gb": e.memory.total_gb, "vram_gb": p.gpu.vram_gb, "usable_gb": e.usable_gb,
             "max_batch": p.max_batch, "items_per_gpu": p.items_per_gpu}
            for p in ranking.batch_sweep(plan, gpus, facts, adjust, sweep) for e in (p.estimate,)]
    return pd.DataFrame(rows, columns=["gpu", "gpu_id", "batch", "feasible", "items_per_s", "tokens_per_s", "cost_usd",
                                       "seconds", "bound", "memory_gb", "vram_gb", "usable_gb", "max_batch",
                                       "items_per_gpu"])


def batch_chart(df: pd.DataFrame, y: str, y_title: str) -> dict:
    """One quantity (throughput or job cost) vs batch size per GPU: the shape says what limits the steps
    (memory bandwidth, compute, launch overhead), the dashed rule marks the largest batch that fits in memory.
    Every layer reads the sweep's one dataset (the throughput and the cost charts share it), each taking its rows
    with a Vega-Lite transform: the points that run and have a value; one rule per GPU that fits any batch."""
    ticks = sorted({int(b) for b in df.batch})  # the batches swept: whole numbers, never 1.2 or 1.6
    x = _f("batch:Q", axis={"format": "d", "labelOverlap": "greedy", "values": ticks},
           scale={"base": 2, "type": "log"}, title="Batch size (per GPU, log2)")
    color = _f("gpu:N", legend={"columns": 2, "labelLimit": 320, "orient": "bottom"}, scale={"scheme": "tableau10"},
               title="GPU")
    tip = [_f("gpu:N", title="GPU"), _f("batch:Q"), _f("bound:N", title="limited by"),
           _f(f"{y}:Q", format=",.4g", title=y_title), _f("memory_gb:Q", format=".3g", title="memory GB"),
           _f("usable_gb:Q", format=".3g", title="usable GB")]
    ok = [{"filter": {"field": "feasible", "equal": True}}, {"filter": {"field": y, "valid": True}}]
    limits = [{"aggregate": [{"op": "count", "as": "points"}], "groupby": ["gpu", "max_batch"]},
              {"filter": {"field": "max_batch", "gte": 1}}]
    return _layered([
        (df, {"type": "line", "opacity": 0.5},
         dict(color=color, x=x, y=_f(f"{y}:Q", scale={"type": "log"}, title=f"{y_title} (log)")), ok),
        (df, {"type": "point", "filled": True, "size": 70},
         dict(color=color, shape=_f("bound:N", title="Limited by"), tooltip=tip, x=x, y=_f(f"{y}:Q")), ok),
        (df, {"type": "rule", "strokeDash": [5, 4]},
         dict(color=color, tooltip=[_f("gpu:N", title="GPU"), _f("max_batch:Q", title="largest batch that fits")],
              x=_f("max_batch:Q")), limits)],
        autosize=FIT_WIDTH, height=400, title=_title(f"{y_title.split(' (')[0]} vs batch size",
                                 "Dashed line: the largest batch that fits in the usable memory; "
                                 "beyond it, out of memory. Shape: what limits the steps at that batch.",
                                 f"Source: {ESTIMATE_SOURCE}."))


# ---------------------------------------------------------------- memory


def memory_data(estimates: Iterable[Estimate]) -> pd.DataFrame:
    """Memory per GPU and consumer (decimal GB) at each estimate's batch, with the VRAM capacity and the usable
    memory (the plan's target of what the GPU reports), both decimal GB."""
    rows = []
    for e in estimates:
        for item in e.memory.items:
            rows.append({"gpu": e.gpu.name, "item": item.name.replace("_", " "), "gb": item.gb, "formula": item.formula,
                         "order": MEMORY_ORDER.index(item.name) if item.name in MEMORY_ORDER else len(MEMORY_ORDER),
                         "vram_gb": e.gpu.vram_gb, "usable_gb": e.usable_gb, "batch": e.batch})
    return pd.DataFrame(rows, columns=["gpu", "item", "gb", "formula", "order", "vram_gb", "usable_gb", "batch"])


def memory_chart(df: pd.DataFrame) -> dict:
    """Stacked memory per GPU (GB) with a black tick at its VRAM and a red one at its usable memory."""
    label = df.assign(label=df.gpu.map(short_name) + " · batch " + df.batch.astype(str))
    y = _f("label:N", axis={"labelLimit": 320}, sort=None, title=None)
    names = [m.replace("_", " ") for m in MEMORY_ORDER]
    bars = dict(color=_f("item:N", legend={"columns": 3, "labelLimit": 200, "orient": "bottom"},
                         scale={"domain": names, "range": list(MEMORY_COLOURS)}, sort=names, title="Used by"),
                order=_f("order:Q"),
                tooltip=[_f("gpu:N", title="GPU"), _f("item:N", title="used by"), _f("gb:Q", format=".3g", title="GB"),
                         _f("formula:N")],
                x=_f("sum(gb):Q", title="Memory per GPU (GB, decimal)"), y=y)
    per_gpu = label.drop_duplicates("label")
    return _layered([
        (label, {"type": "bar"}, bars),
        (per_gpu, {"type": "tick", "color": "black", "size": 22, "thickness": 3},
         dict(tooltip=[_f("vram_gb:Q", format=".3g", title="VRAM GB")], x=_f("vram_gb:Q"), y=y)),
        (per_gpu, {"type": "tick", "color": "#d62728", "size": 22, "thickness": 3},
         dict(tooltip=[_f("usable_gb:Q", format=".3g", title="usable GB")], x=_f("usable_gb:Q"), y=y))],
        autosize=FIT_WIDTH, height={"step": BAND_PX}, title=_title("Memory breakdown at the batch each GPU runs",
                                              "Black tick: the GPU's VRAM in decimal GB (data/gpus.yaml GiB x "
                                              "1.074). Red tick: the usable memory (the memory target of what the "
                                              "GPU reports); bars past it do not fit.",
                                              "Source: planner memory model (planner/memory.py formulas; hover "
                                              "for each)."))



# ---------------------------------------------------------------- step time of one estimate


def time_split_data(e: Estimate) -> pd.DataFrame:
    """Seconds of the job by phase and by what limits them (compute, memory, launch overhead, communication)."""
    rows = [{"phase": ph.name, "limit": k, "seconds": v} for ph in e.phases for k, v in ph.split().items() if v > 0]
    return pd.DataFrame(rows, columns=["phase", "limit", "seconds"])


def time_split_chart(df: pd.DataFrame) -> dict:
    return _single(df, {"type": "bar"}, dict(
        color=_f("limit:N", scale={"domain": ["memory", "compute", "overhead", "communication"],
                                   "range": ["#1f77b4", "#ff7f0e", "#9467bd", "#2ca02c"]}, title="Limited by"),
        tooltip=[_f("phase:N"), _f("limit:N"), _f("seconds:Q", format=",.4g")],
        x=_f("sum(seconds):Q", title="Seconds of the whole job"), y=_f("phase:N", sort=None, title=None)),
        autosize=FIT_WIDTH, height={"step": BAND_PX},
        title=_title("Where the time goes", f"Source: {ESTIMATE_SOURCE}."))



def rate_column(plan_job: str, is_decoder: bool) -> tuple[str, str]:
    """(column, title) for throughput: tokens/s for decoders, else samples/s."""
    if is_decoder:
        return "tokens_per_s", "Throughput (" + ("generated tokens/s" if plan_job == "generate" else "tokens/s") + ")"
    return "items_per_s", "Throughput (samples/s)"



# ---------------------------------------------------------------- calibration points


def calibration_data(points: Iterable[Mapping]) -> pd.DataFrame:
    """Long form of calibration point rows (measured_s, analytic_s, calibrated_s): one row per point and estimate."""
    rows = []
    for p in points:
        for kind in ("analytic", "calibrated"):
            if p.get("measured_s") and p.get(f"{kind}_s"):
                # the point's own label where it has one (a model run's points differ only by input size)
                rows.append({"point": p.get("label") or f"{p['model']} {p['workload']} batch {p['batch']}",
                             "estimate": kind,
                             "measured_s": p["measured_s"], "predicted_s": p[f"{kind}_s"],
                             "error_pct": 100 * (p[f"{kind}_s"] / p["measured_s"] - 1)})
    return pd.DataFrame(rows, columns=["point", "estimate", "measured_s", "predicted_s", "error_pct"])


def calibration_chart(df: pd.DataFrame) -> dict:
    """Predicted vs measured seconds of each benchmark point, analytic and calibrated, with the y = x line."""
    lo = float(min(df.measured_s.min(), df.predicted_s.min())) / 1.5
    hi = float(max(df.measured_s.max(), df.predicted_s.max())) * 1.5
    scale = {"domain": [lo, hi], "nice": False, "type": "log"}
    pts = dict(color=_f("estimate:N", scale={"domain": ["analytic", "calibrated"], "range": ["#9e9e9e", "#d62728"]},
                        title="Estimate"),
               tooltip=[_f("point:N"), _f("estimate:N"), _f("measured_s:Q", format=".3g"),
                        _f("predicted_s:Q", format=".3g"), _f("error_pct:Q", format="+.0f", title="error %")],
               x=_f("measured_s:Q", scale=scale, title="Measured on your device (s, log)"),
               y=_f("predicted_s:Q", scale=scale, title="Planner estimate (s, log)"))
    return _layered([
        (pd.DataFrame({"x": [lo, hi]}), {"type": "line", "color": "gray", "strokeDash": [4, 4]},
         dict(x=_f("x:Q", scale=scale), y=_f("x:Q", scale=scale))),
        (df, {"type": "point", "filled": True, "size": 80}, pts)],
        autosize=FIT_WIDTH, height=380, title=_title("Your benchmark: estimate vs measurement",
                                 "On the dashed line the estimate equals the measurement. Grey: datasheet priors; "
                                 "red: with your calibration.",
                                 "Source: your bench result file (python -m planner.bench)."))



# ---------------------------------------------------------------- validation


def speed(value: float, metric: str) -> float:
    """A figure as a speed (bigger = faster): step_seconds become steps per second."""
    return 1.0 / value if metric == "step_seconds" else value


def validation_chart(report: ValidationReport):
    """Measured vs predicted speed, log-log, with y = x and +-20 % lines, coloured by regime."""
    data = [{"row": r.row_id, "gpu": r.gpu_id, "gpu_class": r.gpu_class, "regime": r.regime, "split": r.split,
             "framework": r.framework, "metric": r.metric, "measured_speed": speed(r.measured, r.metric),
             "predicted_speed": speed(r.predicted, r.metric), "error_pct": round(r.error_pct, 1)}
            for r in report.rows if r.predicted]
    lo = min(min(d["measured_speed"], d["predicted_speed"]) for d in data) / 1.5
    hi = max(max(d["measured_speed"], d["predicted_speed"]) for d in data) * 1.5
    lines = [{"x": x, "y": x * f, "line": name} for name, f in (("y = x", 1.0), ("+20 %", 1.2), ("-20 %", 0.8))
             for x in (lo, hi)]
    scale = alt.Scale(type="log", domain=[lo, hi])
    guide = alt.Chart(alt.Data(values=lines)).mark_line(strokeDash=[4, 4], color="gray").encode(
        x=alt.X("x:Q", scale=scale), y=alt.Y("y:Q", scale=scale), detail="line:N")
    points = alt.Chart(alt.Data(values=data)).mark_point(filled=True, size=60).encode(
        x=alt.X("measured_speed:Q", scale=scale, title="measured (tokens/s, samples/s, or steps/s for step-time rows)"),
        y=alt.Y("predicted_speed:Q", scale=scale, title="planner estimate (same unit)"),
        color=alt.Color("regime:N", title="regime"),
        shape=alt.Shape("split:N", title="split"),
        tooltip=["row:N", "gpu:N", "framework:N", "metric:N", "measured_speed:Q", "predicted_speed:Q",
                 "error_pct:Q", "split:N"])
    return (guide + points).properties(title="Planner estimate vs published measurement", width=520, height=420,
                                         autosize=FIT_WIDTH)



# ---------------------------------------------------------------- the whole job


def job_cost_data(job, usd_hr: float | None, gpus: int) -> pd.DataFrame:
    """Seconds and dollars of each part of the whole job (planner.engine.job_cost.JobCost), parts with time only."""
    rows = [{"part": name, "seconds": sec, "usd": sec / 3600 * gpus * usd_hr if usd_hr else None,
             "order": i} for i, (name, sec) in enumerate(job.parts) if sec > 0]
    return pd.DataFrame(rows, columns=["part", "seconds", "usd", "order"])


def job_cost_chart(df: pd.DataFrame) -> dict:
    """One stacked bar: the billed time of the whole job by part (compute next to start, download, warm-up...)."""
    return _single(df, {"type": "bar"}, dict(
        color=_f("part:N", sort={"field": "order"}, title="Part"), order=_f("order:Q"),
        tooltip=[_f("part:N"), _f("seconds:Q", format=",.4g"), _f("usd:Q", format=",.3g", title="$")],
        x=_f("sum(seconds):Q", title="Billed seconds of the whole job")),
        autosize=FIT_WIDTH, height=120, title=_title("The whole job: compute and what a rented pod also bills",
                                                     f"Source: {ESTIMATE_SOURCE}; overheads: data/job_costs.yaml."))



def whole_jobs_data(rows: Iterable[Estimate], ranked: ranking.Ranking, top: int = 10) -> pd.DataFrame:
    """Billed seconds by part for the first `top` of the `rows` (in ranking order) that can run the job."""
    from_parts = []
    shown = 0
    for e in rows:
        job = ranked.job(e)
        if job is None:
            continue
        shown += 1
        from_parts += [{"gpu": short_name(e.gpu.name), "rank": shown, "part": name, "seconds": sec, "order": i}
                       for i, (name, sec) in enumerate(job.parts) if sec > 0]
        if shown >= top:
            break
    return pd.DataFrame(from_parts, columns=["gpu", "rank", "part", "seconds", "order"])


def whole_jobs_chart(df: pd.DataFrame) -> dict:
    """Per GPU, one stacked bar of the whole job's billed time: compute next to start, download, warm-up..."""
    return _single(df, {"type": "bar"}, dict(
        color=_f("part:N", sort={"field": "order"}, title="Part"), order=_f("order:Q"),
        tooltip=[_f("gpu:N"), _f("part:N"), _f("seconds:Q", format=",.4g")],
        x=_f("sum(seconds):Q", title="Billed seconds of the whole job"),
        y=_f("gpu:N", axis={"labelLimit": 260}, sort={"field": "rank"}, title=None)),
        autosize=FIT_WIDTH, height={"step": BAND_PX},
        title=_title("The whole job on the top GPUs: compute and the pod's overheads",
                     f"Source: {ESTIMATE_SOURCE}; overheads: data/job_costs.yaml (each with its source)."))

