"""Time a bid spends queued for a limit is not the bid's own time: limits pace, never fail.

A bid's deadline (`bid_timeout`, an asyncio timeout in the engine) stops while one of its
requests waits for a per-model rate limit, a deployment's rpm or the in-flight cap, and runs
again when the request may go: a sweep asking for more than its limits slows down and finishes
instead of failing its bids. The engine hands the bid's timeout to `pausing`; the limits wrap
their waits in `queued`; the retry policy reads `queued_seconds` to judge a retry against the
same moved deadline. Outside a bid (no deadline) `queued` only waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar


class PausableDeadline:
    """An asyncio timeout that does not run while its bid is queued for a limit."""

    def __init__(self, timeout: asyncio.Timeout) -> None:
        self._timeout = timeout
        self._depth = 0
        self._left: float | None = None
        self._since = 0.0
        self.queued_s = 0.0

    def pause(self) -> None:
        self._depth += 1
        if self._depth > 1:
            return
        now = asyncio.get_running_loop().time()
        when = self._timeout.when()
        self._left = None if when is None else when - now
        self._since = now
        if not self._timeout.expired():
            self._timeout.reschedule(None)

    def resume(self) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        now = asyncio.get_running_loop().time()
        self.queued_s += now - self._since
        if self._left is not None and not self._timeout.expired():
            self._timeout.reschedule(now + self._left)


_CURRENT: ContextVar[PausableDeadline | None] = ContextVar("groupchat_bid_deadline",
                                                            default=None)


@contextmanager
def pausing(timeout: asyncio.Timeout) -> Iterator[PausableDeadline]:
    """Within this block, the current task's limit waits pause `timeout` (a bid's deadline)."""
    deadline = PausableDeadline(timeout)
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


@asynccontextmanager
async def queued() -> AsyncIterator[None]:
    """Wrap a wait for a limit: the current bid's deadline stands still for its length."""
    deadline = _CURRENT.get()
    if deadline is None:
        yield
        return
    deadline.pause()
    try:
        yield
    finally:
        deadline.resume()


def queued_seconds() -> float:
    """Seconds the current bid has waited for limits so far (0.0 outside a bid)."""
    deadline = _CURRENT.get()
    return 0.0 if deadline is None else deadline.queued_s
