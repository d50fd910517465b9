"""TensorRT-LLM's capacity scheduler (GUARANTEED_NO_EVICT, its default) admits a request only when the KV cache holds
its prompt and its whole output beside what every running request may still write (reserve_output_share 1.0), so it
never preempts; and a run's own scheduler limits (a row's max_num_seqs, token_budget, chunked_prefill) replace the
server's defaults. Hand-built flat steps, whose answers are counted by hand."""

from dataclasses import replace

import pytest

from planner.engine.serving_sim import simulate
from planner.inputs.serving_runtimes import Scheduler, load_schedulers
from planner.validation.serving_first import ServingRow, with_limits
from tests.fixtures.serving_engine import flat_steps

# mixed steps, prompts whole, a 4,096-token budget, 256 requests: trtllm-serve's shape
TRT = Scheduler("t", "test", "tensorrt-llm", 256, 4096, True, False, 0.9)


def test_no_evict_runs_what_the_cache_holds_to_the_end_in_waves():
    """A cache of 1,010 tokens and 8 requests of 100 prompt + 150 output tokens (250 each, 4 of them 1,000):
    reserving every running request's remaining output, 4 start (the 5th would need 1,250), run 1 prefill step and
    149 decode steps (1.5 s at 10 ms a step) and the next 4 then do the same: done at 1.5 s and 3.0 s, nothing
    preempted. Admitting on the prompt alone (share 0, vLLM's) starts all 8 (800 prompt tokens fit) and the
    decodes outgrow the cache: preemptions."""
    st = flat_steps(0.01, 1010)
    arrivals, prompts, outputs = [0.0] * 8, [100] * 8, [150] * 8
    guarded = simulate(st, replace(TRT, reserve_output_share=1.0), arrivals, prompts, outputs)
    assert guarded.preemptions == 0 and guarded.settled
    assert guarded.done_times.tolist() == pytest.approx([1.5] * 4 + [3.0] * 4)
    greedy = simulate(st, TRT, arrivals, prompts, outputs)
    assert greedy.preemptions > 0


def test_tensorrt_llm_reserves_the_whole_output_and_vllm_none():
    """data/serving.yaml: TensorRT-LLM's default GUARANTEED_NO_EVICT is share 1.0 (its docs, 'Useful Runtime
    Options'); vLLM admits on the prompt and preempts (0)."""
    s = load_schedulers()
    assert s.get("tensorrt-llm").on("h100-sxm", 80).reserve_output_share == 1.0
    assert s.get("vllm").on("h100-sxm", 80).reserve_output_share == 0.0


def _row(**limits) -> ServingRow:
    return ServingRow("r", "src", "llama-3-70b", "h100-sxm", "tensorrt-llm", 8, 16_384, 128,
                      "saturation_output_tokens_per_s", **limits)


def test_a_runs_own_limits_replace_the_servers_defaults():
    """trtllm-bench's engine (2,048 requests, 8,192 tokens a step, chunked contexts) over trtllm-serve's shape;
    a limit the row leaves out keeps the server's."""
    s = with_limits(TRT, _row(max_num_seqs=2048, token_budget=8192, chunked_prefill=True))
    assert (s.max_num_seqs, s.token_budget, s.chunked_prefill) == (2048, 8192, True)
    assert with_limits(TRT, _row(max_num_seqs=64)) == replace(TRT, max_num_seqs=64)


def test_a_prompt_over_the_budget_runs_only_when_contexts_are_chunked():
    """A 10,000-token prompt at a 4,096-token budget: whole, it never fits a step (nothing served); chunked, it
    takes 3 steps (4,096 + 4,096 + 1,808) to its first token, 30 ms."""
    st = flat_steps(0.01, 10**6)
    whole = simulate(st, TRT, [0.0], [10_000], [2])
    assert whole.output_tokens == 0 and not whole.settled
    chunked = simulate(st, with_limits(TRT, _row(chunked_prefill=True)), [0.0], [10_000], [2])
    assert chunked.ttft_s[0] == pytest.approx(0.03)

