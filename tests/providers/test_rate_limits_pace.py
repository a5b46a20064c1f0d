"""Limits pace, they never fail a bid (issue 42): an rpm limit is waited for before a request's
own timeout starts, so a sweep over its limit slows down, every bid answered, no window over it.

The process-wide in-flight call limit holds across event loops and survives cancellation.

No upper bound on time: an injected clock, or the server's arrival times (lower bounds, counts).
Private imports (`providers._deployments`, `_ratelimit`, `_retries`, `_bodies`, `_limiter`):
units or test hooks with no public name.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    max_inflight_calls,
    set_max_inflight_calls,
    set_rate_limit,
)
from groupchat_core.providers import _deployments as deployments
from groupchat_core.providers import _ratelimit as ratelimit
from groupchat_core.providers import _retries as retries
from groupchat_core.providers._bodies import REQUEST_DEADLINE
from groupchat_core.providers._limiter import CallLimiter
from groupchat_core.providers._ratelimit import RATE_LIMITS, WindowLimit
from groupchat_core.testing import FakeOpenAIServer, tool_call


def most_in_a_window(times: list[float], window: float) -> int:
    """The most of `times` that any half-open span [t, t + window) holds."""
    ordered = sorted(times)
    return max(sum(1 for u in ordered[i:] if u < t + window) for i, t in enumerate(ordered))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The window's sleep on a fake clock: `clock[0]`, moved on by each sleep."""
    now = [100.0]

    async def sleep(delay: float) -> None:
        now[0] += delay

    monkeypatch.setattr(ratelimit, "asyncio", SimpleNamespace(
        sleep=sleep, CancelledError=asyncio.CancelledError,
        get_running_loop=asyncio.get_running_loop))
    return now


def test_a_window_limit_lets_a_permit_go_again_a_window_after_its_request_ended(
        clock: list[float]) -> None:
    limit = WindowLimit(5, 1.0, lambda: clock[0])

    async def twelve() -> list[float]:
        starts = []
        for _ in range(12):  # one after another, each request ending as it starts
            await limit.acquire()
            starts.append(clock[0])
            limit.release()
        return starts

    starts = asyncio.run(twelve())
    assert starts == pytest.approx([100.0] * 5 + [101.0] * 5 + [102.0] * 2)
    assert most_in_a_window(starts, 1.0) == 5


def test_a_long_request_holds_its_permit_until_it_ends(clock: list[float]) -> None:
    """One permit: the second caller waits for the first request to end, then a window."""
    limit = WindowLimit(1, 1.0, lambda: clock[0])

    async def two() -> float:
        await limit.acquire()
        second = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)  # the second caller queues (no permit is free)
        assert not second.done()
        clock[0] += 5.0  # the first request runs 5 s
        limit.release()
        await second
        return clock[0] - 100.0

    assert asyncio.run(two()) == pytest.approx(6.0)  # ended at 105, free again at 106


@pytest.fixture
def routes_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Deployments in force for this test's task, rpm counted per 0.5 s window."""
    monkeypatch.setattr(deployments, "RPM_WINDOW_S", 0.5)
    monkeypatch.setattr(deployments, "_pacers", {})

    def use(items: list[dict[str, Any]]) -> Any:
        return deployments.routed_by(deployments.routes_for({"openai/fake": items}))

    yield use


def test_the_request_timeout_starts_after_the_limiter_grants(
        routes_on: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """1 request per 0.5 s, 0.2 s timeouts: the second waits 0.5 s, then has its whole 0.2 s."""
    sent: list[tuple[float, float]] = []  # (loop time when sent, that request's deadline)

    async def answered(self: Any, request: dict[str, Any]) -> str:
        sent.append((asyncio.get_running_loop().time(), REQUEST_DEADLINE.get() or 0.0))
        return "reply"

    monkeypatch.setattr(deployments.Routes, "call", answered)
    kwargs = {"model": "openai/fake", "messages": [], "timeout": 0.2}

    async def two() -> list[Any]:
        start = asyncio.get_running_loop().time()
        with routes_on([{"name": "a", "api_base": "http://127.0.0.1:9/v1", "rpm": 1}]):
            got = [await retries.call_with_retries(kwargs, retries.Attempts())
                   for _ in range(2)]
        return [start, *got]

    start, *replies = asyncio.run(two())
    assert replies == ["reply", "reply"]  # no Timeout: the wait was not the request's time
    (_, first_deadline), (second_at, second_deadline) = sent
    assert second_at - start >= 0.5  # it did wait for the limit...
    # ...and its 0.2 s began after the wait (had the wait counted: start + 0.2)
    assert second_deadline >= start + 0.5 + 0.2
    assert second_deadline - first_deadline >= 0.5


def one_turn_of_three(server: FakeOpenAIServer, model: str,
                      bid_timeout: float | None = 120.0) -> list[Any]:
    """Three agents bid at once on `model`, each request with a 0.5 s timeout and no retry."""
    agents = [Agent(agent_name=n, model_name=f"openai/{model}", api_base=server.base_url,
                    api_key="sk-local", timeout=0.5, num_retries=0) for n in "ABC"]
    chat = GroupChat(agents=agents, max_loops=2, bid_cache=False, bid_timeout=bid_timeout)
    chat.run("t")
    return list(chat.last_run.bids)


@pytest.fixture
def one_in_flight() -> Iterator[None]:
    before = max_inflight_calls()
    set_max_inflight_calls(1)
    yield
    set_max_inflight_calls(before)


@pytest.mark.parametrize("bid_timeout", [120.0, 1.0])
def test_a_process_wide_rpm_wait_is_neither_the_requests_time_nor_the_bids(
        bid_timeout: float) -> None:
    """rpm 60 (one at once, then one a second): the third bid waits 2 s, four times its 0.5 s
    request timeout and (at 1.0) twice its bid deadline, and still answers."""
    RATE_LIMITS.clear()
    set_rate_limit("openai/slow", rpm=60)
    try:
        with FakeOpenAIServer() as server:
            server.script("slow", [tool_call(0.9, "first"), *[tool_call(0.0, "")] * 2])
            start = time.monotonic()  # no permit is granted before this (the server's clock)
            bids = one_turn_of_three(server, "slow", bid_timeout=bid_timeout)
            times = sorted(r.received_at for r in server.requests_for("slow"))
    finally:
        RATE_LIMITS.clear()
    assert [b.error for b in bids] == [None] * 3
    assert times[2] - start >= 2.0  # it did wait for the limit


def test_a_wait_for_the_in_flight_limit_is_not_the_requests_time(one_in_flight: None) -> None:
    """Replies held 0.3 s, one at a time: the third bid waits 0.6 s (> its 0.5 s) and answers."""
    with FakeOpenAIServer() as server:
        server.script("held", [tool_call(0.9, "first", latency=0.3),
                               *[tool_call(0.0, "", latency=0.3)] * 2])
        bids = one_turn_of_three(server, "held")
        times = sorted(r.received_at for r in server.requests_for("held"))
    assert [b.error for b in bids] == [None] * 3
    assert times[2] - times[0] >= 0.6 - 0.01  # one at a time: the third waited for two


def test_a_bid_slower_than_its_deadline_still_fails_after_a_wait(one_in_flight: None) -> None:
    """Only the queue is not counted: a reply held 0.8 s against bid_timeout 0.5 s fails."""
    with FakeOpenAIServer() as server:
        server.script("late", [tool_call(0.9, "first", latency=0.8)] * 3)
        agents = [Agent(agent_name=n, model_name="openai/late", api_base=server.base_url,
                        api_key="sk-local", timeout=5.0, num_retries=0) for n in "AB"]
        chat = GroupChat(agents=agents, max_loops=1, bid_cache=False, bid_timeout=0.5)
        chat.run("t")
    errors = [b.error or "" for b in chat.last_run.bids]
    assert all("no bid within 0.5 s" in e for e in errors), errors


def test_a_request_paced_for_its_rpm_holds_no_in_flight_slot(routes_on: Any,
                                                             one_in_flight: None) -> None:
    """One slot, 1 request per 0.5 s: while P2 waits for its window, unpaced U is sent first."""
    sent: list[str] = []

    async def send(litellm: Any, kwargs: dict[str, Any]) -> str:
        sent.append(kwargs["tag"])
        return "reply"

    async def three() -> None:
        with routes_on([{"name": "a", "api_base": "http://127.0.0.1:9/v1", "rpm": 1}]):
            paced = {"model": "openai/fake", "messages": []}
            await retries.call_with_retries({**paced, "tag": "P1"}, retries.Attempts(), send)
            second = asyncio.ensure_future(retries.call_with_retries(
                {**paced, "tag": "P2"}, retries.Attempts(), send))
            await asyncio.sleep(0.05)  # P2 is waiting for its window now
            assert not second.done()
            other = {"model": "openai/other", "messages": [], "tag": "U"}
            await retries.call_with_retries(other, retries.Attempts(), send)
            await second

    asyncio.run(three())
    assert sent == ["P1", "U", "P2"]


def test_a_model_with_a_deployment_without_rpm_is_not_paced() -> None:
    items = deployments.parse_deployments({"m": [{"name": "a", "rpm": 5}, {"name": "b"}]})["m"]
    assert deployments.group_rpm(items) is None  # b takes what a cannot
    both = deployments.parse_deployments({"m": [{"name": "a", "rpm": 5}, {"name": "b", "rpm": 7}]})
    assert deployments.group_rpm(both["m"]) == 12


def test_a_sweep_over_its_deployments_rpm_slows_down_and_every_bid_answers(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four cells of two agents, 24 requests on deployments taking 5 per 1 s window, no retry:
    before, later bids failed ("No deployments available"); now every bid answers."""
    from groupchat_core.store import RunStore, dispose_engines
    from groupchat_core.sweeps import parse_sweep, run_sweep

    monkeypatch.setattr(deployments, "RPM_WINDOW_S", 1.0)
    monkeypatch.setattr(deployments, "_pacers", {})
    count = itertools.count()
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        for server in (a, b):  # a new message every time: a chat never stops on a repeat
            server.set_responder(None, lambda body: tool_call(0.6, f"Point {next(count)}."))
        agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
                   "api_base": "http://127.0.0.1:9/v1", "num_retries": 0}
                  for n in ("Ann", "Bob")]
        sweep = parse_sweep({
            "name": "paced", "base": {"agents": agents, "max_loops": 4,
                                      "recency_penalty": 0.0},
            "grid": {"threshold": [0.1, 0.2]}, "tasks": ["Go"], "repeats": 2, "bid_cache": False,
            "concurrency": 2,
            "deployments": {"openai/fake": [{"name": "a", "api_base": a.base_url, "rpm": 2},
                                            {"name": "b", "api_base": b.base_url, "rpm": 3}]}})
        store = RunStore(f"sqlite:///{tmp_path}/paced.db")
        outcome = run_sweep(sweep, store)
        arrivals = sorted(r.received_at for r in a.requests + b.requests)
        runs = store.list_runs(sweep_id=outcome.sweep_id)
        bids = store.bids(list(runs["run_id"]))
        dispose_engines()
    assert outcome.status == "finished" and outcome.cells_done == 4, outcome.reason
    assert set(runs["status"]) == {"finished"}
    assert len(bids) == 24 and bids["error"].isna().all()  # every bid answered
    assert len(arrivals) == 24
    # a permit comes back a window after its request ended: the server never saw more than
    # 5 in any 1 s, and 24 at 5 a window span at least 4 windows (both from its own clock)
    assert most_in_a_window(arrivals, 1.0) == 5
    assert max(arrivals) - min(arrivals) >= 4 * 1.0


# --- the in-flight call limit ------------------------------------------------------------------


def test_the_in_flight_limit_holds_across_two_loops_in_two_threads() -> None:
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


def test_cancelled_waiters_do_not_leak_slots() -> None:
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


def test_the_process_wide_limit_is_a_positive_integer_set_through_the_public_api(
        one_in_flight: None) -> None:
    with pytest.raises(ConfigError, match="integer >= 1, got 0"):
        CallLimiter(2).set_limit(0)
    set_max_inflight_calls(4)
    assert max_inflight_calls() == 4
    with pytest.raises(ConfigError):
        set_max_inflight_calls(True)  # a bool is not a count
    assert max_inflight_calls() == 4
