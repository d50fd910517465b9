"""vLLM V0's CUDA graphs cover decode steps up to 8,192 tokens of context (data/serving.yaml vllm
graph_max_context: max_seq_len_to_capture); a decode step past it runs eagerly, each kernel dispatched from Python at
the eager prefill's per-kernel cost. Expected figures are derived by hand from flat phases (no GPU work but the
kernels' gaps) and from the data file's sourced limit."""

import pytest

from planner.base.schema import DataFileError
from planner.engine.phases import PREFILL, Phase
from planner.engine.roofline import eager_steps, pass_seconds
from planner.inputs.catalog import load_catalog
from planner.inputs.facts import load_facts
from planner.inputs.runtimes import Efficiency, with_engine_generation
from planner.inputs.serving_runtimes import load_schedulers
from planner.validation.measured import eager_decode_from
from tests.fixtures.serving_engine import ENGINE_YAML

GPU = load_catalog().get("h100-sxm")
# 1.5 us of GPU gap a kernel, no per-kernel dispatch in a graph, 20 us a kernel eagerly; graphs up to 8,192 tokens
EFF = Efficiency(0.8, 0.9, 1.5, 1.0, 1.0, "test", prefill_host_us_per_kernel=20.0, eager_decode_from=8192)


def test_decode_steps_past_the_graphs_context_are_dispatched_eagerly():
    """Decode steps at positions 8,000 .. 8,399: those at 8,192 and later, 8,400 - 8,192 = 208, run eagerly. Every
    step of a prefill phase does; a decode wholly below the limit, none; one wholly above, all 400."""
    assert eager_steps(Phase("decode", (), 300.0, 400, 8000, 1.0), EFF) == 208
    assert eager_steps(Phase(PREFILL, (), 300.0, 1, 0, 1.0), EFF) == 1
    assert eager_steps(Phase("decode", (), 300.0, 400, 100, 1.0), EFF) == 0
    assert eager_steps(Phase("decode", (), 300.0, 400, 14336, 1.0), EFF) == 400


def test_a_long_context_decode_of_short_kernels_is_host_bound():
    """300 kernels a step, 10 steps past the limit: the GPU is busy 10 x 300 x 1.5 us = 4.5 ms, the host dispatches
    10 x 300 x 20 us = 60 ms beside it, so the pass takes 60 ms; the same steps below the limit replay the graph:
    4.5 ms. An engine without the limit (eager_decode_from 0) graphs them all."""
    past = Phase("decode", (), 300.0, 10, 9000, 1.0)
    assert pass_seconds(past, GPU, EFF) == pytest.approx(10 * 300 * 20e-6)
    assert pass_seconds(Phase("decode", (), 300.0, 10, 100, 1.0), GPU, EFF) == pytest.approx(10 * 300 * 1.5e-6)
    unlimited = Efficiency(0.8, 0.9, 1.5, 1.0, 1.0, "test", prefill_host_us_per_kernel=20.0)
    assert pass_seconds(past, GPU, unlimited) == pytest.approx(10 * 300 * 1.5e-6)


def test_the_data_file_limits_v0_graphs_to_8192_tokens_and_v1_not():
    """vLLM docs: max_seq_len_to_capture defaults to 8192 (V0, 0.4-0.10); V1 runs attention outside its piecewise
    graphs at any context: no limit."""
    vllm = load_schedulers().get("vllm")
    assert (vllm.eager_decode_from("v0-sync"), vllm.eager_decode_from("v0"), vllm.eager_decode_from("v1")) == \
        (8192, 8192, 0)
    assert eager_decode_from("vllm", "v0") == 8192
    with pytest.raises(ValueError, match="v9"):
        vllm.eager_decode_from("v9")


def test_with_engine_generation_hands_the_limit_to_the_named_runtime_alone():
    runtimes = with_engine_generation(load_facts().runtimes, "vllm", 78.0, 1712.0, 20.0, 8192)
    assert runtimes.get("vllm").efficiency("hbm").eager_decode_from == 8192
    assert runtimes.get("tensorrt-llm").efficiency("hbm").eager_decode_from == 0


def test_a_graph_limit_for_an_unknown_generation_or_out_of_range_is_refused(tmp_path):
    """graph_max_context names generations of `engines` with a whole number of tokens, 1..10,000,000, and carries its
    source; anything else is refused naming the field."""
    engines = "    engines: {old: {host_us_per_seq: 90}}\n    engines_source: a profile\n"
    ok = tmp_path / "ok.yaml"
    ok.write_text(ENGINE_YAML + engines + "    graph_max_context: {old: 4096}\n    graph_max_context_source: docs\n")
    assert load_schedulers(ok).get("eng").eager_decode_from("old") == 4096
    for i, (spec, field) in enumerate((("{new: 4096}", "graph_max_context"), ("{old: 0}", "graph_max_context"),
                                       ("{old: 4096.5}", "graph_max_context"), ("{old: true}", "graph_max_context"),
                                       ("{old: 4096}", "graph_max_context_source"))):
        bad = tmp_path / f"bad{i}.yaml"
        source = "" if field.endswith("source") else "    graph_max_context_source: docs\n"
        bad.write_text(ENGINE_YAML + engines + f"    graph_max_context: {spec}\n" + source)
        with pytest.raises(DataFileError, match=field):
            load_schedulers(bad)
