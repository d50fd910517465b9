"""Calls that must not hold up a page: run in a daemon thread, give up waiting after a deadline."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from collections.abc import Callable


def in_background(fn: Callable[..., Any], *args, **kwargs) -> Future:
    """Run fn in a daemon thread; the Future holds its result or exception. An abandoned call never delays exit."""
    done: Future = Future()

    def run() -> None:
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to whoever waits on the Future
            done.set_exception(exc)
    threading.Thread(target=run, name=f"bg-{getattr(fn, '__name__', 'call')}", daemon=True).start()
    return done


def call_with_deadline(fn: Callable[..., Any], deadline_s: float, *args, **kwargs) -> Any:
    """fn(*args, **kwargs), or TimeoutError once deadline_s seconds have passed (the call is left to finish alone)."""
    try:
        return in_background(fn, *args, **kwargs).result(timeout=deadline_s)
    except FutureTimeout:
        raise TimeoutError(f"no answer within {deadline_s:g} s") from None
