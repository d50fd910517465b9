"""vLLM V0 captures its decode CUDA graphs for batch sizes [1, 2, 4] + [8 x i for i in 1..32] and replays one only
while the batch is at most the largest, 256 (data/serving.yaml vllm graph_max_batch, from the model runner's
use_captured_graph test): a decode step of more sequences runs eagerly, each kernel dispatched from Python at the
eager prefill's per-kernel cost. Expected figures are derived by hand from that list and from the simulation's own
definitions (a step past the limit costs what the same step costs under --enforce-eager)."""

from dataclasses import replace

import pytest

from planner.base.schema import DataFileError
from planner.engine.plan import Plan
from planner.engine.serving_sim import step_times
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.runtimes import eager_dispatch_us
from planner.inputs.serving_runtimes import load_schedulers
from tests.fixtures.serving_engine import ENGINE_YAML

FACTS = load_facts()


def test_v0_graphs_decode_batches_up_to_256_and_v1_has_no_such_limit():
    """max([1, 2, 4] + [8 * i for i in range(1, 33)]) = 8 x 32 = 256, for both V0 loops; V1 not listed: 0."""
    vllm = load_schedulers().get("vllm")
    assert (vllm.eager_decode_above("v0-sync"), vllm.eager_decode_above("v0"), vllm.eager_decode_above("v1")) == \
        (max([1, 2, 4] + [8 * i for i in range(1, 33)]),) * 2 + (0,)
    assert "_BATCH_SIZES_TO_CAPTURE" in vllm.graph_max_batch_source
    with pytest.raises(ValueError, match="v9"):
        vllm.eager_decode_above("v9")


def test_a_decode_step_past_the_largest_graph_costs_an_eager_step():
    """With the limit at 8 sequences: steps of 1..8 decodes cost what they cost with no limit (graphs), steps of 9 and
    more what the same step costs with every decode step eager (--enforce-eager's eager_decode_from 1), and that is
    more: llama-3-8b's ~32 layers of kernels, each dispatched from Python."""
    plan = Plan(load_models().get("llama-3-8b"), Generate(1, 512, 256), "bf16", runtime="vllm")
    gpu = FACTS.catalog.get("h100-sxm")
    v0 = replace(load_schedulers().get("vllm").on(gpu.id, gpu.vram_gib), max_num_seqs=16, token_budget=16,
                 prefill_host_us_per_kernel=eager_dispatch_us(FACTS.runtimes))
    graphed = step_times(plan, gpu, FACTS, v0, 1, 640)
    limited = step_times(plan, gpu, FACTS, replace(v0, eager_decode_above=8), 1, 640)
    eager = step_times(plan, gpu, FACTS, replace(v0, eager_decode_from=1), 1, 640)
    assert limited.dense_all[:9] == pytest.approx(graphed.dense_all[:9], rel=1e-12)
    assert limited.dense_all[9:] == pytest.approx(eager.dense_all[9:], rel=1e-12)
    assert limited.dense_all[9] > graphed.dense_all[9]


def test_a_batch_limit_is_checked_on_load(tmp_path):
    """graph_max_batch names generations of `engines` with a whole number of sequences, and carries its source."""
    engines = "    engines: {old: {host_us_per_seq: 90}}\n    engines_source: a profile\n"
    ok = tmp_path / "ok.yaml"
    ok.write_text(ENGINE_YAML + engines + "    graph_max_batch: {old: 256}\n    graph_max_batch_source: code\n")
    assert load_schedulers(ok).get("eng").eager_decode_above("old") == 256
    for i, text in enumerate(("    graph_max_batch: {new: 256}\n    graph_max_batch_source: code\n",
                              "    graph_max_batch: {old: 0}\n    graph_max_batch_source: code\n",
                              "    graph_max_batch: {old: 256}\n")):
        bad = tmp_path / f"bad{i}.yaml"
        bad.write_text(ENGINE_YAML + engines + text)
        with pytest.raises(DataFileError, match="graph_max_batch"):
            load_schedulers(bad)
    with pytest.raises(DataFileError, match="sequences, 1"):
        load_schedulers(tmp_path / "bad1.yaml")
