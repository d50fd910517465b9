"""A generate batch whose KV cache does not fit: runtimes whose scheduler admits sequences as their paged KV cache
frees (vLLM, TensorRT-LLM's in-flight batching: data/runtimes.yaml batch_waves) run it in waves of the largest batch
that fits, timed as such; runtimes with a static batch (Hugging Face transformers, llama.cpp) refuse it."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError
from planner.engine import sweep
from planner.engine.estimate import estimate_all, estimate_gpu
from planner.engine.memory import breakdown
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import load_runtimes
from planner.engine.plan import Plan

FACTS = load_facts()
LLAMA = load_models().get("llama-2-7b")
L40S = FACTS.catalog.get("l40s")
P = G = 1024  # prompt and generated tokens per sequence
# Llama-2-7B's KV cache per token in fp16: K and V x 32 layers x 4,096 (32 heads x 128) x 2 B = 524,288 B
KV_BYTES_PER_TOKEN = 2 * 32 * 4096 * 2


def _plan(runtime: str, batch: int | None = 64, sequences: int = 64, target: float = 0.9) -> Plan:
    attention = "flash-attn-2" if runtime == "pytorch-eager" else "sdpa"
    return Plan(LLAMA, Generate(sequences, P, G), "fp16", attention=attention, runtime=runtime, batch=batch,
                memory_target=target)


def _memory_gb(batch: int) -> float:
    """vLLM's memory for `batch` running sequences on the L40S (weights, their KV cache, activations, context)."""
    e = estimate_gpu(_plan("vllm", 1, 1), L40S, FACTS)
    return breakdown(LLAMA, Generate(batch, P, G), e.setup, batch, e.efficiency.cuda_context_gb).total_gb


def test_the_l40s_holds_24_of_these_sequences():
    """The case below: the plan's usable memory is 0.9 of the L40S's reported memory (its default target); 24
    sequences of 2,048 tokens fit in it, 25 do not, and the KV cache of the 24 is 24 x 2,048 x 524,288 B."""
    pool = 0.9 * L40S.reported_vram_gb
    assert _memory_gb(24) <= pool < _memory_gb(25)
    kv = estimate_gpu(_plan("vllm", 24, 24), L40S, FACTS).memory.get("kv_cache")
    assert kv == pytest.approx(24 * (P + G) * KV_BYTES_PER_TOKEN / 1e9, rel=1e-9)


def test_a_batch_of_64_runs_as_waves_of_24_24_and_16():
    """64 sequences on a card that holds 24: 3 waves (24, 24, 16), each a batch's prefill and decode steps; the job
    takes two 24-sequence jobs plus one 16-sequence job (each of those fits and runs whole)."""
    e = estimate_gpu(_plan("vllm"), L40S, FACTS)
    assert e.feasible and e.batch == 24 and e.max_batch == 24
    wave_24 = estimate_gpu(_plan("vllm", 24, 24), L40S, FACTS)
    wave_16 = estimate_gpu(_plan("vllm", 16, 16), L40S, FACTS)
    assert wave_24.feasible and wave_16.feasible and wave_24.batch == 24 and wave_16.batch == 16
    assert e.seconds == pytest.approx(2 * wave_24.seconds + wave_16.seconds, rel=1e-12)
    assert e.seconds == pytest.approx(sum(ph.total_s for ph in e.phases), rel=1e-12)  # what Explain shows
    waves = [r for r in e.reasons if r.code == "waves"]
    assert len(waves) == 1 and not waves[0].blocking
    kv_64 = 64 * (P + G) * KV_BYTES_PER_TOKEN / 1e9  # 68.7 GB
    assert waves[0].text.startswith(f"runs 24 sequences at a time: the KV cache of 64 needs {kv_64:.1f} GB")
    assert "3 waves of 24, 24, 16 sequences" in waves[0].text
    assert not any(r.blocking for r in e.reasons)


def test_tensorrt_llm_runs_waves_too():
    """TensorRT-LLM's capacity scheduler (GUARANTEED_NO_EVICT) starts a request once its whole cache fits."""
    e = estimate_gpu(_plan("tensorrt-llm"), L40S, FACTS)
    assert e.feasible and e.batch == 24 and any(r.code == "waves" for r in e.reasons)


@pytest.mark.parametrize("runtime", ["pytorch-eager", "llama.cpp"])
def test_a_static_batch_that_does_not_fit_stays_infeasible(runtime):
    """Hugging Face's generate and llama.cpp hold the whole batch's cache at once: 64 x 2,048 tokens need 68.7 GB of
    KV cache alone, more than the L40S's 48 GiB."""
    e = estimate_gpu(_plan(runtime), L40S, FACTS)
    assert not e.feasible and e.batch == 64
    assert any(r.code == "oom" and r.blocking for r in e.reasons)
    assert not any(r.code == "waves" for r in e.reasons)


def test_a_batch_that_fits_runs_whole_without_a_note():
    e = estimate_gpu(_plan("vllm", 16, 64), L40S, FACTS)
    assert e.feasible and e.batch == 16 and not any(r.code == "waves" for r in e.reasons)


@pytest.mark.parametrize("target", [0.6, 1.0])
def test_the_waves_fill_the_plans_memory_target(target):
    """The wave is the largest batch whose memory fits the plan's usable memory (vLLM's gpu_memory_utilization): a
    smaller target runs fewer sequences at a time, a larger one more."""
    e = estimate_gpu(_plan("vllm", target=target), L40S, FACTS)
    assert e.feasible and (e.batch < 24 if target < 0.9 else 24 < e.batch < 64)
    assert _memory_gb(e.batch) <= target * L40S.reported_vram_gb < _memory_gb(e.batch + 1)


def test_the_sweep_times_the_waves_as_each_gpus_own_estimate():
    """The catalog sweep (arrays) and estimate_gpu agree on the waves: batch, seconds and reasons."""
    plan = _plan("vllm", 64, 6_400)
    swept = estimate_all(plan, FACTS, arrays=sweep)
    waved = 0
    for e in swept:
        own = estimate_gpu(plan, e.gpu, FACTS)
        assert (e.feasible, e.batch, e.max_batch) == (own.feasible, own.batch, own.max_batch), e.gpu.id
        assert [r.text for r in e.reasons] == [r.text for r in own.reasons], e.gpu.id
        if e.feasible:
            assert e.seconds == pytest.approx(own.seconds, rel=1e-9), e.gpu.id
        waved += any(r.code == "waves" for r in e.reasons)
    assert waved  # some GPUs hold fewer than 64 of these sequences


def test_which_runtimes_run_waves_is_data_with_its_source():
    runtimes = load_runtimes()
    for rid in ("vllm", "tensorrt-llm"):
        assert runtimes.get(rid).batch_waves and "KV cache" in runtimes.get(rid).batch_waves_source
        assert runtimes.get(rid).efficiency("hbm").batch_waves
    for rid in ("pytorch-eager", "llama.cpp", "torch-compile"):
        assert not runtimes.get(rid).batch_waves and not runtimes.get(rid).efficiency("gddr").batch_waves


def test_batch_waves_without_its_source_names_the_field(tmp_path):
    base = ("schema_version: 1\nread_on: 2026-11-20\nruntimes:\n  - id: x\n    name: X\n"
            "    mem_bw_efficiency: {hbm: 0.8, gddr: 0.8}\n    compute_efficiency: {hbm: 0.7, gddr: 0.7}\n"
            "    launch_overhead_us: 1\n    kernels_per_layer_factor: 1\n    cuda_context_gb: 0.5\n    source: s\n"
            "    fuses_elementwise: false\n    fuses_elementwise_source: s\n")
    path = tmp_path / "waves.yaml"
    path.write_text(base + "    batch_waves: true\n")
    with pytest.raises(DataFileError) as exc:
        load_runtimes(path)
    assert exc.value.field == "batch_waves_source" and "'x'" in exc.value.record
    path.write_text(base + "    batch_waves: 0.9\n    batch_waves_source: s\n")
    with pytest.raises(DataFileError) as exc:
        load_runtimes(path)
    assert exc.value.field == "batch_waves"


def test_an_infer_job_is_not_split_into_waves():
    """Waves are a generate job's (a KV cache that grows); an infer job's batch that does not fit stays refused."""
    from planner.inputs.jobs import Infer
    plan = replace(_plan("vllm"), workload=Infer(64, 200_000))
    e = estimate_gpu(plan, L40S, FACTS)
    assert not any(r.code == "waves" for r in e.reasons)
