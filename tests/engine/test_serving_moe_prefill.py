"""A mixture of experts' prompt in the serving step model: the attention per query-key pair is the attention's own
curvature, so the rest of a long prompt keeps the linear layers' FLOPs (physics lower bounds, by hand)."""

import pytest

from planner.engine.plan import Plan
from planner.engine.serving_sim import step_times
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate
from planner.inputs.models import load_models
from planner.inputs.serving_runtimes import load_schedulers

FACTS = load_facts()
H100_BF16_DENSE_FLOPS = 989e12  # H100 SXM datasheet, dense (1,979 with sparsity)
# embedding table / LM head of gpt-oss: vocab 201,088 x hidden 2,880 (openai/gpt-oss config.json)
GPT_OSS_VOCAB_WEIGHTS = 201_088 * 2_880


@pytest.mark.parametrize("model_id, active", [("gpt-oss-20b", 3.61e9), ("gpt-oss-120b", 5.13e9)])
def test_a_long_moe_prompt_keeps_its_linear_layers_compute(model_id, active):
    """8,192 prompt tokens: every token multiplies by its active weights but the LM head (one logits row), 2 FLOPs
    each, at no more than the H100's dense bf16 peak. gpt-oss-20b: (3.61 - 0.58) B x 2 x 8,192 / 989 T = 50 ms;
    120b: (5.13 - 0.58) B -> 75 ms (active counts: OpenAI's model card, 2025-08-05, which leave out the embedding
    table). The whole prefill's second difference, read as attention, had left 120b's at 0 ms."""
    gpu = FACTS.catalog.get("h100-sxm")
    sched = load_schedulers().get("vllm").on(gpu.id, gpu.vram_gib)
    plan = Plan(load_models().get(model_id), Generate(1, 512, 256), "mxfp4", runtime="vllm")
    st = step_times(plan, gpu, FACTS, sched, 1, 640)
    floor = (active - GPT_OSS_VOCAB_WEIGHTS) * 2 * 8192 / H100_BF16_DENSE_FLOPS
    assert st.dense(8192, 1) >= floor
    # and the attention of that prompt (8,192 x 8,193 / 2 pairs) is a minor share of it: half the layers slide
    # over 128 tokens, the rest score 64 heads x 64 dims per pair
    assert st.pair_s * 8192 * 8193 / 2 < st.dense(8192, 1)
