"""Reading an HTTP answer whose server we do not trust: a size cap checked before and while the body is read, and
one deadline for the whole read (a server that drips one byte at a time can't hold the connection past it)."""

from __future__ import annotations

import time

import requests
import urllib3


class BodyError(Exception):
    """An answer that could not be read whole; `why` is one of TOO_LARGE, TOO_SLOW (the deadline passed), TIMED_OUT
    (one read waited past its timeout), BROKEN (our words, never the server's)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


TOO_LARGE, TOO_SLOW, TIMED_OUT, BROKEN = "too large", "too slow", "timed out", "broken off"


def declared_size(resp: requests.Response) -> int | None:
    """The Content-Length the server declared, or None (absent or not a number)."""
    text = resp.headers.get("Content-Length", "")
    return int(text) if text.isdigit() and len(text) < 19 else None


def read_capped(resp: requests.Response, end_s: float, max_bytes: int) -> bytes:
    """The body of a streamed response (requests' stream=True), at most max_bytes; BodyError once time.monotonic()
    passes end_s or the body grows past max_bytes. Reads with read1 (one socket read per call) so that the clock is
    checked on every byte a slow server sends. The connection is closed either way."""
    body = bytearray()
    raw = resp.raw
    read = getattr(raw, "read1", None) or (lambda n, decode_content: raw.read(4096, decode_content=decode_content))
    try:
        size = declared_size(resp)
        if size is not None and size > max_bytes:
            raise BodyError(TOO_LARGE)
        while chunk := read(65536, decode_content=True):
            body += chunk
            if len(body) > max_bytes:
                raise BodyError(TOO_LARGE)
            if time.monotonic() > end_s:
                raise BodyError(TOO_SLOW)
    except (urllib3.exceptions.ReadTimeoutError, requests.Timeout, TimeoutError):
        raise BodyError(TIMED_OUT) from None
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError):
        raise BodyError(BROKEN) from None
    finally:
        resp.close()
    return bytes(body)
