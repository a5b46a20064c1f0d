"""Waiting for a condition that must come: the suite's one hang guard.

A test waits for what must hold (a run recorded, a server healthy), never for a moment to pass,
and asserts no duration. HANG_GUARD_S only turns a hang into a failure that names what never
came, instead of CI's 90-minute limit: it is far above any wait on the slowest machine, so it
is not a speed claim (CONTRIBUTING.md, "Time in tests").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

HANG_GUARD_S = 300.0
HANG_GUARD_MS = int(HANG_GUARD_S * 1000)  # the same guard for Playwright's waits


def eventually(check: Callable[[], T | None], what: str, *, step: float = 0.05,
               alive: Callable[[], str | None] = lambda: None,
               detail: Callable[[], str] = lambda: "") -> T:
    """`check()`'s first truthy value, polled every `step` s. `alive()` returns a reason when
    waiting is pointless (a child process exited) and fails at once with it; `detail()` adds
    what was last seen to a hang's message."""
    guard = time.monotonic() + HANG_GUARD_S
    while True:
        found = check()
        if found:
            return found
        died = alive()
        if died:
            pytest.fail(f"{what} never happened: {died}")
        if time.monotonic() > guard:
            pytest.fail(f"{what} never happened (hang guard: {HANG_GUARD_S:.0f} s){detail()}")
        time.sleep(step)


def retrying(attempt: Callable[[], T], what: str,
             recover: Callable[[], None] = lambda: None) -> T:
    """`attempt()`'s result once it stops raising; `recover()` between tries. For a browser step
    a rerun can undo (a list closed by a redraw): retried until it sticks, under the guard."""
    guard = time.monotonic() + HANG_GUARD_S
    while True:
        try:
            return attempt()
        except Exception as exc:  # playwright's TimeoutError / AssertionError: not yet
            if time.monotonic() > guard:
                raise AssertionError(f"{what} never succeeded (hang guard)") from exc
            recover()
