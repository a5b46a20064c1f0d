"""A turn with no readable bid is an error, never a lull (issue 9 §2), over real HTTP.

Private imports (`providers._replies`): units or test hooks with no public name; everything public
comes from the public API.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from groupchat_core import Agent, GroupChat, transcript_markdown
from groupchat_core.analysis import counterfactual, explain_turn
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, Reply, error, text, tool_call

KEY = "sk-test-unreadable-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv
    assert srv.unexpected == [], f"unexpected calls: {srv.unexpected}"


def http_agent(srv: FakeOpenAIServer, name: str, **kw: Any) -> Agent:
    return Agent(agent_name=name, model_name=f"openai/{name.lower()}", api_base=srv.base_url,
                 api_key=SecretStr(KEY), num_retries=0, **kw)


def _run(srv: FakeOpenAIServer, replies: dict[str, Reply | list[Reply]],
         store: RunStore | None = None) -> GroupChat:
    """Each agent's reply (or replies, turn by turn); the chat's event kinds in `chat.events`."""
    for name, reply in replies.items():
        srv.script(name.lower(), reply if isinstance(reply, list) else [reply])
    events: list[str] = []
    chat = GroupChat(agents=[http_agent(srv, n) for n in replies],
                     on_event=lambda e: events.append(e.kind))
    if store is not None:
        store.attach(chat)
    chat.run("Plan the offsite.")
    chat.events = events
    return chat


UNREADABLE = {
    "truncated": tool_call(None, None, arguments_raw='{"score": 0.8, "message": "We should bo'),
    "empty": tool_call(None, None, arguments_raw=""),
    "nan": tool_call(None, None, arguments_raw='{"score": NaN, "message": "hi"}'),
    "inf": tool_call(None, None, arguments_raw='{"score": Infinity, "message": "hi"}'),
    "huge": tool_call(None, None, arguments_raw='{"score": 1e999, "message": "hi"}'),
    "words": tool_call("very high", "I have thoughts"),
    "no_score": tool_call(None, None, arguments_raw='{"message": "hi"}'),
    "prose": text("I'd love to chime in, but let me think about it first."),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_every_reply_unreadable_stops_with_error_naming_each_agent(
    server: FakeOpenAIServer, kind: str,
) -> None:
    chat = _run(server, {"A": UNREADABLE[kind], "B": UNREADABLE["truncated"]})
    record = chat.last_run
    assert record.stop_reason == "error"
    turn = record.turns[0]
    assert (turn.reason, turn.lull, turn.winner, turn.failed_bids) == (
        "no_readable_bid", False, None, 0)
    assert record.error.startswith("no agent produced a readable bid on turn 1: A: unreadable: ")
    assert "; B: unreadable: respond arguments are not JSON" in record.error
    assert all(b.error.startswith("unreadable: ") and b.path != "none" for b in record.bids)
    # events on such a turn: the bids and turn_completed, no lull
    assert chat.events[-4:] == ["bid", "bid", "turn_completed", "run_finished"]
    assert "lull" not in chat.events


@pytest.mark.parametrize(("reply", "why"), [
    (tool_call(0.1, ""), "a silent bid"),
    (tool_call(0.2, None, arguments_raw='{"score": 0.2}'), "a missing message"),
    (tool_call(-3, "below zero"), "a score clamped to 0.0"),
    (tool_call(0.2, True), "a message of the wrong type, with a valid score"),
    (text('Sure. {"score": 0.3, "message": ""}'), "JSON in text"),
])
def test_one_read_bid_makes_a_lull(server: FakeOpenAIServer, reply: Reply, why: str) -> None:
    chat = _run(server, {"A": UNREADABLE["nan"], "B": reply})
    record = chat.last_run
    assert record.stop_reason == "lull", why
    assert record.turns[0].reason == "lull" and record.turns[0].lull and record.error is None
    assert "lull" in chat.events


def test_failed_and_unreadable_together_are_no_readable_bid_with_bounded_reasons(
        server: FakeOpenAIServer) -> None:
    chat = _run(server, {"A": error(500, "upstream down " + "x" * 50_000),
                         "B": UNREADABLE["prose"]})
    record = chat.last_run
    assert record.stop_reason == "error" and record.turns[0].reason == "no_readable_bid"
    assert record.turns[0].failed_bids == 1
    assert "A: InternalServerError" in record.error
    assert "B: unreadable: reply had no respond call and no JSON bid" in record.error
    assert len(record.bids[0].error) < 2_100 and "characters cut)" in record.bids[0].error
    assert len(record.error) < 800


def test_every_call_failing_is_still_all_failed(server: FakeOpenAIServer) -> None:
    chat = _run(server, {"A": error(401, "bad key"), "B": error(404, "no such model")})
    record = chat.last_run
    assert record.stop_reason == "error" and record.turns[0].reason == "all_failed"
    assert record.error.startswith("no agent produced a readable bid on turn 1: A: ")


def test_a_readable_winner_on_a_later_turn_is_unaffected(server: FakeOpenAIServer) -> None:
    record = _run(server, {"A": [tool_call(0.9, "first"), UNREADABLE["nan"]],
                           "B": [tool_call(0.1, ""), UNREADABLE["empty"]]}).last_run
    assert [t.reason for t in record.turns] == ["highest_bid", "no_readable_bid"]
    assert record.stop_reason == "error" and "on turn 2" in record.error
    assert [m.content for m in record.messages] == ["Plan the offsite.", "first"]


def test_analysis_and_exports_say_it_was_no_lull(server: FakeOpenAIServer) -> None:
    store = RunStore()
    record = _run(server, {"A": UNREADABLE["nan"], "B": UNREADABLE["prose"]}, store).last_run
    bids, turns = record.bids_frame(), record.turns_frame()
    explained = explain_turn(bids, turns, 1, 0.5)
    assert "no agent produced a readable bid" in explained and "not a lull" in explained
    assert "A: unreadable: invalid score nan" in explained.replace("'", "")
    assert counterfactual(bids, threshold=0.0, recency_penalty=0.0,
                          recency_window=1).stopped == "no_readable_bid"
    markdown = transcript_markdown(store, record.run_id)
    assert "### Turn 1: nobody spoke" in markdown and "lull" not in markdown
    assert "no agent produced a readable bid" in markdown
    assert store.load_run(record.run_id).turns[0].reason == "no_readable_bid"


def test_a_reply_cut_off_at_max_tokens_says_so() -> None:
    from types import SimpleNamespace

    from groupchat_core.providers._replies import parse_response as _parse_response

    call = SimpleNamespace(function=SimpleNamespace(name="respond",
                                                    arguments='{"score": 0.8, "mess'))
    choice = SimpleNamespace(finish_reason="length",
                             message=SimpleNamespace(tool_calls=[call], content=None))
    parsed, path = _parse_response(SimpleNamespace(choices=[choice]), "forced")
    assert path == "tool_call" and not parsed.readable
    assert parsed.error is not None and parsed.error.startswith("unreadable: respond arguments")
    assert parsed.error.endswith("(the reply was cut off at max_tokens)")
