"""The page's cluster inputs (GPUs per node, network per node): shown once a job spans several GPUs, carried in the
plan, its sentence and the link; a hand-edited bad value is named and the page keeps working (AppTest)."""

import re

from streamlit.testing.v1 import AppTest

from tests.fixtures.app_page import link, open_page, ranking

TRAIN = {"model": "gpt2-124m", "job": "train", "samples": "1000", "batch": "8"}


def _texts(at: AppTest) -> str:
    shown = [*(c.value for c in at.caption), *(w.value for w in at.warning), *(m.value for m in at.markdown)]
    return re.sub(r"\\(.)", r"\1", "\n".join(str(s) for s in shown)).replace("\u2060", "")


def _keys(at: AppTest) -> set[str]:
    return {w.key for w in at.sidebar.number_input}


def test_cluster_inputs_appear_for_several_gpus_and_travel_in_the_link():
    at = open_page({**TRAIN, "gpus": "1"})
    assert not at.exception
    assert not {"node", "fab"} & _keys(at)  # one GPU crosses no node: nothing to ask
    at.sidebar.number_input(key="gpus").set_value(16).run()
    assert {"node", "fab"} <= _keys(at)
    catalog_nodes = ranking(at)
    at.sidebar.number_input(key="node").set_value(4).run()
    assert not ranking(at).equals(catalog_nodes)  # the DDP all-reduce crosses the network more often: slower
    at.sidebar.number_input(key="fab").set_value(800.0).run()
    assert not at.exception
    url = link(at)
    assert (url["node"], url["fab"]) == ("4", "800")
    assert "16 GPUs per job in nodes of 4 GPUs with 800 Gb/s between nodes per node" in _texts(at)
    again = open_page(url)  # the link opens the same plan, its inputs in the widgets
    assert not again.exception
    assert (again.sidebar.number_input(key="node").value, again.sidebar.number_input(key="fab").value) == (4, 800.0)


def test_a_bad_cluster_value_in_a_link_is_named_and_the_page_works():
    at = open_page({**TRAIN, "gpus": "16", "node": "100", "fab": "fast"})
    assert not at.exception
    texts = _texts(at) + "\n".join(str(e.value) for e in at.error)
    assert "Link parameter 'node': must be between 1 and 72, got '100'; using the catalog's" in texts
    assert "Link parameter 'fab': expected a number, got 'fast'" in texts
    assert at.sidebar.number_input(key="node").value == 0
    assert "node" not in link(at) and "fab" not in link(at)
