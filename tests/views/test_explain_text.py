"""The explanation of one GPU: step-time rows, the inputs behind its figures, the memory sentence, its caption."""

from dataclasses import replace

import pytest

from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Train
from planner.inputs.models import load_models
from planner.inputs.runtimes import with_engine_generation
from planner.views import explain_text, ranking_table
from tests.fixtures.plans import ranking_of

FACTS = load_facts()



def test_step_time_rows_add_up_to_the_estimate():
    e = next(e for e in ranking_of() if e.gpu.id == "h100-sxm")
    rows = explain_text.step_time_rows(e)
    assert sum(r["time s"] for r in rows) == pytest.approx(e.seconds)
    assert {r["op group"] for r in rows} >= {"linear layers", "attention", "elementwise & norms"}


def test_the_step_time_tables_keep_each_rows_figures_and_formula_apart_and_in_step():
    """Two tables that each fit a laptop's width: the figures without the formula, then each row's formula, row for
    row (the same phase and op group on the same line of both)."""
    e = next(e for e in ranking_of() if e.gpu.id == "h100-sxm")
    figures, formulas = explain_text.step_time_tables(e)
    assert all("formula" not in r and "time s" in r for r in figures)
    assert [(r["phase"], r["op group"]) for r in figures] == [(r["phase"], r["op group"]) for r in formulas]
    assert all(set(r) == {"phase", "op group", "formula"} and r["formula"] for r in formulas)


def test_the_decode_attention_latency_has_a_row_of_its_own():
    """cfDNA-Gen's 14 layers: every decode step pays 14 attention calls' fixed latency (data/precisions.yaml), shown
    with its per-step figure and counted as overhead."""
    e = next(e for e in ranking_of() if e.gpu.id == "h100-sxm")
    us = e.setup.attention.decode_latency_us
    (row,) = [r for r in explain_text.step_time_rows(e) if r["op group"].startswith("decode-attention latency")]
    decode = [ph for ph in e.phases if ph.name == "decode"]
    assert row["time s"] == pytest.approx(sum(ph.steps * ph.passes for ph in decode[:1]) * 14 * us * 1e-6)
    assert f"steps x {14 * us:,.4g} us" in row["formula"] and row["limited by"] == "overhead"


def test_tiled_gemms_explain_how_compute_and_memory_combine():
    """Llama-2-7B on an H100 SXM at batch 32: the decode's GEMMs have 32 rows (tiles), so the linear layers' row gives
    the overlap formula and its source, and the inputs name p; at batch 1 the GEMVs keep the sharp corner."""
    tiled = next(e for e in ranking_of("llama-2-7b", Generate(960, 128, 128), precision="fp16", batch=32)
                 if e.gpu.id == "h100-sxm")
    (row,) = [r for r in explain_text.step_time_rows(tiled)
              if r["phase"] == "decode" and r["op group"] == "linear layers"]
    assert "time = (compute^p + memory^p)^(1/p), p = 1.45" in row["formula"] and "DeepGEMM" in row["formula"]
    assert row["time s"] > max(row["compute s"], row["memory s"])
    inputs = {name: value for name, value, _ in explain_text.inputs_rows(tiled, auto_batch=False)}
    assert inputs["GEMM compute and memory overlap"].startswith("p = 1.45")
    gemv = next(e for e in ranking_of("llama-2-7b", Generate(1_000, 1, 128), precision="fp16", batch=1)
                if e.gpu.id == "h100-sxm")
    (row,) = [r for r in explain_text.step_time_rows(gemv)
              if r["phase"] == "decode" and r["op group"] == "linear layers"]
    assert "compute^p" not in row["formula"] and row["time s"] == pytest.approx(row["memory s"])


def test_the_communication_row_shows_the_link_and_the_collectives_of_each_step():
    """Llama-2-7B at TP=2 on H100 SXM, fp16, batch 1: per decode token 64 all-reduces of 4096 x 2 B and one
    all-gather of the 32000 x 2 B logits (half of it, 1 step): 65 calls. TensorRT-LLM all-reduces in its own one-shot
    kernel (data/custom_allreduce.yaml: 3.7 + 0.3 us and 8,192 B from the one peer at 0.58 x 450 GB/s):
    64 x (4.0 + 8192 / 261e3) = 258.01 us; the all-gather in NCCL's LL protocol (half of 364.5 GB/s, capped at
    141 GB/s on Hopper; 6.6 us a call, 0.6 us a hop): 6.6 + 0.6 + 32000 / 141e3 = 7.43 us: 265.4 us per step."""
    e = ranking_of("llama-2-7b", Generate(1, 16, 65), precision="fp16", batch=1, gpus=2, parallel="tensor",
                 runtime="tensorrt-llm")
    e = next(x for x in e if x.gpu.id == "h100-sxm")
    (row,) = [r for r in explain_text.step_time_rows(e)
              if r["phase"] == "decode" and r["limited by"] == "communication"]
    assert "65 collectives per step" in row["formula"] and "265.4 us per step" in row["formula"]
    assert "2 GPUs over NVLink" in row["formula"] and "364.5" not in row["formula"]  # the rates: Explain's inputs
    assert "64 x 8,192 B sent in 2 ring steps: the runtime's one-shot all-reduce of 8,192 B, 4.031 us each" \
        in row["formula"] and "data/custom_allreduce.yaml" in row["formula"]
    assert "1 x 32,000 B sent in 1 ring step: LL, 7.427 us each" in row["formula"]


def test_the_inputs_name_the_link_and_its_protocols_only_when_gpus_exchange_data():
    """A tensor-parallel plan lists the link its collectives use with NCCL's protocols on it (an H100 pair: LL at
    half of 450 x 0.81 = 364.5 GB/s, capped at 141 GB/s on Hopper) and where the figures come from; one GPU has none."""
    ranking = ranking_of("llama-2-7b", Generate(1, 16, 65), precision="fp16", batch=1, gpus=2, parallel="tensor",
                       runtime="tensorrt-llm")
    rows = {name: (value, source) for name, value, source in
            explain_text.inputs_rows(next(x for x in ranking if x.gpu.id == "h100-sxm"), False)}
    value, source = rows["GPU-to-GPU link"]
    assert value.startswith("2 GPUs over NVLink") and "LL 141 GB/s" in value and "Simple 364.5 GB/s" in value
    assert source.startswith("data/interconnects.yaml, link 'nvlink'") and "nccl-tests" in source
    single = next(x for x in ranking_of("llama-2-7b", Generate(1, 16, 65), precision="fp16", batch=1)
                  if x.gpu.id == "h100-sxm")
    assert "GPU-to-GPU link" not in {name for name, _, _ in explain_text.inputs_rows(single, False)}


def test_step_time_rows_agree_with_the_exported_phases():
    """The page's table and the JSON export (report.estimate_row) show the same whole-job figures per op group."""
    from planner.views.report import estimate_row
    e = next(e for e in ranking_of(workload=Generate(1_000_000, 1, 165)) if e.gpu.id == "h100-sxm")
    # full batches, then the rest
    exported = [(ph["name"], g) for ph in estimate_row(e)["phases"] for g in ph["groups"]]
    groups = {g["name"] for _, g in exported}
    rows = [r for r in explain_text.step_time_rows(e) if r["op group"] in groups]
    assert rows and len(rows) == len(exported)
    for r, (phase, g) in zip(rows, exported):
        assert (r["phase"], r["op group"]) == (phase, g["name"])
        assert r["time s"] == pytest.approx(g["seconds"], abs=1e-4)
        assert r["TFLOP"] == pytest.approx(g["flops"] / 1e12) and r["GB moved"] == pytest.approx(g["bytes"] / 1e9)


def test_markdown_cells_are_escaped():
    table = explain_text.md_table(["a"], [("[x](http://evil.example)",)])
    assert "\\[x\\]\\(http" in table


def test_the_memory_sentence_states_capacity_in_the_unit_of_use():
    e = next(e for e in ranking_of() if e.gpu.id == "rtx-4090")
    text = explain_text.memory_sentence(e)
    usable = 0.9 * 24 * 2**30 / 1e9  # 23.19 GB: 90 % of 24 GiB
    assert f"of {usable:.3g} GB usable (90% of the 25.8 GB it reports (24 GiB))" in text
    share = e.memory.total_gb / (24 * 2**30 / 1e9)  # of the card's 25.8 GB: an auto batch stops near the 90 % target
    assert f"fits: {share:.0%} of the card, under the 90% memory target ({usable - e.memory.total_gb:.2f} GB spare)" \
        in text


def test_the_memory_sentence_shows_the_ecc_reserve_of_a_datacenter_gddr_card():
    e = next(e for e in ranking_of() if e.gpu.id == "l40s")
    # nvidia-smi reports 46,068 MiB on an L40S with ECC on (48 GiB less 1/16): 46068 x 2**20 / 1e9 = 48.31 GB
    reported = 46068 * 2**20 / 1e9
    assert f"90% of the {reported:.1f} GB it reports (48 GiB = 51.5 GB, of which the driver reports 46,068 MiB)" \
        in explain_text.memory_sentence(e)


def test_a_cpu_device_is_captioned_and_sourced_as_a_cpu():
    plan = Plan(load_models().get("cfdna-gen"), Generate(1000, 1, 64), "bf16")
    (e,) = estimate_all(plan, FACTS, ["amd-epyc-9654"])
    caption = explain_text.gpu_caption(e)
    assert caption.startswith("CPU") and "96 cores" in caption and "460.8 GB/s" in caption
    sources = {name: source for name, _, source in explain_text.inputs_rows(e, True)}
    assert "data/cpus.yaml" in sources["DRAM bandwidth"] and "data/cpus.yaml" in sources["Peak bf16 TFLOPS (dense)"]
    assert "runs on the CPU" in ranking_table.reason_text(e)


def test_figures_only_the_vendor_published_say_so_where_they_are_explained():
    """data/gpus.yaml marks the B300's rates and bandwidth as announced (no independent measurement found); the H100
    SXM's are measured figures of a shipping part. Explain's source column says which."""
    by_id = {e.gpu.id: e for e in ranking_of("llama-3-8b")}
    b300 = {name: source for name, _, source in explain_text.inputs_rows(by_id["b300"], True)}
    h100 = {name: source for name, _, source in explain_text.inputs_rows(by_id["h100-sxm"], True)}
    peak = next(n for n in b300 if n.startswith("Peak "))
    assert "announced by the vendor, not measured by others" in b300[peak]
    assert "announced by the vendor" in b300["DRAM bandwidth"]
    assert not any("announced" in s for s in h100.values())


def test_explain_names_the_model_with_its_cross_check():
    from planner.inputs.models import load_models
    m = load_models().get("deepseek-v3")  # its preset names the checkpoint's multi-token-prediction module
    name, value, source = explain_text.model_row(m)
    assert name == "Model" and value.startswith("671,026,404,352 parameters")
    assert "cross-check: The checkpoint (685B) also holds one multi-token-prediction module" in source


def test_an_fp8_training_run_states_its_mfu_against_the_bf16_peak():
    # H100 SXM: 989 dense BF16 TFLOPS (datasheet; FP8 1,979): the MFU row divides by the BF16 figure and says why
    e = next(e for e in ranking_of(model="llama-2-7b", workload=Train(1_000, 2048, 1, sharding="fsdp"),
                                   precision="fp8-te", gpus=8, batch=1) if e.gpu.id == "h100-sxm")
    (name, value, source), = [r for r in explain_text.mfu_rows(e) if r[0] == "Model FLOPs utilization (MFU)"]
    assert "x 989 bf16 TFLOPS dense peak" in value and "against the BF16 dense peak" in source


def test_the_step_host_row_names_an_engine_generation_s_per_sequence_work():
    """A vLLM V0 estimate (a validation row's `engine`) explains its host row with the per-sequence term; the
    default (V1) names only the per-step work."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(64, 128, 65), "bf16", runtime="vllm")
    gpu = FACTS.catalog.get("h100-sxm")
    old = replace(FACTS, runtimes=with_engine_generation(FACTS.runtimes, "vllm", 78.0))

    def host_formulas(facts) -> list[str]:
        rows = explain_text.step_time_rows(estimate_gpu(plan, gpu, facts))
        return [r["formula"] for r in rows if r["op group"].startswith("host work per step")]

    assert host_formulas(old) and all("78 us a sequence" in f for f in host_formulas(old))
    assert host_formulas(FACTS) and not any("a sequence" in f for f in host_formulas(FACTS))


def test_explain_shows_the_sustained_ceiling_beside_the_burst_one():
    """An H100 SXM times bf16 matmuls at 794.5 x 708.5 / 841.9 = 668.6 TFLOPS (the burst ceiling scaled by H200's
    power-saturated / boost-clock ratio, data/gpus.yaml): 84 % of 794.5; an H100 PCIe (350 W: no figure, none carried)
    has no such row."""
    by_id = {e.gpu.id: e for e in ranking_of("llama-3-8b")}
    rows = {name: (value, source) for name, value, source in explain_text.inputs_rows(by_id["h100-sxm"], True)}
    value, source = rows["Clock under a long load"]
    assert value == "sustained 668.6 TFLOPS = 84% of the 794.5 TFLOPS burst (boost-clock) ceiling"
    assert "MSMF" in source
    pcie = {name for name, _, _ in explain_text.inputs_rows(by_id["h100-pcie"], True)}
    assert "Clock under a long load" not in pcie
    # an A100 SXM: its own figure at the 400 W limit, 257 of the 271.2 burst = 94.8 %
    a100 = {name: value for name, value, _ in explain_text.inputs_rows(by_id["a100-sxm-80gb"], True)}
    assert a100["Clock under a long load"] == ("sustained 257 TFLOPS = 95% of the 271.2 TFLOPS burst (boost-clock) "
                                               "ceiling")
