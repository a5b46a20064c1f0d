"""Constrained bids (issue 20 item 6): `tool_choice_mode="json_schema"` sends the respond schema
as `response_format` (llama.cpp makes it a grammar), no tools; the JSON text is read as in json
mode. Over real HTTP.

Private imports (SCHEMA_MESSAGE_CAP, SCHEMA_OVERHEAD_TOKENS, schema_message_chars): units tested
as such, which no public module exports."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr

from groupchat_core import RESPOND_TOOL, Agent, GroupChat, remembered_modes
from groupchat_core.providers._tool_modes import (
    SCHEMA_MESSAGE_CAP,
    SCHEMA_OVERHEAD_TOKENS,
    schema_message_chars,
)
from groupchat_core.testing import FakeOpenAIServer, error, text

KEY = "sk-test-constrained-0123456789abcdef"


@pytest.fixture
def server(server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The shared fake server (conftest.py), Ben's model always silent."""
    server.set_responder("quiet", lambda body: text('{"score": 0, "message": ""}'))
    return server


def agent(srv: FakeOpenAIServer, name: str = "Ann", model: str = "small", **kw: Any) -> Agent:
    options: dict[str, Any] = {"tool_choice_mode": "json_schema", "num_retries": 0, **kw}
    return Agent(agent_name=name, model_name=f"openai/{model}", api_base=srv.base_url,
                 api_key=SecretStr(KEY), **options)


def one_turn(srv: FakeOpenAIServer, ann: Agent, **kw: Any) -> Any:
    """One turn of `ann` plus Ben, a constrained agent that always stays silent."""
    chat = GroupChat(agents=[ann, agent(srv, "Ben", "quiet")], max_loops=2, threshold=0.0,
                     bid_timeout=None, **kw)
    chat.run("Park or data centre?")
    assert chat.last_run is not None
    return chat.last_run


def test_the_respond_schema_goes_as_response_format_and_the_text_is_read(
        server: FakeOpenAIServer) -> None:
    server.script("small", [text('{"score": 0.8, "message": "The park."}')])
    record = one_turn(server, agent(server, max_tokens=300))
    (request,) = server.requests_for("small")
    assert "tools" not in request.body and "tool_choice" not in request.body
    expected = dict(RESPOND_TOOL["function"]["parameters"])
    expected["properties"] = {**expected["properties"], "message": {
        **expected["properties"]["message"], "maxLength": 300 - SCHEMA_OVERHEAD_TOKENS}}
    assert request.body["response_format"] == {"type": "json_object", "schema": expected}
    assert "Answer with only a JSON object" in request.body["messages"][-1]["content"]
    bid = record.bids[0]
    assert (bid.path, bid.outcome, bid.score, bid.message) == ("json_schema", "read", 0.8,
                                                               "The park.")
    assert record.messages[-1].content == "The park."


def test_the_message_bound_keeps_the_reply_inside_max_tokens() -> None:
    """A token per character at worst, plus the JSON: closed before max_tokens; capped."""
    assert schema_message_chars(160) == 160 - SCHEMA_OVERHEAD_TOKENS
    assert schema_message_chars(50) == 0
    assert schema_message_chars(100_000) == SCHEMA_MESSAGE_CAP


def test_an_agents_own_respond_schema_is_sent_and_its_own_bound_kept(
        server: FakeOpenAIServer) -> None:
    own = {"type": "function", "function": {"name": "respond", "parameters": {
        "type": "object", "required": ["score", "message"], "properties": {
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "message": {"type": "string", "maxLength": 40}}}}}
    server.script("small", [text('{"score": 0.3, "message": ""}')])
    record = one_turn(server, agent(server, tools_list_dictionary=[own]))
    (request,) = server.requests_for("small")
    assert request.body["response_format"]["schema"] == own["function"]["parameters"]
    assert record.bids[0].outcome == "read" and record.bids[0].message == ""


def test_unreadable_text_is_unreadable_not_a_quiet_room(server: FakeOpenAIServer) -> None:
    """A server that ignores response_format may still write prose: same rules as json mode."""
    server.script("small", [text("I think the park is best.")])
    record = one_turn(server, agent(server))
    bid = record.bids[0]
    assert bid.path == "json_schema" and bid.outcome == "unreadable"
    assert bid.error and bid.error.startswith("unreadable")


def test_a_streaming_chat_asks_constrained_bids_unstreamed(server: FakeOpenAIServer) -> None:
    """The bid is content, not a respond call: asked once, unstreamed (nothing remembered)."""
    server.script("small", [text('{"score": 0.6, "message": "Hi."}')])

    class Deltas:
        wants = frozenset({"bid_delta"})
        thread_safe = True

        def __call__(self, event: Any) -> None:
            pass

    record = one_turn(server, agent(server), stream_bids=True, on_event=[Deltas()])
    (request,) = server.requests_for("small")
    assert request.body.get("stream") is not True
    assert record.bids[0].path == "json_schema" and record.bids[0].outcome == "read"
    assert remembered_modes() == []


def test_a_server_refusing_response_format_fails_the_bid_and_says_why(
        server: FakeOpenAIServer) -> None:
    """The mode is pinned (opt-in): no step down the ladder, the reason is in the bid."""
    server.script("small", [error(400, "response_format is not supported by this model")])
    record = one_turn(server, agent(server))
    bid = record.bids[0]
    assert bid.outcome == "failed" and "response_format is not supported" in (bid.error or "")
    assert len(server.requests_for("small")) == 1
    assert remembered_modes() == []
