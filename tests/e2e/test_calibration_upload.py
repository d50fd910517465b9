"""A bench result uploaded in Chromium, as a user does it: the file goes through the sidebar's file uploader
(`set_input_files` on its <input type=file>), and the page shows what the calibration changed; a malformed file gets
a message naming it, and the page keeps its calibration and keeps working."""

import json
import re
from urllib.parse import parse_qs, urlsplit


from planner import DATA_DIR
from tests.e2e.checks import CLIPPED

LAPTOP = {"width": 1280, "height": 800}
WAIT_MS = 30_000
# A real result of `python -m planner.bench`, run on an H200 (data/calibrations/README.md)
BENCH = DATA_DIR / "calibrations" / "2026-11-26_cuda-nvidia-h200.json"
GARBAGE = {"name": "garbage.json", "mimeType": "application/json", "buffer": b'{"kind": "nonsense", "x": [1, 2'}
REACH = re.compile(r"reaches (\d+) of the (\d+) GPUs that run this plan: (\d+) measured, (\d+) carried over .*?; "
                   r"(\d+) untouched")


def _cal(page) -> str | None:
    return parse_qs(urlsplit(page.url).query).get("cal", [None])[-1]


def _sidebar_messages(page) -> list[str]:
    return [a.inner_text() for a in page.locator("section[data-testid='stSidebar'] [data-testid='stAlert']").all()]


def _upload(page, files, wait) -> None:
    page.locator(".st-key-upload_cal input[type='file']").set_input_files(files)
    wait(page)


def _effect(page) -> tuple[dict, list[dict]]:
    """The before-and-after panel as a reader sees it: the counts its sentence gives, and its table's rows."""
    panel = page.locator(".st-key-calibration_effect")
    panel.wait_for(timeout=WAIT_MS)
    found = REACH.search(panel.inner_text())
    assert found, panel.inner_text()[:600]
    counts = dict(zip(("reached", "run", "measured", "carried", "untouched"), map(int, found.groups())))
    header, *rows = [[c.inner_text().strip() for c in r.locator("th, td").all()] for r in panel.locator("tr").all()]
    return counts, [dict(zip(header, r)) for r in rows]


def test_a_bench_result_uploaded_shows_which_gpus_it_reached_and_a_bad_file_changes_nothing(
        server, browser, wait_for_app, shots):
    measured_on = json.loads(BENCH.read_text())["environment"]["device_name"]
    page = browser.new_page(viewport=LAPTOP)
    page.goto(server)
    wait_for_app(page)
    assert not page.locator(".st-key-calibration_effect").count() and _cal(page) is None

    _upload(page, str(BENCH), wait_for_app)
    counts, rows = _effect(page)
    page.get_by_text(f"Calibrated with {BENCH.name}.").first.wait_for(timeout=WAIT_MS)
    assert f"Calibrated with {BENCH.name}." in _sidebar_messages(page)
    # one file of one GPU: that GPU measured, the others it reaches carried over (a GPU's fit carries by the ratio
    # to the priors), and the counts add up
    assert counts["measured"] == 1 and counts["carried"] >= 1
    assert counts["reached"] == counts["measured"] + counts["carried"] <= counts["run"]
    assert counts["untouched"] == counts["run"] - counts["reached"]
    assert rows and all(r["Calibration"] in ("measured", "carried over", "untouched") for r in rows), rows
    for r in rows:  # a reached GPU has a time after and a change; an untouched one has neither
        reached = r["Calibration"] != "untouched"
        assert (r["After"] != "-" and r["Change"].endswith("%")) == reached and r["Before"] != "-", r
    assert any(r["Calibration"] == "carried over" and r["After"] != r["Before"] for r in rows), rows
    title = page.locator("[data-testid='stExpander'] summary").filter(has_text="Your calibration")
    assert measured_on in title.inner_text() and BENCH.name[:10] in title.inner_text()  # the GPU and the bench's day
    assert page.get_by_text(re.compile(rf"This plan on {measured_on}.*calibrated")).first.is_visible()
    assert page.evaluate(CLIPPED, ".st-key-calibration_effect") == []
    cal = _cal(page)
    assert cal  # the calibration travels in the link
    assert not page.locator("[data-testid='stException']").count()
    page.locator(".st-key-calibration_effect").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "30-bench-upload-h200-1280x800.png"))

    _upload(page, GARBAGE, wait_for_app)  # a file beside the good one: the uploader now holds both
    page.get_by_text("garbage.json could not be used").first.wait_for(timeout=WAIT_MS)  # the rerun has drawn it
    messages = _sidebar_messages(page)
    assert any(m.startswith("garbage.json could not be used: not valid JSON")
               and m.endswith("The plan keeps its current calibration.") for m in messages), messages
    assert _cal(page) == cal and page.locator(".st-key-calibration_effect").count()  # nothing lost
    assert page.get_by_test_id("stDataFrame").first.is_visible()  # the ranking is still there
    assert not page.locator("[data-testid='stException']").count()
    page.locator("section[data-testid='stSidebar'] [data-testid='stAlert']").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "31-bench-upload-garbage-1280x800.png"))

    # and the page keeps working: take the bad file out of the uploader, and the good one calibrates again
    page.get_by_role("button", name="Remove garbage.json").click()
    wait_for_app(page)
    page.get_by_text(f"Calibrated with {BENCH.name}.").first.wait_for(timeout=WAIT_MS)
    assert f"Calibrated with {BENCH.name}." in _sidebar_messages(page)
    assert _cal(page) == cal and _effect(page)[0] == counts
    page.close()
