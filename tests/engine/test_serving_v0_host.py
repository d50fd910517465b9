"""vLLM V0's CPU work per sequence per step (data/serving.yaml vllm `engines`): in series with each step, per
sequence the step carries, hidden by an overlapped scheduler, a k-th of it with k steps a round. Expected figures
are derived by hand from a flat step model, from the data file's sourced constants, or from the source's own
figure (vLLM RFC #6801: about 20 ms between two steps at batch 200)."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError
from planner.engine.plan import Plan
from planner.engine.serving_sim import StepTimes, scheduler_efficiency, seq_host_seconds, simulate, step_times
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import Scheduler, load_schedulers
from planner.validation.serving_first import ServingRow, predict
from planner.validation.serving_rescore import load_posthoc, with_posthoc
from tests.fixtures.serving_engine import ENGINE_YAML

FACTS = load_facts()
STEP = 0.010  # every step's GPU work in the flat model, seconds
HOST = 0.001  # CPU seconds per sequence per step in the flat model
MIXED = Scheduler("t", "test", "vllm", 256, 4096, True, True, 0.9)
ENGINE = ENGINE_YAML


def _flat(seq_host_s: float = HOST, tokens: int = 4096) -> StepTimes:
    flat = (STEP,) * (tokens + 1)
    return StepTimes(flat, flat, (0.0,) * (tokens + 1), 0.0, 10**7, 1e-6, 1.0, seq_host_s)


def test_each_step_pays_the_cpu_work_of_every_sequence_it_carries():
    """One request (100-token prompt, 10 tokens): its prefill step carries 1 sequence, 10 + 1 ms, and so does each
    of its 9 decode steps: TTFT 11 ms, TPOT 11 ms, end to end 110 ms. Two requests at 0 (10-token prompts, 5
    tokens each): one mixed step prefills both, 10 + 2 ms, then 4 decode steps of 2 sequences, 12 ms each: TTFT
    12 ms, TPOT 12 ms, both done at 60 ms."""
    one = simulate(_flat(), MIXED, [0.0], [100], [10])
    assert one.ttft_s[0] == pytest.approx(0.011)
    assert one.tpot_s[0] == pytest.approx(0.011)
    assert one.e2e_s[0] == pytest.approx(0.110)
    two = simulate(_flat(), MIXED, [0.0, 0.0], [10, 10], [5, 5])
    assert two.ttft_s.tolist() == pytest.approx([0.012, 0.012])
    assert two.tpot_s.tolist() == pytest.approx([0.012, 0.012])
    assert two.e2e_s.tolist() == pytest.approx([0.060, 0.060])


def test_a_prefill_only_step_pays_for_its_prompts_alone():
    """A scheduler that does not mix (a step prefills or decodes): A (10-token prompt, 3 tokens) runs its prefill
    at 0-11 ms; B arrives at 5 ms and its prefill step (1 sequence, 11 ms) runs before A's next decode, 11-22 ms;
    then decode steps of 2 sequences, 12 ms: A's tokens at 11, 34, 46 ms (TPOT 17.5 ms)."""
    split = replace(MIXED, mixed_batches=False)
    run = simulate(_flat(), split, [0.0, 0.005], [10, 10], [3, 3])
    assert run.ttft_s.tolist() == pytest.approx([0.011, 0.017])
    assert run.e2e_s[0] == pytest.approx(0.046)
    assert run.tpot_s[0] == pytest.approx(0.0175)


def test_the_per_sequence_work_is_hidden_when_overlapped_and_shared_by_a_round():
    """seq_host_seconds: host_us_per_seq in seconds; none when the CPU work overlaps the GPU's (SGLang's scheduler);
    a tenth of it with 10 steps a round (multi-step scheduling), as the per-step host work is treated."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm")
    gpu = FACTS.catalog.get("h100-sxm")

    def per_seq(sched: Scheduler) -> float:
        return seq_host_seconds(scheduler_efficiency(plan, gpu, FACTS, sched)[1])

    v0 = replace(MIXED, host_us_per_seq=78.0)
    assert per_seq(v0) == pytest.approx(78e-6)
    assert per_seq(replace(v0, host_overlapped=True)) == 0.0
    assert per_seq(replace(v0, steps_per_round=10)) == pytest.approx(7.8e-6)
    assert per_seq(MIXED) == 0.0  # the current engine (V1): no per-sequence term


def test_the_v0_engines_come_from_the_data_with_their_source_and_bounds():
    """data/serving.yaml: vLLM's V0 engine before 0.6.0 ('v0-sync') pays its output processing in series, so more
    per sequence than 0.6-0.10's V0 ('v0', async output processing); both within their sources' bounds (80-105 us,
    0-90 us); the current scheduler (`on`) has none; an unknown generation is named with the known ones."""
    vllm = load_schedulers().get("vllm")
    sync, v0 = vllm.host_us_per_seq("v0-sync"), vllm.host_us_per_seq("v0")
    assert 80 <= sync <= 105 and 0 <= v0 <= 90 and v0 < sync
    assert "6801" in vllm.engines_source and "7049" in vllm.engines_source
    assert vllm.on("h100-sxm", 80).host_us_per_seq == 0.0
    with pytest.raises(ValueError, match="engine: vllm has no engine generation 'v2'.*v0-sync, v0"):
        vllm.host_us_per_seq("v2")


def test_v0_from_0_6_saves_the_rfc_s_batch_one_output_processing_and_nothing_else():
    """vLLM 0.6.0's asynchronous output processing (PR #7049) runs _process_model_outputs under the next step's GPU
    work; RFC #6913 times that function at 0.2 ms at batch 1. So a batch-1 step of 'v0' (0.6-0.10) waits the
    synchronous loop's 1,900 + 90 us less 200 us = 1,790 us on the host, 1,712 us of it per step and 78 us for its
    one sequence; at batch 32 the two generations differ by 200 + 31 x (90 - 78) = 572 us."""
    vllm = load_schedulers().get("vllm")

    def host_us(engine: str, batch: int) -> float:
        return vllm.step_host_us(engine) + batch * vllm.host_us_per_seq(engine)

    assert host_us("v0-sync", 1) == pytest.approx(1900 + 90)
    assert host_us("v0", 1) == pytest.approx(1900 + 90 - 200)
    assert vllm.step_host_us("v0") == pytest.approx(1712)
    assert host_us("v0-sync", 32) - host_us("v0", 32) == pytest.approx(572)
    assert "6913" in vllm.engines_source and "0.2 ms" in vllm.engines_source


def test_v0_before_0_6_spends_the_rfc_s_20_ms_between_steps_at_batch_200():
    """RFC #6801 (vLLM 0.5.x): sampling, input preparation, output processing and scheduling 'can be 20ms' at batch
    200. V0's per-step host work (data/serving.yaml engines, 1.9 ms) and 200 sequences' V0 work together make that
    figure, one mechanism and not two: within 5 %. In the simulation's step times, a 200-decode
    step under 'v0-sync' is exactly 200 x host_us_per_seq longer than under the current engine."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm")
    gpu = FACTS.catalog.get("h100-sxm")
    profile = load_schedulers().get("vllm")
    sched = profile.on(gpu.id, gpu.vram_gib)
    v0_sync = replace(sched, step_host_us=profile.step_host_us("v0-sync"))
    per_step_s = scheduler_efficiency(plan, gpu, FACTS, v0_sync)[1].step_host_us * 1e-6
    sync_us = profile.host_us_per_seq("v0-sync")
    assert per_step_s + 200 * sync_us * 1e-6 == pytest.approx(0.020, rel=0.05)
    v1 = step_times(plan, gpu, FACTS, sched, 1, 640)
    old = step_times(plan, gpu, FACTS, replace(sched, host_us_per_seq=sync_us), 1, 640)
    args = (200, 0, 200 * 640, 0.0, 200)
    assert old.seconds(*args) - v1.seconds(*args) == pytest.approx(200 * sync_us * 1e-6, rel=1e-9)


def test_an_engine_entry_is_checked_on_load(tmp_path):
    """A generation's microseconds must be a number within 0..1,000 and come with engines_source."""
    ok = tmp_path / "ok.yaml"
    ok.write_text(ENGINE + "    engines: {old: {host_us_per_seq: 50}}\n    engines_source: a profile\n")
    assert load_schedulers(ok).get("eng").host_us_per_seq("old") == 50.0
    for name, text in (("unsourced", "    engines: {old: {host_us_per_seq: 50}}\n"),
                       ("huge", "    engines: {old: {host_us_per_seq: 5000}}\n    engines_source: a profile\n"),
                       ("word", "    engines: {old: {host_us_per_seq: lots}}\n    engines_source: a profile\n")):
        path = tmp_path / f"{name}.yaml"
        path.write_text(ENGINE + text)
        with pytest.raises(DataFileError, match="engines"):
            load_schedulers(path)


def test_the_v0_rows_carry_their_engine_post_hoc_and_a_concurrency_row_refuses_one():
    """validation/serving/posthoc.yaml gives the Livinfly vLLM 0.9.1 (VLLM_USE_V1=0) rows 'v0' and zhjunqin's vLLM
    0.4.1 rows 'v0-sync'; SGLang's rows of the same sources none. A concurrency row (planner.engine.serving) has no
    engine generation to take."""
    posthoc = load_posthoc()
    row = ServingRow("livinfly-a100pcie40-mistral7b-vllm091v0-rps4-tpot", "s", "mistral-7b", "a100-pcie-40gb",
                     "vllm", 1, 512, 512, "tpot_median_ms", rate=4.0)
    assert with_posthoc(row, posthoc).engine == "v0"
    assert with_posthoc(replace(row, id="zhjunqin-rtx3090-llama3-8b-vllm041-rps5-tpot"), posthoc).engine == "v0-sync"
    assert with_posthoc(replace(row, id="livinfly-a100pcie40-mistral7b-sglang047-rps4-tpot"), posthoc).engine is None
    conc = ServingRow("c", "s", "llama-3-8b", "h100-sxm", "vllm", 1, 128, 128, "tpot_median_ms", concurrency=8,
                      engine="v0")
    with pytest.raises(ValueError, match="engine"):
        predict(conc, FACTS)
