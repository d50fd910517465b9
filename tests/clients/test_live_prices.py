"""Live prices against a real HTTP server on 127.0.0.1 that answers like RunPod's GraphQL API (and fails like it).

Expected numbers come from the fake server's payload (element shapes from shared/reference/runpod_api.md §2-3).
"""

from __future__ import annotations

import json
import math
import re
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import date, datetime, timedelta, UTC
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from planner.inputs import price_snapshot as S
from planner.clients import live_prices as P
from planner.inputs.catalog import load_catalog
from planner.base.schema import DataFileError

ROOT = Path(__file__).resolve().parents[2]
KEY = "rpa_TESTKEY_7f3c9e1d2b"
NOW = datetime(2026, 11, 20, 14, 2, 5, tzinfo=UTC)
FAST = dict(timeout_s=2.0, retries=0, backoff_s=0.0, now=NOW)

# Realistic gpuTypes elements (runpod_api.md §2), prices chosen to differ from the snapshot.
H100_SXM = {"id": "NVIDIA H100 80GB HBM3", "displayName": "H100 SXM", "memoryInGb": 80, "maxGpuCount": 8,
            "secureCloud": True, "communityCloud": True, "securePrice": 3.79, "communityPrice": 2.49,
            "communitySpotPrice": 1.65, "secureSpotPrice": 1.95, "clusterPrice": 3.588, "oneWeekPrice": None,
            "oneMonthPrice": None, "threeMonthPrice": 2.811, "sixMonthPrice": 2.601}
A100_PCIE = {"maxGpuCount": 8, "id": "NVIDIA A100 80GB PCIe", "displayName": "A100 80GB", "manufacturer": "Nvidia",
             "memoryInGb": 80, "cudaCores": 0, "secureCloud": True, "communityCloud": True, "securePrice": 1.89,
             "communityPrice": 1.59, "oneMonthPrice": None, "threeMonthPrice": None, "oneWeekPrice": None,
             "communitySpotPrice": 0.89, "secureSpotPrice": None,
             "lowestPrice": {"minimumBidPrice": 0.89, "uninterruptablePrice": 1.59}}
# communityCloud false with a placeholder communityPrice 0.5 (the B200 case in §3.2)
B200 = {"id": "NVIDIA B200", "displayName": "B200", "memoryInGb": 180, "secureCloud": True, "communityCloud": False,
        "securePrice": 5.99, "communityPrice": 0.5, "secureSpotPrice": 3.59, "communitySpotPrice": None}
# secureCloud false with securePrice 0 (the RTX 3070 case in §3.2)
RTX_3070 = {"id": "NVIDIA GeForce RTX 3070", "displayName": "RTX 3070", "memoryInGb": 8, "secureCloud": False,
            "communityCloud": True, "securePrice": 0, "communityPrice": 0.15, "secureSpotPrice": 0,
            "communitySpotPrice": 0.08}
# not in gpu_type_ids, but an alias of a100-sxm-40gb (second try)
A100_SXM_40 = {"id": "NVIDIA A100-SXM4-40GB", "displayName": "A100 SXM 40GB", "memoryInGb": 40, "secureCloud": False,
               "communityCloud": True, "securePrice": None, "communityPrice": 1.05, "secureSpotPrice": None,
               "communitySpotPrice": None}
RTX_3060 = {"id": "NVIDIA GeForce RTX 3060", "displayName": "RTX 3060", "memoryInGb": 12, "secureCloud": False,
            "communityCloud": True, "securePrice": 0.0, "communityPrice": 0.12, "secureSpotPrice": None,
            "communitySpotPrice": 0.06}


def answer(*elements) -> dict:
    return {"data": {"gpuTypes": list(elements)}}


GOOD = answer(H100_SXM, A100_PCIE, B200, RTX_3070, A100_SXM_40, RTX_3060)


class FakeRunPod:
    """A GraphQL-like server on 127.0.0.1; `script` is a list of (status, body, delay_s), the last one repeats."""

    def __init__(self, *script):
        self.script = list(script)
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status, payload, delay = fake.script.pop(0) if len(fake.script) > 1 else fake.script[0]
                if delay:
                    time.sleep(delay)
                if callable(payload):
                    payload = payload(self)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout test)
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/graphql"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(*script):
        servers.append(FakeRunPod(*script))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")  # a CI proxy must not intercept the local server
    P.clear_cache()
    yield
    P.clear_cache()


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def snapshot(catalog):
    return S.snapshot_table(catalog)


def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/graphql"


def assert_fell_back(table, snapshot, *fragments):
    assert table.ok is False and table.source == "snapshot"
    assert table.message.startswith(f"{snapshot.message}: ")
    for f in fragments:
        assert f in table.message, table.message
    assert table.prices == snapshot.prices


def price(table, gpu, tier):
    return table.prices[gpu][tier]


# ---------------------------------------------------------------- good answers


def test_good_answer_updates_prices_with_origin_and_date(serve, catalog, snapshot):
    api = serve((200, GOOD, 0))
    t = P.fetch_live(catalog, api_key=KEY, url=api.url, **FAST)
    assert t.ok and t.source == "live"
    assert t.as_of == "2026-11-20T14:02:05Z"
    assert t.message.startswith("live RunPod prices fetched 2026-11-20 14:02 UTC")
    for tier, usd in (("secure", 3.79), ("community", 2.49), ("spot", 1.65)):  # spot: min(1.95, 1.65)
        p = price(t, "h100-sxm", tier)
        assert (p.usd_hr, p.origin, p.date) == (usd, "live", date(2026, 11, 20))
        assert "127.0.0.1" in p.source and "2026-11-20 14:02 UTC" in p.source
    assert price(t, "a100-pcie-80gb", "spot").usd_hr == 0.89        # secureSpotPrice is null
    assert price(t, "a100-sxm-40gb", "community").usd_hr == 1.05     # matched through an alias
    # a GPU absent from the answer keeps its snapshot
    assert price(t, "rtx-4090", "secure") == price(snapshot, "rtx-4090", "secure")


def test_tier_whose_cloud_flag_is_false_keeps_the_snapshot(serve, catalog, snapshot):
    api = serve((200, GOOD, 0))
    t = P.fetch_live(catalog, url=api.url, **FAST)
    assert price(t, "b200", "secure").usd_hr == 5.99
    assert price(t, "b200", "spot").usd_hr == 3.59
    assert price(t, "b200", "community") == price(snapshot, "b200", "community")   # not the placeholder 0.5
    assert price(t, "rtx-3070", "community").usd_hr == 0.15
    assert price(t, "rtx-3070", "spot").usd_hr == 0.08               # secureSpotPrice 0 ignored: secure not offered
    assert price(t, "rtx-3070", "secure") == price(snapshot, "rtx-3070", "secure")
    assert "rejected" not in t.message and t.source == "live"


def test_request_shape_key_in_bearer_header_only(serve, catalog):
    api = serve((200, GOOD, 0))
    P.fetch_live(catalog, api_key=KEY, url=api.url, **FAST)
    req = api.requests[0]
    assert req["path"] == "/graphql"                                   # nothing in the query string
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    query = json.loads(req["body"])["query"]
    for field in ("gpuTypes", "secureCloud", "communityCloud", "securePrice", "communityPrice",
                  "secureSpotPrice", "communitySpotPrice"):
        assert field in query


def test_without_a_key_the_query_goes_anonymously(serve, catalog):
    api = serve((200, GOOD, 0))
    t = P.fetch_live(catalog, api_key=None, url=api.url, **FAST)
    assert t.ok
    assert "Authorization" not in api.requests[0]["headers"]


def test_unmapped_ids_are_reported(serve, catalog):
    api = serve((200, GOOD, 0))
    t = P.fetch_live(catalog, url=api.url, **FAST)
    assert t.unmapped == ("NVIDIA GeForce RTX 3060",)
    assert "1 RunPod types not in the catalog" in t.message and "RTX 3060" not in t.message  # counted, not named
    # 5 catalog GPUs updated: h100-sxm, a100-pcie-80gb, b200, rtx-3070, a100-sxm-40gb
    assert "(5 GPUs;" in t.message


# ---------------------------------------------------------------- faults


def test_timeout_falls_back(serve, catalog, snapshot):
    api = serve((200, GOOD, 1.0))
    t = P.fetch_live(catalog, url=api.url, **{**FAST, "timeout_s": 0.1})
    assert_fell_back(t, snapshot, "RunPod API timed out after 0.1 s")


def test_http_500_then_success_retries(serve, catalog):
    api = serve((500, b"oops", 0), (502, b"bad gateway", 0), (200, GOOD, 0))
    t = P.fetch_live(catalog, url=api.url, **{**FAST, "retries": 2, "backoff_s": 0.01})
    assert t.ok and price(t, "h100-sxm", "secure").usd_hr == 3.79
    assert len(api.requests) == 3


def test_http_500_every_time_falls_back_after_retries(serve, catalog, snapshot):
    api = serve((500, b"oops", 0))
    t = P.fetch_live(catalog, url=api.url, **{**FAST, "retries": 1, "backoff_s": 0.01})
    assert_fell_back(t, snapshot, "HTTP 500", "2 attempts")
    assert len(api.requests) == 2


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_is_named_but_never_shown(serve, catalog, snapshot, status):
    api = serve((status, {"errors": [{"message": "Unauthorized"}]}, 0))
    t = P.fetch_live(catalog, api_key=KEY, url=api.url, **{**FAST, "retries": 2})
    assert_fell_back(t, snapshot, "refused the API key", f"HTTP {status}")
    assert KEY not in t.message and KEY not in repr(t)
    assert len(api.requests) == 1                                      # a refused key is not retried


@pytest.mark.parametrize("body", [b"{not json", b"<html>502 Bad Gateway</html>",
                                  b'{"data": {"gpuTypes": [{"id": "NVIDIA H100 80GB HBM3", "secur'])
def test_malformed_json_falls_back(serve, catalog, snapshot, body):
    api = serve((200, body, 0))
    t = P.fetch_live(catalog, url=api.url, **FAST)
    assert_fell_back(t, snapshot, "malformed JSON")


@pytest.mark.parametrize("doc, fragment", [
    ({"errors": [{"message": "Something went wrong. Please try again later."}]}, "RunPod API returned an error"),
    ({"data": {"gpuTypes": None}}, "no data.gpuTypes list"),
    ([1, 2, 3], "not an object"),
    (answer(), "no GPU types"),
])
def test_graphql_errors_and_wrong_shapes_fall_back(serve, catalog, snapshot, doc, fragment):
    api = serve((200, doc, 0))
    assert_fell_back(P.fetch_live(catalog, url=api.url, **FAST), snapshot, fragment)


def test_partial_answer_updates_only_the_good_parts(serve, catalog, snapshot):
    h100_pcie = {"id": "NVIDIA H100 PCIe", "displayName": "H100 PCIe", "secureCloud": True, "communityCloud": True,
                 "securePrice": "2.49", "communityPrice": 1.79, "secureSpotPrice": None, "communitySpotPrice": None}
    doc = answer(H100_SXM, "garbage", {"id": 42, "securePrice": 1.0}, None, h100_pcie,
                 {"id": "NVIDIA L40S", "securePrice": 0.9})               # flags missing: nothing usable
    api = serve((200, doc, 0))
    t = P.fetch_live(catalog, url=api.url, **FAST)
    assert t.ok and t.source == "live (partial)"
    assert price(t, "h100-sxm", "secure").usd_hr == 3.79
    assert price(t, "h100-pcie", "community").usd_hr == 1.79
    assert price(t, "h100-pcie", "secure") == price(snapshot, "h100-pcie", "secure")  # "2.49" is not a number
    assert price(t, "l40s", "secure") == price(snapshot, "l40s", "secure")
    assert "h100-pcie secure" in t.message and "skipped 4 malformed" in t.message


def test_graphql_error_alongside_data_is_partial(serve, catalog):
    api = serve((200, {"data": {"gpuTypes": [H100_SXM]}, "errors": [{"message": "lowestPrice unavailable"}]}, 0))
    t = P.fetch_live(catalog, url=api.url, **FAST)
    assert t.ok and t.source == "live (partial)" and "returned an error" in t.message
    assert "lowestPrice" not in t.message  # the server's words are not repeated
    assert price(t, "h100-sxm", "community").usd_hr == 2.49


def test_zero_and_absurd_prices_are_rejected(serve, catalog, snapshot):
    l40s = {"id": "NVIDIA L40S", "displayName": "L40S", "secureCloud": True, "communityCloud": True,
            "securePrice": 0.99, "communityPrice": 99999, "secureSpotPrice": float("nan"), "communitySpotPrice": None}
    doc = answer({**H100_SXM, "securePrice": 0}, l40s)
    api = serve((200, json.dumps(doc).encode(), 0))                    # NaN is sent as a bare NaN token
    t = P.fetch_live(catalog, url=api.url, **FAST)
    assert t.ok and t.source == "live (partial)"
    assert price(t, "h100-sxm", "secure") == price(snapshot, "h100-sxm", "secure")
    assert price(t, "h100-sxm", "community").usd_hr == 2.49
    assert price(t, "l40s", "community") == price(snapshot, "l40s", "community")
    assert price(t, "l40s", "spot") == price(snapshot, "l40s", "spot")
    assert price(t, "l40s", "secure").usd_hr == 0.99
    for fragment in ("h100-sxm secure (0)", "l40s community (99999)", "l40s spot (nan)"):
        assert fragment in t.message


def test_only_rejected_prices_fall_back(serve, catalog, snapshot):
    doc = answer({**H100_SXM, "securePrice": 0, "communityPrice": -1, "secureSpotPrice": 500,
                  "communitySpotPrice": True})
    api = serve((200, doc, 0))
    assert_fell_back(P.fetch_live(catalog, url=api.url, **FAST), snapshot, "no usable price", "h100-sxm secure")


def test_connection_refused_falls_back(catalog, snapshot):
    t = P.fetch_live(catalog, url=closed_port_url(), **{**FAST, "retries": 1, "backoff_s": 0.01})
    assert_fell_back(t, snapshot, "could not connect to http://127.0.0.1:", "2 attempts")


def test_key_echoed_by_the_server_is_scrubbed(serve, catalog):
    echo = lambda h: {"errors": [{"message": f"bad token {h.headers['Authorization']}"}]}
    api = serve((200, echo, 0))
    t = P.fetch_live(catalog, api_key=KEY, url=api.url, **FAST)
    assert not t.ok and "returned an error" in t.message and "bad token" not in t.message
    assert KEY not in t.message and KEY not in repr(t)


def test_key_in_a_hand_made_url_is_not_shown(serve, catalog):
    api = serve((500, b"x", 0))
    t = P.fetch_live(catalog, api_key=KEY, url=f"{api.url}?api_key={KEY}", **FAST)
    assert not t.ok and KEY not in t.message and KEY not in repr(t)


def test_key_with_a_newline_is_refused_without_echo(serve, catalog):
    api = serve((200, GOOD, 0))
    t = P.fetch_live(catalog, api_key=KEY + "\n", url=api.url, **FAST)
    assert not t.ok and "API key" in t.message and KEY not in t.message
    assert api.requests == []


# ---------------------------------------------------------------- cache


def test_ttl_cache_serves_repeat_calls_without_a_request(serve, catalog):
    api = serve((200, GOOD, 0))
    kw = dict(url=api.url, timeout_s=2.0, retries=0, ttl_s=60.0)
    first = P.fetch_live(catalog, api_key=KEY, now=NOW, **kw)
    again = P.fetch_live(catalog, api_key=KEY, now=NOW + timedelta(seconds=59), **kw)
    assert again == first and len(api.requests) == 1
    P.fetch_live(catalog, api_key="another-key", now=NOW + timedelta(seconds=59), **kw)   # per key
    assert len(api.requests) == 2
    later = P.fetch_live(catalog, api_key=KEY, now=NOW + timedelta(seconds=61), **kw)     # expired
    assert len(api.requests) == 3 and later.as_of == "2026-11-20T14:03:06Z"


def test_failures_are_cached_briefly(serve, catalog):
    api = serve((500, b"x", 0))
    kw = dict(url=api.url, timeout_s=2.0, retries=0, ttl_s=3600.0)
    P.fetch_live(catalog, now=NOW, **kw)
    P.fetch_live(catalog, now=NOW + timedelta(seconds=P.FAILURE_TTL_S - 1), **kw)
    assert len(api.requests) == 1
    P.fetch_live(catalog, now=NOW + timedelta(seconds=P.FAILURE_TTL_S + 1), **kw)
    assert len(api.requests) == 2


# ---------------------------------------------------------------- custom prices, snapshots, key


def test_with_custom_applies_to_every_tier(snapshot):
    t = S.with_custom(snapshot, {"rtx-4090": 0.55})
    for tier in ("secure", "community", "spot"):
        p = price(t, "rtx-4090", tier)
        assert (p.usd_hr, p.origin, p.source) == (0.55, "custom", "entered by you")
    assert price(t, "h100-sxm", "secure") == price(snapshot, "h100-sxm", "secure")
    assert price(snapshot, "rtx-4090", "secure").origin == "snapshot"     # the input table is untouched


@pytest.mark.parametrize("value", [0, -1.0, 0.0009, 1000.5, 1e6, math.nan, math.inf, "0.5", True])
def test_with_custom_rejects_bad_values_naming_the_gpu(snapshot, value):
    with pytest.raises(ValueError, match="rtx-4090"):
        S.with_custom(snapshot, {"rtx-4090": value})


def test_with_custom_unknown_gpu_suggests(snapshot):
    with pytest.raises(ValueError, match="rtx-4090"):
        S.with_custom(snapshot, {"rtx-4909": 1.0})


def test_write_snapshot_round_trip(serve, catalog, snapshot, tmp_path):
    api = serve((200, GOOD, 0))
    live = P.fetch_live(catalog, api_key=KEY, url=api.url, **FAST)
    path = P.write_snapshot(live, tmp_path)
    assert path.parent == tmp_path and path.name == "runpod-2026-11-20.yaml"
    text = path.read_text()
    assert KEY not in text
    doc = yaml.safe_load(text)
    assert doc["schema_version"] == 1 and doc["date"] == date(2026, 11, 20) and "127.0.0.1" in doc["source"]
    back = S.snapshot_table(catalog, directory=tmp_path)
    assert back.ok and back.as_of == "2026-11-20"
    for gpu, tier, usd in (("h100-sxm", "secure", 3.79), ("h100-sxm", "spot", 1.65), ("b200", "secure", 5.99)):
        p = price(back, gpu, tier)
        assert (p.usd_hr, p.origin, p.date) == (usd, "snapshot", date(2026, 11, 20))
    # a tier the fetch did not cover keeps the older committed price
    assert price(back, "b200", "community") == price(snapshot, "b200", "community")


def test_write_snapshot_refuses_a_fallback(catalog, snapshot, tmp_path):
    t = P.fetch_live(catalog, url=closed_port_url(), **FAST)
    with pytest.raises(ValueError, match="refusing"):
        P.write_snapshot(t, tmp_path)
    with pytest.raises(ValueError):
        P.write_snapshot(snapshot, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_older_snapshot_file_does_not_override_newer_catalog_price(catalog, snapshot, tmp_path):
    (tmp_path / "runpod-2020-01-01.yaml").write_text(
        "schema_version: 1\ndate: 2020-01-01\nsource: old test file\nprices:\n"
        "- id: h100-sxm\n  secure: 9.99\n  community: null\n  spot: null\n"
        "- id: t4\n  secure: 0.31\n  community: null\n  spot: null\n")
    t = S.snapshot_table(catalog, directory=tmp_path)
    assert price(t, "h100-sxm", "secure") == price(snapshot, "h100-sxm", "secure")
    assert price(t, "t4", "secure").usd_hr == 0.31        # no catalog price: the file fills it in
    assert price(t, "t4", "secure").date == date(2020, 1, 1)


@pytest.mark.parametrize("body, record, field", [
    ("schema_version: 1\ndate: 2026-11-20\nsource: s\nprices:\n- id: h100-sxm\n  secure: abc\n", "'h100-sxm'",
     "secure"),
    ("schema_version: 1\ndate: 2026-11-20\nsource: s\nprices:\n- id: h100-sxm\n  secure: 0\n", "'h100-sxm'", "secure"),
    ("schema_version: 1\ndate: 2026-11-20\nsource: s\nprices:\n- id: h100-sxn\n  secure: 3.0\n", "'h100-sxn'", "id"),
    ("schema_version: 1\ndate: 2026-11-20\nsource: s\nprices:\n- id: h100-sxm\n  secur: 3.0\n", "'h100-sxm'", "secur"),
    ("schema_version: 1\nsource: s\nprices:\n- id: h100-sxm\n  secure: 3.0\n", "header", "date"),
    ("schema_version: 2\ndate: 2026-11-20\nsource: s\nprices:\n- id: h100-sxm\n", "-", "schema_version"),
])
def test_bad_snapshot_files_name_file_record_field(catalog, tmp_path, body, record, field):
    path = tmp_path / "runpod-bad.yaml"
    path.write_text(body)
    with pytest.raises(DataFileError) as err:
        S.load_snapshot_file(path, catalog)
    assert (err.value.path, err.value.record, err.value.field) == (str(path), record, field)
    # the table leaves the bad file out, says so, and still prices every GPU from the catalog's listing
    table = S.snapshot_table(catalog, directory=tmp_path)
    assert len(table.problems) == 1 and "runpod-bad.yaml was left out" in table.problems[0]
    assert err.value.problem in table.problems[0] and table.problems[0] in table.message
    assert price(table, "h100-sxm", "secure") == catalog.get("h100-sxm").listed_prices()["secure"]


@pytest.mark.parametrize("cut", [0, 1024])
def test_a_torn_snapshot_is_left_out_and_the_older_one_still_prices(catalog, tmp_path, cut):
    """A full disk left 1,024 bytes of the newest snapshot, a kill -9 left 0: the older file still prices."""
    older = ("schema_version: 1\ndate: 2026-01-02\nsource: s\nprices:\n- id: t4\n  secure: 0.31\n")
    (tmp_path / "runpod-2026-01-02.yaml").write_text(older)
    newest = older.replace("2026-01-02", "2026-11-20").replace("0.31", "0.29") + "".join(
        f"- id: {g}\n  secure: 1.0\n" for g in catalog.ids()[:60])
    (tmp_path / "runpod-2026-11-20.yaml").write_text(newest[:cut])
    table = S.snapshot_table(catalog, directory=tmp_path)
    assert len(table.problems) == 1 and "runpod-2026-11-20.yaml was left out" in table.problems[0]
    assert price(table, "t4", "secure").usd_hr == 0.31


def test_api_key_from_env(monkeypatch):
    monkeypatch.setenv("RUNPOD_API_KEY", f"  {KEY}\n")
    assert P.api_key_from_env() == KEY
    monkeypatch.setenv("RUNPOD_API_KEY", "  ")
    assert P.api_key_from_env() is None
    monkeypatch.delenv("RUNPOD_API_KEY")
    assert P.api_key_from_env() is None


# ---------------------------------------------------------------- command line


def run_cli(*args, key=KEY):
    env = {**os.environ, "RUNPOD_API_KEY": key}
    return subprocess.run([sys.executable, "-m", "planner", "prices", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_refresh_writes_a_snapshot(serve, tmp_path):
    api = serve((200, GOOD, 0))
    before = datetime.now(UTC).date()
    r = run_cli("--refresh", "--url", api.url, "--out", str(tmp_path), "--format", "json")
    after = datetime.now(UTC).date()
    assert r.returncode == 0, r.stderr
    files = list(tmp_path.glob("*.yaml"))
    assert len(files) == 1
    doc = yaml.safe_load(files[0].read_text())
    assert doc["date"] in (before, after) and "127.0.0.1" in doc["source"]
    rows = {row["id"]: row for row in doc["prices"]}
    assert (rows["h100-sxm"]["secure"], rows["h100-sxm"]["community"], rows["h100-sxm"]["spot"]) == (3.79, 2.49, 1.65)
    shown = json.loads(r.stdout)
    assert shown["source"] == "live" and shown["ok"] is True
    assert api.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert KEY not in r.stdout + r.stderr + files[0].read_text()


def test_cli_refresh_failure_exits_2_and_writes_nothing(serve, tmp_path):
    api = serve((401, {"errors": [{"message": "Unauthorized"}]}, 0))
    r = run_cli("--refresh", "--url", api.url, "--out", str(tmp_path))
    assert r.returncode == 2
    assert "no snapshot written" in r.stderr and "refused the API key" in r.stderr
    assert KEY not in r.stdout + r.stderr
    assert list(tmp_path.iterdir()) == []


def test_cli_shows_the_snapshot_offline(snapshot):
    r = run_cli("--format", "json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["source"] == "snapshot" and shown["as_of"] == snapshot.as_of
    row = next(x for x in shown["prices"] if x["gpu"] == "h100-sxm")
    assert row["secure_usd_hr"] == price(snapshot, "h100-sxm", "secure").usd_hr


# ---------------------------------------------------------------- a server that misbehaves on purpose


class RawServer:
    """A TCP server on 127.0.0.1 that answers every connection with `behave(conn)` (stall, drip, flood)."""

    def __init__(self, behave):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/graphql"
        self.stop = threading.Event()

        def loop():
            while not self.stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except OSError:
                    return
                threading.Thread(target=self._serve, args=(conn, behave), daemon=True).start()
        threading.Thread(target=loop, daemon=True).start()

    def _serve(self, conn, behave):
        try:
            conn.recv(65536)
            behave(conn, self.stop)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def _stall(conn, stop):
    stop.wait(30)


def _drip(conn, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
    while not stop.wait(0.1):  # a byte every 0.1 s, well within the 0.5 s read timeout: the answer never ends
        conn.sendall(b" ")


def _flood(conn, stop):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n")
    chunk = b'{"data": {"gpuTypes": [' + b" " * 65536
    for _ in range(800):  # 50 MB
        if stop.is_set():
            return
        conn.sendall(chunk)


class SteppingClock:
    """time.monotonic for the reader that moves `step_s` on every call besides the real time: the reader must give
    up once its clock passes the deadline, however fast or slow this machine runs the test."""

    def __init__(self, step_s: float):
        self.step_s, self.calls = step_s, 0

    def monotonic(self) -> float:
        self.calls += 1
        return time.monotonic() + self.calls * self.step_s


@pytest.mark.parametrize("behave, needle", [(_stall, "timed out"),  # no byte: the 0.5 s read timeout ends it
                                            (_drip, "no complete answer within 1 s"),  # the deadline ends it
                                            (_flood, "larger than 2,000,000 bytes")])  # its Content-Length ends it
def test_a_misbehaving_server_ends_in_a_fallback_that_says_why(behave, needle, catalog, monkeypatch):
    monkeypatch.setattr("planner.clients.http.time", SteppingClock(0.3))
    server = RawServer(behave)
    try:
        table = P.fetch_live(catalog, url=server.url, timeout_s=0.5, retries=0, deadline_s=1.0, ttl_s=0, now=NOW)
    finally:
        server.close()
    assert not table.ok and re.search(needle, table.message), table.message
    assert table.prices["h100-sxm"]["community"].origin == "snapshot"


@pytest.mark.parametrize("echo", [KEY, KEY.upper(), KEY.lower(), "urlencoded", "base64", "base64-shifted"])
def test_the_key_never_comes_back_in_any_form_or_in_part(serve, catalog, echo):
    import base64
    from urllib.parse import quote
    forms = {"urlencoded": quote("k=" + KEY + "/x", safe=""),
             "base64": base64.b64encode(KEY.encode()).decode(),
             "base64-shifted": base64.b64encode(b"Bearer " + KEY.encode()).decode()}
    text = forms.get(echo, echo)
    bad = dict(H100_SXM, id=f"NVIDIA H100 80GB HBM3 {text}", communityPrice=f"{text} not a price")
    s = serve((200, {"data": {"gpuTypes": [bad, {"id": f"unmapped {text}"}]}, "errors": [{"message": f"x {text}"}]},
               0))
    table = P.fetch_live(catalog, api_key=KEY, url=s.url, ttl_s=0, now=NOW)
    shown = table.message + " ".join(table.unmapped)
    for part in (KEY[:6], KEY[-6:], KEY[4:10].upper()):
        assert part.lower() not in shown.lower(), shown
    assert base64.b64encode(KEY.encode()).decode()[:12] not in shown


def test_an_absurd_live_price_is_held_back_and_not_written_without_accept(serve, catalog, tmp_path):
    cheap = dict(H100_SXM, communityPrice=0.011)  # the snapshot has $2.69/h: 245x lower
    s = serve((200, answer(cheap, A100_PCIE), 0))
    table = P.fetch_live(catalog, url=s.url, ttl_s=0, now=NOW)
    assert ("h100-sxm", "community", 0.011) in table.suspect and "held back as suspect" in table.message
    assert table.prices["h100-sxm"]["community"].origin == "snapshot"  # the snapshot price stays in use
    path = P.write_snapshot(table, tmp_path)
    written = {r["id"]: r for r in yaml.safe_load(path.read_text())["prices"]}
    assert written.get("h100-sxm", {}).get("community") is None
    accepted_path = P.write_snapshot(table, tmp_path, accept=True)
    accepted = {r["id"]: r for r in yaml.safe_load(accepted_path.read_text())["prices"]}
    assert accepted["h100-sxm"]["community"] == 0.011


def test_concurrent_callers_share_one_fetch_and_the_page_need_not_wait(serve, catalog):
    s = serve((200, GOOD, 0.5))
    first = P.fetch_live(catalog, url=s.url, now=NOW, wait=False)
    assert first.pending and first.source == "snapshot"  # the page shows the snapshot meanwhile
    results = []
    threads = [threading.Thread(target=lambda: results.append(P.fetch_live(catalog, url=s.url, now=NOW)))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(s.requests) == 1 and all(r.source.startswith("live") for r in results)


def test_the_refresh_button_clears_the_shared_cache_at_most_every_five_minutes():
    assert P.request_refresh(1000.0) is True
    assert P.request_refresh(1000.0 + 60) is False  # anyone pressing again within 5 minutes: no new fetch
    assert P.request_refresh(1000.0 + 301) is True


# ---------------------------------------------------------------- the worker itself stops at the deadline


def test_the_fetch_hangs_up_on_a_dripping_server_at_the_deadline(catalog, monkeypatch):
    """The page stops waiting at the deadline (above); the fetch itself must too, or every retry after a failure
    leaves one more thread reading from a server that drips forever."""
    hung_up = threading.Event()

    def drip(conn, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        try:
            while not stop.wait(0.1):  # every read gets a byte well within its 0.5 s timeout
                conn.sendall(b" ")
        except OSError:  # the client closed the connection
            hung_up.set()

    server = RawServer(drip)
    clock = SteppingClock(0.3)  # the reader's clock passes the 1 s deadline on its fourth byte
    monkeypatch.setattr("planner.clients.http.time", clock)
    try:
        table = P.fetch_live(catalog, url=server.url, timeout_s=0.5, retries=0, deadline_s=1.0, ttl_s=0, now=NOW)
        assert not table.ok and "within 1 s" in table.message, table.message
        assert clock.calls <= 5  # it stopped reading at the deadline
        assert hung_up.wait(60), "the fetch never hung up on the dripping server"
    finally:
        server.close()


def test_a_chunked_answer_is_read_whole(catalog):
    """Real servers send JSON in chunked transfer encoding; the byte-by-byte reader must still get all of it."""
    data = json.dumps(answer(H100_SXM)).encode()

    def chunked(conn, stop):
        conn.settimeout(0.2)  # read the rest of the request first: closing with unread bytes would reset the answer
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(data), 50):
            part = data[i:i + 50]
            conn.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
        conn.sendall(b"0\r\n\r\n")

    server = RawServer(chunked)
    try:
        table = P.fetch_live(catalog, url=server.url, ttl_s=0, **FAST)
    finally:
        server.close()
    assert table.ok and price(table, "h100-sxm", "community").usd_hr == 2.49, table.message


# ---------------------------------------------------------------- server text is plain, short and key-free


def test_server_text_loses_control_and_bidi_characters(serve, catalog):
    evil = "NVIDIA Z\x1b[2J\x1b[31mred\u202eevil\u200b\x00id\nnext"
    s = serve((200, answer(H100_SXM, {"id": evil}), 0))
    table = P.fetch_live(catalog, url=s.url, ttl_s=0, **FAST)
    shown = table.message + "".join(table.unmapped)
    for ch in ("\x1b", "\u202e", "\u200b", "\x00", "\n"):
        assert ch not in shown, repr(shown)
    assert "NVIDIA Z[2J[31mredevilid next" in table.unmapped  # the visible text stays, as plain text


def test_a_key_split_by_control_characters_is_still_masked(serve, catalog):
    split = KEY[:8] + "\x00\u200b" + KEY[8:]
    s = serve((200, answer(H100_SXM, {"id": f"echo {split}"}), 0))
    table = P.fetch_live(catalog, api_key=KEY, url=s.url, ttl_s=0, **FAST)
    shown = table.message + " ".join(table.unmapped)
    assert KEY[:8] not in shown and KEY[8:] not in shown and "echo ***" in shown, shown


def test_long_and_many_unknown_ids_are_cut_after_masking(serve, catalog):
    long_id = "x" * 200 + KEY  # the key lies beyond the cut: masking first must still leave no part of it
    many = [{"id": f"NVIDIA Unknown {i}"} for i in range(P.MAX_UNMAPPED + 50)]
    s = serve((200, answer(H100_SXM, {"id": long_id}, *many), 0))
    table = P.fetch_live(catalog, api_key=KEY, url=s.url, ttl_s=0, **FAST)
    assert all(len(u) <= P.MAX_SERVER_TEXT_CHARS for u in table.unmapped)
    assert len(table.unmapped) == P.MAX_UNMAPPED and f"{P.MAX_UNMAPPED + 51} RunPod types not in the" in table.message
    assert not any(KEY[:4] in u for u in table.unmapped)


def test_type_ids_in_a_message_render_as_plain_text_on_the_page(serve, catalog):
    from markdown_it import MarkdownIt
    from planner.views.format import md_escape
    s = serve((200, answer(H100_SXM, {"id": "**bold** [link](https://evil.example) <b>x</b> :red[y] $x$"}), 0))
    table = P.fetch_live(catalog, url=s.url, ttl_s=0, **FAST)
    html = MarkdownIt("commonmark").render(md_escape(table.message, 600))
    assert "<strong>" not in html and "<a " not in html and "<b>" not in html
    assert "bold" not in table.message and "1 RunPod types not in the catalog" in table.message  # counted only


# ---------------------------------------------------------------- a session's refresh button


def test_a_session_presses_refresh_at_most_once_a_minute_and_everyone_at_most_every_five(monkeypatch):
    monkeypatch.setattr(P, "_LAST_REFRESH_S", None)
    first = P.press_refresh(None, 10_000.0)
    assert first.refreshed and first.message is None and first.session_last_s == 10_000.0
    again = P.press_refresh(first.session_last_s, 10_030.0)  # 30 s later, same session: 30 s to wait
    assert not again.refreshed and "30 s ago" in again.message and "in 30 s" in again.message
    assert again.session_last_s == 10_000.0  # a refused click does not restart the session's minute
    other = P.press_refresh(None, 10_100.0)  # another session, 100 s after the refresh: 200 s to wait
    assert not other.refreshed and "in 200 s" in other.message and other.session_last_s == 10_100.0
    assert P.press_refresh(first.session_last_s, 10_300.0).refreshed  # 300 s after the last refresh


def test_the_snapshot_message_names_its_oldest_date_not_only_its_newest(snapshot):
    """The bug this guards against: 'as of 2026-11-09' on a page whose cheapest price dates from 2025-06-21."""
    days = sorted(p.date for tiers in snapshot.prices.values() for p in tiers.values() if p and p.date)
    assert snapshot.as_of == days[-1].isoformat()
    assert snapshot.message == f"prices from the snapshot, dated {days[0].isoformat()} to {days[-1].isoformat()}"


# ---------------------------------------------------------------- the key can't leak: no server text in a message


def _encodings(key: str) -> dict[str, str]:
    """Ways a hostile or careless server could echo the key that no list of masked forms foresaw."""
    import base64
    import codecs
    return {"hex": key.encode().hex(), "HEX": key.encode().hex().upper(),
            "base32": base64.b32encode(key.encode()).decode(),
            "fullwidth": "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in key),
            "spaced": " ".join(key), "rot13": codecs.encode(key, "rot13"), "reversed": key[::-1],
            "html-entities": "".join(f"&#{ord(c)};" for c in key),
            "split": f"{key[:len(key) // 2]} ... {key[len(key) // 2:]}"}


@pytest.mark.parametrize("encoding", sorted(_encodings(KEY)))
@pytest.mark.parametrize("where", ["error", "error-beside-data", "unmapped-id", "price", "id-of-a-price"])
def test_no_encoding_of_an_echoed_key_reaches_a_message(serve, catalog, encoding, where):
    """The page shows a price message to every session; it says what failed in the planner's own words (HTTP
    status, which field was missing or malformed), so whatever the server sends, the message is the same."""
    echo = {"text": ""}

    def body(handler):
        text = echo["text"]
        if where == "error":
            return {"errors": [{"message": f"bad token {text}"}]}
        if where == "error-beside-data":
            return {"data": {"gpuTypes": [H100_SXM]}, "errors": [{"message": f"bad token {text}"}]}
        if where == "unmapped-id":
            return answer(H100_SXM, {"id": f"NVIDIA {text}"})
        if where == "price":
            return answer(H100_SXM, dict(A100_PCIE, securePrice=f"{text}"))
        return answer(H100_SXM, {"id": text, "securePrice": 1.0})  # a malformed element named by the key
    s = serve((200, body, 0))
    messages = []
    for text in (_encodings(KEY)[encoding], "z" * len(_encodings(KEY)[encoding])):
        echo["text"] = text
        messages.append(P.fetch_live(catalog, api_key=KEY, url=s.url, ttl_s=0, **FAST).message)
    assert messages[0] == messages[1]  # nothing of what the server sent is in it
    encoded = _encodings(KEY)[encoding]
    for i in range(0, len(encoded) - 6):
        assert encoded[i:i + 6].lower() not in messages[0].lower()


def test_a_graphql_error_is_reported_in_our_words(serve, catalog, snapshot):
    s = serve((200, {"errors": [{"message": "Something went wrong <b>x</b>"}]}, 0))
    t = P.fetch_live(catalog, url=s.url, **FAST)
    assert_fell_back(t, snapshot, "RunPod API returned an error")
    assert "Something" not in t.message
