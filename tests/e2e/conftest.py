"""End-to-end fixtures: `streamlit run serve.py` (app.py as served) on a free local port, and Debian's Chromium driven
by Playwright.

The browser is the system one (/usr/bin/chromium, from `.ci/setup-browser`); Playwright's own download is never
used. Screenshots go to artifacts/screenshots/ (git-ignored).
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
SHOTS = ROOT / "artifacts" / "screenshots"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]

if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
    message = f"no Chromium at {CHROMIUM}: run .ci/setup-browser (apt-get install chromium)"
    if os.environ.get("CI"):  # CI installs it (.ci/run): a missing browser there is a failure, not a skip
        raise RuntimeError(message)
    pytest.skip(message, allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server_log(tmp_path_factory) -> Path:
    """The file that gets the server's stdout and stderr (unbuffered, so a logged error is there at once)."""
    return tmp_path_factory.mktemp("streamlit") / "server.log"


@pytest.fixture(scope="session")
def server(server_log):
    """The app under `streamlit run` (headless, no file watcher), its base URL; stopped at the end."""
    port, log = _free_port(), server_log
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--server.fileWatcherType", "none",
             "--browser.gatherUsageStats", "false", "--global.developmentMode", "false"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "RUNPOD_API_KEY": "", "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "_stcore/health", timeout=1).read() == b"ok":
                break
        except OSError:
            time.sleep(0.25)
    else:
        proc.kill()
        pytest.fail(f"streamlit did not start in 60 s:\n{log.read_text()[-2000:]}")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


def _wait_for_app(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script has run (Streamlit's own e2e convention) and the ranking table is drawn: the
    browser loads the table's code lazily, seconds after the script ends on a busy 2-core machine."""
    page.wait_for_selector("[data-testid='stAppViewContainer']", state="attached", timeout=timeout_ms)
    page.wait_for_timeout(200)
    page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']", timeout=timeout_ms)
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout_ms)
    page.wait_for_selector("[data-testid='stDataFrame'] canvas", state="attached", timeout=timeout_ms)
    page.wait_for_timeout(300)


@pytest.fixture(scope="session")
def wait_for_app():
    return _wait_for_app


@pytest.fixture(autouse=True)
def no_traceback_in_the_server_log(server_log):
    """Whatever an e2e test does, the server logs no traceback while it runs (the server is shared by the session:
    only this test's part of its log is read)."""
    start = server_log.stat().st_size if server_log.exists() else 0
    yield
    if not server_log.exists():
        return
    with open(server_log, "rb") as f:
        f.seek(start)
        logged = f.read().decode("utf-8", "replace")
    assert "Traceback" not in logged, logged[-3000:]
