"""A GPU the catalog lacks, as a user meets it: opened from a link it is the named GPU's verdict; described in the
sidebar's form it is ranked, and a bad value is refused in words while the page keeps its plan."""

from urllib.parse import urlencode

from tests.e2e.checks import CLIPPED

LAPTOP = {"width": 1280, "height": 800}
WAIT_MS = 30_000
MINE = "name=My ASIC;mem=64;memtype=hbm;bw=1600;fp32=50;bf16=400;cc=unknown;usd=0.2"


def test_a_described_gpu_from_a_link_is_explained_and_the_form_refuses_a_bad_value(server, browser, wait_for_app,
                                                                                     shots):
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?" + urlencode({"mygpu": MINE, "gpu": "own-my-asic"}))
    wait_for_app(page)
    verdict = page.get_by_text("My ASIC (yours)").first
    verdict.wait_for(timeout=WAIT_MS)
    assert verdict.is_visible() and page.get_by_text("runs it").first.is_visible()

    sidebar = page.locator("section[data-testid='stSidebar']")
    sidebar.get_by_text("A GPU the catalog lacks").click()
    name = sidebar.get_by_role("textbox", name="Name")
    name.wait_for(timeout=WAIT_MS)
    name.scroll_into_view_if_needed()
    assert page.evaluate(CLIPPED, "section[data-testid='stSidebar']") == []
    kind = sidebar.locator(".st-key-own_memtype input").first  # a select shows its choice as an input's value
    assert kind.input_value() == "GDDR"  # and CLIPPED above checks that no input's value is cut
    assert sidebar.get_by_text(MINE[:20]).first.is_visible()  # what is ranked now, as the link carries it
    name.fill("Other")
    sidebar.get_by_role("spinbutton", name="fp32 TFLOPS").fill("50")
    sidebar.get_by_role("textbox", name="Compute capability").fill("99.9")
    sidebar.get_by_role("button", name="Rank it with the rest").click()
    refused = sidebar.get_by_text("your GPU's cc").first
    refused.wait_for(timeout=WAIT_MS)
    assert "Nothing was changed" in refused.inner_text()
    assert page.get_by_text("My ASIC (yours)").first.is_visible()  # the plan kept its GPU
    assert "mygpu=" in page.url and "Other" not in page.url
    page.screenshot(path=str(shots / "40-own-gpu-refused-1280x800.png"))
    page.close()
