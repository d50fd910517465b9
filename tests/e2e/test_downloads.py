"""The downloads under the ranking, as a user gets them: click CSV, JSON and SkyPilot task, save the file, parse it;
on the first visit and for every example question, picked one after another on one page.

Each button's file is built on click by a deferred callable in another thread; an error there shows in the browser
only as a download that never starts, so the server's log is read too (KeyError: 'model' was one such bug).
"""

import csv
import io
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from planner.inputs.catalog import load_catalog
from planner.views.presets import load_all, parse_link

VIEWPORT = {"width": 1440, "height": 900}
DOWNLOAD_MS = 30_000  # a click until the file is saved: the callable builds it then (seconds on a busy 2-core box)
CATALOG_IDS = set(load_catalog().ids())
PRESETS = load_all()[0]  # the example questions, as the 'Example questions' popover lists them


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


def _check_csv(text: str) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert rows and "gpu_id" in reader.fieldnames, text[:500]
    ids = [r["gpu_id"] for r in rows]
    assert all(ids) and set(ids) <= CATALOG_IDS, set(ids) - CATALOG_IDS
    return rows


def _check_json(text: str) -> dict:
    doc = json.loads(text)
    assert isinstance(doc, dict) and {"plan", "link", "ranking"} <= doc.keys(), list(doc)
    ranking = doc["ranking"]
    assert isinstance(ranking, list) and ranking, ranking
    assert all(row.get("gpu_id") in CATALOG_IDS for row in ranking)
    return doc


def _check_skypilot(text: str, skypilot) -> None:
    config = yaml.safe_load(text)
    assert isinstance(config, dict), text[:500]  # not the one-line comment that says why there is no task
    task = skypilot.parse(text)  # SkyPilot's own parser (tests/fixtures/skypilot.py): its refusal is an 'error'
    assert "error" not in task, task
    assert task["resources"] and all(r["accelerators"] for r in task["resources"]), task["resources"]


def _pick(page, preset, wait) -> None:
    """Pick the example from the 'Example questions' popover as a user does (it closes by itself); the page then
    shows what the example assumes."""
    page.get_by_role("button", name="Example questions").click()
    page.get_by_role("button", name=preset.question[:40], exact=False).click()
    wait(page)
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stPopoverBody']\")", timeout=DOWNLOAD_MS)
    page.get_by_text("what the example assumes").first.wait_for(timeout=DOWNLOAD_MS)


@pytest.fixture(scope="module")
def page(server, browser, wait_for_app):
    """One page for the module: each example is picked on it in turn, as a user moves from question to question
    (and a file must then be of the question on screen, not of an earlier one)."""
    ctx = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    page = ctx.new_page()
    page.goto(server)
    wait_for_app(page)
    yield page
    ctx.close()


@pytest.fixture(autouse=True)
def no_error_in_the_server_log(server_log):
    """Checked even when a download never started: the server's traceback is then the cause. The server is shared:
    only this test's part of its log is read."""
    start = server_log.stat().st_size
    yield
    with open(server_log, "rb") as f:
        f.seek(start)
        log = f.read().decode("utf-8", "replace")
    assert "Traceback" not in log and "KeyError" not in log, log[-3000:]


def _three_downloads(page, skypilot) -> dict:
    """CSV, JSON and SkyPilot task of the plan on screen, each parsed; the JSON document."""
    rows = _check_csv(_download(page, "dl_csv", "CSV", "gpu-plan.csv"))
    doc = _check_json(_download(page, "dl_json", "JSON", "gpu-plan.json"))
    on_screen = _query(page.url)
    assert _query(doc["link"]) == on_screen  # the file is of the plan on screen, not an earlier one
    assert all(_query(r["plan_link"]) == on_screen for r in rows)
    _check_skypilot(_download(page, "dl_sky", "SkyPilot task", "task.yaml"), skypilot)
    assert not page.locator("[data-testid='stException']").count()
    return doc


def test_the_first_visits_downloads_save_files_that_parse(page, server, wait_for_app, skypilot):
    page.goto(server)
    wait_for_app(page)
    _three_downloads(page, skypilot)


@pytest.mark.parametrize("preset", PRESETS, ids=[p.id for p in PRESETS])
def test_each_example_questions_downloads_save_files_of_that_question(page, wait_for_app, skypilot, preset):
    """Each of the three buttons saves a file of its kind for the example just picked; the server logs no error."""
    _pick(page, preset, wait_for_app)
    doc = _three_downloads(page, skypilot)
    asked = {k: v[-1] for k, v in parse_link(preset.link).items()}
    link = _query(doc["link"])
    assert {k: link.get(k) for k in asked} == asked  # the example's every input (it is a share link) is the file's
