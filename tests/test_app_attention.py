"""The page's attention list follows the runtime: llama.cpp is not offered another stack's fused kernel, and a link
that asks for one keeps it with a message naming the field (planner.engine.plan.attention_choices)."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")
LLAMA_CPP = {"model": "llama-2-7b", "job": "generate", "rt": "llama.cpp", "prec": "int4"}


def _app(params: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_llama_cpp_is_offered_its_own_kernel_and_a_linked_foreign_one_is_named():
    at = _app(LLAMA_CPP)
    assert not at.exception
    options = at.selectbox(key="attn").options
    assert "llama.cpp-fa" in options and "flash-attn-2" not in options
    at = _app({**LLAMA_CPP, "attn": "flash-attn-2"})
    assert not at.exception
    assert at.selectbox(key="attn").value == "flash-attn-2"
    shown = [e.value.replace("\\", "") for e in at.error]  # the page escapes markdown
    assert any("attention: runtime llama.cpp runs its own fused attention" in e for e in shown)
