"""The page's host CPU speed: a widget that reaches the ranking (a host-bound eager decode) and the link; a link's
bad value is named and the page keeps working (AppTest)."""

from tests.fixtures.app_page import link, open_page, ranking

# GPT-2 decoding at batch 1 in eager PyTorch: its kernels are microseconds long, so the host's dispatch sets the time
GEN = {"model": "gpt2-124m", "job": "generate", "seqs": "100", "prompt": "16", "gen": "64", "batch": "1",
       "rt": "pytorch-eager"}


def test_a_slower_host_slows_a_host_bound_job_and_travels_in_the_link():
    at = open_page(GEN)
    assert not at.exception
    assert at.sidebar.number_input(key="host").value == 1.0
    reference = ranking(at)
    at.sidebar.number_input(key="host").set_value(0.5).run()
    assert not at.exception
    assert not ranking(at).equals(reference)
    url = link(at)
    assert url["host"] == "0.5"


def test_a_bad_host_speed_in_a_link_is_named_and_the_page_works():
    at = open_page({**GEN, "host": "9"})
    assert not at.exception
    shown = "\n".join(str(x.value) for x in [*at.caption, *at.warning, *at.markdown, *at.error])
    assert "Link parameter 'host': must be between 0.25 and 4, got '9'" in shown.replace("\\", "")
    assert at.sidebar.number_input(key="host").value == 1.0
