"""A GPU the catalog lacks, described by its user: parsed with the catalog's bounds, ranked with the rest."""

from datetime import date

import pytest

from planner.base.units import BYTES_PER_GIB
from planner.engine.estimate import estimate_all
from planner.engine.plan import Plan
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import facts_with_own_gpu
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.own_gpu import own_gpu_device, own_gpu_from_yaml, own_gpu_text, parse_own_gpu

ASIC = "name=My ASIC;mem=64;memtype=hbm;bw=1600;fp32=50;bf16=400;cc=unknown;usd=1.2"
# NVIDIA H100 SXM5's datasheet figures (data/gpus.yaml's h100-sxm record): 80 GiB = 85.9 GB of HBM3 at 3,350 GB/s
H100_CLONE = ("name=H100 clone;mem=85.899;memtype=hbm;bw=3350;fp32=67;tf32=494.5;fp16=989.4;bf16=989.4;fp8=1978.9;"
              "int8=1978.9;cc=9.0;usd=2.69")
DAY = date(2026, 11, 27)


def test_a_description_reads_back_to_itself_and_names_a_user_gpu():
    own = parse_own_gpu(ASIC)
    assert parse_own_gpu(own.text()) == own
    assert (own.id, own.mem_gb, own.mem_type, own.mem_bw_gbps, own.arch, own.usd_hr) == \
        ("own-my-asic", 64.0, "hbm", 1600.0, "unknown", 1.2)
    assert dict(own.tflops) == {"fp32": 50.0, "bf16": 400.0}
    assert parse_own_gpu("name=a;mem=8;bw=100;fp32=1;cc=sm_89").arch == "8.9"
    assert parse_own_gpu("name=a;mem=8;bw=100;fp32=1;cc=GFX942").arch == "gfx942"


@pytest.mark.parametrize("text, field", [
    ("name=a;mem=0;bw=100;fp32=1", "mem"),  # below the catalog's 1 GB
    ("name=a;mem=8;bw=16000000;fp32=1", "bw"),  # above the catalog's 50,000 GB/s
    ("name=a;mem=8;bw=100", "fp32"),  # the one rate every device has
    ("name=a;mem=8;bw=100;fp32=inf", "fp32"),
    ("name=a;mem=8;bw=100;fp32=1;cc=99.9", "cc"),
    ("name=a;mem=8;bw=100;fp32=1;memtype=sram", "memtype"),
    ("name=a;mem=8;bw=100;fp32=1;usd=-1", "usd"),
    ("name=a;mem=8;mem=9;bw=100;fp32=1", "mem"),  # given twice
    ("name=" + "x" * 41 + ";mem=8;bw=100;fp32=1", "name"),
    ("name=a;mem=8;bw=100;fp32=1;colour=red", "key=value"),
])
def test_a_bad_value_is_refused_naming_its_field(text, field):
    with pytest.raises(ValueError, match=f"your GPU's.*{field}"):
        parse_own_gpu(text)


def test_text_no_reader_can_see_and_oversized_descriptions_are_refused():
    with pytest.raises(ValueError, match="U\\+001B"):
        parse_own_gpu("name=a\x1b[2J;mem=8;bw=100;fp32=1")
    with pytest.raises(ValueError, match="at most 400"):
        parse_own_gpu("name=a;" + "mem=8;" * 100)


def test_the_device_keeps_the_figures_as_given_and_says_whose_they_are():
    catalog = load_catalog()
    g = own_gpu_device(parse_own_gpu(ASIC), catalog, DAY)
    assert g.name == "My ASIC (yours)" and g.source.startswith("described by you") and g.market == "yours"
    assert g.vram_gib == pytest.approx(64e9 / BYTES_PER_GIB)  # decimal GB as typed, stored in GiB
    assert (g.vendor, g.compute_capability, g.memory_class) == ("other", None, "hbm")
    assert g.peak_tflops("bf16") == 400 and g.peak_tflops("fp8") is None
    assert 0 < g.ceiling("bf16").ratio <= 1  # derived as for any GPU without a published measurement
    assert all(g.price(t).usd_hr == 1.2 and g.price(t).origin == "custom" for t in ("secure", "community", "spot"))
    nvidia = own_gpu_device(parse_own_gpu(H100_CLONE), catalog, DAY)
    assert (nvidia.vendor, nvidia.compute_capability) == ("NVIDIA", (9, 0))


def test_the_form_and_a_link_are_checked_alike():
    text = own_gpu_text("  My   ASIC ", 64, "hbm", 1600, {"fp32": 50, "bf16": 400, "fp8": 0}, "", 1.2)
    assert parse_own_gpu(text) == parse_own_gpu(ASIC)  # spaces folded, a 0 rate is none, '' is unknown
    with pytest.raises(ValueError, match="your GPU's bw"):
        own_gpu_text("x", 8, "gddr", 5, {"fp32": 1}, "unknown", 0)


def test_a_gpu_with_an_h100s_datasheet_decodes_as_fast_as_the_catalogs_h100():
    """Batch-1 decode of an 8B model streams the weights once per token: with the same bandwidth and memory kind the
    step time is the same to within what the (derived vs measured) matmul ceiling moves the small compute part."""
    facts = facts_with_own_gpu(H100_CLONE, DAY)
    plan = Plan(load_models().get("llama-3-8b"), Generate(100, 16, 128), "bf16", batch=1, price_tier="secure")
    by_id = {e.gpu.id: e for e in estimate_all(plan, facts, gpu_names=["own-h100-clone", "h100-sxm"])}
    clone, h100 = by_id["own-h100-clone"], by_id["h100-sxm"]
    assert clone.feasible and clone.seconds == pytest.approx(h100.seconds, rel=0.02)
    assert clone.cost() == pytest.approx(clone.seconds / 3600 * 2.69)  # its own price, one GPU


def test_without_a_description_the_facts_are_the_committed_ones():
    committed = facts_with_own_gpu("", DAY)
    assert "own-my-asic" not in committed.catalog.ids()
    assert "own-my-asic" in facts_with_own_gpu(ASIC, DAY).catalog.ids()


YAML_ASIC = ("name: My ASIC\nmemory_gb: 64\nmemory_type: hbm\nmem_bw_gbps: 1600\n"
             "dense_tflops: {fp32: 50, bf16: 400}\ncompute_capability: unknown\nusd_hr: 1.2\n")


def test_a_yaml_description_reads_as_the_one_line_one():
    assert own_gpu_from_yaml(YAML_ASIC) == "name=My ASIC;mem=64;memtype=hbm;bw=1600;fp32=50;bf16=400;cc=unknown;usd=1.2"


@pytest.mark.parametrize("text, named", [
    (YAML_ASIC.replace("memory_gb: 64", "memory_gb: 64000"), "memory_gb"),  # above the catalog's 2,000 GB
    (YAML_ASIC.replace("fp32: 50", "fp32: 0"), "dense_tflops.fp32"),
    (YAML_ASIC.replace("fp32: 50", "fp64: 50"), "dense_tflops"),  # no fp64 path in the catalog
    (YAML_ASIC.replace("memory_type: hbm", "memory_type: ddr"), "memory_type"),
    (YAML_ASIC + "clock_mhz: 2000\n", "clock_mhz"),
    (YAML_ASIC.replace("name: My ASIC", "name: [a, b]"), "name"),
    (YAML_ASIC.replace("name: My ASIC", "name: 'a;b'"), "name"),
    ("- just\n- a list\n", "mapping"),
    ("a: &x [1]\nb: *x\n", "alias"),
    (YAML_ASIC + "#" * 5000, "bytes"),
])
def test_a_bad_yaml_description_names_its_field(text, named):
    with pytest.raises(ValueError, match=named):
        own_gpu_from_yaml(text)
