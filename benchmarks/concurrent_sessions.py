"""Benchmark: N browser sessions change their plan at the same moment; how long until each page has settled.

Starts `streamlit run serve.py` on a free local port, opens N pages in Debian's Chromium (Playwright, no download),
lets every page load, then types the same new number of sequences into all of them at once (a plan none has
computed yet) and prints the median and 90th percentile of the time from the keypress to a settled page (the link
updated, the script not running), next to the same figure for one session alone. Loading N fresh pages at once is
also printed: it is dominated by the browser parsing Streamlit's JavaScript N times on the same 2 cores. What a plan
determines (the ranking, the table, the call-outs, the explained GPU's Markdown and tables) is built once per distinct
plan and shared by every session (ui/resources.py: rankings, ranking_view, explain_view); each session still runs the
script and receives every element of its page.
Run: python3 benchmarks/concurrent_sessions.py [sessions, default 20] [--server-only]
"""

import asyncio
import statistics
import sys
import time

# the same server (serve.py on a free port), browser and "script not running" selector as the page benchmark
from browser_page import CHROMIUM, IDLE as SETTLED, start_server

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


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


async def _script_run(ws, query: str, seqs_widget: str | None = None, seqs: int = 0) -> tuple[float, dict]:
    """Ask the server for one script run, as a browser tab does (a BackMsg over the app's websocket), and read its
    answer up to script_finished; returns (seconds, {widget id: element kind, '_qs': the link it set})."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = BackMsg()
    msg.rerun_script.query_string = query
    if seqs_widget:
        state = msg.rerun_script.widget_states.widgets.add()
        state.id, state.int_value = seqs_widget, seqs
    t0 = time.perf_counter()
    await ws.send(msg.SerializeToString())
    seen: dict = {}
    while True:
        fwd = ForwardMsg()
        fwd.ParseFromString(await ws.recv())
        kind = fwd.WhichOneof("type")
        if kind == "script_finished":
            return time.perf_counter() - t0, seen
        if kind == "page_info_changed":
            seen["_qs"] = fwd.page_info_changed.query_string
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            element = getattr(fwd.delta.new_element, fwd.delta.new_element.WhichOneof("type"))
            if isinstance(getattr(element, "id", None), str) and element.id:
                seen[element.id] = True


async def _server_sessions(url: str, sessions: int) -> None:
    """N sessions on the real server without a browser: each holds the app's websocket, as a tab does; all N ask
    for the same new plan at once, then each for a plan of its own. Prints the median and slowest time from the
    request to the end of the script run (every message of the page received). What the browsers then spend drawing
    is left out: on this machine N Chromium tabs share the server's 2 cores."""
    from websockets.asyncio.client import connect

    socks = [await connect(url.replace("http", "ws") + "_stcore/stream", max_size=2**26) for _ in range(sessions)]
    firsts = [await _script_run(ws, "") for ws in socks]
    query = firsts[0][1].get("_qs", "")
    widget = next(k for k in firsts[0][1] if k.endswith("-seqs"))  # the key 'seqs' ends the widget's id
    alone = [(await _script_run(socks[0], query, widget, 300_000 + i))[0] for i in range(5)]
    together = await asyncio.gather(*(_script_run(ws, query, widget, 123_456) for ws in socks))
    times = [t for t, seen in together if "seqs=123456" in seen.get("_qs", "")]
    # then each session a plan of its own (a job size no other session asks for): nothing is shared between them
    apart = await asyncio.gather(*(_script_run(ws, query, widget, 654_321 + i) for i, ws in enumerate(socks)))
    distinct = [t for i, (t, seen) in enumerate(apart) if f"seqs={654_321 + i}" in seen.get("_qs", "")]
    for ws in socks:
        await ws.close()
    if len(times) != sessions or len(distinct) != sessions:
        raise SystemExit(f"only {len(times)} and {len(distinct)} of {sessions} sessions reached their new plans")
    print(f"server, one session alone, a new plan: median {statistics.median(alone):.2f} s over {len(alone)} changes")
    print(f"server, {sessions} sessions asking for the same new plan at once: median {statistics.median(times):.2f} s, "
          f"slowest {max(times):.2f} s")
    print(f"server, {sessions} sessions each asking for a plan of its own at once: median "
          f"{statistics.median(distinct):.2f} s, slowest {max(distinct):.2f} s")


def main(sessions: int = 20, browsers: bool = True) -> None:
    proc, url = start_server()
    try:
        asyncio.run(_server_sessions(url, sessions))
        if browsers:
            asyncio.run(_run(url, sessions))
    finally:
        proc.terminate()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--server-only"]
    main(int(args[0]) if args else 20, browsers="--server-only" not in sys.argv)
