"""Optional per-model request and token rates, shared by every chat in the process.

Why: a provider's rate limit (say 30 requests a minute on a free tier) is per key, so every
chat and sweep cell in the process shares it. Without a limit of our own, concurrent bids
burst past it and come back as 429s, each retried. `set_rate_limit("groq/llama3", rpm=30)`
spaces that model's requests instead; limits are off until set.

A limit is a token bucket that holds one second's worth of its rate (at least one request, or
one request's tokens): bursts are as small as a provider's own per-second enforcement, and a
steady stream is spaced evenly. Each request reserves its share under a lock and then sleeps
its own wait on its own event loop, so the buckets work across the background loop and any
caller's loop at once (as the in-flight limiter in _limiter.py does).

A 429 that says when to come back (Retry-After) pauses that model for every chat in the
process, limit or not (`pause`), so concurrent bids do not each collect their own 429.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from .._errors import ConfigError


@dataclass
class _Bucket:
    """Units (requests or tokens) refilled at `rate` per second up to `capacity`."""

    rate: float
    capacity: float
    level: float
    updated: float

    def reserve(self, cost: float, now: float) -> float:
        """Take `cost` units (going into debt if need be); seconds until they are covered."""
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now
        self.level -= cost
        return 0.0 if self.level >= 0 else -self.level / self.rate

    def refund(self, cost: float) -> None:
        self.level = min(self.capacity, self.level + cost)


def _bucket(per_minute: float, min_capacity: float, now: float) -> _Bucket:
    rate = per_minute / 60.0
    capacity = max(rate, min_capacity)  # one second's worth, at least one request
    return _Bucket(rate, capacity, capacity, now)


@dataclass
class _ModelLimit:
    rpm: float | None
    tpm: float | None
    requests: _Bucket | None
    tokens: _Bucket | None


class RateLimits:
    """Per-model buckets and pauses; thread-safe, usable from any event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._limits: dict[str, _ModelLimit] = {}
        self._paused_until: dict[str, float] = {}

    def set(self, model: str, rpm: float | None = None, tpm: float | None = None) -> None:
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value <= 0):
                raise ConfigError(f"{name} must be a positive number per minute or None, got "
                                 f"{value!r}")
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("set_rate_limit needs a model name as the agents use it, e.g. "
                             "'gpt-4o-mini'")
        now = time.monotonic()
        with self._lock:
            if rpm is None and tpm is None:
                self._limits.pop(model, None)
                return
            self._limits[model] = _ModelLimit(
                rpm, tpm,
                None if rpm is None else _bucket(rpm, 1.0, now),
                None if tpm is None else _bucket(tpm, 1.0, now))

    def limit(self, model: str) -> tuple[float | None, float | None]:
        """The (rpm, tpm) set for a model; (None, None) when it is not limited."""
        with self._lock:
            found = self._limits.get(model)
        return (None, None) if found is None else (found.rpm, found.tpm)

    def wants_tokens(self, model: str) -> bool:
        """Whether a request must say how many tokens it will use (a tpm limit is set)."""
        with self._lock:
            found = self._limits.get(model)
        return found is not None and found.tokens is not None

    def clear(self) -> None:
        with self._lock:
            self._limits.clear()
            self._paused_until.clear()

    def pause(self, model: str, seconds: float) -> None:
        """No request for `model` starts for `seconds` (a provider asked us to wait)."""
        until = time.monotonic() + max(0.0, seconds)
        with self._lock:
            self._paused_until[model] = max(until, self._paused_until.get(model, 0.0))

    def _reserve(self, model: str, tokens: int) -> tuple[float, _ModelLimit | None]:
        now = time.monotonic()
        with self._lock:
            wait = max(0.0, self._paused_until.get(model, 0.0) - now)
            found = self._limits.get(model)
            if found is not None:
                if found.requests is not None:
                    wait = max(wait, found.requests.reserve(1.0, now))
                if found.tokens is not None:
                    tokens = min(tokens, int(found.tokens.capacity * 60))  # never wait forever
                    wait = max(wait, found.tokens.reserve(float(tokens), now))
        return wait, found

    async def acquire(self, model: str, tokens: int = 0) -> int:
        """Wait until `model` may take one more request of about `tokens` tokens.

        Returns the tokens reserved, to hand to `settle` with the real count later. A caller
        cancelled while waiting gets its reservation back.
        """
        wait, found = self._reserve(model, tokens)
        if wait <= 0:
            return tokens
        try:
            await asyncio.sleep(wait)
        except asyncio.CancelledError:
            with self._lock:
                if found is not None and found.requests is not None:
                    found.requests.refund(1.0)
                if found is not None and found.tokens is not None:
                    found.tokens.refund(float(tokens))
            raise
        return tokens

    def settle(self, model: str, reserved: int, used: int | None) -> None:
        """Correct a token reservation by what the request really used (when reported)."""
        if used is None or used == reserved:
            return
        with self._lock:
            found = self._limits.get(model)
            if found is not None and found.tokens is not None:
                found.tokens.refund(float(reserved - used))


RATE_LIMITS = RateLimits()


class WindowLimit:
    """At most `limit` requests in any `window` seconds, as the server sees them, on `clock`.

    Why counted from each request's end: a granted request may leave late (litellm's Router
    held a batch up to 3.8 s on a busy loop), so grants spaced by the window still reached the
    server 28 in one minute at rpm 20. Here a permit is held from its grant until the request
    ends and comes back `window` seconds after that, so request k + limit starts no sooner
    than request k ended plus the window: never more than `limit` arrive in any window. Each
    caller waits in order (no one is refused); the clock is injectable."""

    def __init__(self, limit: int, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if limit < 1 or not window > 0:
            raise ConfigError(f"a window limit needs limit >= 1 and window > 0, got {limit!r} "
                              f"per {window!r} s")
        self.limit, self.window, self.clock = limit, window, clock
        self._lock = threading.Lock()
        self._free: list[float] = [-math.inf] * limit  # a heap: when each idle permit is due
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    async def acquire(self) -> float:
        """Wait for a permit (hand it back with `release` when the request ends); the seconds
        waited."""
        start = self.clock()
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:  # take a permit, or queue for one, in one step
                if self._free:
                    due = heapq.heappop(self._free)
                    break
                future: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, future))
            try:  # every permit is held by a request in flight
                await future
            finally:
                with self._lock:
                    if (loop, future) in self._waiters:
                        self._waiters.remove((loop, future))
        wait = due - self.clock()
        if wait > 0:
            try:
                await asyncio.sleep(wait)
            except asyncio.CancelledError:
                self._give(due)  # unused: due as it was
                raise
        return max(0.0, self.clock() - start)

    def release(self) -> None:
        """The request ended: its permit is due again one window from now."""
        self._give(self.clock() + self.window)

    def _give(self, due: float) -> None:
        with self._lock:
            heapq.heappush(self._free, due)
            waiter = self._waiters.popleft() if self._waiters else None
        if waiter is not None:
            loop, future = waiter
            try:
                loop.call_soon_threadsafe(_wake, future)
            except RuntimeError:  # that loop is closed
                pass


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def set_rate_limit(model: str, *, rpm: float | None = None, tpm: float | None = None) -> None:
    """Limit one model's requests (rpm) and/or tokens (tpm) per minute, for the whole process.

    `model` is the model name as agents use it (`"gpt-4o-mini"`, `"openai/local"`). A request's
    tokens are its prompt estimate plus the agent's max_tokens, corrected by the reported usage
    once the reply arrives. `set_rate_limit(model)` with neither removes the limit.
    """
    RATE_LIMITS.set(model, rpm, tpm)
