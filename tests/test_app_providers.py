"""The page's 'Providers you rent from': the ranking priced by those providers, the choice in the link, and a link
naming an unknown provider (AppTest, the page as a user drives it)."""

import re

from streamlit.testing.v1 import AppTest

from tests.fixtures.app_page import link, open_page


def _providers(at: AppTest):
    return next(m for m in at.sidebar.multiselect if m.key == "prov_ids")


def _texts(at: AppTest) -> str:
    shown = [*(c.value for c in at.caption), *(w.value for w in at.warning), *(m.value for m in at.markdown)]
    return re.sub(r"\\(.)", r"\1", "\n".join(str(s) for s in shown))


def test_picking_providers_prices_the_ranking_and_travels_in_the_link():
    at = open_page()
    assert not at.exception
    box = _providers(at)
    assert box.value == ["runpod"] and {"lambda", "nebius", "vast.ai"} <= set(box.options)
    box.set_value(["nebius"]).run()
    assert not at.exception
    assert "prices from nebius (the cheapest per GPU and tier; RunPod's left out)" in _texts(at)
    url = link(at)
    assert url.get("prov") == "nebius"


def test_a_link_with_providers_opens_with_them_and_an_unknown_one_is_named():
    at = open_page({"prov": "lambda,runpod"})
    assert not at.exception and _providers(at).value == ["lambda", "runpod"]
    assert "the cheapest of lambda, runpod per GPU and tier" in _texts(at)
    at = open_page({"prov": "lambda,nosuchcloud"})
    assert not at.exception and _providers(at).value == ["runpod"]
    assert "unknown provider 'nosuchcloud'" in _texts(at)
