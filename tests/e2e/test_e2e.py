"""The app in a real headless Chromium: change inputs, copy the link, open it in a fresh browser, same plan."""

import csv
import io
from urllib.parse import parse_qs, urlsplit

from planner.inputs.catalog import load_catalog

DESKTOP = {"width": 1440, "height": 900}
LAPTOP = {"width": 1280, "height": 800}


def _query(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def _plan(page) -> str:
    return page.locator("[data-testid='stMarkdownContainer'] p", has_text="Plan:").first.inner_text()


def _callouts(page) -> list[str]:
    return [page.locator(f".st-key-callout_{k}").inner_text() for k in ("fastest", "cheapest", "best_value")]


def _select(page, key: str, option: str, wait) -> None:
    box = page.locator(f".st-key-{key} input[role='combobox']")
    box.click()
    box.fill(option)  # type to filter, as a user would, then pick the option
    page.get_by_role("option", name=option, exact=True).click()
    wait(page)


def _number(page, key: str, value: str, wait) -> None:
    box = page.locator(f".st-key-{key} input")
    box.fill(value)
    box.press("Enter")
    wait(page)


def test_link_copied_from_one_browser_opens_the_same_plan_in_another(server, browser, wait_for_app, shots):
    ctx = browser.new_context(viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"])
    page = ctx.new_page()
    page.goto(server)
    wait_for_app(page)
    page.screenshot(path=str(shots / "01-first-visit-1440.png"))
    _select(page, "prec", "fp16", wait_for_app)
    _select(page, "tier", "community", wait_for_app)
    _number(page, "seqs", "250000", wait_for_app)
    page.wait_for_function("() => location.search.includes('seqs=250000') && location.search.includes('prec=fp16')")
    assert _query(page.url)["tier"] == "community"
    link = page.locator(".st-key-share a").first.get_attribute("href")
    assert _query(link) == _query(page.url)  # the visible link is the page's own URL
    copied = link  # what 'Copy link' on it puts in the clipboard
    plan, callouts = _plan(page), _callouts(page)
    assert "250,000 sequences" in plan and "fp16" in plan
    page.screenshot(path=str(shots / "02-changed-inputs-1440.png"))

    fresh = browser.new_context(viewport=LAPTOP)  # another browser profile: no shared state
    other = fresh.new_page()
    other.goto(copied)
    wait_for_app(other)
    assert _plan(other) == plan and _callouts(other) == callouts
    assert _query(other.url) == _query(copied)
    other.screenshot(path=str(shots / "03-opened-link-1280x800.png"))
    fresh.close()
    ctx.close()


def test_preset_and_tabs_at_laptop_size(server, browser, wait_for_app, shots):
    ctx = browser.new_context(viewport=LAPTOP)
    page = ctx.new_page()
    page.goto(server)
    wait_for_app(page)
    page.get_by_role("button", name="Example questions").click()
    page.get_by_role("button", name="A 7-8B LLM in fp16 on an RTX 5090", exact=False).click()
    wait_for_app(page)
    page.keyboard.press("Escape")
    q = _query(page.url)
    assert q["model"] == "llm-7b-seed002" and q["gpu"] == "rtx-5090"
    page.get_by_role("heading", name="NVIDIA GeForce RTX 5090 32GB").scroll_into_view_if_needed()
    assert page.get_by_text("the oldest that runs it is 2.7.0+cu128", exact=False).first.is_visible()
    page.screenshot(path=str(shots / "04-preset-5090-explain-1280x800.png"))
    for tab in ("Cost vs time", "Roofline", "Batch size", "Memory"):
        page.get_by_role("tab", name=tab).click()
        wait_for_app(page)
        chart = page.get_by_role("tabpanel", name=tab).locator("[data-testid='stVegaLiteChart']").first
        chart.scroll_into_view_if_needed()
        assert chart.is_visible()
        page.screenshot(path=str(shots / f"05-tab-{tab.replace(' ', '-').lower()}-1280x800.png"))
    assert not page.locator("[data-testid='stException']").count()
    ctx.close()


def test_bad_link_warns_and_still_ranks(server, browser, wait_for_app, shots):
    page = browser.new_page(viewport=DESKTOP)
    page.goto(server + "?model=llama-2-7b&prec=bf17&gpus=zero&sort=fast")
    wait_for_app(page)
    warning = page.locator("[data-testid='stAlert']").filter(has_text="could not be used").first
    text = warning.inner_text()
    assert "'prec'" in text and "'gpus'" in text and "'sort'" in text
    assert _query(page.url)["model"] == "llama-2-7b" and "sort" not in _query(page.url)
    assert page.locator("[data-testid='stDataFrame']").first.is_visible()
    assert not page.locator("[data-testid='stException']").count()
    page.screenshot(path=str(shots / "06-bad-link-1440.png"))
    page.close()


def test_csv_download_carries_the_link(server, browser, wait_for_app):
    page = browser.new_page(viewport=DESKTOP, accept_downloads=True)
    page.goto(server + "?model=gpt2-124m&job=infer&samples=1000&size=512&prec=fp16&tier=spot")
    wait_for_app(page)
    with page.expect_download() as dl:
        page.locator(".st-key-dl_csv button").click()
    text = open(dl.value.path(), encoding="utf-8").read()
    rows = list(csv.DictReader(io.StringIO(text)))  # a plain CSV, as a spreadsheet reads it
    link = rows[0]["plan_link"]
    assert _query(link)["tier"] == "spot" and _query(link)["size"] == "512"
    assert len(rows) > 30 and "price_date" in rows[0]
    page.close()


def test_clicking_a_row_explains_that_gpu(server, browser, wait_for_app):
    page = browser.new_page(viewport=DESKTOP)
    page.goto(server + "?model=cfdna-gen&job=generate&seqs=100000&prompt=1&gen=165&prec=fp16&tier=community&priced=1")
    wait_for_app(page)
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    row_px = 35  # Streamlit's default row height; row 0 is the header
    page.mouse.click(box["x"] + 17, box["y"] + row_px * 2 + row_px / 2)  # the selection box of the 2nd GPU
    page.wait_for_function("() => new URLSearchParams(location.search).has('gpu')")
    wait_for_app(page)
    name = load_catalog().get(_query(page.url)["gpu"]).name
    page.get_by_role("heading", name=name).wait_for()  # the explain tab now shows the clicked GPU
    page.close()


def _above_the_fold(page, viewport) -> None:
    """The verdict (call-outs, or your own GPUs' card) and the ranking's header and first row are on screen
    without scrolling."""
    assert page.evaluate("() => window.scrollY") == 0
    grid = page.locator("[data-testid='stDataFrame']").first.bounding_box()
    row_px = 35  # Streamlit's row height; the header is one row
    assert grid["y"] + 2 * row_px <= viewport["height"], grid
    for card in page.locator("[class*='st-key-callout_'], [class*='st-key-own_card_']").all():
        box = card.bounding_box()
        assert box["y"] + box["height"] <= viewport["height"], box


def test_the_answer_is_above_the_fold_at_laptop_and_desktop_sizes(server, browser, wait_for_app, shots):
    for viewport in (LAPTOP, DESKTOP):
        size = f"{viewport['width']}x{viewport['height']}"
        page = browser.new_page(viewport=viewport)
        page.goto(server)
        wait_for_app(page)
        _above_the_fold(page, viewport)
        page.screenshot(path=str(shots / f"10-landing-{size}.png"))
        page.get_by_role("button", name="Example questions").click()
        page.get_by_role("button", name="A 7-8B LLM in fp16 on an RTX 5090", exact=False).click()
        wait_for_app(page)
        page.keyboard.press("Escape")  # close the popover, as a click elsewhere would
        page.evaluate("() => window.scrollTo(0, 0)")
        _above_the_fold(page, viewport)
        page.screenshot(path=str(shots / f"11-preset-5090-{size}.png"))
        assert "None" not in page.locator("[data-testid='stMain']").inner_text()
        page.close()


def test_your_own_gpus_and_the_open_tab_come_back_from_a_link(server, browser, wait_for_app, shots):
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?model=llm-7b-seed002&job=generate&seqs=1000&prec=fp16&tier=community&own=rtx-a5000:3"
                       "&tab=memory")
    wait_for_app(page)
    _above_the_fold(page, LAPTOP)
    card = page.locator(".st-key-own_card_rtx-a5000").inner_text()
    assert "Your 3 × RTX A5000" in card and "break-even" in card
    assert page.get_by_role("tab", name="Memory").get_attribute("aria-selected") == "true"
    page.screenshot(path=str(shots / "12-own-3x-a5000-1280x800.png"))
    page.get_by_role("tab", name="Roofline").click()
    wait_for_app(page)
    page.wait_for_function("() => location.search.includes('tab=roofline')")
    page.close()


def test_the_served_page_is_compressed_framed_by_nobody_and_breaks_no_policy(server, browser, wait_for_app):
    """serve.py: gzip for the static bundles Streamlit sends uncompressed, and security headers; the page still works
    under its own Content-Security-Policy (a violation would be logged to the console)."""
    import re
    import urllib.request

    html = urllib.request.urlopen(urllib.request.Request(server, headers={"Accept-Encoding": "gzip"}), timeout=10)
    headers = {k.lower(): v for k, v in html.headers.items()}
    assert "frame-ancestors 'none'" in headers["content-security-policy"] and headers["x-frame-options"] == "DENY"
    bundle = re.search(r'static/js/index\.[^"]+\.js', gzip_or_plain(html.read(), headers)).group(0)
    js = urllib.request.urlopen(urllib.request.Request(server + bundle, headers={"Accept-Encoding": "gzip"}),
                                timeout=10)
    assert js.headers["Content-Encoding"] == "gzip"
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    problems = []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto(server)
    wait_for_app(page)
    assert page.get_by_test_id("stDataFrame").first.is_visible()
    assert problems == []
    page.close()


def gzip_or_plain(body: bytes, headers: dict) -> str:
    import gzip
    return (gzip.decompress(body) if headers.get("content-encoding") == "gzip" else body).decode()


def test_a_web_address_in_a_model_name_shows_as_plain_text_not_a_link(server, browser, wait_for_app):
    """Streamlit's Markdown (remark-gfm) links a bare address in text even when every markup character is escaped."""
    from urllib.parse import urlencode

    name = "sign in at https://evil.example/login or www.evil.example or evil@evil.example"
    page = browser.new_page(viewport=DESKTOP)
    page.goto(server + "?" + urlencode({"model": "custom", "m_name": name}))
    wait_for_app(page)
    plan = page.locator("[data-testid='stMarkdownContainer'] p", has_text="Plan:").first
    assert name in plan.inner_text().replace("\u2060", "")  # the name reads as typed
    assert plan.locator("a").count() == 0
    assert not page.locator("[data-testid='stException']").count()
    page.close()


def test_page_script_can_open_a_websocket_only_to_its_own_server(server, browser, wait_for_app):
    """connect-src 'self': the page's own websocket works (the app runs), one to any other host is refused by the
    browser, whatever a link or an upload could make the page run."""
    page = browser.new_page(viewport=DESKTOP)
    page.goto(server)
    wait_for_app(page)
    outcome = page.evaluate("""() => new Promise(done => {
        document.addEventListener('securitypolicyviolation', e => done('refused: ' + e.effectiveDirective));
        try { new WebSocket('wss://evil.example/socket'); } catch (e) { done('refused: ' + e.name); }
        setTimeout(() => done('allowed'), 3000);
    })""")
    assert outcome.startswith("refused"), outcome
    page.close()


def _settled_input(page, key: str, want: str, timeout_ms: int = 20_000) -> str:
    """The value the page's number input `key` shows once it has settled on `want` (a link's values can land one
    script run after the page first reports it idle on a busy machine), or what it shows after `timeout_ms`."""
    selector = f".st-key-{key} input"
    try:
        page.wait_for_function("([s, v]) => document.querySelector(s)?.value === v", arg=[selector, want],
                               timeout=timeout_ms)
    except Exception:  # playwright's TimeoutError: the caller's assertion names the value it found instead
        pass
    return page.locator(selector).input_value()


def test_a_clusters_nodes_and_network_come_from_a_link_and_go_back_into_it(server, browser, wait_for_app):
    """16 GPUs in nodes of 4 with 400 Gb/s a node: the two inputs show those values, the plan sentence says so, and
    a change to the node size typed in the page goes back into the address bar's link."""
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?model=gpt2-124m&job=train&samples=1000&batch=8&gpus=16&node=4&fab=400")
    wait_for_app(page)
    assert _settled_input(page, "node", "4") == "4"
    assert _settled_input(page, "fab", "400") == "400"
    assert "nodes of 4 GPUs with 400 Gb/s between nodes per node" in _plan(page)
    _number(page, "node", "8", wait_for_app)
    page.wait_for_function("() => new URLSearchParams(location.search).get('node') === '8'")
    assert _query(page.url)["fab"] == "400" and "nodes of 8 GPUs" in _plan(page)
    page.close()


def test_the_attention_list_offers_the_kernels_the_runtime_runs(server, browser, wait_for_app):
    """Under llama.cpp the Attention list a user opens holds llama.cpp's own kernel and not FlashAttention-2
    (planner.engine.plan.attention_choices); picking it goes into the link and the plan runs."""
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?model=llama-2-7b&job=generate&rt=llama.cpp&prec=int4")
    wait_for_app(page)
    box = page.locator(".st-key-attn input[role='combobox']")
    for typed, offered in (("llama", True), ("flash-attn-2", False), ("manual", True)):
        box.click()
        box.fill(typed)  # filter the list as a user would
        option = page.get_by_role("option", name=typed if typed != "llama" else "llama.cpp-fa", exact=True)
        if offered:
            option.wait_for()
        else:
            page.get_by_role("listbox").wait_for()
            assert option.count() == 0, typed
        page.keyboard.press("Escape")
    _select(page, "attn", "llama.cpp-fa", wait_for_app)
    page.wait_for_function("() => new URLSearchParams(location.search).get('attn') === 'llama.cpp-fa'")
    assert "Plan:" in _plan(page) and not page.locator("[data-testid='stException']").count()
    page.close()


def test_the_host_cpu_speed_comes_from_a_link_and_moves_a_host_bound_answer(server, browser, wait_for_app):
    """GPT-2 generating at batch 1 is bound by its host's dispatch: a link's host=0.25 (a CPU four times slower
    single-threaded than the reference hosts) shows in the sidebar's input, and typing 1 there drops it from the
    link and changes the fastest GPU's call-out (its time is host time, divided by the speed); the plan sentence names
    the slower host, and no host once it is the reference."""
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?model=gpt2-124m&job=generate&batch=1&host=0.25")
    wait_for_app(page)
    assert _settled_input(page, "host", "0.25") == "0.25"
    assert "a host CPU 0.25x the reference hosts' single-thread speed" in _plan(page)
    slow = _callouts(page)[0]
    _number(page, "host", "1", wait_for_app)
    page.wait_for_function("() => !new URLSearchParams(location.search).has('host')")
    assert _callouts(page)[0] != slow
    assert "host CPU" not in _plan(page)  # the reference host goes unsaid
    page.close()


def test_the_transformers_release_comes_from_a_link_and_moves_a_syncing_plan(server, browser, wait_for_app):
    """Mistral-7B under eager PyTorch with FlashAttention-2: a link's tf=4.40.2 (a release whose Mistral attention
    class syncs the host once a layer) shows in the sidebar's input and the plan sentence; typing 4.46.0, a release
    without the sync, goes into the link and speeds up the fastest GPU's call-out."""
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?model=mistral-7b&job=generate&batch=1&rt=pytorch-eager&attn=flash-attn-2&tf=4.40.2")
    wait_for_app(page)
    assert _settled_input(page, "tf", "4.40.2") == "4.40.2"
    assert "transformers 4.40.2" in _plan(page)
    synced = _callouts(page)[0]
    _number(page, "tf", "4.46.0", wait_for_app)  # a text input takes its value on Enter like a number input
    page.wait_for_function("() => new URLSearchParams(location.search).get('tf') === '4.46.0'")
    assert _callouts(page)[0] != synced and "transformers 4.46.0" in _plan(page)
    assert not page.locator("[data-testid='stException']").count()
    page.close()
