"""Retry-After is honoured (bounded, within the bid's deadline) and per-model rate limits space
requests, over real HTTP (a server asking for 5 s once got a retry after 0.46 s).

No upper bound on time: the waits the engine chose are recorded where it decides (`Waits`, or
an injected clock); what really happened is checked from below only.
Private imports (`providers._ratelimit`, `providers._retries`): units or test hooks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from groupchat_core import Agent, ConfigError, GroupChat, set_rate_limit
from groupchat_core.providers import _ratelimit as ratelimit
from groupchat_core.providers import _retries as retries
from groupchat_core.providers._ratelimit import RATE_LIMITS, RateLimits
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


def test_rpm_limit_spaces_requests_over_http(
        server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, waits: Waits) -> None:
    """Eight bids at once on one model: four let through, then one every 0.25 s (one turn)."""
    now = [time.monotonic()]  # the buckets' clock stands still: every bid reserves at once
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(monotonic=lambda: now[0]))
    set_rate_limit("openai/rl", rpm=240)  # 4 a second, bursts of at most 4
    server.script("rl", [tool_call(0.9, "first"), *[tool_call(0.0, "")] * 7])
    start = time.monotonic()
    GroupChat(agents=[agent(server, n, "rl") for n in "ABCDEFGH"], max_loops=2).run("t")
    times = sorted(r.received_at for r in server.requests_for("rl"))
    assert len(times) == 8
    # the burst of four went without a wait; the other four were held 0.25 s apart
    assert sorted(waits.limiter) == pytest.approx([0.25, 0.5, 0.75, 1.0])
    # then one every 0.25 s, as bounds from the start (gaps between arrivals vary under load)
    for i in range(4, 8):
        assert times[i] - start >= (i - 3) * 0.25 - 0.01, (i, [t - start for t in times])


def test_without_a_limit_requests_are_not_spaced(server: FakeOpenAIServer,
                                                   waits: Waits) -> None:
    server.script("free", [tool_call(0.9, "first"), *[tool_call(0.0, "")] * 7])
    GroupChat(agents=[agent(server, n, "free") for n in "ABCDEFGH"], max_loops=2).run("t")
    assert len(server.requests_for("free")) == 8
    assert waits.limiter == []  # the limiter held none of them


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The limiter on a fake clock: its time is `clock[0]`, and its sleep moves it on."""
    now = [1000.0]

    async def sleep(delay: float) -> None:
        now[0] += delay

    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(monotonic=lambda: now[0]))
    monkeypatch.setattr(ratelimit, "asyncio", SimpleNamespace(
        sleep=sleep, CancelledError=asyncio.CancelledError))
    return now


def test_tpm_limit_spaces_by_tokens(clock: list[float]) -> None:
    limits = RateLimits()
    limits.set("m", tpm=6000)  # 100 tokens a second, bucket of 100
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


def test_usage_below_the_reservation_is_given_back(clock: list[float]) -> None:
    limits = RateLimits()
    limits.set("m", tpm=6000)

    async def go() -> float:
        reserved = await limits.acquire("m", 100)
        limits.settle("m", reserved, 10)  # used only 10
        start = clock[0]
        await limits.acquire("m", 80)
        return clock[0] - start

    assert asyncio.run(go()) == 0.0  # 90 given back: 80 fit at once (else 0.8 s)


@pytest.mark.parametrize("bad", [0, -1, True, float("inf"), "10"])
def test_rate_limits_must_be_positive_numbers(bad: object) -> None:
    with pytest.raises(ConfigError, match="rpm must be a positive number"):
        set_rate_limit("m", rpm=bad)  # type: ignore[arg-type]


def test_setting_no_rate_removes_the_limit() -> None:
    set_rate_limit("m", rpm=60, tpm=1000)
    assert RATE_LIMITS.limit("m") == (60, 1000)
    set_rate_limit("m")
    assert RATE_LIMITS.limit("m") == (None, None)


class _Refused(Exception):
    """Stands in for a litellm error: the headers where litellm 1.106 keeps them."""

    def __init__(self, headers: dict[str, str]) -> None:
        super().__init__("429")
        self.litellm_response_headers = headers


def test_retry_after_forms_are_read() -> None:
    import email.utils

    read = retries.retry_after_seconds
    assert read(_Refused({"retry-after": "5"})) == 5.0
    assert read(_Refused({"retry-after": "0.25"})) == 0.25
    assert read(_Refused({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    assert 17 <= (read(_Refused({"retry-after": when})) or 0) <= 20
    assert read(_Refused({"retry-after": "soon"})) is None
    assert read(_Refused({})) is None and read(ValueError("no headers")) is None
