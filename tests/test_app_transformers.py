"""The page's transformers release: a text input that reaches the ranking (Mistral's FlashAttention-2 class syncs
once a layer in 4.36-4.41, data/runtimes.yaml pytorch-eager rotary_sync) and the link; a link's malformed release is
named and the page keeps working (AppTest)."""

from tests.fixtures.app_page import link, open_page, ranking

# Mistral-7B decoding at batch 1 in eager PyTorch with FlashAttention-2: its attention class is one that syncs
GEN = {"model": "mistral-7b", "job": "generate", "seqs": "100", "prompt": "16", "gen": "64", "batch": "1",
       "rt": "pytorch-eager", "attn": "flash-attn-2"}


def test_a_syncing_release_slows_the_plan_and_travels_in_the_link():
    at = open_page(GEN)
    assert not at.exception
    assert at.sidebar.text_input(key="tf").value == ""
    current = ranking(at)
    at.sidebar.text_input(key="tf").set_value("4.40.2").run()
    assert not at.exception
    assert not ranking(at).equals(current)  # one host round trip a layer, the q/k/v projections waited for
    url = link(at)
    assert url["tf"] == "4.40.2"


def test_a_malformed_release_in_a_link_is_named_and_the_page_works():
    at = open_page({**GEN, "tf": "4.x"})
    assert not at.exception
    shown = "\n".join(str(x.value) for x in [*at.caption, *at.warning, *at.markdown, *at.error]).replace("\\", "")
    assert "Link parameter 'tf'" in shown and "4.40.2" in shown  # names the field and shows a valid form
    assert at.sidebar.text_input(key="tf").value == ""
