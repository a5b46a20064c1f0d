"""One limit on in-flight model calls, shared by every chat in the process, across event loops.

asyncio.Semaphore belongs to one loop; chats may run on the background runner's loop and on a
caller's own loop at once, so this limiter hands slots over with call_soon_threadsafe.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from types import TracebackType

from .._bounds import PROCESS_BOUNDS
from .._errors import ConfigError

DEFAULT_MAX_INFLIGHT = 32
_BOUND = PROCESS_BOUNDS["max_inflight_calls"]


class CallLimiter:
    """A counting semaphore usable from any event loop in any thread."""

    def __init__(self, limit: int) -> None:
        self._lock = threading.Lock()
        self._limit = limit
        self._in_use = 0
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    @property
    def limit(self) -> int:
        """How many calls may be in flight at once."""
        return self._limit

    @property
    def in_use(self) -> int:
        """How many calls hold a slot right now."""
        return self._in_use

    def set_limit(self, limit: int) -> None:
        """Change the limit; waiters get newly free slots at once (ConfigError unless >= 1)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < _BOUND.low:
            raise ConfigError(f"the in-flight call limit must be an integer >= {_BOUND.low:g}, "
                              f"got {limit!r}")
        if limit > _BOUND.high:
            raise ConfigError(f"the in-flight call limit must be an integer <= {_BOUND.high:,g} "
                              f"(its documented maximum), got {limit!r}")
        with self._lock:
            self._limit = limit
        self._wake()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._in_use < self._limit and not self._waiters:
                self._in_use += 1
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                handed_over = future.done() and not future.cancelled()
                if (loop, future) in self._waiters:
                    self._waiters.remove((loop, future))
            if handed_over:
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            self._in_use -= 1
        self._wake()

    def _wake(self) -> None:
        """Hand free slots to waiters, each on its own loop."""
        while True:
            with self._lock:
                if self._in_use >= self._limit or not self._waiters:
                    return
                loop, future = self._waiters.popleft()
                self._in_use += 1
            try:
                loop.call_soon_threadsafe(self._grant, future)
            except RuntimeError:  # that loop is closed: give the slot back
                with self._lock:
                    self._in_use -= 1

    def _grant(self, future: asyncio.Future[None]) -> None:
        if future.done():  # cancelled while the grant was in transit
            self.release()
        else:
            future.set_result(None)

    async def __aenter__(self) -> CallLimiter:
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _default_limit() -> int:
    raw = os.environ.get("GROUPCHAT_MAX_INFLIGHT", "")
    return int(raw) if raw.isdigit() and _BOUND.holds(int(raw)) else DEFAULT_MAX_INFLIGHT


CALL_LIMITER = CallLimiter(_default_limit())


def set_max_inflight_calls(limit: int) -> None:
    """Change the process-wide limit on concurrent model calls (default 32); ConfigError if < 1."""
    CALL_LIMITER.set_limit(limit)


def max_inflight_calls() -> int:
    """The process-wide limit on concurrent model calls, as the Settings page shows it."""
    return CALL_LIMITER.limit
