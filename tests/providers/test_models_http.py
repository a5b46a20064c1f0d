"""Model calls over real HTTP to FakeOpenAIServer: the request, the fallback ladder, retries,
timeouts, errors, no key anywhere; and the direct path (issue 24): `openai/` models with a base
and key are sent and read by the engine, each bid recorded as litellm would (each check runs both
ways; hostile cases: test_hostile_routes.py). Private imports (`providers._direct`, `_litellm`):
the path's switch, and litellm's module to count which path a request took.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

from groupchat_core import RESPOND_TOOL, Agent, GroupChat, forget_remembered_modes
from groupchat_core.providers._direct import DIRECT_ENV, direct_route
from groupchat_core.providers._litellm import litellm_module
from groupchat_core.testing import FakeOpenAIServer, Reply, error, text, tool_call
from tests.providers.conftest import KEY, Deltas, http_agent


def run_ab(srv: FakeOpenAIServer, a: list, b: list, *agents: Agent, **config) -> GroupChat:
    """Script models a and b, then run task "t" with agents A and B (or the ones given)."""
    srv.script("a", a)
    srv.script("b", b)
    chat = GroupChat(agents=list(agents) or [http_agent(srv, "A"), http_agent(srv, "B")],
                     **config)
    chat.run("t")
    return chat


def test_request_carries_system_prompt_bid_prompt_tools_and_forced_choice(server):
    server.script("alice", [tool_call(0.9, "Hello"), tool_call(0.0, "")])
    server.script("bob", [tool_call(0.2, ""), tool_call(0.0, "")])
    alice = http_agent(server, "Alice", system_prompt="You are upbeat.")
    chat = GroupChat(agents=[alice, http_agent(server, "Bob")], threshold=0.35,
                     output_type="list")
    assert chat.run("Plan the offsite.") == ["User: Plan the offsite.", "Alice: Hello"]
    first = server.requests_for("alice")[0]
    body = first.body
    assert body["tools"] == [RESPOND_TOOL]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "respond"}}
    assert body["messages"][0] == {"role": "system", "content": "You are upbeat."}
    prompt = body["messages"][1]["content"]
    assert "You are Alice" in prompt and "Bob" in prompt and "0.35" in prompt
    assert "User: Plan the offsite." in prompt
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(first)
    bid = chat.last_run.bids[0]
    assert bid.path == "tool_call" and bid.calls == 1 and bid.prompt_tokens > 0
    assert bid.completion_tokens > 0
    # Bob has no system prompt: only the user message
    assert [m["role"] for m in server.requests_for("bob")[0].body["messages"]] == ["user"]


def test_forced_tool_choice_rejected_falls_back_to_required_then_auto(server):
    server.configure("picky", reject_forced_tool_choice=True, reject_required_tool_choice=True)
    server.script("picky", [tool_call(0.8, "via auto"), tool_call(0.0, "")])
    server.script("other", [tool_call(0.1, ""), tool_call(0.0, "")])
    chat = GroupChat(agents=[http_agent(server, "P", "picky"), http_agent(server, "O", "other")])
    chat.run("t")
    choices = [r.body.get("tool_choice") for r in server.requests_for("picky")]
    assert choices[:3] == [{"type": "function", "function": {"name": "respond"}}, "required",
                           "auto"]
    assert choices[3] == "auto"  # the accepted mode is remembered: no second rejection
    first = chat.last_run.bids[0]
    assert first.path == "tool_call:auto" and first.calls == 3 and first.message == "via auto"


def test_tools_rejected_falls_back_to_json_text(server):
    server.configure("notools", reject_tools=True)
    server.script("notools", [text('Sure: {"score": 0.9, "message": "plain JSON"}'),
                              text("I pass.")])
    server.script("other", [tool_call(0.1, ""), tool_call(0.0, "")])
    chat = GroupChat(agents=[http_agent(server, "N", "notools"), http_agent(server, "O", "other")])
    chat.run("t")
    requests = server.requests_for("notools")
    assert "tools" in requests[0].body and "tools" not in requests[1].body
    assert "JSON object" in requests[1].body["messages"][-1]["content"]
    bids = chat.last_run.bids
    assert (bids[0].path, bids[0].message, bids[0].score) == ("json_text", "plain JSON", 0.9)
    assert bids[2].path == "json_text" and bids[2].message == "" and "no JSON" in bids[2].error


def test_text_reply_to_forced_call_is_parsed_or_silent(server):
    chat = run_ab(server, [text('{"score": 0.7, "message": "from text"}'), text("no thanks")],
                  [tool_call(0.1, ""), tool_call(0.1, "")])
    bids = chat.last_run.bids
    assert (bids[0].path, bids[0].message) == ("text_fallback", "from text")
    assert bids[2].path == "text_fallback" and bids[2].score == 0.0 and bids[2].error


def test_retries_on_429_and_500_then_succeeds(server):
    chat = run_ab(server, [error(429), error(500), tool_call(0.9, "after retries"),
                           tool_call(0, "")], [tool_call(0.1, ""), tool_call(0.1, "")])
    first = chat.last_run.bids[0]
    assert first.message == "after retries" and first.calls == 3
    assert len(server.requests_for("a")) == 4
    assert chat.last_run.total_calls == 3 + 1 + 1 + 1


def test_retries_are_bounded_and_the_error_is_named(server):
    chat = run_ab(server, [error(429, "slow down")] * 2 + [tool_call(0.0, "")],  # + turn 2
                  [tool_call(0.9, "b speaks"), tool_call(0.0, "")],
                  http_agent(server, "A", num_retries=1), http_agent(server, "B"))
    first = chat.last_run.bids[0]
    assert first.error.startswith("RateLimitError") and "slow down" in first.error
    assert first.calls == 2 and first.score == 0.0
    assert chat.last_run.messages[1].content == "b speaks"


def test_one_agent_timing_out_while_the_others_bid(server):
    server.script("slow", [tool_call(0.9, "too late", latency=3.0)])
    server.script("fast", [tool_call(0.8, "on time"), tool_call(0.0, "")])
    server.script("slow", [tool_call(0.0, "")])
    slow = http_agent(server, "Slow", "slow", timeout=0.5, num_retries=0)
    chat = GroupChat(agents=[slow, http_agent(server, "Fast", "fast")])
    chat.run("t")
    bids = chat.last_run.bids
    # its own 0.5 s timeout ended it (a bid that waited out the 3 s reply would say "too late")
    assert "Timeout" in bids[0].error and bids[0].message == "", bids[0]
    assert chat.last_run.messages[1].content == "on time"


def test_every_agent_failing_stops_with_error_naming_the_errors(server):
    chat = run_ab(server, [error(401, "bad key for a")], [error(404, "model b does not exist")])
    record = chat.last_run
    assert record.stop_reason == "error" and not record.turns[0].lull
    assert record.turns[0].reason == "all_failed"
    assert record.error.startswith("no agent produced a readable bid on turn 1: A: ")
    assert "AuthenticationError" in record.error and "bad key for a" in record.error
    assert "NotFoundError" in record.error and "model b does not exist" in record.error


def test_many_runs_in_one_process_sync_and_async(server):
    server.set_responder(None, lambda body: tool_call(0.1, ""))
    chat = GroupChat(agents=[http_agent(server, "A"), http_agent(server, "B")])
    for _ in range(3):
        chat.run("sync")
        assert chat.last_run.stop_reason == "lull" and chat.last_run.bids[0].error is None
    for _ in range(2):  # a fresh loop each time, as asyncio.run in scripts and notebooks does
        asyncio.run(chat.arun("async"))
        assert chat.last_run.bids[0].error is None, chat.last_run.bids[0].error
    chat.run("sync again")
    assert chat.last_run.bids[0].error is None


def test_no_key_in_any_record_log_or_serialization(server, caplog):
    caplog.set_level(logging.DEBUG)
    agents = [http_agent(server, "A"), http_agent(server, "B")]
    chat = run_ab(server, [tool_call(0.9, "hi"), tool_call(0.0, "")],
                  [tool_call(0.1, ""), tool_call(0.0, "")], *agents, verbose=True)
    texts = [
        chat.last_run.model_dump_json(), chat.to_json(), chat.to_spec().model_dump_json(),
        json.dumps(chat.to_spec().to_data()), repr(chat), repr(agents[0]), str(agents[0]),
        agents[0].model_dump_json(), caplog.text, chat.last_run.bids_frame().to_csv(),
    ]
    assert all(KEY not in t for t in texts)


def test_real_model_calls_are_blocked_in_tests(monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):  # past the pre-run key check
        monkeypatch.setenv(name, "sk-not-a-real-key")
    agents = [Agent(agent_name="A", model_name="gpt-4o-mini"),
              Agent(agent_name="B", model_name="anthropic/claude-3-5-haiku-latest")]
    chat = GroupChat(agents=agents)
    chat.run("t")
    record = chat.last_run
    assert record.stop_reason == "error"
    assert all("blocked" in b.error for b in record.bids)


def test_a_provider_error_echoing_the_key_is_scrubbed_and_not_retried(server):
    chat = run_ab(server, [error(500, f"Missing credentials: api_key {KEY} was rejected")],
                  [error(401, "no")])
    bid = chat.last_run.bids[0]
    assert KEY not in bid.error and "***" in bid.error
    assert bid.calls == 1 and len(server.requests_for("a")) == 1


# --- the direct path --------------------------------------------------------------------------


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
    return (bid.score, bid.message, bid.path, failure(bid.error), bid.prompt_tokens,
            bid.completion_tokens, bid.cost_usd, bid.calls, bid.outcome)


def failure(error: str | None) -> tuple[str, str] | None:
    """A bid's error as both paths name it: its kind and the server's words. The direct path
    raises its own ModelCallError ("RateLimitError: OpenAIException - slow down"); litellm's
    text repeats its class ("RateLimitError: litellm.RateLimitError: RateLimitError: ...")."""
    if error is None:
        return None
    kind, _, rest = error.partition(": ")
    return kind, rest.rsplit(" - ", 1)[-1]


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
        assert direct[2] and direct[2][-1].message == via_litellm[2][-1].message


@pytest.mark.parametrize("reply, stream", [
    (text('{"score": 0.4, "message": "as text"}'), False),
    (text('{"score": 0.4, "message": "as text"}'), True),
    *[(error(status, "scripted failure for the direct path"), False)
      for status in (400, 401, 403, 404, 422, 429, 500, 503)]])
def test_a_text_reply_or_an_http_error_reads_the_same_both_ways(server, monkeypatch, reply,
                                                                 stream):
    results = [recorded(one_bid(server, reply, direct=d, stream=stream,
                                monkeypatch=monkeypatch)[0]) for d in (False, True)]
    assert results[0] == results[1]  # an error: the same kind and words, the same calls
    assert (results[0][3] is not None) == (reply.kind == "error")


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


@pytest.mark.parametrize("direct", [False, True])
def test_a_failed_bid_is_one_model_call_error_either_way(server, monkeypatch, direct):
    """What a provider raises for a bid that failed for good: a ModelCallError with the status,
    code and Retry-After of its last request and every HTTP call the bid made."""
    from groupchat_core import ModelCallError, background_loop
    from groupchat_core.providers._model_calls import call_litellm

    monkeypatch.setenv(DIRECT_ENV, "1" if direct else "0")
    server.set_responder(None, lambda body: error(429, "slow down", retry_after_ms=1))
    agent = http_agent(server, "A", model="gpt-4o-mini", num_retries=1)
    with pytest.raises(ModelCallError) as failed:
        background_loop().submit(call_litellm(agent, [{"role": "user", "content": "Hi"}])
                                 ).result()
    got = failed.value
    assert (got.status, got.code, got.attempts) == (429, "rate_limited", 2)
    assert got.retry_after == 0.001 and str(got).startswith("RateLimitError: ")
    assert isinstance(got.cause, ModelCallError) and "slow down" in str(got.cause)


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
    assert failure(bids[0].error) == failure(bids[1].error) == (
        "InternalServerError", "Connection error.")


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
