"""A vLLM run with --enforce-eager captures no CUDA/HIP graph: every decode step's kernels are dispatched from Python
one by one, at eager PyTorch's CPU time per kernel, as V0's prefills are (ServingRow.enforce_eager, set by the
post-hoc condition enforce_eager; Scheduler.eager_decode_from 1). Expected figures are derived by hand from the
decoder's kernel count (12 a SwiGLU layer, 5 outside the layers) and the per-kernel time the test sets."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError, load_yaml
from planner.engine.plan import Plan
from planner.engine.serving_sim import scheduler_efficiency, step_times
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import validation_models
from planner.validation.serving_first import SERVING_DIR, load_rows, predict
from planner.validation.serving_rescore import load_posthoc, with_posthoc

FACTS = load_facts()
GPU = FACTS.catalog.get("a100-sxm-80gb")
DISPATCH_US = 23.0  # CPU microseconds a kernel, eagerly (the test's figure)


def _steps(model: str, eager_from: int):
    plan = Plan(validation_models().get(model), Generate(1, 100, 20), "bf16", runtime="vllm")
    sched = replace(load_schedulers().get("vllm").on(GPU.id, GPU.vram_gib), prefill_host_us_per_kernel=DISPATCH_US,
                    eager_decode_from=eager_from, step_host_us=0.0)
    return plan, sched, step_times(plan, GPU, FACTS, sched, 1, 120)


def test_the_scheduler_hands_eager_decode_to_the_step_model():
    plan, sched, _ = _steps("qwen2-0.5b", 1)
    assert scheduler_efficiency(plan, GPU, FACTS, sched)[1].eager_decode_from == 1
    assert scheduler_efficiency(plan, GPU, FACTS, replace(sched, eager_decode_from=0))[1].eager_decode_from == 0


def test_a_small_models_eager_decode_step_is_its_kernels_dispatch_time():
    """Qwen2-0.5B: 24 SwiGLU layers x 12 kernels + 5 = 293 kernels, x 23 us = 6.739 ms a step, whatever the batch
    (2 or 64 sequences): the host, not the GPU (its graphed step under 2.5 ms), sets the step."""
    _, _, graphed = _steps("qwen2-0.5b", 0)
    _, _, eager = _steps("qwen2-0.5b", 1)
    host_s = (24 * 12 + 5) * DISPATCH_US * 1e-6
    assert eager.dense_all[2] == pytest.approx(host_s) and eager.dense_all[64] == pytest.approx(host_s)
    assert graphed.dense_all[2] < 2.5e-3 and graphed.dense_all[64] < 2.5e-3


def test_a_larger_models_step_stays_gpu_bound():
    """Llama-3-8B: 32 x 12 + 5 = 389 kernels x 23 us = 8.95 ms of dispatch, under the GPU's 16 GB of weights at
    ~2 TB/s (> 8 ms, plus its other work): the eager step equals the graphed one."""
    _, _, graphed = _steps("llama-3-8b", 0)
    _, _, eager = _steps("llama-3-8b", 1)
    assert graphed.dense_all[64] > (32 * 12 + 5) * DISPATCH_US * 1e-6
    assert eager.dense_all[64] == pytest.approx(graphed.dense_all[64])


def test_the_posthoc_flag_is_parsed_and_a_bad_one_refused(tmp_path):
    p = tmp_path / "posthoc.yaml"
    p.write_text("schema_version: 1\nconditions:\n  - {rows: 'a-*', enforce_eager: true, why: the command}\n")
    assert load_posthoc(p) == [("a-*", {"enforce_eager": True})]
    p.write_text("schema_version: 1\nconditions:\n  - {rows: 'a-*', enforce_eager: maybe, why: the command}\n")
    with pytest.raises(DataFileError, match="enforce_eager"):
        load_posthoc(p)


def test_exactly_the_rows_whose_command_says_enforce_eager_are_marked():
    """The repository's post-hoc conditions mark every dstack row whose own conditions (entered before predicting)
    pass --enforce-eager, and no other row (rows written later state the flag themselves, as cssnoeasy's do)."""
    posthoc = load_posthoc()
    stated, marked = set(), set()
    for path in sorted((SERVING_DIR / "to_predict").glob("dstack-*.yaml")):
        stated |= {r["id"] for r in load_yaml(path, "rows") if "--enforce-eager" in str(r.get("conditions", ""))}
        marked |= {r.id for r in load_rows(path) if with_posthoc(r, posthoc).enforce_eager}
    assert len(stated) == 38 and marked == stated


def test_a_closed_loop_row_may_not_state_enforce_eager():
    # the steady-concurrency model (planner.engine.serving) has no eager path: a concurrency row stating it without
    # its request count (the finite closed loop, simulated: test_closed_loop_rows) is refused, named
    row = next(r for r in load_rows(SERVING_DIR / "to_predict" / "cssnoeasy-vllm019-a100pcie.yaml")
               if r.runtime == "vllm")
    with pytest.raises(ValueError, match="enforce_eager"):
        predict(replace(row, enforce_eager=True), load_facts())
