"""Chart data and specs: Pareto front by hand, roofline physics, batch sweep, memory sums, units on every axis; every
spec valid Vega-Lite (the builders write plain dicts: the schema Altair ships checks them here)."""

import json

import jsonschema
import pytest
from altair.vegalite.v6.schema import SCHEMA_URL
from altair.vegalite.v6.schema.core import load_schema

from planner.views import charts
from planner.inputs.catalog import load_catalog
from planner.engine.plan import Plan
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.inputs.models import load_models
from planner.inputs.jobs import Generate, Train
from planner.inputs.facts import load_facts

FACTS = load_facts()

CATALOG = load_catalog()


DEFAULT_WORKLOAD = Generate(2**16, 1, 64)  # a frozen dataclass: one shared default is safe


def _plan(model="cfdna-gen", workload=DEFAULT_WORKLOAD, precision="fp16", **kw):
    return Plan(load_models().get(model), workload, precision, **kw)


@pytest.fixture(scope="module")
def ranking():
    return estimate_all(_plan(price_tier="community"), FACTS)


def _valid(spec):
    """The spec with its DataFrames as the rows the browser receives, checked against the Vega-Lite schema its
    $schema names; returns the spec."""
    assert spec["$schema"] == SCHEMA_URL
    inline = {**spec, "datasets": {k: json.loads(df.to_json(orient="records")) for k, df in spec["datasets"].items()}}
    jsonschema.validate(inline, load_schema())
    json.dumps({k: v for k, v in spec.items() if k != "datasets"}, allow_nan=False)  # the rest is plain JSON
    return spec


def _layers(spec):
    return spec.get("layer") or [spec]


def _axis_titles(spec):
    out = []
    for layer in _layers(spec):
        for ch in ("x", "y"):
            enc = layer.get("encoding", {}).get(ch, {})
            if "title" in enc:
                out.append(enc["title"])
    return out


def test_pareto_front_by_hand():
    pts = [("a", 1, 10), ("b", 2, 5), ("c", 3, 6), ("d", 4, 1), ("e", 5, 1), ("f", 2, 5)]
    # c is beaten by b (faster and cheaper), e by d (faster, same cost); f ties b exactly and b comes first
    assert charts.pareto_front(pts) == ["a", "b", "d"]
    assert charts.pareto_front([]) == [] and charts.pareto_front([("x", 3, None)]) == []


def test_cost_time_data_marks_exactly_the_front(ranking):
    df = charts.cost_time_data(ranking, unit=("min", 60.0))
    assert len(df) == sum(1 for e in ranking if e.feasible and e.cost() is not None)
    front = set(charts.pareto_front(zip(df.gpu_id, df.seconds, df.cost_usd)))
    assert set(df[df.on_front].gpu_id) == front and front
    for _, r in df.iterrows():  # nothing off the front may beat a front point on both axes
        if r.on_front:
            assert not ((df.seconds < r.seconds) & (df.cost_usd < r.cost_usd)).any()
    assert (df.time * 60).tolist() == pytest.approx(df.seconds.tolist())


def test_cost_time_chart_labels_units_and_source(ranking):
    spec = _valid(charts.cost_time_chart(charts.cost_time_rows(ranking, unit=("min", 60.0)), "community", "min"))
    titles = _axis_titles(spec)
    assert "Time for the whole job (min, log scale)" in titles
    assert any(t.startswith("Cost of the job ($, RunPod community") for t in titles)
    assert any("Source:" in s for s in spec["title"]["subtitle"])
    assert "shape" not in _layers(spec)[0]["encoding"]  # no calibration, no analytic/calibrated legend


def _taken(spec, layer):
    """The rows of the spec's dataset that a layer draws, after its Vega-Lite filters."""
    df = spec["datasets"][layer["data"]["name"]]
    for step in layer.get("transform", []):
        df = df[df[step["filter"]["field"]] == step["filter"]["equal"]]
    return df


def test_cost_time_layers_take_the_front_and_its_labels_from_one_dataset(ranking):
    """One dataset for the four layers (one Arrow conversion a new plan): the points draw every row, the line exactly
    the front, and the labels name each front point once, fastest first, alternating above and below."""
    rows = charts.cost_time_rows(ranking, unit=("min", 60.0))
    spec = _valid(charts.cost_time_chart(rows, "community", "min"))
    assert len(spec["datasets"]) == 1
    points, line, above, below = (_taken(spec, layer) for layer in _layers(spec))
    front = charts.pareto_front((r["gpu_id"], r["seconds"], r["cost_usd"]) for r in rows)  # fastest first
    assert len(front) >= 2 and list(points.gpu_id) == [r["gpu_id"] for r in rows]
    assert sorted(line.gpu_id) == sorted(front)
    assert list(above.sort_values("time").gpu_id) == front[0::2]
    assert list(below.sort_values("time").gpu_id) == front[1::2]


def test_roofline_ceilings_are_datasheet_physics_and_points_sit_under_them(ranking):
    chosen = [e for e in ranking if e.feasible][:4]
    ceilings, points = charts.roofline_data(chosen)
    assert set(points.gpu) == {e.gpu.name for e in chosen}
    for e in chosen:
        gpu, path = e.gpu, e.setup.precision.compute_path
        c = ceilings[ceilings.gpu == gpu.name].sort_values("intensity")
        low, high = c.iloc[0], c.iloc[-1]
        assert low.tflops / low.intensity == pytest.approx(gpu.mem_bw_gbps / 1000)  # slope: bandwidth (TB/s)
        assert high.tflops == pytest.approx(gpu.peak_tflops(path))  # flat roof: the dense peak
        p = points[points.gpu == gpu.name].iloc[0]
        roof = min(gpu.peak_tflops(path), p.intensity * gpu.mem_bw_gbps / 1000)
        assert 0 < p.tflops <= roof  # nothing runs above its roofline
        flops, nbytes = charts.work_totals(e)
        assert p.intensity == pytest.approx(flops / nbytes)


def test_roofline_chart_spec_names_axes():
    e = estimate_gpu(_plan(), CATALOG.get("rtx-4090"), FACTS)
    spec = _valid(charts.roofline_chart(*charts.roofline_data([e])))
    titles = _axis_titles(spec)
    assert any("FLOP per byte" in t for t in titles) and any("TFLOPS (fp16" in t for t in titles)


def test_batch_sweep_memory_limit_and_throughput():
    plan = _plan(workload=Generate(2**16, 1, 64))
    gpu = CATALOG.get("rtx-3090")
    df = charts.batch_sweep(plan, [gpu], FACTS)
    fit = df.max_batch.iloc[0]
    assert (df[df.batch <= fit].feasible).all() and not (df[df.batch > fit].feasible).any()
    usable = 0.90 * 24 * 2**30 / 1e9  # the default target: 90 % of the 24 GiB a GeForce card reports
    assert df.usable_gb.tolist() == pytest.approx([usable] * len(df))
    assert (df[df.feasible].memory_gb <= usable).all()
    assert (df[~df.feasible].memory_gb > usable).all()
    # powers of two divide 2**16 sequences exactly: per-item time never rises with the batch (roofline max(a + bB))
    pow2 = df[df.feasible & df.batch.map(lambda b: b & (b - 1) == 0)].sort_values("batch")
    assert (pow2.items_per_s.diff().dropna() >= -1e-9 * pow2.items_per_s.max()).all()
    for _, r in df[df.feasible].iterrows():
        assert r.items_per_s == pytest.approx(2**16 / r.seconds)


def test_batch_chart_marks_the_memory_limit():
    df = charts.batch_sweep(_plan(), [CATALOG.get("rtx-4090"), CATALOG.get("a100-sxm-80gb")], FACTS)
    spec = _valid(charts.batch_chart(df, "tokens_per_s", "Throughput (generated tokens/s)"))
    marks = {layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in _layers(spec)}
    assert marks == {"line", "point", "rule"}  # the rule marks the largest batch that fits
    rule = next(layer for layer in _layers(spec) if "rule" in str(layer["mark"]))
    assert rule["encoding"]["x"]["field"] == "max_batch"
    # one dataset, the sweep's rows; the line and points keep those that run and have a value, the rule one per GPU
    assert len(spec["datasets"]) == 1 and len(next(iter(spec["datasets"].values()))) == len(df)
    drawn = [layer for layer in _layers(spec) if layer is not rule]
    assert all({"filter": {"field": "feasible", "equal": True}} in layer["transform"] and
               {"filter": {"field": "tokens_per_s", "valid": True}} in layer["transform"] for layer in drawn)
    assert rule["transform"][0]["groupby"] == ["gpu", "max_batch"]
    assert "Batch size (per GPU, log2)" in _axis_titles(spec)


def test_memory_data_sums_to_each_estimate(ranking):
    chosen = ranking[:3]
    df = charts.memory_data(chosen)
    for e in chosen:
        assert df[df.gpu == e.gpu.name].gb.sum() == pytest.approx(e.memory.total_gb)
        assert df[df.gpu == e.gpu.name].vram_gb.iloc[0] == pytest.approx(e.gpu.vram_gib * 2**30 / 1e9)
    spec = _valid(charts.memory_chart(df))
    assert {layer["mark"]["type"] for layer in _layers(spec)} == {"bar", "tick"}
    tick = next(layer for layer in _layers(spec) if layer["mark"]["type"] == "tick")
    assert tick["encoding"]["x"]["field"] == "vram_gb"  # the capacity, in the unit of the bars


def test_time_split_adds_up_to_the_job_time():
    e = estimate_gpu(_plan(model="gpt2-124m", workload=Train(1000, 256, 1.0), precision="bf16"),
                     CATALOG.get("a100-sxm-80gb"), FACTS)
    df = charts.time_split_data(e)
    assert df.seconds.sum() == pytest.approx(e.seconds)
    assert set(df.limit) <= {"compute", "memory", "overhead", "communication"}


def test_explain_charts_are_valid_vega_lite_with_titled_axes():
    """Every builder the explain panel draws writes a valid Vega-Lite spec with titled axes."""
    from planner.engine.job_cost import job_cost
    from planner.inputs.job_costs import load_job_costs
    e = estimate_gpu(_plan(model="gpt2-124m", workload=Train(1000, 256, 1.0), precision="bf16", price_tier="community"),
                     CATALOG.get("a100-sxm-80gb"), FACTS)
    split = _valid(charts.time_split_chart(charts.time_split_data(e)))
    assert "Seconds of the whole job" in _axis_titles(split)
    job = job_cost(e, load_job_costs())
    bill = _valid(charts.job_cost_chart(charts.job_cost_data(job, 1.5, e.plan.gpus)))
    assert "Billed seconds of the whole job" in _axis_titles(bill)


def test_calibration_chart_from_points():
    points = [{"model": "m", "workload": "decode", "batch": 1, "measured_s": 0.1, "analytic_s": 0.01,
               "calibrated_s": 0.11}]
    df = charts.calibration_data(points)
    assert list(df.estimate) == ["analytic", "calibrated"]
    assert df.error_pct.tolist() == pytest.approx([-90.0, 10.0])
    spec = _valid(charts.calibration_chart(df))
    assert "Measured on your device (s, log)" in _axis_titles(spec)
    labelled = [{**points[0], "label": "m forward b1 tokens=64 fp32"},
                {**points[0], "label": "m forward b1 tokens=128 fp32"}]
    assert charts.calibration_data(labelled).point.unique().tolist() == [r["label"] for r in labelled]


def test_whole_jobs_stack_the_billed_parts_per_gpu_in_ranking_order(ranking):
    from planner.engine.job_cost import job_cost
    from planner.engine.ranking import rank
    from planner.inputs.job_costs import load_job_costs
    overheads = load_job_costs()
    df = charts.whole_jobs_data(ranking, rank(ranking, overheads), top=3)
    firsts = [e for e in ranking if e.feasible][:3]
    assert df.groupby("rank").seconds.sum().tolist() == pytest.approx([job_cost(e, overheads).billed_s for e in firsts])
    spec = _valid(charts.whole_jobs_chart(df))
    assert "Billed seconds of the whole job" in _axis_titles(spec)


def _chart_layers(spec):
    return _valid(spec)["layer"]


def test_memory_colours_keep_their_meaning_between_plans():
    gen = estimate_all(_plan(), FACTS, gpu_names=["rtx-4090"])
    train = estimate_all(_plan(workload=Train(100, 256, 1.0)), FACTS, gpu_names=["rtx-4090"])
    scales = []
    for ests in (gen, train):  # generate has a KV cache and no optimizer; training the other way round
        bars = _chart_layers(charts.memory_chart(charts.memory_data(ests)))[0]
        scales.append(bars["encoding"]["color"]["scale"])
    assert scales[0] == scales[1] and scales[0]["domain"][:3] == ["weights", "gradients", "optimizer"]
    assert len(set(scales[0]["range"])) == len(scales[0]["domain"])  # one colour each


def test_batch_ticks_are_whole_batches():
    df = charts.batch_sweep(_plan(workload=Generate(2**10, 1, 64)), [CATALOG.get("rtx-4090")], FACTS)
    axis = _chart_layers(charts.batch_chart(df, "items_per_s", "Throughput"))[0]["encoding"]["x"]["axis"]
    assert axis["values"] == sorted({int(b) for b in df.batch}) and axis["format"] == "d"
    assert all(float(v).is_integer() for v in axis["values"])


def test_pareto_labels_alternate_above_and_below():
    ests = estimate_all(_plan(), FACTS)
    layers = _chart_layers(charts.cost_time_chart(charts.cost_time_rows(ests), "community"))
    texts = [layer for layer in layers if layer["mark"]["type"] == "text"]
    assert [t["mark"]["dy"] for t in texts] == [-9, 12]  # one layer above its points, one below
