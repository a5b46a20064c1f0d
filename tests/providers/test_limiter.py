"""The process-wide in-flight call limit holds across event loops and survives cancellation.

Private imports (`providers._limiter`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from groupchat_core import ConfigError, max_inflight_calls, set_max_inflight_calls
from groupchat_core.providers._limiter import CallLimiter


def test_limit_holds_across_two_loops_in_two_threads():
    limiter = CallLimiter(3)
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    async def call() -> None:
        async with limiter:
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(0.01)
            with lock:
                state["now"] -= 1

    async def many() -> None:
        await asyncio.gather(*(call() for _ in range(20)))

    threads = [threading.Thread(target=asyncio.run, args=(many(),)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["peak"] == 3 and limiter.in_use == 0


def test_cancelled_waiters_do_not_leak_slots():
    limiter = CallLimiter(1)

    async def main() -> None:
        await limiter.acquire()
        waiters = [asyncio.ensure_future(limiter.acquire()) for _ in range(5)]
        await asyncio.sleep(0)
        for w in waiters[:4]:
            w.cancel()
        limiter.release()
        await waiters[4]
        assert limiter.in_use == 1
        limiter.release()

    asyncio.run(main())
    assert limiter.in_use == 0


def test_limit_must_be_a_positive_integer():
    with pytest.raises(ConfigError, match="integer >= 1, got 0"):
        CallLimiter(2).set_limit(0)


def test_the_process_wide_limit_is_read_and_set_through_the_public_api():
    before = max_inflight_calls()
    try:
        set_max_inflight_calls(before + 3)
        assert max_inflight_calls() == before + 3
        with pytest.raises(ConfigError):
            set_max_inflight_calls(True)  # a bool is not a count
        assert max_inflight_calls() == before + 3
    finally:
        set_max_inflight_calls(before)
