"""Observers get the engine's records uncopied (issue 10 §7), yet an observer that changes them,
on either thread, changes nothing in the store: the recorder takes plain rows on receipt."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from groupchat_core import GroupChat, background_loop
from groupchat_core.store import RunStore
from tests.helpers.chats import scripted_chat

SCRIPT = {
    "Alice": [(0.9, "A1"), (0.9, "A2"), (0.3, "A3"), (0.2, "")],
    "Bob": [(0.7, "B1"), (0.7, "B2"), (0.8, "B3"), (0.4, "B4")],
    "Cara": [(0.1, ""), (0.65, "C1"), (0.3, "C2"), (0.1, "")],
}
BID_COLUMNS = ["turn", "agent", "position", "score", "adjusted", "penalized", "eligible",
               "winner", "message", "path", "error", "calls"]


def make_chat() -> GroupChat:
    return scripted_chat(SCRIPT, max_loops=10, threshold=0.5)


def vandalise(event: Any) -> None:
    """Change everything an event carries, in place."""
    if event.kind == "turn_completed":
        for bid in event.bids:
            bid.score, bid.adjusted, bid.message = 0.001, -5.0, "vandal"
            bid.winner, bid.eligible, bid.error = not bid.winner, False, "vandal"
        event.turn.winner, event.turn.margin, event.turn.reason = "Mallory", 9.0, "lull"
        if event.message is not None:
            event.message.role, event.message.content = "Mallory", "vandal"
    elif event.kind == "message_posted":
        event.message.content = "vandal"
    elif event.kind == "run_finished":
        record = event.record
        record.stop_reason, record.error, record.ended_at = "cancelled", "vandal", "never"
        record.total_calls, record.total_prompt_tokens = 999, 999
        for bid in record.bids:
            bid.message = "vandal"
        for message in record.messages:
            message.content = "vandal"


class EngineThreadVandal:
    """On the engine's thread right after the recorder, before its writer thread wrote."""

    thread_safe = True

    def __call__(self, event: Any) -> None:
        vandalise(event)


def truth() -> dict[str, Any]:
    """The same scripted chat, unobserved: what the store must hold."""
    chat = make_chat()
    chat.run("Who speaks?")
    record = chat.last_run
    assert record is not None
    return {"bids": record.bids_frame()[BID_COLUMNS],
            "turns": record.turns_frame(),
            "messages": [(m.role, m.content) for m in record.messages],
            "stop_reason": record.stop_reason, "total_calls": record.total_calls}


@pytest.mark.parametrize("how", ["run() from this thread", "a job on the engine loop"])
@pytest.mark.parametrize("vandal", ["engine thread", "caller thread"])
def test_what_observers_do_to_events_never_reaches_the_store(store: RunStore, how: str,
                                                             vandal: str):
    expected = truth()
    chat = make_chat()
    store.attach(chat)  # the recorder is called first
    chat.add_observer(EngineThreadVandal() if vandal == "engine thread" else vandalise)
    if how.startswith("run()"):
        chat.run("Who speaks?")  # a plain observer runs on this thread, after the recorder
    else:
        background_loop().submit(chat.arun_record("Who speaks?")).result()
    store.flush()
    record = chat.last_run
    assert record is not None and record.stop_reason == "cancelled"  # the vandal was there
    assert {b.message for b in record.bids} == {"vandal"}

    run_id = record.run_id
    for stored, frame in ((store.bids(run_id), expected["bids"]),
                          (store.turns(run_id), expected["turns"])):
        pd.testing.assert_frame_equal(stored[list(frame.columns)].reset_index(drop=True), frame,
                                      check_dtype=False)
    messages = store.messages(run_id)
    assert list(zip(messages["role"], messages["content"], strict=True)) == expected["messages"]
    info = store.run_info(run_id)
    assert info["stop_reason"] == expected["stop_reason"] == "lull"
    assert info["status"] == "finished" and info["error"] is None
    assert info["total_calls"] == expected["total_calls"] == 3 * len(expected["turns"])
    assert info["ended_at"] != "never"


def test_run_finished_hands_over_the_record_itself():
    """No copy: the event's record is the record run() returned (read-only by contract)."""
    seen: list[Any] = []
    chat = make_chat()
    chat.add_observer(lambda e: seen.append(e.record) if e.kind == "run_finished" else None)
    chat.run("Who speaks?")
    assert len(seen) == 1 and seen[0] is chat.last_run
