"""Live GPU prices ($/GPU-hour) from RunPod's GraphQL API over the committed snapshot, and snapshot writing.

The only module that talks to the network (and imports requests). `fetch_live` never raises: any failure (no
network, timeout, HTTP error, refused key, malformed answer, absurd values) returns the snapshot with `ok=False`
and a one-line reason for the page. The API key travels only in an `Authorization: Bearer` header; it is never
put in a URL, stored, logged or echoed in a message.

What the page relies on: one total deadline per refresh, which the fetch itself keeps too (it hangs up on a server
that drips); an answer cap of MAX_ANSWER_BYTES; one fetch in flight per key for every caller; `wait=False` returns
the snapshot (`pending=True`) until live prices arrive; `press_refresh` limits a session's button and, across all
sessions, how often RunPod is asked; a live price more than SUSPECT_RATIO from the snapshot is held back.

A message (shown to every session of the page) never carries text the server sent: it says what failed in the
planner's own words (HTTP status, which field was missing or malformed, how many types or prices) and shows only
numbers the planner parsed and formatted itself. No list of the key's encodings can be complete (hex, base32, rot13,
reversed, spaced...), so none is relied on for messages. The unmapped type ids a table keeps (for `planner prices`)
are one printable line each, the key masked in the forms _key_forms knows and cut to MAX_SERVER_TEXT_CHARS; messages
are plain text, so a Markdown page escapes them (planner.views.format.md_escape).
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import re
import threading
import time
import unicodedata
from dataclasses import dataclass, replace
from datetime import date, datetime, UTC
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

import requests
import yaml

from planner.base.files import write_atomic
from planner.base.deadline import call_with_deadline, in_background
from planner.base.safe_parse import ParseError, load_json_text
from planner.base.schema import DataFileError, check_number, normalize_name
from planner.clients.http import TIMED_OUT, TOO_LARGE, TOO_SLOW, BodyError, read_capped
from planner.inputs.catalog import GPU, MAX_USD_HR, MIN_USD_HR, PRICE_TIERS, Catalog, Price, load_catalog
from planner.inputs.price_snapshot import PRICES_DIR, PriceTable, listing_table, snapshot_table

RUNPOD_GRAPHQL_URL = "https://api.runpod.io/graphql"
API_KEY_ENV = "RUNPOD_API_KEY"
FAILURE_TTL_S = 60.0  # a failed fetch is retried after this long, not on every page rerun
DEADLINE_S = 8.0  # one refresh, retries included: the page never waits longer (a drip server can't stretch it)
MAX_ANSWER_BYTES = 2_000_000  # RunPod's gpuTypes answer is ~30 kB; a larger one is not a price list
SUSPECT_RATIO = 3.0  # a live price more than 3x above or below the snapshot's is held back, shown as suspect
MIN_REFRESH_INTERVAL_S = 300.0  # a refresh button clears the shared cache at most this often, whoever presses it
SESSION_REFRESH_INTERVAL_S = 60.0  # one session may press it at most this often (its own clicks, told how long to wait)
MAX_SERVER_TEXT_CHARS = 120  # a string from the server is cut to this after the key is masked (type ids are < 40)
MAX_UNMAPPED = 100  # RunPod lists ~40 types; more unknown ones are counted, not kept

# runpod_api.md §1a; lowestPrice is left out: list prices per tier are what the planner ranks by.
GPU_TYPES_QUERY = ("query GpuTypes { gpuTypes { id displayName memoryInGb secureCloud communityCloud "
                   "securePrice communityPrice secureSpotPrice communitySpotPrice } }")
# tier -> (cloud flag, on-demand price field); spot is the lower of the offered clouds' spot fields.
_ON_DEMAND = {"secure": ("secureCloud", "securePrice"), "community": ("communityCloud", "communityPrice")}
_SPOT = (("secureCloud", "secureSpotPrice"), ("communityCloud", "communitySpotPrice"))


# ---------------------------------------------------------------- secrets


def api_key_from_env() -> str | None:
    """The RunPod API key from $RUNPOD_API_KEY (None when unset or blank); the app passes st.secrets itself."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    return key or None


def _key_forms(api_key: str) -> list[str]:
    """Ways a server may echo the key: as sent, URL-encoded, and base64 (standard or URL-safe) at each of the three
    byte alignments it can have inside a longer encoded text (the characters that depend on key bytes only)."""
    raw = api_key.encode("utf-8")
    forms = {api_key, quote(api_key, safe=""), quote_plus(api_key)}
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw).decode("ascii")
        stable = enc[(0 if pad == 0 else 4):4 * ((pad + len(raw)) // 3)]
        if len(stable) >= 8:
            forms |= {stable, stable.replace("+", "-").replace("/", "_")}
    return sorted((f for f in forms if len(f) >= 4), key=len, reverse=True)


_PLAIN_ASCII = re.compile(r"[\x20-\x7e]*")
_KEY_PARAM = re.compile(r"(?i)(api[_-]?key=)[^&\s'\"]+")
_WHITESPACE_CONTROLS = "\t\n\r\x0b\x0c"


def _printable(text: str) -> str:
    """Text without control, format (bidi overrides, zero-width) or unassigned characters: a server's text can't
    move a terminal's cursor, reorder a line or hide part of itself. Whitespace controls become spaces."""
    if _PLAIN_ASCII.fullmatch(text):  # the usual case, without a look at each character
        return text
    return "".join(" " if ch in _WHITESPACE_CONTROLS else ch for ch in text
                   if ch in _WHITESPACE_CONTROLS or not unicodedata.category(ch).startswith("C"))


@lru_cache(maxsize=4)
def _key_pattern(api_key: str) -> re.Pattern:
    """Every form of the key in one case-insensitive pattern, longest first (one pass over a text)."""
    return re.compile("|".join(re.escape(f) for f in _key_forms(api_key)), re.IGNORECASE)


def _scrub(text: str, api_key: str | None) -> str:
    """One printable line of text with the key masked in every form _key_forms knows (any case), and any
    api_key=... value. Controls go first (a key split by them is still found); called before any truncation, so a
    cut can never leave part of the key behind."""
    text = _KEY_PARAM.sub(r"\1***", _printable(str(text)))
    if api_key:
        text = _key_pattern(api_key).sub("***", text)
    return " ".join(text.split())


def _clip(text: str, limit: int = MAX_SERVER_TEXT_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _scrub_doc(doc: Any, api_key: str | None) -> Any:
    """Every string in a decoded answer scrubbed, then cut to MAX_SERVER_TEXT_CHARS (the answer is size-capped, so
    the walk is bounded)."""
    if isinstance(doc, str):
        return _clip(_scrub(doc, api_key))
    if isinstance(doc, list):
        return [_scrub_doc(x, api_key) for x in doc]
    if isinstance(doc, dict):
        return {_scrub(str(k), api_key): _scrub_doc(v, api_key) for k, v in doc.items()}
    return doc


def _public_url(url: str) -> str:
    """The URL without user info, query or fragment: safe to show and to store as a source."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _key_hash(api_key: str | None) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()[:16] if api_key else ""


# ---------------------------------------------------------------- live fetch

_CACHE: dict[tuple[str, str, str], tuple[datetime, float, PriceTable]] = {}
_CACHE_LOCK = threading.Lock()
_INFLIGHT: dict[tuple[str, str, str], Any] = {}  # cache key -> Future of the fetch in flight
_LAST_REFRESH_S: float | None = None


def clear_cache() -> None:
    """Forget cached live tables (a 'refresh prices' button calls this)."""
    with _CACHE_LOCK:
        _CACHE.clear()


class _FetchError(Exception):
    """A failed fetch; the text is safe to show (no key, no URL query)."""


def _post(url: str, api_key: str | None, timeout_s: float, retries: int, backoff_s: float,
          deadline_s: float = DEADLINE_S) -> Any:
    """POST the gpuTypes query; return the decoded JSON. Retries timeouts, connection errors and 5xx/429, all within
    deadline_s seconds in total: each request's timeout is what is left of it, and reading stops when it runs out
    (a server that drips one byte per read can't hold the connection past it)."""
    end_s = time.monotonic() + deadline_s
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    where = _public_url(url)
    problem = "no attempt made"
    for attempt in range(max(0, int(retries)) + 1):
        if attempt:
            time.sleep(max(0.0, min(backoff_s * 2 ** (attempt - 1), end_s - time.monotonic())))
        left_s = end_s - time.monotonic()
        if left_s <= 0:
            break
        tries = f" ({attempt + 1} attempts)" if attempt else ""
        wait_s = min(timeout_s, left_s)
        try:
            # exception texts from requests carry the URL, so only our own wording leaves this function
            resp = requests.post(url, json={"query": GPU_TYPES_QUERY}, headers=headers, timeout=wait_s, stream=True)
        except requests.Timeout:
            problem = f"RunPod API timed out after {wait_s:.3g} s{tries}"
            continue
        except requests.ConnectionError:
            problem = f"could not connect to {where} (no network, or the server is down){tries}"
            continue
        except requests.RequestException as exc:
            raise _FetchError(f"request to {where} failed ({type(exc).__name__})") from None
        if resp.status_code in (401, 403):
            if api_key:
                raise _FetchError(f"RunPod refused the API key (HTTP {resp.status_code}); check {API_KEY_ENV}")
            raise _FetchError(f"RunPod API needs an API key (HTTP {resp.status_code}); set {API_KEY_ENV}")
        if resp.status_code == 429 or resp.status_code >= 500:
            problem = f"RunPod API answered HTTP {resp.status_code}{tries}"
            continue
        if resp.status_code != 200:
            raise _FetchError(f"RunPod API answered HTTP {resp.status_code}")
        return _read_json(resp, end_s, deadline_s)
    raise _FetchError(problem)


def _read_json(resp, end_s: float = float("inf"), deadline_s: float = DEADLINE_S) -> Any:
    """The answer's JSON, read by planner.clients.http.read_capped: refused past MAX_ANSWER_BYTES (a real gpuTypes
    answer is ~30 kB) or once time.monotonic() passes end_s, the connection closed either way."""
    try:
        body = read_capped(resp, end_s, MAX_ANSWER_BYTES)
    except BodyError as exc:
        raise _FetchError({TOO_LARGE: f"RunPod API answer is larger than {MAX_ANSWER_BYTES:,} bytes; not a price list",
                           TOO_SLOW: f"RunPod API gave no complete answer within {deadline_s:g} s",
                           TIMED_OUT: "RunPod API timed out in the middle of its answer"}.get(
                               exc.why, "RunPod API broke off its answer")) from None
    try:
        return load_json_text(body.decode("utf-8", errors="replace"), "RunPod API answer", MAX_ANSWER_BYTES)
    except (ValueError, ParseError):
        raise _FetchError("RunPod API answered with malformed JSON") from None


def _usd_hr(value: Any) -> float | None:
    """A valid $/h (a number within MIN_USD_HR..MAX_USD_HR), else None."""
    try:
        return check_number(value, MIN_USD_HR, MAX_USD_HR, False, ValueError)
    except ValueError:
        return None


def _rejected(value: Any) -> str:
    """A price the planner refused, as a message shows it: a number as the planner formats it, anything else named
    by its JSON type (its text is the server's)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}"
    return {bool: "true or false", str: "a string", list: "a list", dict: "an object"}.get(type(value), "not a number")


def _catalog_index(catalog: Catalog) -> tuple[dict[str, GPU], dict[str, GPU]]:
    by_type_id = {normalize_name(t): g for g in catalog.gpus if g.runpod for t in g.runpod.gpu_type_ids}
    by_name = {normalize_name(n): g for g in catalog.gpus for n in (g.id, g.name, *g.aliases)}
    return by_type_id, by_name


def _short(items: list[str], n: int = 5) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")


@dataclass
class _Parsed:
    live: dict[str, dict[str, float]]      # gpu_id -> tier -> usd_hr (cheapest RunPod type per GPU)
    unmapped: list[str]
    rejected: list[str]                    # 'gpu tier (value)'
    malformed: int                         # elements or fields of the wrong type
    n_types: int
    error: str = ""                        # a GraphQL error sent alongside data


def parse_gpu_types(doc: Any, catalog: Catalog) -> _Parsed:
    """Read `{"data": {"gpuTypes": [...]}}`; a broken element or field skips only itself. Raises _FetchError."""
    if not isinstance(doc, dict):
        raise _FetchError("RunPod API answered with JSON that is not an object")
    data = doc.get("data")
    types = data.get("gpuTypes") if isinstance(data, dict) else None
    # the error's own text may echo what was sent (the key among it): its presence is all a message says
    error = "RunPod API returned an error (its text is not shown)" if doc.get("errors") else ""
    if not isinstance(types, list):
        if error:
            raise _FetchError(error)
        raise _FetchError("RunPod API answer has no data.gpuTypes list")
    by_type_id, by_name = _catalog_index(catalog)
    out = _Parsed({}, [], [], 0, len(types), error)
    for el in types:
        rid = el.get("id") if isinstance(el, dict) else None
        if not isinstance(rid, str) or not rid.strip():
            out.malformed += 1
            continue
        gpu = by_type_id.get(normalize_name(rid)) or by_name.get(normalize_name(rid))
        if gpu is None:
            out.unmapped.append(rid)
            continue
        flags = {f: el.get(f) for f in ("secureCloud", "communityCloud")}
        if all(v is None for v in flags.values()) or any(v is not None and not isinstance(v, bool)
                                                         for v in flags.values()):
            out.malformed += 1
        offered = {f for f, v in flags.items() if v is True}  # a false flag's price is a placeholder (§3.2)
        found: dict[str, float] = {}
        for tier, (flag, field) in _ON_DEMAND.items():
            if flag in offered and el.get(field) is not None:
                value = _usd_hr(el[field])
                if value is None:
                    out.rejected.append(f"{gpu.id} {tier} ({_rejected(el[field])})")
                else:
                    found[tier] = value
        spots = []
        for flag, field in _SPOT:
            if flag in offered and el.get(field) is not None:
                value = _usd_hr(el[field])
                if value is None:
                    out.rejected.append(f"{gpu.id} spot ({_rejected(el[field])})")
                else:
                    spots.append(value)
        if spots:
            found["spot"] = min(spots)
        tiers = out.live.setdefault(gpu.id, {})
        for tier, value in found.items():
            tiers[tier] = min(value, tiers.get(tier, value))
    out.live = {g: t for g, t in out.live.items() if t}
    return out


def _live_table(base: PriceTable, parsed: _Parsed, url: str, stamp: datetime) -> PriceTable:
    when = stamp.strftime("%Y-%m-%d %H:%M UTC")
    source = f"RunPod GraphQL API gpuTypes ({_public_url(url)}), fetched {when}"
    prices = {g: dict(t) for g, t in base.prices.items()}
    suspect = []
    for gpu_id, tiers in parsed.live.items():
        for tier, usd_hr in tiers.items():
            old = prices.get(gpu_id, {}).get(tier)
            if old is not None and not 1 / SUSPECT_RATIO <= usd_hr / old.usd_hr <= SUSPECT_RATIO:
                suspect.append((gpu_id, tier, usd_hr))  # the snapshot stays in use
                continue
            prices.setdefault(gpu_id, {})[tier] = Price(usd_hr, stamp.date(), source, "live")
    every = tuple(dict.fromkeys(parsed.unmapped))
    unmapped = every[:MAX_UNMAPPED]
    detail = f"{len(parsed.live)} GPUs"
    if unmapped:  # counted, not named: a type id is the server's text
        detail += f"; {len(every)} RunPod types not in the catalog"
    notes = ""
    if parsed.rejected:
        notes += f"; kept the snapshot for rejected prices: {_short(parsed.rejected)}"
    if parsed.malformed:
        notes += f"; skipped {parsed.malformed} malformed part(s) of the answer"
    if parsed.error:
        notes += f"; {parsed.error} beside the prices"
    if suspect:
        notes += ("; held back as suspect (more than 3x from the snapshot, which stays in use): "
                  + _short([f"{g} {t} ${v:g}/h (snapshot ${prices[g][t].usd_hr:g})" for g, t, v in suspect]))
    partial = bool(parsed.rejected or parsed.malformed or parsed.error or suspect)
    return PriceTable(prices, "live (partial)" if partial else "live", stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
                      f"live RunPod prices fetched {when} ({detail}){notes}", unmapped, True, tuple(suspect))


def _fallback(base: PriceTable, reason: str, api_key: str | None) -> PriceTable:
    return replace(base, source="snapshot", ok=False, unmapped=(),
                   message=_scrub(f"{base.message}: {reason}", api_key))


def _fetch(catalog: Catalog, api_key: str | None, url: str, timeout_s: float, retries: int,
           backoff_s: float, stamp: datetime, deadline_s: float = DEADLINE_S) -> PriceTable:
    try:
        base = snapshot_table(catalog)
        base_note = ""
    except DataFileError as exc:  # a broken price file must not take the prices down
        base = listing_table(catalog)
        base_note = f" (ignored data/prices: {exc})"
    if api_key is not None and not re.fullmatch(r"[\x21-\x7e]+", api_key):
        return _fallback(base, "the API key contains spaces or characters that cannot be sent; check "
                               f"{API_KEY_ENV}" + base_note, api_key)
    try:
        doc = call_with_deadline(_post, deadline_s, url, api_key, min(timeout_s, deadline_s), retries, backoff_s,
                                 deadline_s)
        parsed = parse_gpu_types(_scrub_doc(doc, api_key), catalog)
    except TimeoutError:
        return _fallback(base, f"RunPod API gave no complete answer within {deadline_s:g} s" + base_note, api_key)
    except _FetchError as exc:
        return _fallback(base, str(exc) + base_note, api_key)
    if not parsed.live:
        if parsed.rejected:
            reason = f"no usable price in the RunPod answer (rejected: {_short(parsed.rejected)})"
        elif parsed.n_types == 0:
            reason = "RunPod API returned no GPU types"
        else:
            reason = f"none of the {parsed.n_types} RunPod GPU types had a usable price for a catalog GPU"
        return _fallback(base, reason + base_note, api_key)
    table = _live_table(base, parsed, url, stamp)
    return replace(table, message=_scrub(table.message + base_note, api_key))


def fetch_live(catalog: Catalog | None = None, *, api_key: str | None = None, url: str = RUNPOD_GRAPHQL_URL,
               timeout_s: float = 10.0, retries: int = 2, backoff_s: float = 0.5, ttl_s: float = 3600.0,
               now: datetime | None = None, deadline_s: float = DEADLINE_S, wait: bool = True) -> PriceTable:
    """Current RunPod prices over the snapshot; NEVER raises (falls back to the snapshot with the reason).

    Without a key the query is sent anonymously (RunPod's catalog reads work without one in practice,
    runpod_api.md TL;DR). A tier counts only when its cloud flag is true; each value must be a number
    in [0.01, 200] $/h, else that tier keeps the snapshot and the message names it. Results are cached
    per (url, key hash) for ttl_s seconds (failures for at most FAILURE_TTL_S). `now` (UTC) stamps the fetch.
    """
    stamp = (now or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    try:
        catalog = catalog or load_catalog()
        cache_key = (url, _key_hash(api_key), catalog.path)
        with _CACHE_LOCK:
            hit = _CACHE.get(cache_key)
        if hit and 0 <= (stamp - hit[0]).total_seconds() < hit[1]:
            return hit[2]
        with _CACHE_LOCK:  # one fetch in flight per key, shared by every caller (page sessions, threads)
            job = _INFLIGHT.get(cache_key)
            if job is None:
                job = _INFLIGHT[cache_key] = in_background(
                    _fetch_and_cache, cache_key, catalog, api_key, url, timeout_s, retries, backoff_s, stamp,
                    deadline_s, ttl_s)
        if not wait and not job.done():
            return replace(snapshot_table(catalog), ok=True, pending=True,
                           message="live prices are being fetched; the dated snapshot shows until they arrive")
        return job.result(timeout=deadline_s + 2.0)
    except Exception as exc:  # the contract: the page always gets a table, never a traceback
        reason = f"unexpected error ({type(exc).__name__})"  # its text may hold what the server sent
        try:
            return _fallback(snapshot_table(catalog), reason, api_key)
        except Exception:
            return PriceTable({}, "snapshot", "unknown date", f"no prices available: {reason}", (), False)


def _fetch_and_cache(cache_key, catalog, api_key, url, timeout_s, retries, backoff_s, stamp, deadline_s,
                     ttl_s) -> PriceTable:
    try:
        table = _fetch(catalog, api_key, url, timeout_s, retries, backoff_s, stamp, deadline_s)
        if ttl_s > 0:
            with _CACHE_LOCK:
                _CACHE[cache_key] = (stamp, ttl_s if table.ok else min(ttl_s, FAILURE_TTL_S), table)
        return table
    finally:
        with _CACHE_LOCK:
            _INFLIGHT.pop(cache_key, None)


def _refresh_wait_s(now_s: float) -> float:
    """0 after clearing the shared cache (the last refresh, by anyone, is MIN_REFRESH_INTERVAL_S old or more), else
    the seconds until the next refresh may happen (nothing cleared)."""
    global _LAST_REFRESH_S
    with _CACHE_LOCK:
        if _LAST_REFRESH_S is not None and 0 <= now_s - _LAST_REFRESH_S < MIN_REFRESH_INTERVAL_S:
            return MIN_REFRESH_INTERVAL_S - (now_s - _LAST_REFRESH_S)
        _LAST_REFRESH_S = now_s
        _CACHE.clear()
        return 0.0


def request_refresh(now_s: float) -> bool:
    """A refresh button pressed at monotonic time now_s: clear the shared cache unless the last refresh (by anyone)
    was under MIN_REFRESH_INTERVAL_S ago. True when cleared."""
    return _refresh_wait_s(now_s) == 0.0


@dataclass(frozen=True)
class RefreshPress:
    """What one press of a session's refresh button did. refreshed: the shared cache was cleared (the next
    fetch_live starts a fetch); message: plain text for the page (None when refreshed); session_last_s: the
    monotonic time the session keeps as its last counted press."""

    refreshed: bool
    message: str | None
    session_last_s: float | None


def press_refresh(session_last_s: float | None, now_s: float) -> RefreshPress:
    """The refresh button pressed in one session at monotonic time now_s, that session having last pressed it at
    session_last_s (None: never). A session's presses count at most once per SESSION_REFRESH_INTERVAL_S; a counted
    press clears the cache shared by every session at most once per MIN_REFRESH_INTERVAL_S (request_refresh), so
    no visitor can make the planner call RunPod more often than that, whatever the number of sessions."""
    since_s = None if session_last_s is None else now_s - session_last_s
    if since_s is not None and 0 <= since_s < SESSION_REFRESH_INTERVAL_S:
        return RefreshPress(False, f"You refreshed prices {since_s:.0f} s ago; you can refresh again in "
                                   f"{math.ceil(SESSION_REFRESH_INTERVAL_S - since_s)} s.", session_last_s)
    wait_s = _refresh_wait_s(now_s)
    if wait_s:
        return RefreshPress(False, "Live prices were refreshed less than "
                                   f"{MIN_REFRESH_INTERVAL_S / 60:g} minutes ago (by this or another session); these "
                                   f"are current. The next refresh is possible in {math.ceil(wait_s)} s.", now_s)
    return RefreshPress(True, None, now_s)


# ---------------------------------------------------------------- custom prices and snapshots


def write_snapshot(table: PriceTable, directory: str | Path = PRICES_DIR, accept: bool = False) -> Path:
    """Write the table's live prices to DIR/runpod-YYYY-MM-DD.yaml (same day: overwritten); return the path.

    Only origin 'live' tiers are written (kept-snapshot and custom tiers are not re-dated); prices held back as
    suspect (more than SUSPECT_RATIO from the snapshot) only with accept=True. ValueError for a fallback table or
    one without live prices.
    """
    live = {g: {t: p for t, p in tiers.items() if p is not None and p.origin == "live"}
            for g, tiers in table.prices.items()}
    if accept and table.suspect:
        for gpu_id, tier, usd_hr in table.suspect:
            live.setdefault(gpu_id, {})[tier] = Price(usd_hr, date.fromisoformat(table.as_of[:10]),
                                                       "RunPod live price accepted despite the sanity check", "live")
    live = {g: t for g, t in live.items() if t}
    if not table.ok or not live:
        raise ValueError(f"refusing to write a snapshot without live prices ({table.message})")
    sources = sorted({p.source for t in live.values() for p in t.values()})
    day = min(p.date for t in live.values() for p in t.values())
    doc = {"schema_version": 1, "date": day, "fetched_at": table.as_of, "source": "; ".join(sources),
           "prices": [{"id": g, **{t: (tiers[t].usd_hr if t in tiers else None) for t in PRICE_TIERS}}
                      for g, tiers in sorted(live.items())]}
    header = ("# RunPod $/GPU-hour per tier, written by `python -m planner prices --refresh`.\n"
              "# null = not in this fetch (the older snapshot stays in use). Schema: docs/SCHEMAS.md.\n")
    path = Path(directory) / f"runpod-{day.isoformat()}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return path

