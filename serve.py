"""The web app as served: `streamlit run serve.py` runs app.py inside an ASGI App with two additions Streamlit's
own server leaves out.

- gzip for every HTTP response, the static bundles included: Streamlit sends its JavaScript uncompressed on purpose
  (its load tests favoured CPU and RSS over bytes: streamlit/web/server/starlette/starlette_app.py), which makes the
  first page weigh ~6 MB; compressed it is ~2 MB, and the bundles are cached for a year after that (immutable).
- the libraries and data files app.py uses are loaded at start, before the first visitor, and frozen out of the
  garbage collector's scans (gc.freeze): a full collection then walks the ~45k objects the pages make, not ~190k,
  so its pause (it holds the GIL, stalling every session) falls from ~150-200 ms to ~40 ms. .streamlit/config.toml
  turns off Streamlit's full collection after every script run for the same reason.
- security headers: the page may load scripts, styles, fonts and images from this server only and connect only back
  to it (no external request can be made from it, whatever a link or an upload holds), and no other site may frame
  it (clickjacking).
"""

from __future__ import annotations

import gc

import altair  # noqa: F401  (app.py's libraries, imported once here so that gc.freeze below covers them)
import pandas  # noqa: F401
import streamlit as st
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware

from planner.inputs.facts import load_facts
from planner.inputs.models import load_models
from ui import answer, sidebar  # noqa: F401  (app.py's parts and the views they use)

GZIP_MIN_BYTES = 1024  # smaller answers gain nothing from compression
GZIP_LEVEL = 6  # zlib's default: ~3x on the bundles at a fraction of level 9's CPU
# Streamlit's frontend needs inline styles (emotion) and eval for Vega's expression parser; everything else is 'self'.
# connect-src 'self' covers the app's own websocket (CSP Level 3: 'self' matches ws:/wss: to the page's host and port,
# as Chromium, Firefox and Safari implement it): page script can connect nowhere else (docs/SECURITY.md)
CONTENT_SECURITY_POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; "
                           "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
                           "connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; "
                           "base-uri 'self'; form-action 'self'")
SECURITY_HEADERS = ((b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
                    (b"x-frame-options", b"DENY"),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"))


class SecurityHeaders:
    """ASGI middleware: adds SECURITY_HEADERS to every HTTP response (websocket traffic passes untouched)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [h for h in SECURITY_HEADERS
                                                                          if h[0] not in names]
            await send(message)

        return await self.app(scope, receive, send_with_headers)


def _load_and_freeze() -> None:
    """Read the data files (cached for the process: app.py gets these objects) and freeze everything loaded so far."""
    load_facts()
    load_models()
    gc.collect()
    gc.freeze()


_load_and_freeze()
app = st.App("app.py", middleware=[Middleware(SecurityHeaders),
                                    Middleware(GZipMiddleware, minimum_size=GZIP_MIN_BYTES,
                                               compresslevel=GZIP_LEVEL)])
