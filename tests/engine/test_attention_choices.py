"""The attention backends a runtime runs, as the page offers them (planner.engine.plan.attention_choices): derived by
hand from data/precisions.yaml's records (llama.cpp-fa is llama.cpp's own; selectors and kernels that write the
scores are left to the GPU checks)."""

from planner.engine.plan import attention_choices, attention_refusal
from planner.inputs.precisions import load_rules

RULES = load_rules()


def test_llama_cpp_is_offered_its_own_kernel_and_unfused_attention_not_another_stacks_fused_kernel():
    got = set(attention_choices("llama.cpp", RULES))
    assert {"llama.cpp-fa", "manual", "sdpa-math"} <= got
    assert not got & {"flash-attn-2", "flash-attn-3", "sdpa-flash", "xformers-cutlass", "triton"}


def test_a_runtime_without_its_own_kernel_is_offered_every_kernel_but_llama_cpps():
    got = attention_choices("vllm", RULES)
    assert "llama.cpp-fa" not in got and {"flash-attn-2", "flash-attn-3", "manual", "sdpa"} <= set(got)


def test_a_refused_choice_from_a_link_is_kept_last_so_its_refusal_can_be_shown():
    got = attention_choices("llama.cpp", RULES, current="flash-attn-2")
    assert got[-1] == "flash-attn-2" and got.count("flash-attn-2") == 1
    assert attention_refusal("llama.cpp", "flash-attn-2", RULES).startswith("attention:")
    assert attention_choices("vllm", RULES, current="flash-attn-2") == attention_choices("vllm", RULES)
