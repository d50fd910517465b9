"""The page through streamlit.testing.v1.AppTest: every control, every preset, links in and out, uploads, prices."""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner import DATA_DIR
from planner.clients import live_prices as prices
from planner.views import plan_inputs, share
from planner.inputs.catalog import load_catalog
from planner.inputs.layouts import Layout, parse_layout
from planner.views.presets import load_presets

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
# the output of a real `python -m planner.bench --quick --device cpu` run
BENCH = ROOT / "tests" / "fixtures" / "bench_cpu_quick.json"
CATALOG = load_catalog()
VRAM_GB = {g.id: g.vram_gb for g in CATALOG.gpus}
VENDOR = {g.id: g.vendor for g in CATALOG.gpus}


def _app(params=None, secrets=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    for k, v in (secrets or {}).items():
        at.secrets[k] = v
    return at.run()


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [_shown(e.value) for e in at.error]


def _link(at: AppTest) -> dict[str, str]:
    """The URL's query parameters after a run (as strings; repeated keys: the last)."""
    return {k: (v if isinstance(v, str) else v[-1]) for k, v in at.query_params.items()}


def _shown(markdown: str) -> str:
    """Markdown source as a reader sees it: backslash escapes and the invisible word joiners that break autolinks
    (planner.views.format.md_escape) removed."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def _plan_text(at: AppTest) -> str:
    return _shown(next(m.value for m in at.markdown if m.value.startswith("**Plan:**")))


def _ranking(at: AppTest):
    return next(d.value for d in at.dataframe if "gpu_id" in d.value.columns)


def _open(at: AppTest, key: str) -> AppTest:
    """Open a popover or expander whose widgets are drawn only while it is open (its key), as a click on it does."""
    at.session_state[key] = True
    return at.run()


def test_first_visit_ranks_every_gpu_and_writes_the_link():
    at = _app()
    _ok(at)
    df = _ranking(at)
    assert len(df) == len(CATALOG.gpus) and list(df.Rank) == list(range(1, len(df) + 1))
    assert df["Runs?"].tolist() == sorted(df["Runs?"].tolist(), reverse=True)  # feasible GPUs first
    infeasible = df[~df["Runs?"]]
    assert len(infeasible) and all("✗" in why for why in infeasible["Why / notes"])  # each says why
    assert _link(at) == share.encode(plan_inputs.DEFAULTS)
    assert not any(b.label.startswith("cfDNA-Gen") for b in at.button)  # drawn only when their popover opens
    assert any(b.label.startswith("cfDNA-Gen") for b in _open(at, "presets_open").button)  # the examples are offered
    assert [d.label for d in at.get("download_button")] == ["CSV", "JSON", "SkyPilot task"]
    assert at.session_state["_run_ms"] > 0


def _rows_where(df, col, pred):
    return all(pred(v) for v in df[col])


CONTROLS = [
    # (widget, key, value, link parameter, link value, check on the page)
    ("selectbox", "prec", "fp32", "prec", "fp32", lambda at: " in fp32," in _plan_text(at)),
    ("selectbox", "model", "llama-3-8b", "model", "llama-3-8b", lambda at: "Llama-3-8B" in _plan_text(at)),
    ("radio", "job", "train", "job", "train", lambda at: at.number_input(key="epochs") is not None),
    ("number_input", "seqs", 5000, "seqs", "5000", lambda at: "Generate 5,000 sequences" in _plan_text(at)),
    ("number_input", "prompt", 64, "prompt", "64", lambda at: "prompt 64 tokens" in _plan_text(at)),
    ("number_input", "gen", 32, "gen", "32", lambda at: "of 32 new tokens" in _plan_text(at)),
    ("selectbox", "kv", "fp8", "kv", "fp8",
     lambda at: any("fp8 KV cache needs SM89" in w for w in _ranking(at)["Why / notes"])),
    ("selectbox", "attn", "manual", "attn", "manual", lambda at: "manual attention" in _plan_text(at)),
    ("selectbox", "rt", "torch-compile", "rt", "torch-compile", lambda at: "torch.compile" in _plan_text(at)),
    ("number_input", "gpus", 2, "gpus", "2", lambda at: "2 GPUs per job" in _plan_text(at)),
    ("selectbox", "tier", "community", "tier", "community",
     lambda at: "Whole job ($)" in _ranking(at).columns and "community prices" in _plan_text(at)),
    ("selectbox", "vendor", "AMD", "vendor", "AMD",
     lambda at: len(_ranking(at)) and _rows_where(_ranking(at), "gpu_id", lambda g: VENDOR[g] == "AMD")),
    ("number_input", "minvram", 80.0, "minvram", "80",
     lambda at: len(_ranking(at)) and _rows_where(_ranking(at), "gpu_id", lambda g: VRAM_GB[g] >= 80)),
    ("number_input", "maxusd", 0.5, "maxusd", "0.5",
     lambda at: len(_ranking(at)) and _rows_where(_ranking(at), "$/GPU-h", lambda p: p <= 0.5)),
    ("checkbox", "feasible", True, "feasible", "1", lambda at: _ranking(at)["Runs?"].all()),
    ("checkbox", "priced", True, "priced", "1", lambda at: _ranking(at)["$/GPU-h"].notna().all()),
    ("checkbox", "cpus", True, "cpus", "1", lambda at: set(_ranking(at).gpu_id) == set(CATALOG.ids())),
    ("checkbox", "batch_auto", False, "batch", str(plan_inputs.DEFAULTS.batch or 8),
     lambda at: _rows_where(_ranking(at), "Batch", lambda b: b <= 8)),
]


FILTERS = {"vendor", "minvram", "maxusd", "feasible", "priced", "cpus"}  # in the 'Filters' popover


@pytest.mark.parametrize("widget, key, value, param, expected, check", CONTROLS, ids=[c[1] for c in CONTROLS])
def test_each_control_changes_the_plan_and_the_link(widget, key, value, param, expected, check):
    at = _app()
    if key in FILTERS:
        _open(at, "filters_open")
    getattr(at, widget)(key=key).set_value(value)
    at.run()
    _ok(at)
    assert _link(at)[param] == expected
    assert check(at)
    again = _app(_link(at))  # the link reproduces the page
    _ok(again)
    assert _ranking(again).equals(_ranking(at))


def test_tensor_parallel_choice_reaches_the_plan_and_the_link():
    at = _app({"model": "llama-2-7b", "gpus": "2"})
    at.selectbox(key="par").set_value("tensor")
    at.run()
    _ok(at)
    assert _link(at)["par"] == "tensor" and "2 GPUs per job (tensor parallel)" in _plan_text(at)
    again = _app(_link(at))  # the link reproduces the page
    _ok(again)
    assert _ranking(again).equals(_ranking(at))


@pytest.mark.parametrize("key, value, param, expected", [
    ("samples", 2500, "samples", "2500"), ("size", 512, "size", "512"), ("epochs", 3.5, "epochs", "3.5"),
    ("opt", "sgd", "opt", "sgd"), ("accum", 4, "accum", "4"), ("ckpt", True, "ckpt", "1"),
    ("tokens", 1e9, "tokens", "1000000000"),
])
def test_training_controls(key, value, param, expected):
    at = _app({"model": "gpt2-124m", "job": "train", "samples": "1000"})
    widget = {"opt": at.selectbox, "ckpt": at.checkbox}.get(key, at.number_input)
    widget(key=key).set_value(value)
    at.run()
    _ok(at)
    assert _link(at)[param] == expected and _link(at)["job"] == "train"


def test_the_sharding_radio_offers_the_zero_stages_and_auto():
    at = _app({"model": "llama-2-7b", "job": "train", "samples": "1000", "gpus": "8"})
    radio = at.radio(key="shard")
    assert list(radio.options) == ["DDP (full copies)", "ZeRO-1", "ZeRO-2", "FSDP (ZeRO-3)",
                                   "Auto (cheapest that fits)"]
    radio.set_value("auto")
    at.run()
    _ok(at)
    assert _link(at)["shard"] == "auto" and "the cheapest of DDP, ZeRO-1, ZeRO-2 and FSDP that fits" in _plan_text(at)
    one = _app({"model": "llama-2-7b", "job": "train", "samples": "1000", "gpus": "1", "shard": "zero2"})
    assert not one.exception and any("sharding zero2" in _shown(e.value) for e in one.error)


def test_a_typed_training_layout_reaches_the_plan_and_a_bad_one_names_the_field():
    at = _app({"model": "llama-2-7b", "job": "train", "samples": "1000", "gpus": "8", "shard": "zero1"})
    at.text_input(key="lay").set_value("tp=2, pp=2").run()
    at.number_input(key="gbatch").set_value(64).run()
    _ok(at)
    assert parse_layout(_link(at)["lay"]) == Layout(tp=2, pp=2) and _link(at)["gbatch"] == "64"
    assert "layout TP 2 (+SP) x PP 2 (1F1B)" in _plan_text(at) and "global batch 64" in _plan_text(at)
    at.text_input(key="lay").set_value("tp=2,dp=4").run()
    assert not at.exception and any("layout: 'dp=4' is not a degree" in _shown(e.value) for e in at.error)


def test_train_tokens_plan_the_tokens_in_words():
    at = _app({"model": "gpt2-124m", "job": "train", "tokens": "1e9", "size": "1000"})
    _ok(at)
    assert "1,000,000,000 tokens (1,000,000 samples of 1,000 tokens, one epoch)" in _plan_text(at)


def test_fixed_batch_value_travels():
    at = _app({"batch": "16"})
    assert not at.checkbox(key="batch_auto").value and at.number_input(key="batch_n").value == 16
    at.number_input(key="batch_n").set_value(4).run()
    _ok(at)
    assert _link(at)["batch"] == "4" and set(_ranking(at).Batch) <= {4}


@pytest.mark.parametrize("preset", load_presets(), ids=lambda p: p.id)
def test_each_preset_loads_its_plan_in_one_click(preset):
    at = _open(_app(), "presets_open")
    at.button(key=f"preset_{preset.id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # an error may only be the planner's answer that the GPU asked about can't run the plan (BetaRho's batch 16)
    assert all(_shown(e.value).startswith("Can't run: needs") for e in at.error), [_shown(e.value) for e in at.error]
    assert _link(at) == share.encode(preset.inputs)
    # the question stays on screen, its hint one click away
    assert any(preset.question in _shown(x.label) for x in at.expander)
    assert any(_shown(preset.answer_hint)[:40] in _shown(i.value) for i in at.info)
    if preset.inputs.gpu:  # the explain tab opens on the GPU the question is about
        assert any(m.value == f"### {CATALOG.get(preset.inputs.gpu).name}" for m in at.markdown)


def test_bad_link_warns_per_parameter_and_falls_back_for_those_only():
    at = _app({"model": "llama-2-7b", "prec": "bf17", "gpus": "-2", "tier": "community", "colour": "red",
               "cmp": "rtx-4090,rtx-9999"})
    assert not at.exception
    text = " ".join(_shown(w.value) for w in at.warning)
    for param in ("'prec'", "'gpus'", "'colour'", "'cmp'"):
        assert param in text
    link = _link(at)
    assert link["model"] == "llama-2-7b" and link["tier"] == "community"  # good values kept
    assert link["prec"] == plan_inputs.DEFAULTS.prec and link["gpus"] == "1" and link["cmp"] == "rtx-4090"
    assert "colour" not in link  # the cleaned link replaces the bad one
    assert len(_ranking(at)) == len(CATALOG.gpus)


def test_garbage_link_never_fails():
    at = _app({"model": "custom", "m_hidden": "x", "m_spec": "%%%", "batch": "1e400", "cal": "v=9;dev=?",
               "myprice": "::,", "job": ""})
    assert not at.exception and at.warning and len(_ranking(at)) == len(CATALOG.gpus)


def test_custom_model_fields_travel_in_the_link():
    at = _app()
    at.selectbox(key="model").set_value("custom").run()
    assert at.number_input(key="m_layers").value == 14  # starts from the model it replaces (cfDNA-Gen)
    at.number_input(key="m_layers").set_value(7).run()
    _ok(at)
    link = _link(at)
    assert link["model"] == "custom" and link["m_layers"] == "7" and link["m_hidden"] == "768"
    again = _app(link)
    assert _ranking(again).equals(_ranking(at)) and again.number_input(key="m_layers").value == 7


def test_invalid_custom_architecture_says_which_field():
    at = _app({"model": "custom"})
    at.number_input(key="m_kv").set_value(5).run()  # 12 heads are not a multiple of 5 KV heads
    assert not at.exception
    assert any("kv_heads" in _shown(e.value) for e in at.error)


def test_uploaded_hf_config_becomes_an_editable_custom_model():
    at = _app()
    cfg = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 4, "intermediate_size": 1376, "vocab_size": 32000, "max_position_embeddings": 2048,
           "hidden_act": "silu"}
    _open(at, "upload_open")  # the upload box is drawn while its expander is open
    at.file_uploader(key="upload_model").set_value(("config.json", json.dumps(cfg).encode(), "application/json")).run()
    _ok(at)
    link = _link(at)
    assert (link["model"], link["m_layers"], link["m_hidden"], link["m_kv"], link["m_ffn"]) == \
        ("custom", "4", "512", "4", "1376")
    assert any("Loaded" in _shown(s.value) for s in at.success)


def test_uploaded_mixture_of_experts_fills_the_expert_widgets_and_encoders_load_or_are_refused():
    at = _app()
    cfg = {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "hidden_size": 512,
           "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 4, "intermediate_size": 1024,
           "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 1000, "max_position_embeddings": 2048}
    _open(at, "upload_open")  # the upload box is drawn while its expander is open
    at.file_uploader(key="upload_model").set_value(("config.json", json.dumps(cfg).encode(), "application/json")).run()
    _ok(at)
    assert (at.number_input(key="m_experts").value, at.number_input(key="m_topk").value) == (8, 2)
    assert (_link(at)["m_experts"], _link(at)["m_topk"], _link(at)["m_shared"]) == ("8", "2", "0")
    assert any("8 experts, top 2" in _shown(c.value) for c in at.sidebar.caption)
    before = _link(at)
    distil = {"model_type": "albert", "architectures": ["AlbertForMaskedLM"], "hidden_size": 768,
              "num_hidden_layers": 12}
    at.file_uploader(key="upload_model").set_value(("config.json", json.dumps(distil).encode(),
                                                    "application/json")).run()
    assert not at.exception and _link(at) == before
    assert any("encoder-only" in _shown(e.value) and "planner profile" in _shown(e.value) for e in at.error)
    bert = {"model_type": "bert", "architectures": ["BertForMaskedLM"], "hidden_size": 768, "num_hidden_layers": 12,
            "num_attention_heads": 12, "vocab_size": 30522, "max_position_embeddings": 512, "intermediate_size": 3072}
    at.file_uploader(key="upload_model").set_value(("config.json", json.dumps(bert).encode(), "application/json")).run()
    assert not at.exception
    link = _link(at)  # an encoder travels as its config's text, and a generate job becomes an infer job
    assert "m_spec" in link and link.get("job", "generate") != "generate"


def test_bad_upload_is_explained_and_changes_nothing():
    at = _app({"model": "llama-2-7b", "prec": "fp16"})
    before = _link(at)
    _open(at, "upload_open")  # the upload box is drawn while its expander is open
    at.file_uploader(key="upload_model").set_value(("config.json", b"{not json", "application/json")).run()
    assert not at.exception
    assert any("config.json could not be used" in _shown(e.value) and "not valid JSON" in _shown(e.value)
               for e in at.error)
    assert _link(at) == before


def test_calibration_upload_travels_and_a_bad_one_keeps_it():
    at = _app()
    at.file_uploader(key="upload_cal").set_value([("bench.json", BENCH.read_bytes(), "application/json")]).run()
    _ok(at)
    cal = _link(at)["cal"]
    assert cal.startswith("v=1;") and "cls=cpu" in cal
    assert any("Your calibration" in e.label for e in at.expander)
    # its effect on the ranking: a CPU bench reaches no catalog GPU unless a catalog CPU is picked
    effect = next(m.value for m in at.markdown if "Before and after your calibration" in m.value)
    assert "Your calibration reaches 0 of the" in _shown(effect) and "untouched" in effect
    # each factor with its 95 % uncertainty; this fixture is a noisy 2-thread quick run (bandwidth 0.042,
    # launch 384 us): the panel says the fit is loose instead of presenting those factors as measured
    assert any("95 % interval" in m.value and "±" in m.value for m in at.markdown)
    assert any("loose fit" in _shown(w.value) for w in at.warning)
    at.file_uploader(key="upload_cal").set_value([("bench.json", b'{"kind": "other"}', "application/json")]).run()
    assert not at.exception and any("bench.json could not be used" in _shown(e.value) for e in at.error)
    assert _link(at)["cal"] == cal  # the good calibration stays
    shared = _app({"cal": cal})  # and the link brings it back without the file
    assert not shared.exception and any("Your calibration" in e.label for e in shared.expander)


def test_a_calibration_of_your_own_model_uploads_without_torch(example):
    """A `bench --model` result carries its traced profile: the app reads it as data (no torch, no Python run), fits
    it and charts every point, the model's sizes each under their own label."""
    from tests.fixtures.bench_docs import cpu_result, with_times

    doc = with_times(cpu_result(example), 0.5, 0.7, 6.0, noise=0.02, seed=1)
    at = _app()
    at.file_uploader(key="upload_cal").set_value([("mine.json", json.dumps(doc).encode(), "application/json")]).run()
    _ok(at)
    assert "ebw=" in _link(at)["cal"] and any("95 % interval" in m.value for m in at.markdown)
    assert not any("ill-conditioned" in _shown(w.value) for w in at.warning)  # the anchors pin every factor


def test_own_price_for_a_gpu_travels_and_marks_its_origin():
    at = _app({"gpu": "rtx-4070-ti-super", "tier": "community"})  # a GPU RunPod does not list
    at.number_input(key="price_in_rtx-4070-ti-super_community").set_value(0.33)
    at.button(key="use_price_rtx-4070-ti-super").click().run()
    _ok(at)
    assert _link(at)["myprice"] == "rtx-4070-ti-super:0.33"
    row = _ranking(at).set_index("gpu_id").loc["rtx-4070-ti-super"]
    assert row["$/GPU-h"] == pytest.approx(0.33) and row["Price source"].startswith("custom")


@pytest.mark.parametrize("view", ["Cost vs time", "Roofline", "Batch size", "Memory", "Accuracy"])
def test_each_chart_tab_draws_its_chart(view):
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["view"] = view
    at.run()
    _ok(at)
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    title = lambda s: s.get("title", "") if isinstance(s.get("title"), str) else s["title"].get("text", "")  # noqa: E731
    tab = [s for s in specs if "whole job" not in str(title(s)).lower()]
    assert tab  # the tab's own chart, found by title, not by position
    if view != "Accuracy":  # the planner's own charts name their sources; the validation chart's points name theirs
        assert all(any(line.startswith("Source:") for line in s["title"]["subtitle"]) for s in tab)


def test_charts_and_the_step_table_under_the_ranking_are_drawn_when_their_expanders_open():
    """The whole job on the top GPUs, the explained GPU's bill by part, and its step-time breakdown (how a step is
    timed, where the time goes, each op group's row): one click away, drawn then."""
    at = _app()
    _ok(at)
    titles = lambda: {json.loads(c.proto.spec)["title"]["text"] for c in at.get("vega_lite_chart")}  # noqa: E731
    steps = lambda: [t.value for t in at.table if "time s" in t.value.columns]  # noqa: E731
    assert titles() == set() and steps() == []
    for key in ("jobs_open", "job_chart_open", "steps_open"):
        _open(at, key)
    _ok(at)
    assert titles() == {"The whole job on the top GPUs: compute and the pod's overheads",
                        "The whole job: compute and what a rented pod also bills", "Where the time goes"}
    assert len(steps()) == 1 and (steps()[0]["time s"] >= 0).all()
    intro = [m.value for m in at.markdown if "max(FLOPs ÷ (peak × compute efficiency)" in m.value]
    assert intro and "(compute^p + memory^p)^(1/p)**, p = 1.45" in intro[0]


def test_cmp_selection_travels():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["view"] = "Roofline"
    at.run()
    at.multiselect(key="cmp").set_value(["h100-sxm", "rtx-4090"]).run()
    _ok(at)
    assert _link(at)["cmp"] == "h100-sxm,rtx-4090"


def test_no_gpu_can_run_it_says_why():
    at = _app({"model": "llama-3-70b", "job": "train", "prec": "fp32", "samples": "100"})
    assert not at.exception
    assert any("No GPU in the list can run this plan" in e.value and "oom" in _shown(e.value) for e in at.error)


class _RunPod:
    """A RunPod-like GraphQL endpoint on 127.0.0.1 answering one fixed (status, body)."""

    def __init__(self, status: int, body: dict):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/graphql"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def runpod(monkeypatch):
    servers = []

    def start(status, body):
        server = _RunPod(status, body)
        servers.append(server)
        monkeypatch.setattr(prices, "RUNPOD_GRAPHQL_URL", server.url)  # where the app sends the query
        prices.clear_cache()
        return server

    yield start
    prices.clear_cache()
    for s in servers:
        s.server.shutdown()


SECRET = "rpa_APPTEST_never_shown_9d1e"


def _everything(at: AppTest) -> str:
    parts = [json.dumps(_link(at))]
    for kind in ("markdown", "caption", "warning", "error", "info", "success", "code"):
        parts += [str(getattr(x, "value", "")) for x in getattr(at, kind)]
    parts += [_ranking(at).to_csv()]
    return "\n".join(parts)


def _after_the_fetch(at: AppTest, limit_s: float = 15.0) -> AppTest:
    """Rerun until the page no longer says live prices are being fetched (the page itself never waits)."""
    import time
    deadline = time.monotonic() + limit_s
    while any("being fetched" in _shown(i.value) for i in at.info) and time.monotonic() < deadline:
        time.sleep(0.2)
        at.run()
    return at


def test_live_prices_come_from_the_api_with_date_and_source(runpod):
    h100 = {"id": "NVIDIA H100 80GB HBM3", "secureCloud": True, "communityCloud": True, "securePrice": 3.17,
            "communityPrice": 2.13, "secureSpotPrice": 1.5, "communitySpotPrice": 1.4}
    runpod(200, {"data": {"gpuTypes": [h100]}})
    at = _app({"psrc": "live", "tier": "community"}, secrets={"RUNPOD_API_KEY": SECRET})
    assert not at.exception  # the first run shows the snapshot while the fetch runs in the background
    at = _after_the_fetch(at)
    _ok(at)
    row = _ranking(at).set_index("gpu_id").loc["h100-sxm"]
    assert row["$/GPU-h"] == pytest.approx(2.13) and row["Price source"].startswith("live")
    assert SECRET not in _everything(at)


def test_broken_price_feed_falls_back_to_the_snapshot_with_a_warning(runpod):
    runpod(500, {"errors": ["down"]})
    at = _after_the_fetch(_app({"psrc": "live"}, secrets={"RUNPOD_API_KEY": SECRET}))
    assert not at.exception
    assert any("Prices:" in _shown(w.value) for w in at.warning)
    assert _ranking(at)["Price source"].str.startswith("snapshot").any()
    assert SECRET not in _everything(at)


def _rendered_links(at: AppTest) -> list[str]:
    """Markdown a reader would see as a link or an image: '[text](url)' not escaped by a backslash."""
    texts = [m.value for m in at.markdown] + [e.value for e in (*at.error, *at.warning, *at.info, *at.success)]
    return [t for t in texts if re.search(r"(?<!\\)\[[^\]]*(?<!\\)\]\(", t)]


def test_nothing_a_link_or_an_upload_carries_renders_as_markup():
    evil = "[click](http://evil.example) ![x](http://evil.example/p.png)"
    at = _app({"model": "custom", "m_name": evil, "prec": evil, "bogus": evil})
    assert not at.exception and not _rendered_links(at)
    assert evil in _plan_text(at)  # shown as typed
    cfg = {"_name_or_path": evil, "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64}
    _open(at, "upload_open")  # the upload box is drawn while its expander is open
    at.file_uploader(key="upload_model").set_value(("config.json", json.dumps(cfg).encode(), "application/json")).run()
    assert not at.exception and not _rendered_links(at)


def test_filters_that_hide_every_gpu_say_so():
    at = _app({"minvram": "1999"})
    assert not at.exception
    assert any("filters hide every GPU" in _shown(e.value) for e in at.error)


def test_head_dim_follows_hidden_and_heads():
    at = _app({"model": "custom"})  # starts from cfDNA-Gen: hidden 768, 12 heads, head dim 64
    at.number_input(key="m_hidden").set_value(1536).run()
    assert at.number_input(key="m_hd").value == 128  # 1536 / 12
    at.number_input(key="m_hidden").set_value(1000).run()  # 1000 / 12 does not divide: head dim stays
    assert at.number_input(key="m_hd").value == 128


def test_random_links_never_break_the_page_or_render_user_markup():
    import random
    rng = random.Random(7)
    junk = ["[x](http://evil.example)", "![i](http://evil.example/p.png)", "<b>x</b>", "1e300", "nan", "-1",
            "9" * 5000, "$x$", ":red[x]", "custom", "train", "fsdp", "h100-sxm:1e-300", "auto", ""]
    params = sorted(share.KNOWN_PARAMS)
    for _ in range(12):
        link = {rng.choice(params): rng.choice(junk) for _ in range(rng.randint(1, 5))}
        at = _app(link)
        assert not at.exception, (link, [e.value for e in at.exception])
        assert not _rendered_links(at), link


def test_whole_job_assumptions_can_be_changed_on_the_page():
    at = _app({"tier": "community", "seqs": "1000"})
    before = _ranking(at).set_index("gpu_id")["Whole job ($)"]
    _open(at, "jc_open")  # the assumptions are drawn while their expander is open
    at.number_input(key="jc_pod_start_s").set_value(600.0).run()  # ten minutes to start a pod instead of one
    after = _ranking(at).set_index("gpu_id")["Whole job ($)"]
    gpu = after.dropna().index[0]
    assert after[gpu] > before[gpu]


def test_the_serving_tab_lists_each_compared_gpu():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"model": "llama-3-8b", "rt": "vllm", "cmp": "h100-sxm,rtx-4090", "prompt": "512",
                            "gen": "256"})
    at.session_state["view"] = "Serving"
    at.run()
    _ok(at)
    table = next(t.value for t in at.table if "Max concurrency in target" in t.value.columns)
    assert list(table.GPU) == [CATALOG.get(g).name for g in ("h100-sxm", "rtx-4090")]
    assert (table["Max concurrency in target"] >= 1).all()


def test_the_serving_tab_sizes_a_deployment_from_the_link():
    """srate, sttft and stpot in the link: the tab searches replicas x GPU x TP x runtime of the compared GPUs,
    names the cheapest in a sentence, lists it first and offers its launch command; the link keeps the rate."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"model": "llama-3-8b", "rt": "vllm", "cmp": "h100-sxm", "prompt": "512", "gen": "256",
                            "srate": "20", "sttft": "500", "stpot": "50", "slen": "sharegpt"})
    at.session_state["view"] = "Serving"
    at.run()
    _ok(at)
    assert at.selectbox(key="slen").value == "sharegpt"  # the lengths spread as ShareGPT's, from the link
    assert any(m.value.startswith("Cheapest") and "serving 20 requests" in m.value for m in at.markdown)
    table = next(t.value for t in at.table if "replicas" in t.value.columns)
    assert table.iloc[0]["why"] == "best" and table.iloc[0]["gpu"] == "h100-sxm"
    assert any(c.value.split()[0] in ("vllm", "python", "trtllm-serve", "llama-server") for c in at.code)
    assert _link(at)["srate"] == "20" and _link(at)["sttft"] == "500" and _link(at)["slen"] == "sharegpt"


CALIBRATION_EXAMPLE = sorted((DATA_DIR / "calibrations").glob("*_cpu-*.json"))[0]


def test_a_cpu_bench_calibrates_the_cpu_row_picked_in_the_sidebar():
    """The committed CPU bench, as if run on a whole (32-thread) machine, attributed to the Ryzen 9 7950X row."""
    doc = json.loads(CALIBRATION_EXAMPLE.read_text())
    doc["environment"]["cpu_threads"] = 32
    at = _app({"cpus": "1", "model": "llm-7b-seed002", "prec": "fp32", "seqs": "1", "prompt": "100", "gen": "100"})
    at.file_uploader(key="upload_cal").set_value([("bench.json", json.dumps(doc).encode(), "application/json")]).run()
    _ok(at)
    assert "dev=amd-ryzen-9-7950x" not in _link(at)["cal"]  # its recorded name names no catalog CPU
    at.selectbox(key="cal_cpu").set_value("amd-ryzen-9-7950x").run()
    _ok(at)
    assert "dev=amd-ryzen-9-7950x" in _link(at)["cal"]
    row = _ranking(at).set_index("gpu_id").loc["amd-ryzen-9-7950x"]
    time_col = next(c for c in _ranking(at).columns if c.startswith("Calibrated time"))
    assert row[time_col] > 0 and "runs on the CPU" in row["Why / notes"]
    again = _app(_link(at))  # the link carries the calibrated row without the file
    _ok(again)
    assert _ranking(again).set_index("gpu_id").loc["amd-ryzen-9-7950x"][time_col] == pytest.approx(row[time_col])
def test_a_pinned_pytorch_build_from_the_link_refuses_gpus_it_has_no_kernels_for():
    # 1.13.1+cu116 ships sm_37 ... sm_86: an H100 (sm_90) can't run it, an RTX A5000 (sm_86) can
    at = _app({"pt": "1.13.1+cu116", "attn": "manual"})
    _ok(at)
    assert at.selectbox(key="pt").value == "1.13.1+cu116" and _link(at)["pt"] == "1.13.1+cu116"
    df = _ranking(at).set_index("gpu_id")
    assert not df.loc["h100-sxm", "Runs?"] and "no kernels for SM90" in df.loc["h100-sxm", "Why / notes"]
    assert df.loc["rtx-a5000", "Runs?"]
    at.selectbox(key="pt").set_value("").run()  # back to the latest builds
    _ok(at)
    assert "pt" not in _link(at) and _ranking(at).set_index("gpu_id").loc["h100-sxm", "Runs?"]


def test_my_gpus_from_a_link_give_a_verdict_and_a_row_on_top():
    at = _app({"model": "llm-7b-seed002", "job": "generate", "seqs": "1000", "tier": "community",
               "own": "rtx-a5000:3"})
    _ok(at)
    assert at.multiselect(key="own_ids").value == ["rtx-a5000"] and at.number_input(key="own_n_rtx-a5000").value == 3
    top = _ranking(at).iloc[0]
    assert top.gpu_id == "rtx-a5000" and top.GPU.startswith("★ Yours: 3 × ") and top.Rank == 0
    card = " ".join(_shown(m.value) for m in at.markdown if "Your GPUs" in m.value or "Cost:" in m.value)
    assert "Your 3 × RTX A5000" in card and "break-even" in card
    assert _link(at)["own"] == "rtx-a5000:3"


def test_picking_owned_cards_in_the_sidebar_travels_in_the_link():
    at = _app({"model": "cfdna-gen", "seqs": "1000"})
    at.multiselect(key="own_ids").set_value(["rtx-5090"]).run()
    at.number_input(key="own_n_rtx-5090").set_value(2).run()
    _ok(at)
    assert _link(at)["own"] == "rtx-5090:2"
    assert _ranking(at).iloc[0].GPU == "★ Yours: 2 × RTX 5090 32GB"
    again = _app(_link(at))
    assert again.number_input(key="own_n_rtx-5090").value == 2


def test_the_open_tab_travels_in_the_link():
    at = _app({"tab": "memory"})
    _ok(at)
    assert at.session_state["view"] == "Memory" and _link(at)["tab"] == "memory"
    bad = _app({"tab": "sideways"})
    assert "'tab'" in " ".join(_shown(w.value) for w in bad.warning) and "tab" not in _link(bad)


def test_the_accuracy_tab_leads_with_leave_one_source_out_per_regime():
    """The headline is each regime's error on sources left out of the tuning, next to its target."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["view"] = "Accuracy"
    at.run()
    _ok(at)
    head = next(d.value for d in at.dataframe if "target %" in d.value.columns)
    assert {"decode, batch 1", "decode, batched", "decode, tensor parallel", "prefill", "train"} <= set(head["regime"])
    assert "target %" in head.columns and any("Leave one source out" in m.value for m in at.markdown)
    # and it says the estimates use what that search gives on every publication
    assert any("data/runtimes_tuned.yaml" in m.value for m in at.markdown)


def test_a_surrogate_or_a_control_character_in_a_link_or_an_upload_never_breaks_the_page():
    # a URL carries no lone surrogate (percent-decoding replaces it): a packed JSON or an upload does
    at = _app({"model": "custom", "m_name": "evil\x1bname", "prec": "fp16"})
    assert not at.exception and any("m_name" in _shown(w.value) for w in at.warning)
    cfg = {"_name_or_path": "NAME", "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64}
    _open(at, "upload_open")
    data = json.dumps(cfg).replace('"NAME"', '"evil\\ud800"').encode()
    at.file_uploader(key="upload_model").set_value(("config.json", data, "application/json")).run()
    assert not at.exception and any("_name_or_path" in _shown(e.value) for e in at.sidebar.error)
    at.run()  # every later rerun of the session still works
    assert not at.exception


def test_a_gpu_you_describe_in_the_form_is_ranked_marked_yours_and_kept_in_the_link():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    _open(at, "own_gpu_open")
    at.text_input(key="own_name").set_value("My ASIC")
    at.number_input(key="own_mem").set_value(64.0)
    at.number_input(key="own_bw").set_value(1600.0)
    at.number_input(key="own_r_fp32").set_value(50.0)
    at.number_input(key="own_r_bf16").set_value(400.0)
    at.text_input(key="own_cc").set_value("99.9")  # not a compute capability: refused, nothing changed
    at.button[[b.label for b in at.button].index("Rank it with the rest")].click().run()
    assert not at.exception and any("your GPU's cc" in e.value for e in at.error)
    assert not any("(yours)" in g for g in _ranking(at)["GPU"])
    at.text_input(key="own_cc").set_value("8.9")
    at.button[[b.label for b in at.button].index("Rank it with the rest")].click().run()
    assert not at.exception
    assert "My ASIC (yours)" in list(_ranking(at)["GPU"])
    assert _link(at)["mygpu"] == "name=My ASIC;mem=64;memtype=gddr;bw=1600;fp32=50;bf16=400;cc=8.9"
    at.button[[b.label for b in at.button].index("Remove your GPU")].click().run()
    assert not any("(yours)" in g for g in _ranking(at)["GPU"]) and "mygpu" not in _link(at)


def test_a_gpu_described_in_an_uploaded_yaml_is_ranked_and_a_bad_file_is_named():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    _open(at, "own_gpu_open")
    bad = b"name: My ASIC\nmemory_gb: 64\nmem_bw_gbps: 1600\ndense_tflops: {fp32: 50, fp64: 9}\n"
    at.file_uploader(key="own_yaml").set_value(("gpu.yaml", bad, "application/x-yaml")).run()
    assert not at.exception and any("dense_tflops" in e.value for e in at.sidebar.error)
    assert not any("(yours)" in g for g in _ranking(at)["GPU"])
    good = bad.replace(b", fp64: 9", b", bf16: 400").replace(b"memory_gb: 64", b"memory_gb: 64\nmemory_type: hbm")
    at.file_uploader(key="own_yaml").set_value(("gpu.yaml", good, "application/x-yaml")).run()
    assert not at.exception and "My ASIC (yours)" in list(_ranking(at)["GPU"])
    assert _link(at)["mygpu"] == "name=My ASIC;mem=64;memtype=hbm;bw=1600;fp32=50;bf16=400;cc=unknown"


def test_a_training_ranking_shows_mfu_and_the_cost_of_a_billion_tokens():
    at = _app({"model": "gpt2-124m", "job": "train", "samples": "1000"})
    table = _ranking(at)
    runs = table[table["Runs?"]]
    assert not runs.empty and runs["MFU"].between(0, 1, inclusive="neither").all()
    assert (runs["$ per 1B tokens"].dropna() > 0).all()
    gen = _ranking(_app({"model": "gpt2-124m"}))
    assert "MFU" not in gen.columns and "$ per 1B tokens" not in gen.columns


def test_the_attention_list_follows_the_runtime_and_keeps_a_linked_refused_kernel_named():
    """planner.engine.plan.attention_choices: llama.cpp is offered its own kernel, not FlashAttention-2; a link that
    asks for FlashAttention-2 keeps it, with the refusal naming the field."""
    llama_cpp = {"model": "llama-2-7b", "job": "generate", "rt": "llama.cpp", "prec": "int4"}
    at = _app(llama_cpp)
    assert not at.exception
    options = at.selectbox(key="attn").options
    assert "llama.cpp-fa" in options and "flash-attn-2" not in options
    at = _app({**llama_cpp, "attn": "flash-attn-2"})
    assert not at.exception and at.selectbox(key="attn").value == "flash-attn-2"
    assert any("attention: runtime llama.cpp runs its own fused attention" in _shown(e.value) for e in at.error)
