"""Streamed bids over real HTTP to the fake OpenAI server: deltas, the same final bid both ways,
fallbacks, cut-off and hostile streams, and who pays for deltas. Private imports (`_bidding`,
`providers._bodies`, `_replies`, `_streaming`): units or test hooks."""

from __future__ import annotations

import http.client
import json
from types import SimpleNamespace as NS
from typing import Any

import pytest

from groupchat_core import Agent, GroupChat, remembered_modes
from groupchat_core._bidding import MAX_TEXT_SCAN_CHARS
from groupchat_core.providers import _bodies as bodies
from groupchat_core.providers._replies import parse_response
from groupchat_core.providers._streaming import PartialBid, StreamedReply, _read_chunk
from groupchat_core.testing import FakeOpenAIServer, Reply, text, tool_call
from tests.providers.conftest import Deltas, http_agent

DONE = tool_call(0.0, "")
QUIET = [tool_call(0.1, ""), DONE]


def frags(*pieces: str, **kw: Any) -> Reply:
    """A tool call whose raw arguments stream in exactly these fragments."""
    return tool_call(None, None, fragments=list(pieces), **kw)


def duo(srv: FakeOpenAIServer, a: list[Reply], b: list[Reply] = QUIET, *, stream: bool = True,
        observer: Any = None, **kw: Any) -> GroupChat:
    srv.script("a", list(a))
    srv.script("b", list(b))
    observers = [observer] if observer is not None else []
    return GroupChat(agents=[http_agent(srv, "A", **kw), http_agent(srv, "B", **kw)], max_loops=2,
                     stream_bids=stream, on_event=observers)


def run(srv: FakeOpenAIServer, a: list[Reply], b: list[Reply] = QUIET, **kw: Any
        ) -> tuple[GroupChat, Deltas]:
    """Run task "t" with streamed bids and a delta observer; the chat and what it saw."""
    seen = Deltas()
    chat = duo(srv, a, b, observer=seen, **kw)
    chat.run("t")
    return chat, seen


# --- the fake server streams ---------------------------------------------------------------


def raw_stream(srv: FakeOpenAIServer, body: dict[str, Any]) -> tuple[str, list[bytes]]:
    """POST over a plain socket and read the raw chunked body piece by piece."""
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"Content-Type": "application/json"})
    response = conn.getresponse()
    pieces = []
    try:
        while piece := response.read1(65536):
            pieces.append(piece)
    except http.client.IncompleteRead:
        pieces.append(b"<cut>")
    conn.close()
    return response.getheader("Content-Type") or "", pieces


def sse_payloads(pieces: list[bytes]) -> list[Any]:
    data = b"".join(p for p in pieces if p != b"<cut>").decode()
    return [line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
            for line in data.split("\n\n") if line.startswith("data: ")]


def test_the_fake_server_streams_tool_call_deltas_as_server_sent_events(server):
    server.script("m", [frags('{"score": 0.', '7, "message": "hi"}')])
    kind, pieces = raw_stream(server, {"model": "m", "stream": True, "messages": [],
                                       "stream_options": {"include_usage": True}})
    assert kind == "text/event-stream"
    events = sse_payloads(pieces)
    assert events[-1] == "[DONE]"
    first = events[0]["choices"][0]["delta"]["tool_calls"][0]
    assert first["function"]["name"] == "respond"
    fragments = [e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                 for e in events[1:3]]
    assert fragments == ['{"score": 0.', '7, "message": "hi"}']
    assert events[3]["choices"][0]["finish_reason"] == "tool_calls"
    assert events[4]["usage"]["completion_tokens"] > 0
    [(model, times)] = server.stream_writes  # one flush time per write: 5 events and [DONE]
    assert model == "m" and len(times) == 6 and times == sorted(times)


def test_split_utf8_arrives_in_separate_writes_that_only_join_to_valid_text(server):
    server.script("m", [tool_call(0.5, "café 😀", split_utf8=True)])
    _, pieces = raw_stream(server, {"model": "m", "stream": True, "messages": []})
    broken = 0
    for piece in pieces:
        try:
            piece.decode()
        except UnicodeDecodeError:
            broken += 1
    assert broken >= 2  # é and 😀 each cut inside the character
    events = sse_payloads(pieces)
    arguments = "".join(e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                        for e in events[:-2] if e["choices"][0]["delta"].get("tool_calls"))
    assert json.loads(arguments) == {"score": 0.5, "message": "café 😀"}


def test_a_cut_stream_ends_without_finish_or_done(server):
    server.script("m", [frags('{"score": 0.5, "mess', cut=True)])
    _, pieces = raw_stream(server, {"model": "m", "stream": True, "messages": []})
    assert pieces[-1] == b"<cut>"
    assert "[DONE]" not in sse_payloads(pieces)


# --- the engine streams --------------------------------------------------------------------


def test_deltas_show_the_score_once_complete_and_the_message_growing(server):
    chat, seen = run(server, [frags('{"score": 0.', '7', ', "message": "Hel', 'lo th', 'ere"}'),
                              DONE])
    a = seen.of("A")
    # never 0.0, nor before the comma; the message grows by whole words (a trailing word may
    # begin a key), the whole message last (how many events between: the delta budget)
    assert a[-1] == (0.7, "Hello there")
    assert all(score == 0.7 for score, _ in a)
    assert all("Hello there".startswith(m) and m in ("", "Hello ", "Hello there")
               for _, m in a)
    assert chat.last_run.bids[0].path == "tool_call:stream"
    assert chat.last_run.messages[1].content == "Hello there"
    assert {e.turn for e in seen} == {1}
    assert all(e.run_id == chat.last_run.run_id for e in seen)
    body = server.requests_for("a")[0].body
    assert body["stream"] is True and body["tool_choice"]["function"]["name"] == "respond"


def test_a_score_still_growing_is_not_shown(server):
    _, seen = run(server, [frags('{"message": "x", "score": 0.', '7', '5', '}'), DONE])
    assert seen.of("A")[-1] == (0.75, "x")
    assert all(score in (None, 0.75) for score, _ in seen.of("A"))


def test_split_utf8_and_split_escapes_stream_into_whole_characters(server):
    chat, seen = run(server, [frags('{"score": 0.6, "message": "caf\\u00', 'e9 ', '😀', ' ok"}',
                                    split_utf8=True), DONE])
    messages = [m for _, m in seen.of("A")]
    assert messages[-1] == "café 😀 ok"
    assert all("\ufffd" not in m and "\\" not in m for m in messages)
    assert chat.last_run.bids[0].message == "café 😀 ok"


SAME_BOTH_WAYS = {
    "plain": tool_call(0.8, "Plain reply"),
    "split number": frags('{"score": 0.', '7, "message": "x"}'),
    "unicode": tool_call(0.55, "naïve 😀 — ok", split_utf8=True),
    "clamped score": tool_call(1.7, "too keen"),
    "string score": tool_call("0.65", "quoted"),
    "silent": tool_call(0.9, ""),
    "padded message": tool_call(0.6, "  padded  "),
    "invalid json": tool_call(None, None, arguments_raw='{"score": 0.6, "message": "x"'),
    "no score": tool_call(None, None, arguments_raw='{"message": "only words"}'),
    "bad score": tool_call("high", "words"),
}


@pytest.mark.parametrize("name", list(SAME_BOTH_WAYS))
def test_a_streamed_bid_is_exactly_the_non_streamed_bid(server, name):
    results = []
    for stream in (False, True):
        chat = duo(server, [SAME_BOTH_WAYS[name], DONE], [tool_call(0.2, "b"), DONE],
                   stream=stream, observer=Deltas())
        chat.run("t")
        bid = chat.last_run.bids[0]
        results.append((bid.score, bid.message, bid.error, bid.path))
        server.reset()
    (s1, m1, e1, p1), (s2, m2, e2, p2) = results
    assert (s1, m1, e1) == (s2, m2, e2)
    assert p1 == "tool_call" and p2 == "tool_call:stream"


def test_a_stream_cut_off_mid_arguments_is_an_unreadable_bid(server):
    bob = [tool_call(0.6, "Bob speaks"), DONE]
    chat, seen = run(server, [frags('{"score": 0.9, "message": "I was say', cut=True), DONE], bob)
    bid = chat.last_run.bids[0]
    assert bid.error.startswith("unreadable: ") and "the stream was cut off" in bid.error
    assert bid.score == 0.0 and bid.message == "" and bid.calls == 1
    assert bid.path == "tool_call:stream" and bid.outcome == "unreadable"
    assert seen.of("A")[-1] == (0.9, "I was say")  # what was seen, never posted
    assert chat.last_run.messages[1].role == "B"
    # the same truncated arguments unstreamed are unreadable for the same reason
    server.reset()
    truncated = tool_call(None, None, arguments_raw='{"score": 0.9, "message": "I was say')
    plain = duo(server, [truncated, DONE], bob, stream=False)
    plain.run("t")
    assert bid.error.startswith(plain.last_run.bids[0].error)


# --- fallbacks -----------------------------------------------------------------------------


def test_a_server_rejecting_stream_true_gets_a_non_streamed_bid_and_is_remembered(server):
    server.configure("a", reject_stream=True)
    chat = duo(server, [tool_call(0.8, "first"), tool_call(0.7, "second")],
               [tool_call(0.1, ""), tool_call(0.1, "")], observer=Deltas(), num_retries=0)
    chat.max_loops = 3
    chat.run("t")
    first, second = chat.last_run.bids[0], chat.last_run.bids[2]
    assert (first.path, first.calls, first.message) == ("tool_call:unstreamed", 2, "first")
    assert (second.path, second.calls) == ("tool_call:unstreamed", 1)  # remembered: no retry
    assert [r.body.get("stream") for r in server.requests_for("a")] == [True, None, None]
    assert server.requests_for("a")[0].status == 400  # the fake refused the stream
    assert [m.mode for m in remembered_modes()] == ["unstreamed"]
    assert chat.last_run.bids[1].path == "tool_call:stream"


def test_a_stream_of_content_without_tool_calls_falls_back_to_a_non_streamed_bid(server):
    server.configure("a", stream_text_only=True)
    chat, seen = run(server, [tool_call(0.8, "tool reply"), tool_call(0.8, "tool reply"), DONE])
    bid = chat.last_run.bids[0]
    assert (bid.path, bid.calls, bid.message, bid.score) == (
        "tool_call:unstreamed", 2, "tool reply", 0.8)
    assert seen.of("A") == []  # the content stream was not a bid
    assert server.pending("a") == 1


@pytest.mark.parametrize("rejects, a, path, message", [
    ("stream_text_only", [text("nothing useful"), text('{"score": 0.9, "message": "via text"}')],
     "text_fallback:unstreamed", "via text"),  # plain text after the fallback reads as text
    ("reject_forced_tool_choice", [tool_call(0.8, "required")],  # steps down, keeps streaming
     "tool_call:required:stream", "required"),
])
def test_a_fallback_while_streaming_takes_the_next_reading(server, rejects, a, path, message):
    server.configure("a", **{rejects: True})
    chat, _ = run(server, [*a, DONE])
    bid = chat.last_run.bids[0]
    assert (bid.path, bid.message) == (path, message)


# --- who pays, and hostile streams ---------------------------------------------------------


@pytest.mark.parametrize("watched", [False, True], ids=["no delta observer", "stream_bids off"])
def test_without_a_delta_observer_or_with_stream_bids_off_nothing_streams(server, watched):
    every: list[Any] = []
    deltas = Deltas()
    chat = duo(server, [tool_call(0.8, "x"), DONE], stream=not watched,
               observer=deltas if watched else every.append)
    chat.run("t")
    assert deltas == [] and not [e for e in every if e.kind == "bid_delta"]
    assert all("stream" not in r.body for r in server.requests)
    assert chat.last_run.bids[0].path == "tool_call"


def test_a_trickling_stream_is_bounded_by_the_request_timeout(server):
    slow = tool_call(0.5, "x" * 200, chunk_delay=0.25)  # 30 deltas, each well inside a read
    chat, _ = run(server, [slow], [tool_call(0.1, "")], timeout=1.0, num_retries=0)
    bid = chat.last_run.bids[0]
    assert bid.path == "none" and "no complete reply within 1.0 s" in bid.error


def test_the_stream_body_cap_applies_to_a_stream(server, monkeypatch):
    monkeypatch.setattr(bodies, "STREAM_BODY_CAP", 3_000)
    chat, _ = run(server, [tool_call(0.5, "y" * 5_000)], [tool_call(0.1, "")], num_retries=0)
    assert "reply body larger than 3,000 bytes" in (chat.last_run.bids[0].error or "")


def test_the_streaming_callback_still_gets_the_posted_message_chunked_on_spaces(server):
    chat = duo(server, [tool_call(0.9, "two words"), DONE], observer=Deltas())
    seen: list[tuple[str, str, bool]] = []
    chat.run("Hi", streaming_callback=lambda a, c, f: seen.append((a, c, f)))
    assert seen == [("User", "Hi", False), ("User", "", True),
                    ("A", "two ", False), ("A", "words", False), ("A", "", True)]


def test_in_process_models_do_not_stream():
    seen = Deltas()
    chat = GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager"),
                             Agent(agent_name="B", model_name="sim/reserved")],
                     max_loops=3, stream_bids=True, on_event=[seen])
    chat.run("Plan a picnic")
    assert seen == [] and {b.path for b in chat.last_run.bids} == {"simulation"}


# --- the delta reader, unit by unit ----------------------------------------------------------


def _chunk(arguments: str, name: str | None = None, finish: str | None = None) -> Any:
    call = NS(index=0, function=NS(name=name, arguments=arguments))
    delta = NS(content=None, tool_calls=[call] if arguments or name else None)
    return NS(usage=None, choices=[NS(finish_reason=finish, delta=delta)])


def test_a_name_repeated_with_every_delta_is_one_name():
    """llama-cpp-python sends the function name again with every argument delta."""
    reply, partial = StreamedReply(), PartialBid()
    for piece in ['{"score": 0.4', ', "message": "a', 'b"}']:
        _read_chunk(_chunk(piece, name="respond"), reply, partial)
    _read_chunk(_chunk("", finish="tool_calls"), reply, partial)
    partial.refresh()  # parsed when the delta budget allows (_delta_gate.py)
    parsed, path = parse_response(reply.as_response(), "forced")
    assert (parsed.score, parsed.message, path) == (0.4, "ab", "tool_call")
    assert (partial.score, partial.message) == (0.4, "ab")


def test_partial_reading_stops_past_the_scan_bound_but_the_reply_is_kept():
    partial = PartialBid()
    assert partial.feed('{"score": 0.5, "message": "') is True
    assert partial.feed("x" * MAX_TEXT_SCAN_CHARS) is False  # past the bound: not parsed
    assert partial.message == "" and partial.size > MAX_TEXT_SCAN_CHARS
    assert len("".join(partial.parts)) == partial.size  # the final parse still sees it all
