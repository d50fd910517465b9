"""Explain's 'where the training time goes': each part's share of the job's time and the share of the dense peak
its FLOPs reach."""

import re

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Generate, Train
from planner.inputs.models import load_models
from planner.views.explain_text import mfu_rows, time_parts_text

FACTS = load_facts()
LLAMA = load_models().get("llama-2-7b")


def test_attention_passes_run_at_flashattention_2s_published_shares_of_peak():
    """4,096-token Llama-2-7B on A100s under SDPA's flash kernel: the attention passes are compute-bound, so their
    FLOPs reach FlashAttention-2's fractions of the 312 TFLOPS peak: 0.60 forward, 0.52 backward."""
    plan = Plan(LLAMA, Train(512, 4096, 1, "adamw", False, 1, "fsdp"), "bf16", batch=2, gpus=8)
    text = time_parts_text(estimate_gpu(plan, FACTS.catalog.get("a100-sxm-80gb"), FACTS))
    assert re.search(r"attention forward \d+% \(0\.60 of peak\)", text)
    assert re.search(r"attention backward \d+% \(0\.52 of peak\)", text)
    shares = [int(x) for x in re.findall(r"(\d+)%", text)]
    assert 95 <= sum(shares) <= 100 and shares == sorted(shares, reverse=True)  # parts under 0.5 % left out
    assert re.search(r"optimizer update \d+%(, |$)", text)  # memory-bound: no share of peak shown


def test_only_training_explains_its_time_by_part_beside_mfu():
    gen = estimate_gpu(Plan(LLAMA, Generate(10, 1, 10), "bf16"), FACTS.catalog.get("a100-sxm-80gb"), FACTS)
    assert mfu_rows(gen) == []
