"""Explain's communication row says whose schedule set the share of data-parallel collectives that may overlap."""

from planner.engine.estimate import estimate_gpu
from planner.engine.plan import Plan
from planner.inputs.facts import load_facts
from planner.inputs.jobs import Train
from planner.inputs.models import load_models
from planner.views.explain_text import step_time_rows

FACTS = load_facts()
A100 = FACTS.catalog.get("a100-sxm-80gb")


def _comm_row(runtime: str, sharding: str) -> str:
    plan = Plan(load_models().get("llama-2-7b"), Train(512, 2048, 1, "adamw", False, 1, sharding), "bf16",
                runtime=runtime, batch=1, gpus=8)
    rows = step_time_rows(estimate_gpu(plan, A100, FACTS))
    return next(r["formula"] for r in rows if r["phase"] == "train micro-step"
                and r["op group"] == "GPU-to-GPU communication")


def test_explain_says_whose_schedule_set_the_overlap():
    deepspeed = _comm_row("deepspeed", "zero2")
    assert "not overlapped with compute (0 may overlap: deepspeed's zero2 schedule 0;" in deepspeed
    assert "overlap_comm" in deepspeed
    megatron = _comm_row("megatron-lm", "fsdp")  # 31/32 = 0.96875, shown to 3 figures
    assert "(0.969 may overlap: megatron-lm's fsdp schedule 1, less 1 of 32 layers' collectives left exposed;" \
        in megatron
