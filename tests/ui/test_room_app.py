"""People in the room: seats and room-link tokens, the room panel's logic, people joining and
bidding through AppTest, guests (issue 44: a room link seats its holder in that room only), and
people shown as people (issue 41: a face, "person", no hand once the room ended, missed posts).
Two AppTest sessions in one process share its job registry and store, as two browsers share a
server: two sessions running at once each see only their own job. The one browser journey is
tests/e2e/test_room.py."""

from __future__ import annotations

import inspect
import json
import logging
import re
import threading
from datetime import datetime
from types import ModuleType
from typing import Any

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from groupchat_core import (
    Agent,
    Bid,
    ConfigError,
    GroupChat,
    Human,
    LiveBid,
    PersonState,
    RoomSnapshot,
)
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, tool_call
from groupchat_ui.agents import actions as agents_actions
from groupchat_ui.analysis import actions as analysis_actions
from groupchat_ui.analysis.view import run_people
from groupchat_ui.kit import access, store_access
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import state as ui_state
from groupchat_ui.kit.components import AGENT_AVATAR, PERSON_AVATAR
from groupchat_ui.kit.safety import safe_markdown
from groupchat_ui.kit.state import SessionState
from groupchat_ui.run import actions as run_actions
from groupchat_ui.run import people_view
from groupchat_ui.run import room_logic as logic
from groupchat_ui.run import room_seats as seats
from groupchat_ui.run.live_view import missed_posts
from groupchat_ui.run.room_view import ROOM_ENDED, person_line
from groupchat_ui.runs import actions as runs_actions
from groupchat_ui.settings import actions as settings_actions
from tests.helpers import ROOT
from tests.helpers.app_helpers import (
    fill,
    goto,
    new_app,
    poll,
    preset_run_form,
    rendered_text,
    save_agents,
    session,
    status,
    texts,
)
from tests.helpers.waits import HANG_GUARD_S, eventually


def snap(**fields: object) -> RoomSnapshot:
    base: dict[str, object] = dict(
        version=1, run_id="r", turn=2, phase="bidding", deadline=10.0, time_left=12.4,
        bids=(), forming=(), hands=(), people=(), waiting_for=(), poster=None, candidates=(),
        rule_pick=None, picker=None, messages=())
    return RoomSnapshot(**{**base, **fields})  # type: ignore[arg-type]


def test_a_room_link_token_has_256_bits_and_only_its_hash_is_kept():
    token = seats.new_token()
    assert len(token) >= 43 and token != seats.new_token()
    seat = seats.Seat("Ann", None, seats.token_hash(token))
    assert token not in repr(seat) and seat.digest != token.encode()
    assert seat.matches(token)
    assert not seat.matches(token[:-1] + ("A" if token[-1] != "A" else "B"))
    assert not seat.matches("")


def test_a_seat_is_claimed_by_its_user_signed_in_or_by_its_link_token_the_starters_held():
    table = seats.SeatTable()
    tok_ann, tok_bob = seats.new_token(), seats.new_token()
    table.register("job1", object(), [
        seats.Seat("Ann", "ann@example.org", seats.token_hash(tok_ann)),
        seats.Seat("Bob", None, seats.token_hash(tok_bob))])
    assert table.claim("job1", user="ann@example.org", signed_in=True, browser="b1") == ["Ann"]
    # without login every session is "local": the user field proves nothing, a token does
    assert table.claim("job1", user="ann@example.org", signed_in=False, browser="b9") == []
    assert table.claim("job1", user="local", signed_in=False, token=tok_bob,
                       browser="b2") == ["Bob"]
    assert table.claim("job1", user="eve@example.org", signed_in=True, token="guess",
                       browser="b3") == []
    assert table.claim("nojob", user="ann@example.org", signed_in=True, browser="b1") == []
    assert table.invitations("ann@example.org") == [("job1", "Ann")]
    assert table.forget(lambda job_id: False) == 1 and table.get("job1") is None
    # the starter holds their own seat, a signed-in user theirs in any browser
    tok_ann, tok_cy = seats.new_token(), seats.new_token()
    table.register("j", object(), [seats.Seat("Ann", None, seats.token_hash(tok_ann)),
                                   seats.Seat("Cy", "cy@example.org", seats.token_hash(tok_cy))])
    assert table.hold("j", "Ann", "starter") and table.hold("j", "Ann", "starter")
    assert not table.hold("j", "Ann", "other") and not table.hold("j", "Nobody", "starter")
    # Ann's own link, opened elsewhere, does not take her seat from the browser that started
    assert table.claim("j", user="local", signed_in=False, token=tok_ann, browser="other") == []
    assert table.claim("j", user="cy@example.org", signed_in=True, browser="cy1") == ["Cy"]
    assert table.claim("j", user="cy@example.org", signed_in=True, browser="cy2") == ["Cy"]
    assert table.claim("j", user="eve@example.org", signed_in=True, token=tok_cy,
                       browser="eve") == []  # Cy's link, once Cy holds the seat


def test_a_link_seat_belongs_to_the_first_browser_and_another_browser_watches():
    """A link is a bearer token: a second browser was seated as the same person."""
    table = seats.SeatTable()
    tok = seats.new_token()
    table.register("j", object(), [seats.Seat("Bo", None, seats.token_hash(tok))])
    assert table.held_elsewhere("j", tok, "phone") is None  # nobody holds it yet
    assert table.claim("j", user="local", signed_in=False, token=tok, browser="phone") == ["Bo"]
    assert table.claim("j", user="local", signed_in=False, token=tok, browser="phone") == ["Bo"]
    assert table.claim("j", user="local", signed_in=False, token=tok, browser="laptop") == []
    assert table.held_elsewhere("j", tok, "laptop") == "Bo"
    # a reload of the holder's browser (same ?sid=), the link's seat= gone: still its seat
    assert table.claim("j", user="local", signed_in=False, browser="phone") == ["Bo"]
    assert table.claim("j", user="local", signed_in=False, browser="laptop") == []
    assert table.held_by("phone") == [("j", "Bo")] and table.held_by("laptop") == []
    assert table.held_elsewhere("j", tok, "phone") is None
    assert table.held_elsewhere("j", "wrong", "laptop") is None
    note = logic.watching_note(True, table.held_elsewhere("j", tok, "laptop"))
    assert note.startswith("You are watching: the seat of Bo is held by the browser that opened")
    assert "\n" not in note
    assert "opens no seat" in logic.watching_note(True, None)
    assert "not on this server" in logic.watching_note(False, None)


def test_a_tab_silent_for_the_leave_time_is_told_once_as_left_and_a_beat_brings_it_back():
    now = [100.0]
    table = seats.SeatTable(clock=lambda: now[0])
    table.register("j", object(), [seats.Seat("Ann", None, b"x"), seats.Seat("Bob", None, b"y")])
    table.beat("j", "Ann")
    now[0] += seats.LEAVE_AFTER_S - 0.1
    assert table.silent("j") == []  # Bob never had a tab open: the engine's window decides
    now[0] += 0.2
    assert table.silent("j") == ["Ann"]
    assert table.silent("j") == []  # reported once
    table.beat("j", "Ann")
    now[0] += 1.0
    assert table.silent("j") == []

    # seats.presence, run by every open tab's refresh: a silent tab left (a pass, hand down)
    chat = GroupChat(agents=[Agent(agent_name="A", model_name="sim/eager"), Human("Ann")])
    room = chat.room
    assert room is not None
    table.register("k", chat, [seats.Seat("Ann", None, b"x")])
    assert seats.presence("k", room, "Ann", table) == []
    room.raise_hand("Ann")
    now[0] += seats.LEAVE_AFTER_S + 0.1  # the tab closed: no refresh beats for Ann
    assert seats.presence("k", room, None, table) == ["Ann"]
    ann = logic.person_state(room.snapshot(), "Ann")
    assert ann is not None and ann.left and not ann.hand_up
    assert seats.presence("k", room, None, table) == []  # told once
    assert seats.presence("k", room, "Ann", table) == []  # the tab is back
    ann = logic.person_state(room.snapshot(), "Ann")
    assert ann is not None and not ann.left


def test_people_of_the_next_run_are_checked_with_a_one_line_fix():
    people = logic.add_person([], "  Ann  ", "ann@example.org", picker=False, taken=["Sage"])
    assert people == [logic.Person("Ann", "ann@example.org", False)]
    with pytest.raises(ConfigError, match="taken"):
        logic.add_person(people, "Sage", None, picker=False, taken=["Sage"])
    with pytest.raises(ConfigError, match="taken"):
        logic.add_person(people, "Ann", None, picker=False, taken=[])
    with pytest.raises(ConfigError, match="1 to 60 characters"):
        logic.add_person(people, "   ", None, picker=False, taken=[])
    people = logic.add_person(people, "Judge", "", picker=True, taken=[])
    assert people[-1] == logic.Person("Judge", None, True)
    with pytest.raises(ConfigError, match="already has a person who picks"):
        logic.add_person(people, "Judge2", None, picker=True, taken=[])


def test_the_clock_line_the_hand_queue_and_the_room_link():
    assert logic.hand_queue(snap(hands=("Bob", "Ann"))) == ["1. Bob", "2. Ann"]  # as raised
    assert logic.room_link("http://h:1/", "abc", "tok") == "http://h:1/run?job=abc&seat=tok"
    assert logic.time_left_label(snap()) == "Turn 2 · bidding · 12 s left"
    assert logic.time_left_label(snap(phase="posting", time_left=40.0)) == \
        "Turn 2 · the winner is writing · 40 s left"
    assert logic.time_left_label(snap(turn=0, phase="idle", time_left=None)) == \
        "Room · waiting for the first turn"


def test_bid_rows_list_every_participant_in_roster_order_with_their_state():
    s = snap(bids=(LiveBid("Ann", "human", 0.8, hand=True), LiveBid("Sage", "agent", 0.61,
                                                                      "I think", 0.31)),
             forming=(LiveBid("Rex", "agent", None, "Well"),),
             people=(PersonState("Ann", None, True, True, False),
                     PersonState("Bob", None, False, False, False)))
    assert logic.bid_rows(s, ["Sage", "Rex", "Ann", "Bob"]) == [
        ("Sage", "agent", "score 0.61, adjusted 0.31", "I think"),
        ("Rex", "agent", "writing…", "Well"),
        ("Ann", "person", "score 0.80 (hand up)", ""),
        ("Bob", "person", "no bid yet", "")]
    assert logic.bid_status(LiveBid("Bob", "human", 0.0, passed=True)) == "passed"


def test_a_seat_gets_the_controls_of_its_phase_only():
    people = (PersonState("Ann", None, False, False, False),)
    assert logic.my_phase(snap(people=people), "Ann") == "bid"
    assert logic.my_phase(snap(people=people), None) is None
    assert logic.my_phase(snap(phase="posting", poster="Ann"), "Ann") == "post"
    assert logic.my_phase(snap(phase="posting", poster="Bob"), "Ann") is None
    assert logic.my_phase(snap(phase="picking", picker="Judge"), "Judge") == "pick"
    assert logic.my_phase(snap(phase="finished", people=people), "Ann") is None


def add_person(at: AppTest, name: str, *, me: bool = False, picker: bool = False,
               user: str | None = None) -> None:
    at.text_input(key="room_person_name").set_value(name)
    at.checkbox(key="room_person_me").set_value(me)
    at.checkbox(key="room_person_picker").set_value(picker)
    if user is not None:
        at.text_input(key="room_person_user").set_value(user)
    at.button(key="room_add_person").click().run()
    assert not at.exception, [e.value for e in at.exception]


def prepare(at: AppTest) -> None:
    preset_run_form(at)
    at.number_input(key="room_window").set_value(120.0)  # nothing expires during the test
    at.number_input(key="run_param_max_loops").set_value(4)


def markdown(at: AppTest) -> str:
    return texts(at.markdown) + " " + texts(at.caption)


def test_two_sessions_run_at_once_and_each_sees_only_its_own_job(app: AppTest):
    """Two browser sessions of one server, each with its own job: the fake model holds every
    bid until the test lets go, so both are running at once. Each page (status line, sidebar,
    chat, URL, everything it draws) names only its own job, while running and after; both runs
    are recorded, each with its own task, and they overlapped."""
    tasks = {"A": "Session A asks: should we adopt AI for medical diagnosis?",
             "B": "Session B asks: should we adopt AI for medical billing?"}
    asked: set[str] = set()
    go = threading.Event()

    def held(body: dict[str, Any]) -> Any:
        sent = json.dumps(body.get("messages"))
        asked.update(s for s, task in tasks.items() if task in sent)
        go.wait(HANG_GUARD_S)
        return tool_call(0.9, "A point.")

    def sees_only(s: str, mine: str, other: str) -> None:
        at = sessions[s]
        assert re.match(rf"status: {mine} · job {jobs[s]}", status(at)), status(at)
        shown = rendered_text(at)
        assert jobs[s] in shown and jobs[other] not in shown
        assert jobs[other] not in str(at.query_params)
        assert re.search(r"Jobs of this session: \d running, 1 in all", texts(at.sidebar.caption))
        assert not any(b.key == "job_select" for b in at.selectbox)  # one job: no picker
        chat = [texts(c.markdown) for c in at.chat_message]
        assert tasks[s] in chat[0] and not any(tasks[other] in c for c in chat)

    with FakeOpenAIServer() as fake:
        fake.set_responder(None, held)
        save_agents(RunStore(), [
            Agent(agent_name=n, model_name=f"openai/m{n}", api_base=fake.base_url,
                  num_retries=0, timeout=HANG_GUARD_S) for n in ("Ann", "Bob")])
        sessions = {"A": app, "B": new_app()}
        try:
            for s, at in sessions.items():
                fill(goto(at, "run"), run_roster=["Ann", "Bob"]).run()
                fill(at, run_task=tasks[s], run_param_max_loops=3)
                at.button(key="start_run").click().run()
                assert not at.error, [e.value for e in at.error]
            jobs = {s: session(at).current_job for s, at in sessions.items()}
            assert jobs["A"] != jobs["B"] and all(jobs.values())
            eventually(lambda: asked == {"A", "B"}, "both runs to ask for bids at once")
            for s, at in sessions.items():
                at.run()
                sees_only(s, "running", "B" if s == "A" else "A")
        finally:
            go.set()
        for s, at in sessions.items():
            poll(at, lambda a, s=s: status(a).startswith(f"status: finished · job {jobs[s]}"),
                 f"session {s}'s run to finish")
            sees_only(s, "finished", "B" if s == "A" else "A")
    RunStore().flush()
    by_task = {row["task"]: row for row in RunStore().list_runs(agent="Ann").to_dict("records")}
    assert set(by_task) == set(tasks.values()) and all(
        row["status"] == "finished" for row in by_task.values())
    first, second = (by_task[tasks[s]] for s in "AB")
    at = datetime.fromisoformat
    assert at(first["started_at"]) < at(second["ended_at"])
    assert at(second["started_at"]) < at(first["ended_at"])


def test_people_join_the_next_run_a_taken_name_is_refused_and_a_refused_start_says_why(
        app: AppTest):
    prepare(app)
    add_person(app, "Ann", me=True)
    assert "**Ann** · person, bids · you" in markdown(app)
    add_person(app, "Ann")
    assert "Not added: the name 'Ann' is taken in this room: pick another" in texts(app.error)
    add_person(app, "Judge", picker=True)
    assert "**Judge** · person, picks who speaks" in markdown(app)
    app.button(key="room_remove_Judge").click().run()
    assert "Judge" not in markdown(app)
    # a room start refused says why in one line, and starts nothing
    for widget, value, said in (
            ("room_window", 0.0, "must be a number above 0"),
            ("run_param_strategy", "round_robin",
             "people take part only with strategy 'bidding', not 'round_robin'")):
        fill(app, **{"room_window": 120.0, "run_param_strategy": "bidding", widget: value})
        app.button(key="start_run").click().run()
        assert not app.exception, [e.value for e in app.exception]
        shown = texts(app.error).replace("\\_", "_")  # shown as markdown
        assert shown.startswith("The run did not start:") and said in shown, shown
        assert "\n" not in shown and "Traceback" not in shown
        assert session(app).current_job is None


def test_a_signed_in_user_joins_the_seat_that_is_theirs(signed_in):
    alice = signed_in("alice")
    prepare(alice)
    add_person(alice, "Alice", me=True)
    add_person(alice, "Bobby", user="bob@example.org")
    alice.button(key="start_run").click().run()
    job_id = session(alice).current_job
    assert "You are **Alice** in this room." in markdown(alice)
    bob = signed_in("bob")
    joins = [b for b in bob.button if b.key == f"room_join_{job_id}"]
    assert joins, "bob is not invited"
    joins[0].click().run()
    assert "You are **Bobby** in this room." in markdown(bob)
    assert session(bob).current_job == job_id


def test_a_person_picks_who_speaks_and_analysis_shows_the_agreement_rate(app: AppTest):
    """The picker sees the top bids with their drafts and the rule's pick, lets another speak
    once, then accepts the rule's pick; the chosen draft is what is posted."""
    prepare(app)
    add_person(app, "Judge", me=True, picker=True)
    app.number_input(key="run_param_threshold").set_value(0.0)  # every sim bid can speak
    app.number_input(key="run_param_max_loops").set_value(3)
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]
    job_id = session(app).current_job
    room = seats.table().get(job_id).room
    picks = agreed = 0
    while not status(app).startswith(("status: finished", "status: error")):
        poll(app, lambda at: _rule_pick(at) is not None
             or status(at).startswith("status: finished"), "the picking phase")
        if status(app).startswith("status: finished"):
            break
        rule = next(m.value for m in app.info if "The bidding rule would pick" in m.value)
        cands = [b for b in app.button if (b.key or "").startswith("room_pick_")
                 and not (b.key or "").endswith("_rule")]
        assert len(cands) >= 2, [b.label for b in cands]  # the top bids, each with a button
        drafts = {bid.name: bid.message for bid in room.snapshot().candidates}
        assert sorted(drafts) == sorted(b.label[4:-6] for b in cands)  # "Let X speak"
        assert all(safe_markdown(d[:1500]) in markdown(app) for d in drafts.values() if d)
        named = re.search(r"\*\*(.+?)\*\*", rule)
        rule_name = named.group(1) if named and named.group(1) != "nobody" else None
        if rule_name is None or picks == 1:  # "Accept the rule's pick" (nobody: no pick)
            choice, picked = _rule_pick(app), rule_name
        else:  # the first pick goes against the rule, later ones name the rule's pick
            choice = next(b for b in cands if (b.label[4:-6] == rule_name) != (picks == 0))
            picked = choice.label[4:-6]
        if picked is not None:
            picks, agreed = picks + 1, agreed + (picked == rule_name)
        turn_now = status(app)
        choice.click().run()
        poll(app, lambda at, before=turn_now: status(at) != before or not any(
            (b.key or "").endswith("_rule") for b in at.button), "the pick to be taken")
        if picked is not None:  # the chosen speaker's draft is the turn's post
            post = safe_markdown(drafts[picked])
            poll(app, lambda at, who=picked, post=post: any(
                c.name == who and post in texts(c.markdown) for c in at.chat_message),
                f"{picked}'s draft in the chat")
    run_id = job_registry.registry().snapshot(job_id).run_id
    RunStore().flush()
    goto(app, "analysis", run=str(run_id))
    line = texts(app.info)
    s = "s" if picks != 1 else ""
    assert f"A person picked who speaks on {picks} turn{s}; the bidding rule would have picked "\
        f"the same speaker on {agreed} (agreement {agreed / picks:.0%})." in line, line
    assert picks >= 2 and agreed == picks - 1


def seat_controls(at: AppTest, turn: int = 1) -> bool:
    """The seat's bid controls for `turn` are drawn (that turn's bid window is open)."""
    return any(b.key == f"room_pass_{turn}" for b in at.button)


def _rule_pick(at: AppTest) -> Any:
    """This turn's "Accept the rule's pick" button (its key carries the turn), or None."""
    return next((b for b in at.button if (b.key or "").startswith("room_pick_")
                 and (b.key or "").endswith("_rule")), None)


# The only callbacks a guest may use: its room's, and picking which of its jobs it watches.
ROOM_CALLBACKS = {"on_raise", "on_lower", "on_pass", "on_bid", "on_post", "on_pick", "on_join",
                  "on_job_selected"}
MODULES = [agents_actions, analysis_actions, run_actions, runs_actions, settings_actions,
           people_view]


def test_a_session_that_arrived_by_a_room_link_is_a_guest_for_good_and_never_with_login():
    """Its browser is remembered as a guest's, within a bound."""
    assert access.is_guest(login=False, was_guest=False, link_in_url=True, guest_browser=False)
    assert access.is_guest(login=False, was_guest=False, link_in_url=False, guest_browser=True)
    # sticky: the link gone from the URL (a page switch) does not make it the local user
    assert access.is_guest(login=False, was_guest=True, link_in_url=False, guest_browser=False)
    assert not access.is_guest(login=False, was_guest=False, link_in_url=False,
                               guest_browser=False)
    for flags in ((True, True, True), (False, True, False), (True, False, True)):
        was, link, browser = flags
        assert not access.is_guest(login=True, was_guest=was, link_in_url=link,
                                   guest_browser=browser)
    guests = access.GuestBrowsers(limit=3)
    for sid in ("a", "b", "c", "a", "d"):  # "a" seen again: the newest, so "b" goes first
        guests.remember(sid)
    assert len(guests) == 3 and "b" not in guests
    assert all(s in guests for s in ("a", "c", "d"))


def test_a_guest_may_open_the_run_page_only_is_told_why_in_one_line_and_owns_nothing():
    assert access.guest_may_open("run") and access.guest_may_open("")
    for slug in ("agents", "analysis", "runs", "sweeps", "settings", "home"):
        assert not access.guest_may_open(slug)
    text = access.guest_refusal("deleting runs")
    assert text.startswith("Not allowed: deleting runs is not open to a room guest.")
    assert "\n" not in text and "ask whoever started the room" in text
    # under the refusals: a guest owns nothing and is no admin
    assert not job_registry.may_manage(job_registry.LOCAL_USER, access.GUEST_USER)
    assert not job_registry.may_manage(None, access.GUEST_USER)
    assert job_registry.may_manage(job_registry.LOCAL_USER, job_registry.LOCAL_USER)


def _callbacks() -> list[tuple[ModuleType, str]]:
    found = [(m, name) for m in MODULES for name, fn in vars(m).items()
             if name.startswith("on_") and inspect.isfunction(fn)
             and getattr(fn, "__module__", "").startswith("groupchat_ui")]
    return sorted(set(found), key=lambda mn: (mn[0].__name__, mn[1]))


def _call(fn: Any) -> None:
    """Call a callback as a crafted widget event would: any arguments."""
    required = [p for p in inspect.signature(fn).parameters.values()
                if p.default is inspect.Parameter.empty]
    fn(*[None] * len(required))


@pytest.fixture
def no_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused action must not reach the store or the job table."""
    def reached(*_: object, **__: object) -> Any:
        raise AssertionError("a guest's action reached the store or the job table")

    monkeypatch.setattr(store_access, "store", reached)
    monkeypatch.setattr(store_access, "job_registry", reached)


def test_every_action_outside_the_room_refuses_a_guest_session(monkeypatch, no_store):
    guest = SessionState(user=access.GUEST_USER, user_name=access.GUEST_USER, guest=True)
    monkeypatch.setattr(ui_state, "get", lambda: guest)
    refused = []
    for module, name in _callbacks():
        if name in ROOM_CALLBACKS:
            continue
        guest.notices.clear()
        _call(getattr(module, name))
        assert len(guest.notices) == 1, f"{module.__name__}.{name} did not refuse a guest"
        kind, text = guest.notices[0]
        assert kind == "error" and text.startswith("Not allowed: ") and "\n" not in text
        refused.append(name)
    # the ones the review named: stop, delete, edit, import (agents and runs), start, settings
    for name in ("on_stop", "on_start_run", "on_delete_agent", "on_confirm_delete_agent",
                 "on_edit_agent", "on_save_agent", "on_import_agents", "on_ask_delete",
                 "on_confirm_delete", "on_import_bundle", "on_load_preset", "on_save_keys",
                 "on_save_preferences", "on_run_demo"):
        assert name in refused, name


def test_the_refusal_lets_a_local_user_through(monkeypatch):
    """The guard's other side: without the guest flag the action reaches the job table."""
    local = SessionState()
    monkeypatch.setattr(ui_state, "get", lambda: local)
    monkeypatch.setattr(run_actions, "get", lambda: local)
    asked: list[tuple[str, str | None]] = []

    class Registry:
        def cancel(self, job_id: str, *, user: str | None = None) -> bool:
            asked.append((job_id, user))
            return True

    monkeypatch.setattr(store_access, "job_registry", lambda: Registry())
    run_actions.on_stop("job1")
    assert asked == [("job1", "local")] and not local.notices


def _room(app: AppTest, max_loops: int = 4) -> tuple[str, dict[str, str]]:
    """Ann (this session) and Bob in a started room: its job id and room-link tokens."""
    prepare(app)
    app.number_input(key="run_param_max_loops").set_value(max_loops)
    add_person(app, "Ann", me=True)
    add_person(app, "Bob")
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]
    job_id = session(app).current_job
    assert job_id
    return job_id, dict(app.session_state["room_tokens"][job_id])


def _keys(at: AppTest) -> set[str]:
    return {b.key for b in at.button if b.key}


def test_a_link_guest_has_the_room_only_a_wrong_token_or_second_browser_watches_seats_bid(
        app: AppTest, monkeypatch, caplog, capsys):
    """The seats then raise and lower their hands, bid with a draft and pass: Lower leaves no
    standing bid; a draft is the bid taken; Pass scores 0 (starter, link)."""
    monkeypatch.setattr(seats, "LEAVE_AFTER_S", 3600.0)  # no tab counts as closed here
    caplog.set_level(logging.DEBUG)
    menus: list[object] = []  # where each session's page menu is drawn (none for a guest)
    navigation = st.navigation
    monkeypatch.setattr(st, "navigation", lambda pages, **kw: menus.append(
        kw.get("position")) or navigation(pages, **kw))
    job_id, tokens = _room(app)
    assert "You are **Ann** in this room." in markdown(app) and set(tokens) == {"Ann", "Bob"}
    # the starter sees the links to hand out; the tokens are never in the store's record
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", tokens["Bob"])
    assert any(re.fullmatch(rf"\S*/run\?job={job_id}&seat={tokens['Bob']}", c.value)
               for c in app.code), [c.value for c in app.code]
    app.button(key="room_raise").click().run()
    assert "1\\. Ann" in markdown(app)  # the hand queue (escaped: a name is never markup)
    assert menus[-1] == "sidebar"
    bob = new_app(job=job_id, seat=tokens["Bob"])
    assert menus[-1] == "hidden"  # no menu: no other page
    me = session(bob)
    assert me.guest and me.user == access.GUEST_USER
    assert "You are **Bob** in this room." in markdown(bob) and "1\\. Ann" in markdown(bob)
    only_the_room(bob)
    assert "You joined through a room link" in texts(bob.caption)
    # no sidebar either (no jobs, no data location), which the starter has
    assert "Data: " in texts(app.caption) and "Data: " not in texts(bob.caption)

    # a wrong token, and Bob's link in a second browser, watch the room (its clock and hand
    # queue), hold no seat, and say why in one line
    wrong = new_app(job=job_id, seat=tokens["Bob"][:-2] + "xx")
    other = new_app(job=job_id, seat=tokens["Bob"])
    for watcher, why in ((wrong, "this link's seat token opens no seat in this room."),
                         (other, "the seat of Bob is held by the browser that opened this "
                                 "link first")):
        assert "You are" not in markdown(watcher) and "room_raise" not in _keys(watcher)
        assert any(i.value.startswith(f"You are watching: {why}") for i in watcher.info), \
            [i.value for i in watcher.info]
        assert any(re.match(r"(Turn \d+ · |Room · )", c.value) for c in watcher.caption)
        assert "1\\. Ann" in markdown(watcher)

    # the other pages: refused on the server, one line, their script never runs
    for page, title in (("agents", "Agents"), ("runs", "Runs"), ("settings", "Settings"),
                        ("sweeps", "Sweeps"), ("analysis", "Analysis")):
        goto(bob, page)
        assert any(re.fullmatch(rf"Not allowed: the {title} page is not open to a room guest\. "
                                r"[^\n]*ask whoever started the room\.", e.value)
                   for e in bob.error), [e.value for e in bob.error]
        assert not _keys(bob), f"{page}: a guest was shown its buttons"
        assert page != "agents" or "Saved agents" not in markdown(bob)
        assert [link.value for link in bob.page_link] == ["Back to the room"]
        assert f"job={job_id}" in bob.page_link[0].proto.query_string
    goto(bob, "run")
    assert "You are **Bob** in this room." in markdown(bob)
    assert job_registry.registry().snapshot(job_id).done is False  # nothing stopped it

    # the guest's own browser (its ?sid=), reloaded without the link: a guest, in its seat
    again = new_app(job=job_id, sid=me.owner)
    assert session(again).guest and "You are **Bob** in this room." in markdown(again)
    # and with no ?job= at all: its room, its seat; another page asked for is refused there too
    back = new_app(sid=me.owner)
    assert session(back).current_job == job_id
    assert "You are **Bob** in this room." in markdown(back)
    only_the_room(back)
    goto(back, "agents")
    assert any(e.value.startswith("Not allowed: the Agents page") for e in back.error)
    assert not _keys(back)

    room = seats.table().get(job_id).room  # turn 1's bid window: Ann's hand is up from above
    poll(app, seat_controls, "Ann's first bid window")
    assert room.snapshot().turn == 1
    app.button(key="room_lower").click().run()
    app.button(key="room_raise").click().run()
    assert "1\\. Ann" in markdown(app) and room.snapshot().hands == ("Ann",)
    app.button(key="room_lower").click().run()
    ann = logic.person_state(room.snapshot(), "Ann")
    assert ann is not None and not ann.hand_up and not ann.bid_in  # the hand's bid went too
    assert "No hand up." in markdown(app) and room.snapshot().hands == ()
    bob.button(key="room_raise").click().run()  # the link guest's hand, on both screens
    assert room.snapshot().hands == ("Bob",) and "1\\. Bob" in markdown(bob)
    assert "1\\. Bob" in markdown(app.run())
    bob.button(key="room_lower").click().run()
    assert room.snapshot().hands == ()

    app.slider(key=f"room_score_{job_id}").set_value(0.35)  # under the 0.5 threshold: no post
    app.text_area(key=f"room_draft_{job_id}_1").set_value("  Costs first, then scope.  ")
    app.button(key="room_bid").click().run()
    mine = next(b for b in room.snapshot().bids if b.name == "Ann")
    assert (mine.score, mine.message, mine.hand, mine.passed) == (
        0.35, "Costs first, then scope.", False, False)
    assert "Your bid this turn: score 0.35" in markdown(app)

    poll(bob, seat_controls, "Bob's first bid window")
    bob.button(key="room_pass_1").click().run()  # everyone has bid: the window closes early
    poll(app, lambda at: room.snapshot().turn == 2 and seat_controls(at, 2),
         "Ann's second bid window")
    snap = room.snapshot()
    ann = logic.person_state(snap, "Ann")
    assert ann is not None and not ann.hand_up and not ann.bid_in  # no standing hand bid
    assert snap.hands == () and "Ann" in snap.waiting_for
    app.button(key="room_pass_2").click().run()
    poll(bob, lambda at: seat_controls(at, 2), "Bob's second bid window")
    bob.button(key="room_pass_2").click().run()
    poll(app, lambda at: room.snapshot().turn > 2 or status(at).startswith("status: "
                                                                          "finished"),
         "turn 2 to be recorded")
    assert not status(app).startswith("status: error"), status(app)
    # the starter stops the room (a lull would open turn 3: not needed here)
    app.button(key="stop_run").click().run()
    poll(app, lambda at: status(at).startswith(("status: cancelled", "status: finished")),
         "the room to stop")
    RunStore().flush()
    bids = RunStore().bids(job_registry.registry().snapshot(job_id).run_id)
    people = bids[(bids["kind"] == "human") & (bids["turn"] <= 2)]
    got = {(r.turn, r.agent): (r.score, r.message) for r in people.itertuples()}
    assert got == {(1, "Ann"): (0.35, "Costs first, then scope."), (1, "Bob"): (0.0, ""),
                   (2, "Ann"): (0.0, ""), (2, "Bob"): (0.0, "")}
    assert not people[people["score"] == 0.0]["eligible"].any()  # a pass can never speak
    # no token ever reached a log line or the console
    logged = caplog.text + "".join(capsys.readouterr())
    assert not any(token in logged for token in tokens.values())


def only_the_room(at: AppTest) -> None:
    """A room guest's Run page: the seat's hand and the room's controls, nothing else."""
    keys = _keys(at)
    assert len(keys & {"room_raise", "room_lower"}) == 1  # the seat's hand, whichever way
    assert not keys & {"start_run", "use_preset", "room_add_person"}  # no New run
    stop = [b for b in at.button if b.key == "stop_run"]
    assert not stop or stop[0].disabled


def test_with_login_on_a_link_only_seats_and_the_owner_rules_hold(signed_in):
    job_id, tokens = _room(signed_in("alice"))
    bob = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    bob.session_state["test_user"] = "bob"
    bob.query_params["job"], bob.query_params["seat"] = job_id, tokens["Bob"]
    bob.run()
    assert not bob.exception, [e.value for e in bob.exception]
    assert not session(bob).guest and session(bob).user == "bob@example.org"
    assert "You are **Bob** in this room." in markdown(bob)
    stop = [b for b in bob.button if b.key == "stop_run"]
    assert stop and stop[0].disabled  # Alice's run: only she (or an admin) stops it
    assert not job_registry.registry().cancel(job_id, user="bob@example.org")


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
    """An empty Post once gave the floor away unsaid: now it says why and keeps the window."""
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
