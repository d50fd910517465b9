"""vLLM V0's scheduler without chunked prefill runs prompt-only steps, prefills first (data/serving.yaml vllm
mixes_only_chunked; Scheduler.with_chunked_prefill): hand-derived on a flat step model, and the data's flag."""

import pytest

from planner.engine.serving_sim import StepTimes, simulate
from planner.inputs.serving_runtimes import Scheduler, load_schedulers

STEP_S = 0.01


def _flat(tokens: int = 64) -> StepTimes:
    """Every step costs STEP_S whatever it carries."""
    flat = (STEP_S,) * (tokens + 1)
    return StepTimes(flat, flat, (0.0,) * (tokens + 1), 0.0, 10**6, 1e-6, 1.0)


V0_LIKE = Scheduler("t", "test", "vllm", 256, 64, True, True, 0.9, mixes_only_chunked=True)


def test_without_chunked_prefill_the_decodes_wait_through_a_prompt_step():
    """A (10-token prompt, 10 tokens) arrives at 0, B (10, 2) at 25 ms. A prefills in [0, 10 ms) and decodes one
    token a step; B is admitted at the step boundary of 30 ms. Mixed (chunked prefill on): B's prompt rides A's
    decode step [30, 40): B's TTFT 15 ms, A's 10 tokens at 10, 20, ..., 100 ms. Prefill-first (off): [30, 40) is
    B's prompt alone, A skips it: B's TTFT still 15 ms, A's tokens 4..10 one step later, A's end-to-end 110 ms."""
    arrivals, prompts, outputs = [0.0, 0.025], [10, 10], [10, 2]
    mixed = simulate(_flat(), V0_LIKE, arrivals, prompts, outputs)
    first = simulate(_flat(), V0_LIKE.with_chunked_prefill(False), arrivals, prompts, outputs)
    assert mixed.ttft_s.tolist() == pytest.approx([0.01, 0.015])
    assert first.ttft_s.tolist() == pytest.approx([0.01, 0.015])
    assert mixed.e2e_s[0] == pytest.approx(0.10)
    assert first.e2e_s[0] == pytest.approx(0.11)
    # A's 9 gaps after its first token: 9 steps mixed, 10 prefill-first (one of them B's prompt step)
    assert first.tpot_s[0] == pytest.approx(0.10 / 9)


def test_the_flag_only_stops_mixing_where_the_engine_says_so():
    """vLLM's profile mixes only chunked prompts (its V0 _schedule_default, sourced in data/serving.yaml); TensorRT-LLM
    (in-flight batching mixes whole context requests with generation) keeps mixing with chunking off."""
    vllm = load_schedulers().get("vllm").on("h100-sxm", 80)
    assert vllm.mixed_batches and vllm.mixes_only_chunked
    off = vllm.with_chunked_prefill(False)
    assert (off.chunked_prefill, off.mixed_batches) == (False, False)
    assert vllm.with_chunked_prefill(True).mixed_batches
    trt = load_schedulers().get("tensorrt-llm").on("h100-sxm", 80)
    assert trt.with_chunked_prefill(False).mixed_batches == trt.mixed_batches
