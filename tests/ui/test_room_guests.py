"""A guest is a guest (issue 44): on a server without login a room link seats its holder in
that room only. The rule itself (kit/access.py), every action outside the room refusing a guest
session on the server (not only by hiding its button), and through AppTest: a guest sees the
room, is refused the other pages and cannot stop the room; a second browser with the same link
watches; a reload of the guest's browser is a guest again; with login on a link only seats."""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from groupchat_ui.agents import actions as agents_actions
from groupchat_ui.analysis import actions as analysis_actions
from groupchat_ui.kit import access, store_access
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import state as ui_state
from groupchat_ui.kit.state import SessionState
from groupchat_ui.run import actions as run_actions
from groupchat_ui.run import people_view
from groupchat_ui.run import room_seats as seats
from groupchat_ui.runs import actions as runs_actions
from groupchat_ui.settings import actions as settings_actions
from tests.helpers import ROOT
from tests.helpers.app_helpers import goto, new_app, session, texts

from .test_room_app import add_person, markdown, prepare

# The only callbacks a guest may use: its room's, and picking which of its jobs it watches.
ROOM_CALLBACKS = {"on_raise", "on_lower", "on_pass", "on_bid", "on_post", "on_pick", "on_join",
                  "on_job_selected"}
MODULES = [agents_actions, analysis_actions, run_actions, runs_actions, settings_actions,
           people_view]


# --- the rule ------------------------------------------------------------------------------

def test_a_session_that_arrived_by_a_room_link_is_a_guest_for_good_and_never_with_login():
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


def test_a_guest_may_open_the_run_page_only_and_is_told_why_in_one_line():
    assert access.guest_may_open("run") and access.guest_may_open("")
    for slug in ("agents", "analysis", "runs", "sweeps", "settings", "home"):
        assert not access.guest_may_open(slug)
    text = access.guest_refusal("deleting runs")
    assert text.startswith("Not allowed: deleting runs is not open to a room guest.")
    assert "\n" not in text and "ask whoever started the room" in text


def test_the_guest_browsers_are_remembered_within_a_bound():
    guests = access.GuestBrowsers(limit=3)
    for sid in ("a", "b", "c", "a", "d"):  # "a" seen again: the newest, so "b" goes first
        guests.remember(sid)
    assert len(guests) == 3 and "b" not in guests
    assert all(s in guests for s in ("a", "c", "d"))


def test_a_guest_acts_as_nobody_the_owner_rules_know():
    """Belt and braces under the refusals: a guest's user owns nothing and is no admin, so
    the job table and the stores' owner rules refuse it too."""
    assert not job_registry.may_manage(job_registry.LOCAL_USER, access.GUEST_USER)
    assert not job_registry.may_manage(None, access.GUEST_USER)
    assert job_registry.may_manage(job_registry.LOCAL_USER, job_registry.LOCAL_USER)


# --- every action outside the room refuses a guest, on the server ---------------------------

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
    """The other side of the same guard: without the guest flag the action runs (here it
    reaches the job table), so the test above is about guests, not about a broken action."""
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


# --- through the app (AppTest: login off unless said) ----------------------------------------

def _room(app: AppTest) -> tuple[str, dict[str, str]]:
    prepare(app)
    add_person(app, "Ann", me=True)
    add_person(app, "Bob")
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]
    job_id = session(app).current_job
    assert job_id
    return job_id, dict(app.session_state["room_tokens"][job_id])


def _keys(at: AppTest) -> set[str]:
    return {b.key for b in at.button if b.key}


def test_a_link_guest_has_the_room_only_and_a_second_browser_watches(app: AppTest, monkeypatch):
    monkeypatch.setattr(seats, "LEAVE_AFTER_S", 3600.0)  # no tab counts as closed here
    job_id, tokens = _room(app)
    assert "You are **Ann** in this room." in markdown(app) and set(tokens) == {"Ann", "Bob"}
    # the starter sees the links to hand out; the tokens are never in the store's record
    assert any(tokens["Bob"] in c.value for c in app.code)
    app.button(key="room_raise").click().run()
    assert "1\\. Ann" in markdown(app)  # the hand queue (escaped: a name is never markup)
    bob = new_app(job=job_id, seat=tokens["Bob"])
    me = session(bob)
    assert me.guest and me.user == access.GUEST_USER
    assert "You are **Bob** in this room." in markdown(bob) and "1\\. Ann" in markdown(bob)
    wrong = new_app(job=job_id, seat=tokens["Bob"][:-2] + "xx")
    assert "You are" not in markdown(wrong)  # a wrong token watches, it never holds a seat
    assert "room_raise" not in _keys(wrong)
    keys = _keys(bob)
    assert "room_raise" in keys  # the room's controls
    assert not keys & {"start_run", "use_preset", "room_add_person"}  # no New run
    stop = [b for b in bob.button if b.key == "stop_run"]
    assert not stop or stop[0].disabled
    assert "You joined through a room link" in texts(bob.caption)
    # no sidebar either (no jobs, no data location), which the starter has
    assert "Data: " in texts(app.caption) and "Data: " not in texts(bob.caption)

    # the other pages: refused on the server, one line, their script never runs
    for page, heading in (("agents", "Saved agents"), ("runs", None), ("settings", None),
                          ("sweeps", None), ("analysis", None)):
        goto(bob, page)
        assert any(e.value.startswith("Not allowed: the ") and "room guest" in e.value
                   for e in bob.error), page
        assert not _keys(bob), f"{page}: a guest was shown its buttons"
        assert heading is None or heading not in markdown(bob)
    goto(bob, "run")
    assert "You are **Bob** in this room." in markdown(bob)
    assert job_registry.registry().snapshot(job_id).done is False  # nothing stopped it

    # a second browser with the same link watches, and says so in one line
    other = new_app(job=job_id, seat=tokens["Bob"])
    assert "You are" not in markdown(other) and "room_raise" not in _keys(other)
    assert any(i.value.startswith("You are watching: the seat of Bob is held by the browser "
                                  "that opened this link first") for i in other.info)
    # the guest's own browser (its ?sid=), reloaded without the link: a guest, in its seat
    again = new_app(job=job_id, sid=me.owner)
    assert session(again).guest and "You are **Bob** in this room." in markdown(again)
    # and with no ?job= at all (the way back from a refused page): its room, its seat
    back = new_app(sid=me.owner)
    assert session(back).current_job == job_id
    assert "You are **Bob** in this room." in markdown(back)
    job_registry.registry().cancel(job_id)


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
