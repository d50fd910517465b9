"""Benchmark: N browser sessions change their plan at the same moment; how long until each page has settled.

Starts `streamlit run app.py` on a free local port, opens N pages in Debian's Chromium (Playwright, no download),
lets every page load, then types the same new number of sequences into all of them at once (a plan none has
computed yet) and prints the median and 90th percentile of the time from the keypress to a settled page (the link
updated, the script not running), next to the same figure for one session alone. Loading N fresh pages at once is
also printed: it is dominated by the browser parsing Streamlit's JavaScript N times on the same 2 cores. The expensive part of a rerun (the ranking) is computed once per
distinct plan and shared by every session (app.py: _rankings), so N sessions cost little more than one.
Run: python3 benchmarks/concurrent_sessions.py [sessions, default 20]
"""

import asyncio
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
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
SETTLED = "[data-testid='stApp'][data-test-script-state='notRunning']"


def _start_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                             "--server.address", "127.0.0.1", "--server.headless", "true"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(240):
        try:
            if urllib.request.urlopen(url + "_stcore/health", timeout=1).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise SystemExit("streamlit did not start")


async def _settle(page, link: str) -> float:
    t0 = time.perf_counter()
    await page.goto(link)
    await page.wait_for_selector("[data-testid='stApp'][data-test-connection-state='CONNECTED']", timeout=120_000)
    await page.wait_for_selector(SETTLED, timeout=120_000)
    await page.wait_for_selector("[data-testid='stDataFrame']", state="attached", timeout=120_000)
    return time.perf_counter() - t0


async def _change(page, seqs: int) -> float:
    box = page.locator(".st-key-seqs input")
    await box.fill(str(seqs))
    t0 = time.perf_counter()
    await box.press("Enter")
    await page.wait_for_function(f"() => location.search.includes('seqs={seqs}')", timeout=120_000)
    await page.wait_for_selector(SETTLED, timeout=120_000)
    return time.perf_counter() - t0


async def _run(url: str, sessions: int) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        pages = [await (await browser.new_context(viewport={"width": 1280, "height": 800})).new_page()
                 for _ in range(sessions)]
        loads = await asyncio.gather(*(_settle(pg, url) for pg in pages))
        alone = [await _change(pages[0], 200_000 + i) for i in range(5)]
        together = await asyncio.gather(*(_change(pg, 123_457) for pg in pages))
        await browser.close()
    q90 = lambda xs: sorted(xs)[max(0, round(0.9 * len(xs)) - 1)]  # noqa: E731
    print(f"one session alone, a new plan: median {statistics.median(alone):.2f} s over {len(alone)} changes")
    print(f"{sessions} sessions changing to the same new plan at once: median {statistics.median(together):.2f} s, "
          f"p90 {q90(together):.2f} s, slowest {max(together):.2f} s")
    print(f"{sessions} fresh pages loading at once: median {statistics.median(loads):.1f} s (browser-bound)")


def _server_only(sessions: int) -> None:
    """The same change in N sessions at once, without a browser: N AppTest sessions in one process (one GIL, as
    the server's script threads share one) rerun the script together; prints median and slowest seconds."""
    import threading

    from streamlit.testing.v1 import AppTest

    apps = [AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run() for _ in range(sessions)]
    start, times = threading.Barrier(sessions), [0.0] * sessions

    def rerun(i: int) -> None:
        apps[i].number_input(key="seqs").set_value(123_457)
        start.wait()
        t0 = time.perf_counter()
        apps[i].run()
        times[i] = time.perf_counter() - t0

    threads = [threading.Thread(target=rerun, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{sessions} sessions rerunning the same new plan at once, server side only: median "
          f"{statistics.median(times):.2f} s, slowest {max(times):.2f} s")


def main(sessions: int = 20) -> None:
    _server_only(sessions)
    proc, url = _start_server()
    try:
        asyncio.run(_run(url, sessions))
    finally:
        proc.terminate()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
