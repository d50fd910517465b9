"""Every example question as a user meets it, at laptop and desktop sizes: picked from the popover (which then
closes), its answer in view without scrolling, no text cut in the sidebar, every chart drawn with marks of real
size inside its box and axis labels apart, and no traceback in the server's log."""

import pytest

from planner.views.format import short_name
from planner.views.presets import load_all
from planner.inputs.catalog import load_catalog
from tests.e2e.checks import CLIPPED

PRESETS = load_all()[0]
LAPTOP = {"width": 1280, "height": 800}
DESKTOP = {"width": 1440, "height": 900}
CHART_TABS = ("Cost vs time", "Roofline", "Batch size", "Memory")

# Read from the rendered SVG (Vega draws each mark as an SVG element inside the chart's <svg>)
CHART_PROBLEMS = """() => Array.from(document.querySelectorAll("[data-testid='stVegaLiteChart']"))
  .filter(ch => ch.offsetParent !== null).flatMap((ch, i) => {
    const svg = ch.querySelector('svg');
    if (!svg) return [`chart ${i}: no svg`];
    const box = svg.getBoundingClientRect(), out = [], slack = 3;  // px: a rotated text's box overhangs a little
    const inside = r => r.left >= box.left - slack && r.right <= box.right + slack && r.top >= box.top - slack
                        && r.bottom <= box.bottom + slack;
    const shown = e => e.getAttribute('opacity') !== '0' && getComputedStyle(e).opacity !== '0';
    if (!svg.querySelector('g.mark-rect path, g.mark-symbol path, g.mark-line path')) out.push(`chart ${i}: no marks`);
    for (const group of svg.querySelectorAll('g.mark-rect')) {  // bars: a tiny value is thin, a broken chart flat
      const sizes = Array.from(group.querySelectorAll('path')).map(m => m.getBoundingClientRect())
        .map(r => Math.min(r.width, r.height));
      if (sizes.length && Math.max(...sizes) < 2) out.push(`chart ${i}: every bar under 2 px thick`);
    }
    for (const m of svg.querySelectorAll('g.mark-rect path, g.mark-symbol path, g.mark-line path'))
      if (!inside(m.getBoundingClientRect())) out.push(`chart ${i}: a mark outside its box`);
    for (const axis of svg.querySelectorAll('g.role-axis')) {
      const labels = Array.from(axis.querySelectorAll('g.role-axis-label text'))
        .filter(t => t.textContent && shown(t)).map(t => [t.textContent, t.getBoundingClientRect()]);
      for (let a = 0; a < labels.length; a++) for (let b = a + 1; b < labels.length; b++) {
        const p = labels[a][1], q = labels[b][1];
        if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1 && q.top < p.bottom - 1)
          out.push(`chart ${i}: axis labels '${labels[a][0]}' and '${labels[b][0]}' overlap`);
      }
    }
    for (const g of svg.querySelectorAll('g.role-legend, g.role-title, g.role-axis-title'))
      if (!inside(g.getBoundingClientRect())) out.push(`chart ${i}: ${g.getAttribute('class')} cut off`);
    return out;
  })"""


def _pick(page, preset, wait) -> None:
    """Pick the example from the popover as a user does; the popover then closes by itself."""
    page.get_by_role("button", name="Example questions").click()
    page.get_by_role("button", name=preset.question[:40], exact=False).click()
    wait(page)
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stPopoverBody']\")", timeout=10_000)


def _in_view(page, locator, viewport) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]


def _answer(page, preset):
    """Where the page answers this question: your own card, else the verdict on the GPU the question names, else
    the call-outs."""
    i = preset.inputs
    if i.own:
        return page.locator(f".st-key-own_card_{i.own[0].gpu_id}")
    if i.gpu:
        return page.locator(".st-key-answer")
    return page.locator(".st-key-callout_cheapest")


@pytest.mark.parametrize("preset", PRESETS, ids=[p.id for p in PRESETS])
def test_each_example_question_is_answered_in_view(server, browser, wait_for_app, shots, preset):
    for viewport in (LAPTOP, DESKTOP):
        size = f"{viewport['width']}x{viewport['height']}"
        page = browser.new_page(viewport=viewport)
        page.goto(server)
        wait_for_app(page)
        _pick(page, preset, wait_for_app)
        answer = _answer(page, preset)
        assert _in_view(page, answer, viewport), f"the answer is not in view at {size}"
        named = preset.inputs.gpu or (preset.inputs.own[0].gpu_id if preset.inputs.own else None)
        if named:
            assert short_name(load_catalog().get(named).name).split(" ")[0] in answer.inner_text()
        assert page.evaluate(CLIPPED, "section[data-testid='stSidebar']") == [], f"sidebar text cut at {size}"
        assert page.evaluate(CLIPPED, "[data-testid='stMain']") == [], f"page text cut at {size}"
        assert not page.locator("[data-testid='stException']").count()
        _grid_toolbar_clear_of_filters(page, size)
        page.screenshot(path=str(shots / f"20-{preset.id}-{size}.png"))
        page.close()


def _grid_toolbar_clear_of_filters(page, size: str) -> None:
    """Pointing at the ranking shows the grid's toolbar (search, download, full screen) above its top right corner,
    at a height that varies with what is above the table; it must never cover the Filters button, so the two must not
    share a column of the page."""
    page.locator(".st-key-ranking").hover()
    toolbar = page.locator(".st-key-ranking [data-testid='stElementToolbar']").first
    toolbar.wait_for(state="visible", timeout=10_000)
    t = toolbar.bounding_box()
    f = page.get_by_role("button", name="Filters").first.bounding_box()
    apart = t["x"] >= f["x"] + f["width"] or f["x"] >= t["x"] + t["width"]
    assert apart, f"the grid's toolbar {t} covers the Filters button {f} at {size}"


def _table(panel) -> list[list[str]]:
    """A table's header and rows as a reader sees them (st.table: HTML, unlike st.dataframe's canvas)."""
    rows = panel.locator("tr").all()
    return [[c.inner_text().strip() for c in r.locator("th, td").all()] for r in rows]


def _step_time_tables_whole(page, preset) -> None:
    """'Explain a GPU' (the tab a link opens by default): its step-time breakdown, once opened, shows every figure and
    formula whole at laptop width."""
    steps = page.locator(".st-key-steps_open")
    if not steps.count():  # the GPU the question names can't run it: Explain says so instead of timing it
        assert page.get_by_text("Not timed: the plan can't run on this GPU").first.is_visible(), preset.id
        return
    steps.locator("summary").click()
    tables = steps.locator("[data-testid='stTable']")
    tables.nth(1).wait_for(timeout=30_000)
    figures, formulas = _table(tables.nth(0)), _table(tables.nth(1))
    assert {"op group", "time s", "limited by"} <= set(figures[0]) and formulas[0][-1] == "formula", figures[0]
    assert len(figures) == len(formulas) > 1 and all(len(r) == len(figures[0]) for r in figures)
    assert all(r[-1] for r in formulas[1:])  # every row's formula is there to read
    assert page.evaluate(CLIPPED, ".st-key-steps_open") == [], f"{preset.id}: step-time text cut at 1280x800"


def _serving_table_whole(page, panel, preset) -> None:
    """The Serving tab lists the compared GPUs that the runtime runs on, every cell whole at laptop width."""
    tables = panel.locator("[data-testid='stTable']")
    if not tables.count():  # not a decoder: the tab says why
        assert panel.locator("[data-testid='stAlert']").count(), preset.id
        return
    header, *rows = _table(tables.first)
    assert header[0] == "GPU" and "Max concurrency in target" in header and "gpu_id" not in header, header
    names = {load_catalog().get(g).name for g in preset.inputs.cmp}
    assert rows and {r[0] for r in rows} <= names and all(len(r) == len(header) for r in rows), (rows, names)
    lengths = panel.locator(".st-key-slen")  # the requests' lengths, shown as chosen (the link's slen or fixed)
    assert lengths.get_by_text("Request lengths").is_visible(), preset.id
    assert lengths.locator("input").input_value() == "Fixed (the job's)", preset.id
    assert page.evaluate(CLIPPED, "[data-testid='stMain']") == [], f"{preset.id}: serving text cut at 1280x800"


@pytest.mark.parametrize("preset", PRESETS, ids=[p.id for p in PRESETS])
def test_every_chart_and_table_of_an_example_is_drawn_whole(server, browser, wait_for_app, shots, preset):
    """Each chart draws real marks inside its box; the step-time and Serving tables show every cell whole at
    1280x800 (tables, not a canvas grid that cuts at the right)."""
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?" + preset.link)
    wait_for_app(page)
    _step_time_tables_whole(page, preset)
    for tab in CHART_TABS:
        page.get_by_role("tab", name=tab).click()
        wait_for_app(page)
        panel = page.get_by_role("tabpanel", name=tab)
        charts = panel.locator("[data-testid='stVegaLiteChart']")
        if not charts.count():  # a tab with nothing to chart says why instead
            assert panel.locator("[data-testid='stAlert']").count(), tab
            continue
        charts.first.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        assert page.evaluate(CHART_PROBLEMS) == [], tab
    page.get_by_role("tab", name="Serving").click()
    wait_for_app(page)
    panel = page.get_by_role("tabpanel", name="Serving")
    _serving_table_whole(page, panel, preset)
    page.screenshot(path=str(shots / f"21-{preset.id}-serving-1280x800.png"))
    page.close()


def test_clicking_a_gpus_name_explains_it_in_view(server, browser, wait_for_app):
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server + "?model=cfdna-gen&seqs=100000&tier=community&priced=1")
    wait_for_app(page)
    grid = page.locator("[data-testid='stDataFrame']").first
    box = grid.bounding_box()
    row_px = 35
    page.mouse.click(box["x"] + 200, box["y"] + row_px * 2 + row_px / 2)  # on the 2nd GPU's name, not its checkbox
    page.wait_for_function("() => new URLSearchParams(location.search).has('gpu')", timeout=10_000)
    wait_for_app(page)
    gpu = load_catalog().get(page.evaluate("() => new URLSearchParams(location.search).get('gpu')"))
    answer = page.locator(".st-key-answer")
    assert short_name(gpu.name) in answer.inner_text() and _in_view(page, answer, LAPTOP)
    page.close()
