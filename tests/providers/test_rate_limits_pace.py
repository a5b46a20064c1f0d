"""Retry-After is honoured (bounded, within the bid's deadline); rate limits pace and never fail
a bid (issue 42): a wait for a limit is not the request's time, so a sweep over its rpm slows
down, every bid answered; the in-flight call limit holds across loops and cancellation.

No upper bound on time: the waits the engine chose (`Waits`, an injected clock), or the server's
arrival times (lower bounds, counts). Private imports (`providers._deployments`, `_ratelimit`,
`_retries`, `_call_errors`, `_bodies`, `_limiter`): units or test hooks with no public name.
"""

from __future__ import annotations

import asyncio
import email.utils
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
from groupchat_core.providers import _call_errors as call_errors
from groupchat_core.providers import _deployments as deployments
from groupchat_core.providers import _ratelimit as ratelimit
from groupchat_core.providers import _requests as request_layer
from groupchat_core.providers import _retries as retries
from groupchat_core.providers._bodies import REQUEST_DEADLINE
from groupchat_core.providers._limiter import CallLimiter
from groupchat_core.providers._ratelimit import RATE_LIMITS, RateLimits, WindowLimit
from groupchat_core.testing import FakeOpenAIServer, error, tool_call

KEY = "sk-local-dummy-key"


@pytest.fixture
def server(server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """The shared fake server (conftest.py), no rate limits set around it."""
    RATE_LIMITS.clear()
    yield server
    RATE_LIMITS.clear()


def agent(srv: FakeOpenAIServer, name: str, model: str, **kw: Any) -> Agent:
    return Agent(agent_name=name, model_name=f"openai/{model}", api_base=srv.base_url,
                 api_key=KEY, **kw)


class Waits:
    """A spy on every wait the engine chose (retry sleeps, Retry-After pauses, limiter sleeps)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.retries: list[float] = []
        self.pauses: list[tuple[str, float]] = []
        self.limiter: list[float] = []
        monkeypatch.setattr(retries, "asyncio", self._spy(self.retries))
        monkeypatch.setattr(ratelimit, "asyncio", self._spy(self.limiter))
        pause = RATE_LIMITS.pause

        def recorded_pause(model: str, seconds: float) -> None:
            self.pauses.append((model, seconds))
            pause(model, seconds)

        monkeypatch.setattr(RATE_LIMITS, "pause", recorded_pause)

    @staticmethod
    def _spy(into: list[float]) -> Any:
        async def sleep(delay: float) -> None:
            into.append(delay)
            await asyncio.sleep(delay)

        return SimpleNamespace(**{name: getattr(asyncio, name) for name in dir(asyncio)
                                  if not name.startswith("_")} | {"sleep": sleep})


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> Waits:
    return Waits(monkeypatch)


def gap(srv: FakeOpenAIServer, model: str) -> float:
    first, second = srv.requests_for(model)[:2]
    return second.received_at - first.received_at


def one_turn(srv: FakeOpenAIServer, model: str, **config: Any) -> GroupChat:
    srv.script("quiet", [tool_call(0.0, "")])
    chat = GroupChat(agents=[agent(srv, "A", model), agent(srv, "B", "quiet")], max_loops=2,
                     **config)
    chat.run("t")
    return chat


@pytest.mark.parametrize("model, refusal, cap, waited", [
    ("ra", error(429, "slow down", retry_after=1), None, 1.0),
    ("ms", error(429, "slow down", retry_after_ms=400, retry_after=9), None, 0.4),  # not 9 s
    ("cap", error(429, "come back in an hour", retry_after=3600), 0.5, 0.5),  # not the hour
])
def test_retry_after_is_waited_for(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
                                   waits: Waits, model: str, refusal: Any, cap: float | None,
                                   waited: float) -> None:
    if cap is not None:
        monkeypatch.setattr(retries, "MAX_RETRY_AFTER", cap)
    server.script(model, [refusal, tool_call(0.9, "after the wait")])
    bid = one_turn(server, model).last_run.bids[0]
    assert bid.message == "after the wait" and bid.calls == 2
    assert waits.retries == [waited] and waits.pauses == [(f"openai/{model}", waited)]  # asked
    assert gap(server, model) >= waited  # and the retry came no sooner
    assert bid.latency_ms >= waited * 1000


def test_a_retry_after_beyond_the_bids_deadline_fails_at_once_with_the_real_cause(
        server: FakeOpenAIServer, waits: Waits
) -> None:
    server.script("late", [error(429, "slow down", retry_after=5)])
    chat = one_turn(server, "late", bid_timeout=2.0)
    bid = chat.last_run.bids[0]
    # the real cause, not the deadline's TimeoutError: it gave up at once
    assert bid.error.startswith("RateLimitError") and "slow down" in bid.error
    assert bid.calls == 1 and len(server.requests_for("late")) == 1
    assert waits.retries == []  # not 5 s of waiting, nor the 2 s deadline
    assert waits.pauses == [("openai/late", 5.0)]  # the model still rests as asked


def test_a_429_pauses_the_model_for_every_bid_in_the_process(server: FakeOpenAIServer) -> None:
    """Turn 1: A is told to wait 1 s. B, on the same model, starts its next request only then."""
    server.script("shared", [error(429, "slow down", retry_after=1), tool_call(0.9, "A spoke")])
    chat_agents = [agent(server, "A", "shared"), agent(server, "B", "other")]
    server.script("other", [tool_call(0.0, "")])

    async def later_request() -> float:
        while not server.requests_for("shared"):  # noqa: ASYNC110 - polling another thread's server
            await asyncio.sleep(0.01)  # A's first request reached the server...
        await asyncio.sleep(0.15)  # ...and its 429 reached the engine (not a slow first call)
        await RATE_LIMITS.acquire("openai/shared")
        return time.monotonic()

    chat = GroupChat(agents=chat_agents, max_loops=2)
    results: list[float] = []

    async def both() -> None:
        run = asyncio.create_task(chat.arun("t"))
        results.append(await later_request())
        await run

    asyncio.run(both())
    refused_at = server.requests_for("shared")[0].received_at
    assert results[0] - refused_at >= 0.9  # paused for the 1 s the server asked for


# --- per-model rate limits ---------------------------------------------------------------------


@pytest.mark.parametrize("limited", [True, False], ids=["rpm 240", "no limit"])
def test_rpm_limit_spaces_requests_over_http(server: FakeOpenAIServer,
                                             monkeypatch: pytest.MonkeyPatch, waits: Waits,
                                             limited: bool) -> None:
    """Eight bids at once on one model: four let through, then one every 0.25 s (one turn)."""
    now = [time.monotonic()]  # the buckets' clock stands still: every bid reserves at once
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(monotonic=lambda: now[0]))
    if limited:
        set_rate_limit("openai/rl", rpm=240)  # 4 a second, bursts of at most 4
    server.script("rl", [tool_call(0.9, "first"), *[tool_call(0.0, "")] * 7])
    start = time.monotonic()
    GroupChat(agents=[agent(server, n, "rl") for n in "ABCDEFGH"], max_loops=2).run("t")
    times = sorted(r.received_at for r in server.requests_for("rl"))
    assert len(times) == 8
    if not limited:
        assert waits.limiter == []  # the limiter held none of them
        return
    # the burst of four went without a wait; the other four were held 0.25 s apart
    assert sorted(waits.limiter) == pytest.approx([0.25, 0.5, 0.75, 1.0])
    # then one every 0.25 s, as bounds from the start (gaps between arrivals vary under load)
    for i in range(4, 8):
        assert times[i] - start >= (i - 3) * 0.25 - 0.01, (i, [t - start for t in times])


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The limiter on a fake clock: its time is `clock[0]`, and its sleep moves it on."""
    now = [100.0]

    async def sleep(delay: float) -> None:
        now[0] += delay

    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(ratelimit, "asyncio", SimpleNamespace(
        sleep=sleep, CancelledError=asyncio.CancelledError,
        get_running_loop=asyncio.get_running_loop))
    return now


def test_tpm_limit_spaces_by_tokens_and_usage_below_the_reservation_is_given_back(
        clock: list[float]) -> None:
    limits, given_back = RateLimits(), RateLimits()
    for each in (limits, given_back):
        each.set("m", tpm=6000)  # 100 tokens a second, bucket of 100
    start = clock[0]

    async def five() -> list[float]:
        stamps = []
        for _ in range(5):
            reserved = await limits.acquire("m", 50)
            limits.settle("m", reserved, 50)
            stamps.append(clock[0] - start)
        return stamps

    # two 50-token requests fit the bucket, then 0.5 s each
    assert asyncio.run(five()) == pytest.approx([0.0, 0.0, 0.5, 1.0, 1.5])

    async def go() -> float:
        reserved = await given_back.acquire("m", 100)
        given_back.settle("m", reserved, 10)  # used only 10
        before = clock[0]
        await given_back.acquire("m", 80)
        return clock[0] - before

    assert asyncio.run(go()) == 0.0  # 90 given back: 80 fit at once (else 0.8 s)


@pytest.mark.parametrize("bad", [0, -1, True, float("inf"), "10"])
def test_rate_limits_must_be_positive_numbers_and_no_rate_removes_the_limit(bad: object) -> None:
    with pytest.raises(ConfigError, match="rpm must be a positive number"):
        set_rate_limit("m", rpm=bad)  # type: ignore[arg-type]
    set_rate_limit("m", rpm=60, tpm=1000)
    assert RATE_LIMITS.limit("m") == (60, 1000)
    set_rate_limit("m")
    assert RATE_LIMITS.limit("m") == (None, None)


def test_retry_after_forms_are_read() -> None:
    def read(headers: dict[str, str]) -> float | None:  # where litellm 1.106 keeps them
        refused = Exception("429")
        refused.litellm_response_headers = headers  # type: ignore[attr-defined]
        return call_errors.retry_after_seconds(refused)

    assert read({"retry-after": "5"}) == 5.0
    assert read({"retry-after": "0.25"}) == 0.25
    assert read({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    assert 17 <= (read({"retry-after": when}) or 0) <= 20
    assert read({"retry-after": "soon"}) is None
    assert read({}) is None and call_errors.retry_after_seconds(ValueError("no headers")) is None


def test_litellm_errors_become_one_model_call_error_at_the_edge() -> None:
    """Converted once (status, code, retry_after, cause, kind); the Router's own refusal of a
    deployment at its rpm count ("retry-after: 60", no request sent) asks for no wait: it used
    to pause the model 30 s (test_deployments_scoped's rpm test then took 30 s)."""
    import httpx
    import litellm

    def refused(text: str, headers: dict[str, str]) -> Exception:
        response = httpx.Response(429, headers=headers,
                                  request=httpx.Request("POST", "http://127.0.0.1:9"))
        return litellm.RateLimitError(message=text, llm_provider="openai", model="m",
                                      response=response)

    server = call_errors.from_litellm(refused("slow down", {"retry-after": "5"}))
    assert (server.status, server.code, server.retry_after, server.kind) == (
        429, "rate_limited", 5.0, "RateLimitError")
    assert isinstance(server.cause, litellm.RateLimitError) and retries.is_retryable(server)
    router = call_errors.from_litellm(refused(
        "Deployment over defined rpm limit=2. current usage=2", {"retry-after": "60"}))
    assert (router.code, router.retry_after) == ("deployment_at_limit", None)
    assert retries.is_retryable(router)
    down = call_errors.from_litellm(litellm.APIConnectionError(
        message="down", llm_provider="openai", model="m"))
    assert (down.status, down.code) == (None, "connection") and retries.is_retryable(down)
    window = call_errors.from_litellm(litellm.ContextWindowExceededError(
        message="maximum context length is 5", model="m", llm_provider="openai"))
    assert window.code == "context_window" and not retries.is_retryable(window)
    assert retries.is_context_window_error(window)
    other = call_errors.from_litellm(ValueError("a bug"))
    assert (other.code, other.kind) == ("error", "ValueError") and not retries.is_retryable(other)
    assert not retries.is_retryable(ValueError("not converted: never retried"))


@pytest.mark.parametrize("status, text, code, kind, retryable", [
    (429, "slow down", "rate_limited", "RateLimitError", True),
    (503, "busy", "unavailable", "ServiceUnavailableError", True),
    (400, "maximum context length is 5", "context_window", "ContextWindowExceededError", False),
    (422, "stream is not supported", "unprocessable", "BadRequestError", False),
    (418, "teapot", "bad_request", "BadRequestError", False),
    (599, "odd", "error", "APIError", False)])
def test_a_provider_reading_its_own_responses_raises_by_status(status, text, code, kind,
                                                               retryable) -> None:
    """The direct path's errors (providers/_direct.py): status, code, the server's Retry-After."""
    failed = call_errors.for_status(status, text, retry_after=1.5)
    assert (failed.status, failed.code, failed.kind, failed.retry_after) == (
        status, code, kind, 1.5)
    assert retries.is_retryable(failed) == retryable


# --- pacing -----------------------------------------------------------------------


def most_in_a_window(times: list[float], window: float) -> int:
    """The most of `times` that any half-open span [t, t + window) holds."""
    ordered = sorted(times)
    return max(sum(1 for u in ordered[i:] if u < t + window) for i, t in enumerate(ordered))


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


def one_turn_of(server: FakeOpenAIServer, model: str, names: str = "ABC", timeout: float = 0.5,
                **config: Any) -> list[Any]:
    """The agents bid at once on `model`, each request with `timeout` and no retry."""
    agents = [agent(server, n, model, timeout=timeout, num_retries=0) for n in names]
    chat = GroupChat(agents=agents, bid_cache=False, **{"max_loops": 2, **config})
    chat.run("t")
    return list(chat.last_run.bids)


@pytest.fixture
def one_in_flight() -> Iterator[None]:
    before = max_inflight_calls()
    set_max_inflight_calls(1)
    yield
    set_max_inflight_calls(before)


def test_a_process_wide_rpm_wait_is_neither_the_requests_time_nor_the_bids(
        server: FakeOpenAIServer) -> None:
    """rpm 60: the third bid waits 2 s (4x its request timeout, 2x its 1 s bid_timeout; a
    longer bid_timeout only makes that easier), and answers."""
    set_rate_limit("openai/slow", rpm=60)
    server.script("slow", [tool_call(0.9, "first"), *[tool_call(0.0, "")] * 2])
    start = time.monotonic()  # no permit is granted before this (the server's clock)
    bids = one_turn_of(server, "slow", bid_timeout=1.0)
    times = sorted(r.received_at for r in server.requests_for("slow"))
    assert [b.error for b in bids] == [None] * 3
    assert times[2] - start >= 2.0  # it did wait for the limit


class QueueSpy(CallLimiter):
    """One in-flight slot; `queued` is set once `waiting` calls wait behind its holder."""

    def __init__(self, waiting: int) -> None:
        super().__init__(1)
        self.asked, self.waiting = 0, waiting
        self.queued = asyncio.Event()

    async def acquire(self) -> None:
        self.asked += 1
        if self.asked > self.waiting:  # this call queues before it next yields
            self.queued.set()
        await super().acquire()


def test_a_wait_for_the_in_flight_limit_is_not_the_requests_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Three requests with a 0.5 s timeout queue for the one slot, which the test holds 0.6 s:
    each is sent once it has the slot, one at a time, and answers. The reply never yields to
    the loop, so only a wait counted as the request's time could time a request out. (Replies
    a server held 0.3 s against that 0.5 s timeout left 0.2 s for the request itself: on a
    loaded machine it took longer, and the test failed for the request's time, issue 39.)"""
    limiter = QueueSpy(waiting=3)
    monkeypatch.setattr(retries, "CALL_LIMITER", limiter)
    sent: list[tuple[str, int, float]] = []

    async def reply(kwargs: dict[str, Any]) -> str:  # no await: no timeout fires in here
        sent.append((kwargs["tag"], limiter.in_use, asyncio.get_running_loop().time()))
        return "reply"

    monkeypatch.setattr(request_layer, "routed_call", reply)  # one_request sends it here

    async def three() -> tuple[float, list[Any]]:
        await limiter.acquire()  # the test holds the only slot
        calls = [asyncio.ensure_future(retries.call_with_retries(
            {"model": "openai/held", "messages": [], "timeout": 0.5, "tag": tag},
            retries.Attempts())) for tag in "ABC"]
        queued = asyncio.ensure_future(limiter.queued.wait())  # all three wait for the slot
        await asyncio.wait([queued, *calls], return_when=asyncio.FIRST_COMPLETED)
        queued.cancel()
        queued_at = asyncio.get_running_loop().time()
        await asyncio.sleep(0.6)  # the wait: longer than each request's timeout
        limiter.release()
        return queued_at, await asyncio.gather(*calls)

    queued_at, replies = asyncio.run(three())
    assert replies == ["reply"] * 3
    assert sorted(tag for tag, _, _ in sent) == ["A", "B", "C"]
    assert [in_use for _, in_use, _ in sent] == [1] * 3  # one at a time
    assert all(at - queued_at > 0.5 for _, _, at in sent)  # each waited past its timeout


def test_a_bid_slower_than_its_deadline_still_fails_after_a_wait(
        server: FakeOpenAIServer, one_in_flight: None) -> None:
    """Only the queue is not counted: a reply held 0.8 s against bid_timeout 0.5 s fails."""
    server.set_responder("late", lambda body: tool_call(0.9, "first", latency=0.8))
    bids = one_turn_of(server, "late", "AB", timeout=5.0, max_loops=1, bid_timeout=0.5)
    errors = [b.error or "" for b in bids]
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
    """24 requests on deployments taking 5 per 1 s window: later bids once failed, now wait."""
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
