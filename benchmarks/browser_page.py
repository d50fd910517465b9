"""Benchmark: the page in a real browser, as a visitor gets it.

Starts `streamlit run serve.py` on a free local port (or uses --url) and opens it in Debian's Chromium
(/usr/bin/chromium, driven by Playwright; Playwright's own browser download is never used). Each run is a fresh
browser context (an empty cache, as a first visit) and measures:
  - page weight: bytes transferred over HTTP (response bodies as sent, plus headers) and the number of requests,
    up to the first ranking row; the app's websocket messages are not counted. Streamlit alone serves its static
    bundles uncompressed on purpose (streamlit/web/server/starlette/starlette_gzip_middleware.py); serve.py gzips
    every response, and the weight with each body gzipped at level 6 is printed too (what `streamlit run app.py`
    would weigh behind a gzip proxy);
  - first ranking row visible: from the start of navigation until the script has run and the ranking's grid is
    drawn with its first row inside the viewport;
  - settle after a change: from typing a new job size into 'Sequences to generate' (Enter) until the script has
    rerun and the page is idle again.
Prints each run and the median of N runs, and the largest resources of the last run.
Run: python3 benchmarks/browser_page.py [--runs 5] [--url http://127.0.0.1:8501/]
"""

import argparse
import gzip
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
VIEWPORT = {"width": 1280, "height": 800}
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync",
        "--disable-component-update", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "serve.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true",
                             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "RUNPOD_API_KEY": ""})
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "_stcore/health", timeout=1).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise SystemExit("streamlit did not start in 60 s")


def first_row_visible(page) -> bool:
    """The ranking grid is drawn and its first data row (below the header) lies inside the viewport."""
    grid = page.locator("[data-testid='stDataFrame'] canvas").first
    if not grid.count():
        return False
    box = page.locator("[data-testid='stDataFrame']").first.bounding_box()
    return box is not None and box["y"] + 2 * 35 <= VIEWPORT["height"]


def one_run(browser, url: str) -> dict:
    ctx = browser.new_context(viewport=VIEWPORT)
    page = ctx.new_page()
    sizes: dict[str, int] = {}
    done = []

    def on_finished(request):
        if done:
            return
        try:
            s = request.sizes()
            sizes[request.url] = s["responseBodySize"] + s["responseHeadersSize"]
        except Exception:  # a request the browser dropped has no sizes
            sizes.setdefault(request.url, 0)

    page.on("requestfinished", on_finished)
    responses = []
    page.on("response", lambda r: None if done else responses.append(r))
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=120_000)
    page.wait_for_selector("[data-testid='stDataFrame'] canvas", state="visible", timeout=120_000)
    while not first_row_visible(page):
        page.wait_for_timeout(20)
    first_s = time.perf_counter() - t0
    done.append(True)
    gz = 0
    for r in responses:
        try:
            gz += len(gzip.compress(r.body(), 6))
        except Exception:  # redirects and dropped responses have no body
            pass
    page.wait_for_timeout(300)
    box = page.locator(".st-key-seqs input")
    box.fill("250000")
    t1 = time.perf_counter()
    box.press("Enter")
    page.wait_for_function("() => location.search.includes('seqs=250000')", timeout=60_000)
    page.wait_for_selector(IDLE, timeout=60_000)
    settle_s = time.perf_counter() - t1
    ctx.close()
    return {"bytes": sum(sizes.values()), "gzip_bytes": gz, "requests": len(sizes), "first_s": first_s,
            "settle_s": settle_s, "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:6]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--url", default=None, help="a running app (default: start one on a free port)")
    a = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"no Chromium at {CHROMIUM}: run .ci/setup-browser")
    from playwright.sync_api import sync_playwright

    proc, url = (None, a.url) if a.url else start_server()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            one_run(browser, url)  # warm-up: the server's first script run imports and loads the data files
            runs = []
            for i in range(a.runs):
                r = one_run(browser, url)
                runs.append(r)
                print(f"run {i + 1}: {r['bytes'] / 1e6:.2f} MB ({r['gzip_bytes'] / 1e6:.2f} MB gzipped) in "
                      f"{r['requests']} requests, first ranking row "
                      f"visible {r['first_s']:.2f} s, settled {r['settle_s'] * 1e3:.0f} ms after a change")
            browser.close()
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=10)
    med = {k: statistics.median(r[k] for r in runs) for k in ("bytes", "gzip_bytes", "requests", "first_s",
                                                               "settle_s")}
    print(f"median of {a.runs} ({VIEWPORT['width']}x{VIEWPORT['height']}, cold cache each run): "
          f"page weight {med['bytes'] / 1e6:.2f} MB as served ({med['gzip_bytes'] / 1e6:.2f} MB behind a gzip "
          f"proxy) in {med['requests']:.0f} requests; first ranking row visible "
          f"{med['first_s']:.2f} s; settle after a change {med['settle_s'] * 1e3:.0f} ms")
    print("largest resources (last run):")
    for u, n in runs[-1]["largest"]:
        print(f"  {n / 1e3:8.1f} kB  {u.split('?')[0].rsplit('/', 1)[-1]}")


if __name__ == "__main__":
    main()
