"""The direct OpenAI-compatible path (issue 24): `openai/` models with an api_base and key are
sent and read by the engine, not litellm, and nothing a bid records changes.

Each check runs a chat direct and through litellm (GROUPCHAT_DIRECT_HTTP=0) and compares what
the server got and the bid recorded; hostile cases take this path in test_hostile_routes.py.

Private imports (`providers._direct`, `providers._litellm`): the path's switch and litellm's
module, to count which path a request took; everything public comes from the public API.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from groupchat_core import Agent, GroupChat, forget_remembered_modes
from groupchat_core.providers._direct import DIRECT_ENV, direct_route
from groupchat_core.providers._litellm import litellm_module
from groupchat_core.testing import FakeOpenAIServer, Reply, error, text, tool_call

KEY = "sk-test-direct-0123456789abcdef"


@pytest.fixture
def litellm_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every litellm.acompletion call made while the test runs (its `stream` setting)."""
    litellm = litellm_module()
    calls: list[Any] = []
    original = litellm.acompletion

    async def counted(**kwargs: Any) -> Any:
        calls.append(kwargs.get("stream"))
        return await original(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    return calls


class Deltas:
    wants = frozenset({"bid_delta"})
    thread_safe = True

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, event: Any) -> None:
        with self.lock:
            self.messages.append(event.message)


def pair(base: str, **kw: Any) -> list[Agent]:
    kw.setdefault("num_retries", 0)
    kw.setdefault("model_name", "openai/gpt-4o-mini")
    return [Agent(agent_name=name, api_base=base, api_key=KEY, **kw) for name in ("A", "B")]


def one_bid(srv: FakeOpenAIServer, reply: Reply, *, direct: bool, stream: bool,
            monkeypatch: pytest.MonkeyPatch, quirks: dict[str, bool] | None = None,
            **kw: Any) -> tuple[Any, list[str], Deltas]:
    """One turn of two agents; (agent A's bid, the bodies the server got, the deltas seen).
    `quirks`: FakeOpenAIServer.configure settings for the agents' model."""
    monkeypatch.setenv(DIRECT_ENV, "1" if direct else "0")
    forget_remembered_modes()  # each path learns the server's modes for itself
    srv.reset()
    if quirks:
        srv.configure(kw.get("model_name", "openai/gpt-4o-mini").removeprefix("openai/"),
                      **quirks)
    srv.set_responder(None, lambda body: reply)
    seen = Deltas()
    chat = GroupChat(agents=pair(srv.base_url, **kw), max_loops=2, stream_bids=stream,
                     on_event=[seen] if stream else [])
    chat.run("Decide.")
    bodies = sorted(json.dumps(r.body, sort_keys=True) for r in srv.requests)
    bid = next(b for b in chat.last_run.bids if b.agent == "A")
    return bid, bodies, seen


def recorded(bid: Any) -> tuple[Any, ...]:
    return (bid.score, bid.message, bid.path, bid.error, bid.prompt_tokens,
            bid.completion_tokens, bid.cost_usd, bid.calls, bid.outcome)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("mode", [None, "required", "auto"])
def test_the_direct_path_sends_litellms_body_and_records_the_same_bid(
        server, litellm_calls, monkeypatch, stream, mode):
    reply = tool_call(0.6, "Ship it, then measure the error budget.")
    kw = {"tool_choice_mode": mode} if mode else {}
    via_litellm = one_bid(server, reply, direct=False, stream=stream,
                          monkeypatch=monkeypatch, **kw)
    assert litellm_calls, "the litellm path was not taken"
    litellm_calls.clear()
    direct = one_bid(server, reply, direct=True, stream=stream, monkeypatch=monkeypatch, **kw)
    assert litellm_calls == [], "the direct path called litellm"
    assert direct[1] == via_litellm[1]  # the very body litellm sends
    assert recorded(direct[0]) == recorded(via_litellm[0])
    assert direct[0].cost_usd is not None and direct[0].prompt_tokens
    if stream:
        assert direct[2].messages and direct[2].messages[-1] == via_litellm[2].messages[-1]


@pytest.mark.parametrize("stream", [False, True])
def test_a_plain_text_reply_reads_the_same_both_ways(server, monkeypatch, stream):
    reply = text('{"score": 0.4, "message": "as text"}')
    results = [recorded(one_bid(server, reply, direct=d, stream=stream,
                                monkeypatch=monkeypatch)[0]) for d in (False, True)]
    assert results[0] == results[1]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 429, 500, 503])
def test_an_http_error_is_the_same_litellm_error_both_ways(server, monkeypatch, status):
    reply = error(status, "scripted failure for the direct path")
    results = [one_bid(server, reply, direct=d, stream=False, monkeypatch=monkeypatch)[0]
               for d in (False, True)]
    assert results[0].error and results[0].error == results[1].error
    assert results[0].calls == results[1].calls


def both_ways(monkeypatch: pytest.MonkeyPatch, make_chat: Callable[[], GroupChat]) -> list[Any]:
    """The first bid of a chat `make_chat()` builds, via litellm then direct."""
    bids = []
    for direct in (False, True):
        monkeypatch.setenv(DIRECT_ENV, "1" if direct else "0")
        chat = make_chat()
        chat.run("Decide.")
        bids.append(chat.last_run.bids[0])
    return bids


def test_a_retryable_error_is_retried_the_same_both_ways(server, monkeypatch):
    replies: list[Reply] = []

    def flaky(body: dict[str, Any]) -> Reply:
        replies.append(error(503, "busy", retry_after_ms=1) if len(replies) % 2 == 0
                       else tool_call(0.5, "second try"))
        return replies[-1]

    def chat() -> GroupChat:
        replies.clear()
        server.reset()
        server.set_responder("flaky", flaky)
        server.set_responder("steady", lambda body: tool_call(0.1, "steady"))
        return GroupChat(agents=[*pair(server.base_url, model_name="openai/flaky",
                                       num_retries=2)[:1],
                                 *pair(server.base_url, model_name="openai/steady")[1:]],
                         max_loops=2)

    bids = both_ways(monkeypatch, chat)
    assert bids[0].calls == bids[1].calls and bids[0].calls >= 2
    assert recorded(bids[0]) == recorded(bids[1])


def test_a_server_refusing_streams_falls_back_the_same_both_ways(server, monkeypatch):
    reply = error(400, "stream is not supported by this server")

    def chat() -> GroupChat:
        forget_remembered_modes()
        server.reset()
        server.set_responder(None, lambda body: reply if body.get("stream")
                             else tool_call(0.5, "unstreamed"))
        return GroupChat(agents=pair(server.base_url), max_loops=2, stream_bids=True,
                         on_event=[Deltas()])

    bids = both_ways(monkeypatch, chat)
    assert bids[0].path == "tool_call:unstreamed"
    assert recorded(bids[0]) == recorded(bids[1])


def test_a_server_down_is_a_connection_error_both_ways(monkeypatch):
    bids = both_ways(monkeypatch,
                     lambda: GroupChat(agents=pair("http://127.0.0.1:9/v1"), max_loops=2))
    assert "Connection error" in bids[0].error
    assert bids[0].error == bids[1].error


def kwargs_for(model: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}],
            "api_base": "http://127.0.0.1:1/v1", "api_key": KEY, "timeout": 5.0, **extra}


def test_only_plain_openai_compatible_requests_go_direct(monkeypatch):
    monkeypatch.setenv(DIRECT_ENV, "1")
    assert direct_route(kwargs_for("openai/gpt-4o-mini"))
    assert direct_route(kwargs_for("openai/local-model"))
    assert not direct_route(kwargs_for("lm_studio/local-model"))  # another provider's rules
    assert not direct_route(kwargs_for("hosted_vllm/local-model"))
    assert not direct_route(kwargs_for("openai/o3-mini"))  # litellm rewrites its parameters
    assert not direct_route(kwargs_for("openai/gpt-5-mini"))
    assert not direct_route(kwargs_for("openai/gpt-4o-mini", extra_headers={"X": "1"}))
    for missing in ("api_base", "api_key"):  # no base: litellm picks the provider's own key
        without = {k: v for k, v in kwargs_for("openai/gpt-4o-mini").items() if k != missing}
        assert not direct_route(without), missing
    monkeypatch.setenv(DIRECT_ENV, "0")
    assert not direct_route(kwargs_for("openai/gpt-4o-mini"))


def test_an_agent_with_its_own_litellm_settings_goes_through_litellm(server, litellm_calls,
                                                                      monkeypatch):
    monkeypatch.setenv(DIRECT_ENV, "1")
    bid, _, _ = one_bid(server, tool_call(0.5, "ok"), direct=True, stream=False,
                        monkeypatch=monkeypatch, litellm_kwargs={"extra_headers": {"X-A": "1"}})
    assert bid.error is None and litellm_calls == [None, None]


def test_a_stream_without_usage_is_counted_as_litellm_counts_it(server, monkeypatch):
    """llama.cpp ignores `include_usage`: litellm then counts tokens itself, so must we."""
    reply = tool_call(0.7, "We should build the park first, then decide on the rest.")
    quirks = {"no_stream_usage": True}
    via_litellm, _, _ = one_bid(server, reply, direct=False, stream=True,
                                monkeypatch=monkeypatch, quirks=quirks)
    direct, _, _ = one_bid(server, reply, direct=True, stream=True, monkeypatch=monkeypatch,
                           quirks=quirks)
    assert direct.path == via_litellm.path == "tool_call:stream"
    assert via_litellm.completion_tokens and via_litellm.prompt_tokens  # litellm counted them
    assert direct.completion_tokens and direct.prompt_tokens
    assert direct.cost_usd is not None and direct.cost_usd > 0
    # the same tokenizer over the same text: the two counts agree closely
    assert abs(direct.prompt_tokens - via_litellm.prompt_tokens) <= 0.1 * via_litellm.prompt_tokens
    assert abs(direct.completion_tokens - via_litellm.completion_tokens) <= max(
        3, 0.2 * via_litellm.completion_tokens)
