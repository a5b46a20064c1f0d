"""Issue 41: people in the room are shown as people. Their posts have their own avatar and say
"person" (not a model); the winner writing the post is offered no Raise hand; a person who lets
the post window close is told so, not sent to check "the agent's model string"; once the room
has ended nobody's hand shows up; Analysis names the run's people."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from groupchat_core import Bid, PersonState
from groupchat_core.store import RunStore
from groupchat_ui.analysis.view import run_people
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit.components import AGENT_AVATAR, PERSON_AVATAR
from groupchat_ui.run import room_seats as seats
from groupchat_ui.run.live_view import missed_posts
from groupchat_ui.run.room_view import ROOM_ENDED, person_line
from tests.helpers.app_helpers import fill, poll, preset_run_form, session, status, texts


def _bid(agent: str, kind: str, error: str | None = None) -> Bid:
    return Bid(turn=2, agent=agent, position=0, score=0.9, adjusted=0.9, penalized=False,
               eligible=True, winner=False, message="", latency_ms=0.0, path="human"
               if kind == "human" else "tool_call", error=error, calls=0, kind=kind)


def test_a_missed_post_window_is_said_as_such_and_only_for_people():
    note = "no post within 60 s: the floor went to the next bid"
    lines = missed_posts([_bid("Ann", "human", note), _bid("Bob", "human"),
                          _bid("Cy", "agent", "Timeout")])
    assert lines == [f"Turn 2: **Ann** won the floor but did not post in time ({note}): "
                     "not an error."]


@pytest.mark.parametrize(("hand_up", "passed", "bid_in", "done", "expected"), [
    (True, False, True, False, "hand up"),
    (False, True, True, False, "passed"),
    (False, False, False, False, "thinking"),
    (True, False, True, True, "hand lowered (the room ended)"),
    (False, False, False, True, "the room ended"),
])
def test_after_the_room_ends_no_hand_shows_up(hand_up: bool, passed: bool, bid_in: bool,
                                              done: bool, expected: str):
    person = PersonState("Ann", None, hand_up, bid_in, False)
    assert person_line(person, passed, done) == expected


def test_analysis_names_the_people_who_bid():
    bids = pd.DataFrame({"agent": ["Alice", "Ann", "Bob", "Ann"],
                         "kind": ["agent", "human", "human", "human"]})
    assert run_people(bids) == ["Ann", "Bob"]
    assert run_people(bids[bids["kind"] == "agent"]) == []
    assert run_people(pd.DataFrame()) == []


def _bubble_app(person: bool) -> AppTest:
    def script(person: bool) -> None:
        from groupchat_core import Message
        from groupchat_ui.kit.components import bubble
        bubble(Message(role="Ann", content="Scope first.", score=0.9), model="sim/debater",
               person=person)

    at = AppTest.from_function(script, kwargs={"person": person})
    at.run()
    assert not at.exception
    return at


def test_a_persons_post_has_a_face_and_says_person_not_a_model():
    person, agent = _bubble_app(True), _bubble_app(False)
    assert person.chat_message[0].avatar == PERSON_AVATAR != AGENT_AVATAR
    assert agent.chat_message[0].avatar == AGENT_AVATAR
    assert "**Ann** · person · score 0.90" in texts(person.markdown)
    assert "person" not in texts(agent.markdown)


def _start_with_ann(app: AppTest, post_window: float) -> str:
    """A run with Ann (this session) in the room; returns its job id once she has bid 1.0."""
    preset_run_form(app)
    fill(app, room_window=120.0, room_post_window=post_window, run_param_max_loops=3,
         room_person_name="Ann", room_person_me=True)
    app.button(key="room_add_person").click().run()
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]
    poll(app, lambda at: any(b.key == "room_pass_1" for b in at.button), "Ann's bid window")
    job_id: str = session(app).current_job
    app.slider(key=f"room_score_{job_id}").set_value(1.0)  # she wins the turn
    app.button(key="room_bid").click().run()
    return job_id


def test_the_winner_writing_the_post_has_no_raise_hand_must_write_and_her_post_a_face(
        app: AppTest):
    """An empty Post with no draft posts nothing, says why and keeps the window hers (without
    the check it gave the floor away unsaid); then her post shows with a person's face."""
    job_id = _start_with_ann(app, post_window=120.0)
    room = seats.table().get(job_id).room
    poll(app, lambda at: any(b.key == "room_post" for b in at.button), "Ann's post window",
         shown=lambda at: repr(room.snapshot().phase))
    assert not any(b.key == "room_raise" for b in app.button)  # it was offered here
    app.text_area(key=f"room_post_{job_id}_1").set_value("   ")
    app.button(key="room_post").click().run()
    snap = room.snapshot()
    assert (snap.phase, snap.poster) == ("posting", "Ann")  # still hers to post
    assert any("Nothing posted: write your message first" in w.value for w in app.warning)
    app.text_area(key=f"room_post_{job_id}_1").set_value("Ann: scope first.")
    app.button(key="room_post").click().run()
    poll(app, lambda at: room.snapshot().turn >= 2, "turn 1 to be recorded")
    job_registry.registry().cancel(job_id)
    poll(app, lambda at: any(c.name == "Ann" for c in at.chat_message), "Ann's post")
    ann = next(c for c in app.chat_message if c.name == "Ann")
    assert ann.avatar == PERSON_AVATAR
    RunStore().flush()
    messages = RunStore().messages(job_registry.registry().snapshot(job_id).run_id)
    assert "Ann: scope first." in list(messages["content"])


def test_a_missed_post_window_is_no_provider_failure_and_the_ended_room_has_no_hand(
        app: AppTest):
    """Ann wins and lets a one-second post window close; the run is then stopped."""
    job_id = _start_with_ann(app, post_window=1.0)
    room = seats.table().get(job_id).room
    poll(app, lambda at: room.snapshot().turn >= 2 or status(at).startswith("status: fin"),
         "the post window to close")
    job_registry.registry().cancel(job_id)
    poll(app, lambda at: status(at).startswith(("status: cancelled", "status: finished")),
         "the run to end")
    assert "**Ann** won the floor but did not post in time" in texts(app.info), \
        texts(app.info)
    assert not any("model string" in w.value for w in [*app.warning, *app.error])
    assert ROOM_ENDED in texts(app.markdown)
