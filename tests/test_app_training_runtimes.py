"""The page with the training runtimes of data/runtimes.yaml: picked from the link like any runtime, a layout the
stack lacks or a serving engine asked to train shown as a message naming the field, never a traceback."""


from streamlit.testing.v1 import AppTest

from tests.fixtures.app_page import open_page

TRAIN = {"model": "llama-2-7b", "job": "train", "samples": "1000", "gpus": "8"}


def _plan_text(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Plan:**")).replace("\\", "")


def test_a_training_stack_from_the_link_ranks_and_auto_names_its_own_layouts():
    at = open_page({**TRAIN, "rt": "torchtitan", "shard": "auto"})
    assert not at.exception and not at.error
    assert at.selectbox(key="rt").value == "torchtitan"
    assert "TorchTitan" in _plan_text(at) and "the cheapest of DDP and FSDP that fits" in _plan_text(at)
    assert any("gpu_id" in d.value.columns and d.value["Runs?"].any() for d in at.dataframe)


def test_a_serving_engine_asked_to_train_is_a_message_naming_the_runtime():
    at = open_page({**TRAIN, "rt": "vllm"})
    assert not at.exception
    assert any("runtime vllm" in e.value and "not train" in e.value for e in at.error)
