"""Share links: encode/decode round trips, every bad value named and replaced alone."""

from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.estimate import estimate_all
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.models import DecoderProfile, load_models
from planner.inputs.ownership import Owned
from planner.views import plan_inputs, share
from planner.views.plan_inputs import DEFAULTS, Inputs
from planner.views.share import decode, encode

FACTS = load_facts()

GPU_IDS = list(load_catalog().ids())
DECODERS = [m.id for m in load_models().models if isinstance(m, DecoderProfile) and m.can_generate]  # not encoders

GENERIC_YAML = """
id: tiny-generic
name: Tiny generic
kind: generic
input_size_name: num_vars
default_input_size: 100
constants: {d: 8}
params: "4 * d * d"
fwd_flops_per_sample: "2 * 4 * d * d * L"
activation_elems_per_sample: "4 * d * L"
peak_inference_elems_per_sample: "2 * d * L"
activation_traffic_elems_per_sample: "8 * d * L"
kernels_per_forward: 10
derivation: "four d x d matrices applied to L positions"
source: "test fixture"
"""


def _warned(warnings, param):
    return [w for w in warnings if w.param == param]


def test_empty_link_is_the_default_plan():
    inputs, warnings = decode({})
    assert warnings == [] and inputs == DEFAULTS
    assert inputs.size == load_models().get(DEFAULTS.model).context  # infer/train size defaults to the context


def test_encode_writes_the_plan_and_only_changed_view_options():
    params = encode(DEFAULTS)
    assert {"model", "job", "seqs", "prompt", "gen", "batch", "prec", "attn", "rt", "gpus", "tier",
            "mem"} <= set(params)
    assert params["mem"] == "90"  # the memory target, percent of what each GPU reports
    view = {"vendor", "minvram", "maxusd", "feasible", "priced", "gpu", "cmp", "psrc", "myprice", "cal"}
    assert not set(params) & view
    assert "samples" not in params and "epochs" not in params  # other jobs' fields stay out of the link
    filtered = Inputs(vendor="AMD", minvram=80.0)
    assert encode(filtered)["vendor"] == "AMD" and encode(filtered)["minvram"] == "80"


inputs_strategy = st.builds(
    Inputs,
    model=st.sampled_from(DECODERS),
    job=st.sampled_from(plan_inputs.JOBS),
    seqs=st.integers(1, 10**9), prompt=st.integers(1, 4096), gen=st.integers(1, 4096),
    samples=st.integers(1, 10**9), size=st.integers(1, 10**5),
    epochs=st.sampled_from([0.5, 1.0, 3.0, 12.25]), opt=st.sampled_from(["adam", "adamw", "sgd"]),
    ckpt=st.booleans(), accum=st.integers(1, 64), batch=st.none() | st.integers(1, 4096),
    prec=st.sampled_from(["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4"]),
    kv=st.sampled_from(["auto", "fp16", "fp8"]),
    attn=st.sampled_from(["sdpa", "flash-attn-2", "manual", "sdpa-math", "flash-attn-3", "xformers", "triton"]),
    pt=st.sampled_from(["", "1.13.1+cu116", "2.4.1", "2.14.0+rocm7.14"]),
    tf=st.sampled_from(["", "4.40.2", "4.46"]),
    rt=st.sampled_from(["pytorch-eager", "torch-compile", "vllm"]), gpus=st.integers(1, 16),
    par=st.sampled_from(["auto", "data", "tensor"]),
    node=st.sampled_from([0, 1, 4, 72]), fab=st.sampled_from([0.0, 10.0, 1600.0, 2437.5, 57600.0]),
    tier=st.sampled_from(["secure", "community", "spot"]), mem=st.sampled_from([50.0, 85.5, 90.0, 100.0]),
    psrc=st.sampled_from(plan_inputs.PRICE_SOURCES),
    myprice=st.lists(st.tuples(st.sampled_from(GPU_IDS), st.sampled_from([0.19, 0.44, 2.5, 12.0])),
                     max_size=3, unique_by=lambda t: t[0]).map(lambda xs: tuple(sorted(xs))),
    vendor=st.sampled_from(plan_inputs.VENDORS), minvram=st.sampled_from([0.0, 16.0, 80.0]),
    maxusd=st.sampled_from([0.0, 0.5, 2.25]), feasible=st.booleans(), priced=st.booleans(), cpus=st.booleans(),
    gpu=st.sampled_from([""] + GPU_IDS[:5] + GPU_IDS[-2:]),  # the catalog's ids end with its CPU devices
    cmp=st.lists(st.sampled_from(GPU_IDS), max_size=plan_inputs.MAX_CMP, unique=True).map(tuple),
    own=st.lists(st.builds(Owned, st.sampled_from(GPU_IDS), st.integers(1, 64),
                           st.none() | st.sampled_from([799.0, 2250.5])),
                 max_size=4, unique_by=lambda o: o.gpu_id).map(tuple),
    tab=st.sampled_from(list(plan_inputs.TABS)),
)


def _relevant(i: Inputs) -> Inputs:
    """What a link keeps: fields of other jobs fall back to their defaults (kv only matters for generate)."""
    keep = set(share.JOB_FIELDS[i.job])
    values = {f: (getattr(i, f) if f in keep else getattr(DEFAULTS, f)) for f in
              ("seqs", "prompt", "gen", "samples", "size", "epochs", "opt", "ckpt", "accum")}
    if "size" not in keep:
        values["size"] = load_models().get(i.model).context
    kv = i.kv if i.job == "generate" else DEFAULTS.kv
    return plan_inputs.Inputs(**{**i.__dict__, **values, "kv": kv})


@settings(max_examples=60, deadline=None)
@given(inputs_strategy)
def test_decode_inverts_encode(inputs):
    back, warnings = decode(encode(inputs))
    assert warnings == []
    assert back == _relevant(inputs)


def test_decode_takes_lists_as_parse_qs_and_streamlit_give_them():
    query = share.query_string(Inputs(model="llama-3-8b", prec="fp16", cmp=("rtx-4090", "h100-sxm")))
    back, warnings = decode(parse_qs(query))
    assert warnings == [] and back.model == "llama-3-8b" and back.cmp == ("rtx-4090", "h100-sxm")
    last, _ = decode({"prec": ["fp32", "fp16"]})  # a repeated key: the last one, like st.query_params[key]
    assert last.prec == "fp16"


@pytest.mark.parametrize("param, bad", [
    ("model", "llama-9"), ("job", "dance"), ("seqs", "many"), ("seqs", "0"), ("prompt", "-3"), ("gen", "1.5"),
    ("samples", "nan"), ("size", "1e99"), ("epochs", "0"), ("opt", "adagrad"), ("ckpt", "maybe"), ("accum", "x"),
    ("batch", "big"), ("prec", "bf17"), ("kv", "fp4"), ("attn", "flash3"), ("rt", "jax"), ("gpus", "0"),
    ("tier", "gold"), ("psrc", "rumour"), ("vendor", "Apple"), ("cpus", "maybe"), ("minvram", "-1"), ("maxusd", "inf"),
    ("feasible", "2"), ("priced", "yes please"), ("gpu", "rtx-9090"), ("shard", "zero9"), ("mem", "120"),
    ("par", "pipeline"),
    ("mem", "49"), ("mem", "ninety"), ("tokens", "-1"), ("tokens", "1e16"), ("tokens", "lots"),
])
def test_each_invalid_value_is_named_and_falls_back_alone(param, bad):
    good = {"model": "llama-2-7b", "job": "train", "samples": "5000", "prec": "fp16", "tier": "community"}
    good[param] = bad
    inputs, warnings = decode(good)
    assert [w.param for w in warnings] == [param], [str(w) for w in warnings]
    text = str(warnings[0])
    assert f"'{param}'" in text and bad.split(".")[0] in text  # names the parameter and echoes the value
    assert getattr(inputs, param) == getattr(DEFAULTS, param) or param == "size"  # that value alone falls back
    kept = {k: v for k, v in good.items() if k != param}
    assert inputs.model == kept.get("model", DEFAULTS.model) and inputs.prec == kept.get("prec", DEFAULTS.prec)
    assert inputs.tier == kept.get("tier", DEFAULTS.tier)


def test_unknown_parameter_is_named_with_a_suggestion():
    inputs, warnings = decode({"precc": "fp16", "utm_source": "mail"})
    assert inputs == DEFAULTS
    texts = {w.param: str(w) for w in warnings}
    assert set(texts) == {"precc", "utm_source"}
    assert "did you mean 'prec'" in texts["precc"] and "unknown parameter" in texts["utm_source"]


def test_bad_entries_in_lists_are_dropped_one_by_one():
    inputs, warnings = decode({"cmp": "rtx-4090,rtx-9999,h100-sxm", "myprice": "rtx-4090:0.3,a40:free,h100-sxm:-2"})
    assert inputs.cmp == ("rtx-4090", "h100-sxm")
    assert inputs.myprice == (("rtx-4090", 0.3),)
    assert [w.param for w in warnings] == ["cmp", "myprice"]  # one line per parameter: the first problem, a count
    assert "'free'" in str(warnings[1]) and "1 more" in str(warnings[1])
    many = ",".join(GPU_IDS[: plan_inputs.MAX_CMP + 2])
    capped, warnings = decode({"cmp": many})
    assert len(capped.cmp) == plan_inputs.MAX_CMP and "at most" in str(warnings[0])


def test_custom_decoder_from_link_builds_the_model_it_describes():
    link = {"model": "custom", "m_name": "tiny", "m_layers": "1", "m_hidden": "4", "m_heads": "2", "m_ffn": "8",
            "m_act": "swiglu", "m_vocab": "10", "m_ctx": "16", "m_tied": "1", "m_norm": "rmsnorm"}
    inputs, warnings = decode(link)
    assert warnings == []
    m = plan_inputs.resolve_model(inputs)
    # by hand: Q, K, V, O 4 x 4x4 = 64; SwiGLU 3 x 4x8 = 96; two RMSNorm weights 8; tied embedding 10x4 = 40;
    # final norm 4: 212 parameters; kv_heads defaults to heads, head_dim to hidden / heads
    assert (m.params, m.kv_heads, m.head_dim, m.name) == (212, 2, 2, "tiny")
    again, _ = decode(encode(inputs))
    assert plan_inputs.resolve_model(again) == m


def test_a_custom_mixture_of_experts_travels_in_the_link():
    link = {"model": "custom", "m_name": "tiny-moe", "m_layers": "1", "m_hidden": "4", "m_heads": "2", "m_ffn": "8",
            "m_act": "swiglu", "m_experts": "4", "m_topk": "2", "m_shared": "6", "m_vocab": "10", "m_ctx": "16",
            "m_tied": "1", "m_norm": "rmsnorm"}
    inputs, warnings = decode(link)
    assert warnings == []
    m = plan_inputs.resolve_model(inputs)
    # by hand: Q, K, V, O 64; router 4 x 4 = 16; 4 experts x SwiGLU 3 x 4x8 = 384; shared 3 x 4x6 = 72; norms 8;
    # tied embedding 40; final norm 4: 588 parameters, of which 2 experts x 96 are skipped per token
    assert (m.params, m.active_params) == (588, 588 - 2 * 96)
    assert {"m_experts": "4", "m_topk": "2", "m_shared": "6"}.items() <= encode(inputs).items()
    assert plan_inputs.resolve_model(decode(encode(inputs))[0]) == m
    # more experts per token than experts: that value alone is named and falls back to 1
    inputs, warnings = decode({**link, "m_topk": "5"})
    assert [w.param for w in warnings] == ["m_topk"] and "more experts (5)" in str(warnings[0])
    assert dict(inputs.arch)["experts_per_token"] == 1 and dict(inputs.arch)["experts"] == 4


def test_invalid_custom_architecture_names_the_field_and_falls_back():
    inputs, warnings = decode({"model": "custom", "m_hidden": "1024", "m_heads": "8", "m_kv": "3"})
    assert [w.param for w in warnings] == ["m_kv"] and "multiple of kv_heads" in str(warnings[0])
    assert dict(inputs.arch)["kv_heads"] == 8  # back to multi-head attention, the rest kept
    broken, warnings = decode({"model": "custom", "m_hidden": "1000", "m_heads": "7"})
    assert broken.model == DEFAULTS.model and {"m_heads", "model"} <= {w.param for w in warnings}


def test_generic_profile_travels_packed_and_refuses_generate():
    inputs = Inputs(model="custom", spec=GENERIC_YAML, job="infer", size=100)
    params = encode(inputs)
    assert "m_spec" in params and "m_layers" not in params
    back, warnings = decode(params)
    assert warnings == [] and back.spec == GENERIC_YAML and plan_inputs.resolve_model(back).params == 4 * 8 * 8
    gen, warnings = decode({**params, "job": "generate"})
    assert gen.job == "infer" and [w.param for w in warnings] == ["job"]
    cut, warnings = decode({**params, "m_spec": params["m_spec"][:20]})
    assert cut.model == DEFAULTS.model and [w.param for w in warnings] == ["m_spec"]


def test_bad_calibration_text_is_named():
    inputs, warnings = decode({"cal": "v=1;dev=nothing"})
    assert inputs.cal == "" and [w.param for w in warnings] == ["cal"]


def test_fsdp_training_travels_in_the_link():
    m = load_models().get("llama-2-7b")
    inputs = Inputs(model=m.id, job="train", samples=512, size=2048, gpus=8, shard="fsdp", ckpt=True)
    back, warnings = decode(parse_qs(urlsplit(share.link("http://x/", inputs)).query))
    assert not warnings and back.shard == "fsdp"
    plan = plan_inputs.to_plan(back, m)
    assert plan.workload.sharding == "fsdp" and plan.gpus == 8
    e = estimate_all(plan, FACTS, gpu_names=["h100-sxm"])[0]
    assert e.parallelism == "fsdp" and e.feasible


def test_tensor_parallel_on_a_model_that_fits_travels_in_the_link():
    m = load_models().get("llama-2-7b")
    inputs = Inputs(model=m.id, gpus=2, par="tensor")
    back, warnings = decode(parse_qs(urlsplit(share.link("http://x/", inputs)).query))
    assert not warnings and back.par == "tensor"
    assert "(tensor parallel)" in plan_inputs.plan_sentence(back, m)
    e = estimate_all(plan_inputs.to_plan(back, m), FACTS, gpu_names=["h100-sxm"])[0]
    assert e.parallelism == "tensor" and e.setup.tp == 2


def test_link_replaces_any_query_on_the_base_url():
    url = share.link("http://host:8501/app?old=1", Inputs(prec="fp16"))
    parts = urlsplit(url)
    assert parts.path == "/app" and parse_qs(parts.query)["prec"] == ["fp16"] and "old" not in parts.query


def test_a_link_that_inflates_past_the_cap_is_refused_without_inflating_it():
    import base64
    import zlib
    bomb = base64.urlsafe_b64encode(zlib.compress(b"#" * 10_000_000, 9)).decode().rstrip("=")  # ~13 KB of link
    assert len(bomb) < share.MAX_LINK_SPEC_CHARS
    inputs, warnings = decode({"model": "custom", "m_spec": bomb})
    assert inputs.model == DEFAULTS.model and any("expands past 256,000 bytes" in str(w) for w in warnings)


def test_a_link_longer_than_a_link_can_be_is_refused():
    inputs, warnings = decode({"model": "custom", "m_spec": "A" * (share.MAX_LINK_SPEC_CHARS + 1)})
    assert inputs.model == DEFAULTS.model and any("more than 16,000" in str(w) for w in warnings)


def test_a_profile_too_large_for_a_link_says_so_at_upload():
    sea = (load_models().get("sea"))
    assert share.spec_link_problem("id: x\n") is None
    noise = "".join(f"{i * 7919 % 100003:x}" for i in range(6000))  # incompressible text, ~27 KB
    problem = share.spec_link_problem(f"id: {sea.id}\nderivation: '{noise}'\n")
    assert problem and "more than a share link can carry" in problem


@pytest.mark.parametrize("value", ["1e-300", "0", "1000.5"])
def test_custom_prices_outside_the_widget_bounds_are_refused(value):
    inputs, warnings = decode({"myprice": f"h100-sxm:{value}"})
    assert inputs.myprice == () and any("between 0.001 and 1000" in str(w) for w in warnings)


def test_cpus_travel_in_the_link_and_a_cpu_can_be_named():
    inputs = Inputs(model="llm-7b-seed002", cpus=True, gpu="amd-ryzen-9-7950x",
                    cmp=("amd-ryzen-9-7950x", "rtx-5090"), myprice=(("amd-epyc-9654", 1.5),))
    link = encode(inputs)
    assert link["cpus"] == "1" and link["gpu"] == "amd-ryzen-9-7950x" and "cpus" not in encode(DEFAULTS)
    back, warnings = decode(link)
    assert warnings == [] and back.cpus and back.cmp == inputs.cmp and back.myprice == inputs.myprice


def test_the_memory_target_travels_as_a_percent_and_reaches_the_plan():
    inputs, warnings = decode({"model": "cfdna-gen", "mem": "95"})
    assert warnings == [] and inputs.mem == 95.0
    assert plan_inputs.to_plan(inputs, load_models().get("cfdna-gen")).memory_target == pytest.approx(0.95)
    assert "at most 95 % of what each GPU reports" in plan_inputs.plan_sentence(inputs, load_models().get("cfdna-gen"))


def test_a_pinned_pytorch_build_travels_in_the_link_and_reaches_the_plan():
    inputs = Inputs(pt="1.13.1+cu116")
    params = encode(inputs)
    assert params["pt"] == "1.13.1+cu116" and "pt" not in encode(DEFAULTS)  # unpinned: nothing written
    back, warnings = decode(parse_qs(share.query_string(inputs)))  # '+' is escaped in the query string
    assert warnings == [] and back.pt == "1.13.1+cu116"
    assert plan_inputs.to_plan(back, plan_inputs.resolve_model(back)).pytorch == "1.13.1+cu116"
    assert plan_inputs.to_plan(DEFAULTS, plan_inputs.resolve_model(DEFAULTS)).pytorch is None


def test_a_typed_link_whose_plus_became_a_space_still_pins_the_build():
    back, warnings = decode({"pt": "1.13.1 cu116"})  # '?pt=1.13.1+cu116' typed by hand: '+' decodes to ' '
    assert warnings == [] and back.pt == "1.13.1+cu116"


def test_a_hand_edited_unknown_pytorch_build_warns_with_the_known_ones_and_falls_back():
    back, warnings = decode({"pt": "1.13.9+cu116"})
    assert back.pt == "" and len(_warned(warnings, "pt")) == 1
    text = str(_warned(warnings, "pt")[0])
    assert "unknown PyTorch build '1.13.9+cu116'" in text and "1.13.1 (+cu116, +cu117)" in text
    assert text.endswith("using the latest builds")


def test_old_attention_ids_still_decode_and_auto_is_sdpa():
    for old in ("sdpa", "flash-attn-2", "manual"):  # share links written before the backend list grew
        back, warnings = decode({"attn": old})
        assert warnings == [] and back.attn == old
    back, warnings = decode({"attn": "auto"})
    assert warnings == [] and back.attn == "sdpa"  # 'auto' is PyTorch SDPA's own per-GPU choice


def test_own_and_tab_travel_and_bad_values_are_named():
    inputs, warnings = decode({"own": "rtx-a5000:3,rtx-5090:1:1800,rtx-a5000x:2", "tab": "roofline"})
    assert inputs.own == (Owned("rtx-a5000", 3), Owned("rtx-5090", 1, 1800.0)) and inputs.tab == "roofline"
    assert [w.param for w in warnings] == ["own"] and "rtx-a5000x" in str(warnings[0])
    assert encode(inputs)["own"] == "rtx-a5000:3,rtx-5090:1:1800" and encode(inputs)["tab"] == "roofline"
    assert "own" not in encode(DEFAULTS) and "tab" not in encode(DEFAULTS)  # defaults stay out of the link


# What a reader can't see or an encoder can't write: ESC, BEL and NUL (invalid YAML in the SkyPilot task), U+2028
# (a line break to YAML and JavaScript) and a lone surrogate (no UTF-8 form: the page can't be sent)
UNSEEN = ["\x1b[31m", "\x07", "\x00", "\u2028", "\ud800"]


@pytest.mark.parametrize("bad", UNSEEN)
def test_a_model_name_with_a_control_character_or_a_surrogate_is_refused_naming_the_parameter(bad):
    inputs, warnings = decode({"model": "custom", "m_name": f"evil{bad}name", "m_layers": "2"})
    assert [w.param for w in warnings] == ["m_name"] and "U+" in str(warnings[0])
    assert dict(inputs.arch)["layers"] == 2  # the rest of the link still applies
    model = plan_inputs.resolve_model(inputs)
    # what the page does with it: the plan in words, the link, the warning, all sent to the browser as UTF-8
    for text in (plan_inputs.plan_sentence(inputs, model), share.link("http://x/", inputs), str(warnings[0])):
        text.encode("utf-8")
        assert bad not in text


@pytest.mark.parametrize("escaped", ["\\e[2J", "\\a", "\\0", "\\L", "\\x85"])
def test_a_packed_profile_whose_name_holds_a_control_character_is_refused_naming_the_field(escaped):
    spec = GENERIC_YAML.replace("name: Tiny generic", f'name: "Tiny{escaped}generic"')
    inputs, warnings = decode(encode(Inputs(model="custom", spec=spec, job="infer", size=100)))
    assert inputs.model == DEFAULTS.model and [w.param for w in warnings] == ["m_spec"]
    assert "field 'name'" in str(warnings[0]) and "U+" in str(warnings[0])


def test_an_unknown_parameter_with_a_surrogate_or_a_control_character_is_named_without_it():
    inputs, warnings = decode({"x\ud800\x1by": "1", "prec": "fp16"})
    assert inputs.prec == "fp16" and len(warnings) == 1
    text = str(warnings[0])
    text.encode("utf-8")
    assert "\x1b" not in text and "unknown parameter" in text


def test_a_link_with_thousands_of_bad_entries_costs_bounded_work_and_one_short_line_per_parameter(monkeypatch):
    searches = []  # each bad entry costs a 'did you mean' search over the catalog: the work a link can buy
    real = plan_inputs.suggest
    monkeypatch.setattr(plan_inputs, "suggest", lambda *a, **k: searches.append(1) or real(*a, **k))
    junk = ",".join(f"nogpu{i}:1" for i in range(16_000))  # ~180 kB, as a hand-made link can carry
    link = {"own": "rtx-a5000:3," + junk, "cmp": "rtx-4090," + junk, "myprice": "rtx-4090:0.3," + junk,
            "prec": "fp16", **{f"bogus{i}": "1" for i in range(2_000)}}
    inputs, warnings = decode(link)
    # the good parts still apply
    assert inputs.prec == "fp16" and inputs.own == (Owned("rtx-a5000", 3),) and inputs.cmp == ("rtx-4090",)
    assert inputs.myprice == (("rtx-4090", 0.3),)
    # one line per list parameter, each with a count for the rest; unknown parameters are counted, not listed
    for param in ("own", "cmp", "myprice"):
        assert len(_warned(warnings, param)) == 1 and "more" in str(_warned(warnings, param)[0])
    assert len(warnings) < 20 and sum(len(str(w)) for w in warnings) < 20 * 400
    assert any("2,000" in str(w) or "1,99" in str(w) for w in warnings)  # how many unknown parameters there were
    assert len(searches) < 3 * share.MAX_LIST_ENTRIES + 20  # bounded by the cap, not by the 48,000 entries


def test_a_list_may_name_every_gpu_of_the_catalog():
    every = ",".join(f"{g}:1" for g in GPU_IDS)
    inputs, warnings = decode({"myprice": every})
    assert warnings == [] and len(inputs.myprice) == len(GPU_IDS) <= share.MAX_LIST_ENTRIES


def test_a_gpu_you_described_travels_in_the_link_and_a_name_without_it_is_dropped():
    mine = "name=My ASIC;mem=64;memtype=hbm;bw=1600;fp32=50;bf16=400;cc=unknown;usd=1.2"
    inputs, warnings = share.decode({"mygpu": mine, "gpu": "own-my-asic"})
    assert not warnings and inputs.mygpu == mine and inputs.gpu == "own-my-asic"
    again, _ = share.decode(share.encode(inputs))
    assert again.mygpu == mine and again.gpu == "own-my-asic"
    orphan, warnings = share.decode({"gpu": "own-nothing"})
    assert orphan.gpu == "" and [w.param for w in warnings] == ["gpu"]
    bad, warnings = share.decode({"mygpu": mine.replace("mem=64", "mem=0")})
    assert bad.mygpu == "" and "your GPU's mem" in str(warnings[0])


def test_train_tokens_travel_in_a_train_link_only():
    back, warnings = decode(encode(Inputs(model="llama-2-7b", job="train", tokens=1e12)))
    assert warnings == [] and back.tokens == 1e12
    assert "tokens" not in encode(Inputs(model="llama-2-7b", job="infer", tokens=1e12))


@pytest.mark.parametrize("shard", ["zero1", "zero2", "auto"])
def test_zero_stages_and_auto_travel_in_the_link(shard):
    m = load_models().get("llama-2-7b")
    inputs = Inputs(model=m.id, job="train", samples=512, size=2048, gpus=8, shard=shard)
    back, warnings = decode(parse_qs(urlsplit(share.link("http://x/", inputs)).query))
    assert not warnings and back.shard == shard
    assert plan_inputs.to_plan(back, m).workload.sharding == shard


def test_a_training_layout_and_global_batch_travel_in_the_link():
    m = load_models().get("llama-2-7b")
    inputs = Inputs(model=m.id, job="train", samples=512, size=2048, gpus=8, shard="zero1", lay="tp=2,pp=2,v=2",
                    gbatch=64, batch=4)
    back, warnings = decode(parse_qs(urlsplit(share.link("http://x/", inputs)).query))
    assert not warnings and back.lay == "tp=2,pp=2,v=2" and back.gbatch == 64
    assert "layout TP 2 (+SP) x PP 2 (interleaved 1F1B" in plan_inputs.plan_sentence(back, m)
    e = estimate_all(plan_inputs.to_plan(back, m), FACTS, gpu_names=["h100-sxm"])[0]
    assert e.parallelism == "zero1 with tp=2,pp=2,v=2" and e.data_ranks == 2
    _, warned = decode({"job": ["train"], "lay": ["tp=2,tp=4"]})
    assert any("lay" in str(w) and "given twice" in str(w) for w in warned)


def test_the_serving_lengths_travel_and_a_bad_value_is_named():
    inputs, warnings = decode({"srate": "4", "slen": "sharegpt"})
    assert not warnings and inputs.slen == "sharegpt" and encode(inputs)["slen"] == "sharegpt"
    assert "slen" not in encode(DEFAULTS)  # fixed, the default, stays out of the link
    back, warned = decode({"slen": "poisson"})
    assert back.slen == "fixed" and [w.param for w in warned] == ["slen"] and "sharegpt" in str(warned[0])
