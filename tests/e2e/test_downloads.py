"""The downloads under the ranking, as a user gets them: click CSV, JSON and SkyPilot task, save the file, parse it.

Each button's file is built on click by a deferred callable in another thread; an error there shows in the browser
only as a download that never starts, so the server's log is read too (KeyError: 'model' was one such bug).
"""

import csv
import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import sky
import yaml

from planner.inputs.catalog import load_catalog

VIEWPORT = {"width": 1440, "height": 900}
DOWNLOAD_MS = 30_000  # a click until the file is saved: the callable builds it then (seconds on a busy 2-core box)
CATALOG_IDS = set(load_catalog().ids())


def _query(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def _download(page, key: str, label: str, file_name: str) -> str:
    """Click the download button with this key and label; the saved file's text."""
    # by role: a button with help text also holds a hidden copy of itself (Streamlit's tooltip layout)
    button = page.locator(f".st-key-{key}").get_by_role("button", name=label, exact=True)
    button.scroll_into_view_if_needed(timeout=DOWNLOAD_MS)
    with page.expect_download(timeout=DOWNLOAD_MS) as info:
        button.click(timeout=DOWNLOAD_MS)
    dl = info.value
    assert dl.failure() is None, f"{key}: {dl.failure()}"
    assert dl.suggested_filename == file_name
    return Path(dl.path()).read_text(encoding="utf-8")


def _check_csv(text: str) -> None:
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert rows and "gpu_id" in reader.fieldnames, text[:500]
    ids = [r["gpu_id"] for r in rows]
    assert all(ids) and set(ids) <= CATALOG_IDS, set(ids) - CATALOG_IDS


def _check_json(text: str) -> dict:
    doc = json.loads(text)
    assert isinstance(doc, dict) and {"plan", "link", "ranking"} <= doc.keys(), list(doc)
    ranking = doc["ranking"]
    assert isinstance(ranking, list) and ranking, ranking
    assert all(row.get("gpu_id") in CATALOG_IDS for row in ranking)
    return doc


def _check_skypilot(text: str) -> None:
    config = yaml.safe_load(text)
    assert isinstance(config, dict), text[:500]  # not the one-line comment that says why there is no task
    task = sky.Task.from_yaml_config(config)  # SkyPilot's own parser: raises on anything its schema refuses
    resources = list(task.resources)
    assert resources and all(r.accelerators for r in resources), resources


def _pick_first_example(page, wait) -> str:
    """Open 'Example questions' and click its first preset, as a user would; the question asked."""
    page.get_by_role("button", name="Example questions").click()
    first = page.locator("[class*='st-key-preset_'] button").first
    first.wait_for(timeout=DOWNLOAD_MS)
    question = first.inner_text().strip()
    first.click()
    wait(page)
    page.keyboard.press("Escape")  # close the popover
    page.get_by_text("what the example assumes").first.wait_for(timeout=DOWNLOAD_MS)  # the example's plan is shown
    return question


@pytest.mark.parametrize("example", [False, True], ids=["default-page", "first-example-question"])
def test_csv_json_and_skypilot_downloads_save_files_that_parse_and_log_no_error(
        server, server_log, browser, wait_for_app, example):
    """Each of the three buttons saves a file of its kind for the plan on screen; the server logs no traceback."""
    start = server_log.stat().st_size  # the server is shared: only this test's part of its log is read
    ctx = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    page = ctx.new_page()
    try:
        page.goto(server)
        wait_for_app(page)
        if example:
            _pick_first_example(page, wait_for_app)
        _check_csv(_download(page, "dl_csv", "CSV", "gpu-plan.csv"))
        doc = _check_json(_download(page, "dl_json", "JSON", "gpu-plan.json"))
        assert _query(doc["link"]) == _query(page.url)  # the file is of the plan on screen, not an earlier one
        _check_skypilot(_download(page, "dl_sky", "SkyPilot task", "task.yaml"))
        assert not page.locator("[data-testid='stException']").count()
    finally:  # checked even when a download never started: the server's traceback is then the cause
        ctx.close()
        with open(server_log, "rb") as f:
            f.seek(start)
            log = f.read().decode("utf-8", "replace")
        assert "Traceback" not in log and "KeyError" not in log, log[-3000:]
