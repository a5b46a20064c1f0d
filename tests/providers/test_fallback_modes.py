"""The tool-choice fallback ladder over real HTTP: only a clear "unsupported" steps down, what is
remembered is scoped, expires and is visible, and a respond call is read in any mode (§1).
Constrained bids (issue 20 item 6): `tool_choice_mode="json_schema"` sends the respond schema
as `response_format`, no tools; the text is read as in json mode. Private imports
(`providers._tool_modes`): units or test hooks with no public name."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from groupchat_core import RESPOND_TOOL, Agent, GroupChat, remembered_modes
from groupchat_core.providers import _tool_modes as tool_modes
from groupchat_core.providers._tool_modes import (
    SCHEMA_MESSAGE_CAP,
    SCHEMA_OVERHEAD_TOKENS,
    rejection_kind,
    schema_message_chars,
    tools_hash,
)
from groupchat_core.testing import FakeOpenAIServer, Reply, error, text, tool_call
from tests.providers.conftest import Deltas, http_agent

FORCED = {"type": "function", "function": {"name": "respond"}}
EXTRA_TOOL = {"type": "function", "function": {
    "name": "lookup", "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}

CONTEXT_LENGTH = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9120 tokens (8810 in the messages, 310 in the functions). Please reduce the length of the "
    "messages or functions.")
BAD_SCHEMA = (
    "Invalid schema for function 'lookup': In context=('properties', 'q'), 'required' is "
    "required to be supplied and to be an array including every key in properties.")


def agent(srv: FakeOpenAIServer, name: str, model: str, **kw: Any) -> Agent:
    return http_agent(srv, name, model, num_retries=0, **kw)


def _silent(body: dict[str, Any]) -> Reply:
    return tool_call(0.1, "")


def beside_other(srv: FakeOpenAIServer, first: Agent, **config: Any) -> GroupChat:
    """A chat of `first` and agent O on a model that always bids silently."""
    srv.set_responder("other", _silent)
    return GroupChat(agents=[first, agent(srv, "O", "other")], **config)


@pytest.mark.parametrize(("message", "kind"), [
    # OpenAI
    ("Unsupported parameter: 'tools' is not supported with this model.", "tools"),
    ("Unsupported parameter: 'tool_choice' is not supported with this model.", "tool_choice"),
    ("tool_choice is not supported for this model", "tool_choice"),
    # vLLM
    ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
     "tool_choice"),
    ('tool_choice = "required" is not supported!', "tool_choice"),
    ('Only named tools, "none" or "auto" are supported', "tool_choice"),
    # llama.cpp, Ollama
    ("tools param requires --jinja flag", "tools"),
    ("registry.ollama.ai/library/gemma:2b does not support tools", "tools"),
    ("this model does not support function calling", "tools"),
    # litellm UnsupportedParamsError
    ("litellm.UnsupportedParamsError: ollama does not support parameters: ['tools', "
     "'tool_choice'], for model=gemma. To drop these, set `litellm.drop_params=True`", "tools"),
    ("litellm.UnsupportedParamsError: x does not support parameters: ['tool_choice'], for "
     "model=y.", "tool_choice"),
    # the fake server's own wording
    ("tools are not supported by this model", "tools"),
    ("tool_choice of type 'function' is not supported by this model", "tool_choice"),
    # NOT capability rejections: the mode must stay
    (CONTEXT_LENGTH, None),
    (BAD_SCHEMA, None),
    ("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
     "specified.", None),
    ("'messages' must contain the word 'json' in some form, to use 'response_format'", None),
    ("Invalid 'tools[1].function.name': string does not match pattern.", None),
])
def test_rejection_recognisers_on_real_provider_messages(message: str, kind: str | None) -> None:
    assert rejection_kind(message) == kind
    assert rejection_kind(message.upper()) == kind


def test_a_context_length_error_mentioning_functions_does_not_step_down(server) -> None:
    server.script("ctx", [error(400, CONTEXT_LENGTH)])
    server.set_responder("ctx", _silent)
    chat = beside_other(server, agent(server, "C", "ctx"))
    chat.run("t")
    assert "maximum context length" in chat.last_run.bids[0].error
    assert chat.last_run.bids[0].path == "none"
    chat.run("again")
    requests = server.requests_for("ctx")
    assert [r.status for r in requests][:1] == [400] and requests[-1].status == 200
    assert all(r.body.get("tools") and r.body.get("tool_choice") == FORCED for r in requests)
    assert chat.last_run.bids[0].path == "tool_call"
    assert remembered_modes() == []


def test_a_schema_error_on_one_agents_tool_changes_nothing(server: FakeOpenAIServer) -> None:
    server.set_responder("shared", lambda body: (
        error(400, BAD_SCHEMA) if len(body.get("tools", [])) > 1 else tool_call(0.1, "")))
    broken = agent(server, "Broken", "shared", tools_list_dictionary=[dict(EXTRA_TOOL)])
    fine = agent(server, "Fine", "shared")
    chat = GroupChat(agents=[broken, fine])
    chat.run("t")
    chat.run("again")
    assert all(r.body.get("tool_choice") == FORCED for r in server.requests_for("shared"))
    bids = chat.last_run.bids
    assert bids[0].path == "none" and "Invalid schema" in bids[0].error
    assert bids[1].path == "tool_call" and bids[1].error is None
    assert remembered_modes() == []


def test_one_agents_step_down_never_changes_another_agents_requests(server) -> None:
    def picky(body: dict[str, Any]) -> Reply:
        names = [t["function"]["name"] for t in body.get("tools", [])]
        if "lookup" in names and isinstance(body.get("tool_choice"), dict):
            return error(400, "tool_choice of type 'function' is not supported with 'lookup'")
        return tool_call(0.1, "")

    server.set_responder("same", picky)
    odd = agent(server, "Odd", "same", tools_list_dictionary=[dict(EXTRA_TOOL)])
    plain = agent(server, "Plain", "same")
    chat = GroupChat(agents=[odd, plain], max_loops=3)
    chat.run("t")
    chat.run("again")
    odd_reqs = [r for r in server.requests_for("same") if len(r.body["tools"]) == 2]
    plain_reqs = [r for r in server.requests_for("same") if len(r.body["tools"]) == 1]
    assert [r.body["tool_choice"] for r in odd_reqs][:3] == [FORCED, "required", "required"]
    assert all(r.body["tool_choice"] == FORCED for r in plain_reqs) and len(plain_reqs) == 2
    assert [b.path for b in chat.last_run.bids] == ["tool_call:required", "tool_call"]
    [memo] = remembered_modes()
    assert (memo.model, memo.api_base, memo.mode) == ("openai/same", server.base_url, "required")
    assert memo.tools_hash == tools_hash(odd.tools_list_dictionary)
    assert memo.tools_hash != tools_hash(plain.tools_list_dictionary)
    assert 0 < memo.expires_in <= tool_modes.MODE_MEMORY_TTL_S


def test_a_remembered_mode_expires_and_the_model_is_probed_again(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]  # the memory's clock: moved on past its TTL, not waited for
    monkeypatch.setattr(tool_modes, "time", SimpleNamespace(monotonic=lambda: now[0]))
    server.configure("flaky", reject_forced_tool_choice=True)
    server.set_responder("flaky", _silent)
    chat = beside_other(server, agent(server, "F", "flaky"))
    chat.run("first")
    assert [m.mode for m in remembered_modes()] == ["required"]
    chat.run("second, remembered")
    now[0] += tool_modes.MODE_MEMORY_TTL_S
    assert remembered_modes() == []
    server.configure("flaky")  # the provider was fixed meanwhile
    chat.run("third, re-probed")
    choices = [r.body.get("tool_choice") for r in server.requests_for("flaky")]
    assert choices == [FORCED, "required", "required", FORCED]
    assert chat.last_run.bids[0].path == "tool_call" and remembered_modes() == []


def test_a_respond_call_is_read_even_in_json_mode(server: FakeOpenAIServer) -> None:
    server.configure("stubborn", reject_tools=True)
    # the server was told "no tools" yet answers with a respond call (some do), then with text
    server.script("stubborn", [tool_call(0.9, "read anyway"),
                               text('{"score": 0.2, "message": ""}')])
    chat = beside_other(server, agent(server, "S", "stubborn"), max_loops=3)
    chat.run("t")
    requests = server.requests_for("stubborn")
    assert "tools" in requests[0].body and "tools" not in requests[1].body
    first, second = chat.last_run.bids[0], chat.last_run.bids[2]
    assert (first.path, first.message, first.score) == ("tool_call:json", "read anyway", 0.9)
    assert first.winner and first.calls == 2
    assert (second.path, second.error) == ("json_text", None)
    assert [m.mode for m in remembered_modes()] == ["json"]


def test_a_pinned_mode_is_never_remembered_or_changed(server: FakeOpenAIServer) -> None:
    server.configure("pinned", reject_forced_tool_choice=True)
    server.set_responder("pinned", _silent)
    chat = beside_other(server, agent(server, "P", "pinned", tool_choice_mode="forced"))
    chat.run("t")
    assert chat.last_run.bids[0].path == "none" and "not supported" in chat.last_run.bids[0].error
    assert remembered_modes() == []


# --- constrained bids ----------------------------------------------------------------------


def constrained(srv: FakeOpenAIServer, name: str = "Ann", model: str = "small", **kw: Any
                ) -> Agent:
    return agent(srv, name, model, tool_choice_mode="json_schema", **kw)


def one_turn(srv: FakeOpenAIServer, ann: Agent, **kw: Any) -> Any:
    """One turn of `ann` plus Ben, a constrained agent that always stays silent."""
    srv.set_responder("quiet", lambda body: text('{"score": 0, "message": ""}'))
    chat = GroupChat(agents=[ann, constrained(srv, "Ben", "quiet")], max_loops=2, threshold=0.0,
                     bid_timeout=None, **kw)
    chat.run("Park or data centre?")
    assert chat.last_run is not None
    return chat.last_run


def test_the_respond_schema_goes_as_response_format_and_the_text_is_read(
        server: FakeOpenAIServer) -> None:
    server.script("small", [text('{"score": 0.8, "message": "The park."}')])
    record = one_turn(server, constrained(server, max_tokens=300))
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
    # a token per character at worst, plus the JSON: closed before max_tokens; capped
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
    record = one_turn(server, constrained(server, tools_list_dictionary=[own]))
    (request,) = server.requests_for("small")
    assert request.body["response_format"]["schema"] == own["function"]["parameters"]
    assert record.bids[0].outcome == "read" and record.bids[0].message == ""


@pytest.mark.parametrize("reply, streaming, outcome, says", [
    # a server that ignores response_format may still write prose: same rules as json mode
    (text("I think the park is best."), False, "unreadable", "^unreadable"),
    # the bid is content, not a respond call: a streaming chat asks it once, unstreamed
    (text('{"score": 0.6, "message": "Hi."}'), True, "read", None),
    # the mode is pinned (opt-in): no step down the ladder, the reason is in the bid
    (error(400, "response_format is not supported by this model"), False, "failed",
     "response_format is not supported"),
], ids=["prose is unreadable, not a quiet room", "streaming chat", "response_format refused"])
def test_a_constrained_bid_is_asked_once_unstreamed_and_nothing_is_remembered(
        server: FakeOpenAIServer, reply: Reply, streaming: bool, outcome: str,
        says: str | None) -> None:
    server.script("small", [reply])
    streamed = {"stream_bids": True, "on_event": [Deltas()]} if streaming else {}
    record = one_turn(server, constrained(server), **streamed)
    (request,) = server.requests_for("small")
    assert request.body.get("stream") is not True
    bid = record.bids[0]
    assert bid.outcome == outcome and (bid.path == "json_schema") == (outcome != "failed")
    assert says is None or re.search(says, bid.error or ""), bid.error
    assert remembered_modes() == []
