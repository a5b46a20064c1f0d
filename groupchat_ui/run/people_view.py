"""People in the room on the Run page: the people of the next run (New run), room links and
invitations, and the callbacks of a seat's clicks in a live room (room_view.py draws the room).

Why callbacks: they run before the rerun, so the panel redrawn next already shows the hand up or
the bid in. A click reaches the engine only for a seat this session holds (`seat_of`); the
engine's Room takes it or not (a closed window ignores it), and the page says which. These are
the only callbacks a room guest (kit/access.py) may use; the next run's people are refused to
a guest, as is every other page's action (`state.guests_refused`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from groupchat_core import (
    CHAT_BOUNDS,
    ConfigError,
    LowerHand,
    Pass,
    Pick,
    Post,
    RaiseHand,
    SetBid,
    chat_default,
)
from groupchat_ui.kit import state as ui_state
from groupchat_ui.kit import store_access
from groupchat_ui.kit.access import ROOM_LINK_PARAM
from groupchat_ui.kit.components import say_at
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.state import SessionState, get, guests_refused

from . import room_logic as logic
from . import room_seats as seats

PEOPLE_KEY = "room_people"  # list[logic.Person] of the next run
ME_KEY = "room_me"  # the name of the person of the next run who is this session
SEATS_KEY = "room_seats"  # job id -> the seat name this session holds
TOKENS_KEY = "room_tokens"  # job id -> {seat name: link token} (only the starter's session)
SETTINGS = {"human_window": "room_window", "human_post_window": "room_post_window",
            "selector_top_k": "room_top_k"}


def people() -> list[logic.Person]:
    return list(st.session_state.get(PEOPLE_KEY) or [])


@guests_refused("preparing a run")
def on_add_person(agent_names: Sequence[str]) -> None:
    session, state = get(), st.session_state
    me = bool(state.get("room_person_me"))
    user = session.user if me and session.user != "local" else state.get("room_person_user")
    try:
        added = logic.add_person(people(), str(state.get("room_person_name") or ""), user,
                                 picker=bool(state.get("room_person_picker")),
                                 taken=agent_names)
    except ConfigError as exc:
        session.notify("error", f"Not added: {exc}")
        return
    state[PEOPLE_KEY] = added
    if me:
        state[ME_KEY] = added[-1].name
    state["room_person_name"] = ""
    state["room_person_me"] = False


@guests_refused("preparing a run")
def on_remove_person(name: str) -> None:
    st.session_state[PEOPLE_KEY] = [p for p in people() if p.name != name]
    if st.session_state.get(ME_KEY) == name:
        st.session_state[ME_KEY] = None


def room_settings() -> dict[str, Any]:
    state = st.session_state
    return {name: state[key] for name, key in SETTINGS.items() if state.get(key) is not None}


def start(session: SessionState, form: Any, agents: Sequence[Any]) -> str:
    """Start the run with this session's people (ConfigError: not started); seat the starter
    in the person marked as them and keep every seat's link for this session."""
    registry = store_access.job_registry()
    seats.table().forget(lambda job_id: _alive(registry, job_id))  # rooms whose job expired
    started = logic.start_room(
        store_access.store(), store_access.job_registry(), session.owner, agents, people(),
        form.task, form, session.provider_keys, user=session.user, user_name=session.user_name,
        stream=form.stream is not False, room_settings=room_settings())
    st.session_state.setdefault(TOKENS_KEY, {})[started.job_id] = dict(started.tokens)
    me = st.session_state.get(ME_KEY)
    if isinstance(me, str) and me in started.tokens \
            and seats.table().hold(started.job_id, me, session.owner):
        take_seat(started.job_id, me)
    return started.job_id


def _alive(registry: Any, job_id: str) -> bool:
    try:
        registry.snapshot(job_id)
    except KeyError:
        return False
    return True


def take_seat(job_id: str, name: str) -> None:
    st.session_state.setdefault(SEATS_KEY, {})[job_id] = name


def seat_of(job_id: str) -> str | None:
    seat = (st.session_state.get(SEATS_KEY) or {}).get(job_id)
    return seat if isinstance(seat, str) else None


def _submit(job_id: str, action: Any, turn: int | None = None) -> None:
    """Act in the room for this session's seat; `turn` binds an action to the turn it was
    shown in (the room refuses it once that turn is over)."""
    name, entry = seat_of(job_id), seats.table().get(job_id)
    room = entry.room if entry is not None else None
    if name is None or room is None:
        return
    if not room.submit(name, action, turn):
        get().notify("warning", "Too late: that window had closed, so the room went on.")


def on_raise(job_id: str) -> None:
    _submit(job_id, RaiseHand())


def on_lower(job_id: str) -> None:
    _submit(job_id, LowerHand())


def on_pass(job_id: str, turn: int) -> None:
    _submit(job_id, Pass(), turn)


def on_bid(job_id: str, turn: int) -> None:
    state = st.session_state
    score = float(state.get(f"room_score_{job_id}") or 0.0)
    _submit(job_id, SetBid(score, str(state.get(f"room_draft_{job_id}_{turn}") or "")), turn)


def on_post(job_id: str, turn: int) -> None:
    """Post the winner's message. An empty post confirms the draft; with no draft it would
    give the floor away unsaid, so it is refused and the post window stays open."""
    text = str(st.session_state.get(f"room_post_{job_id}_{turn}") or "")
    if not text.strip() and not _draft(job_id):
        say_at("room_post", "warning", "Nothing posted: write your message first (you have "
                                       "no draft to confirm). The post window is still open.")
        return
    _submit(job_id, Post(text), turn)


def _draft(job_id: str) -> str:
    """This seat's draft of the current turn ("" if none)."""
    name, entry = seat_of(job_id), seats.table().get(job_id)
    if name is None or entry is None or entry.room is None:
        return ""
    return next((b.message for b in entry.room.snapshot().bids if b.name == name), "")


def on_pick(job_id: str, turn: int, who: str | None) -> None:
    _submit(job_id, Pick(who), turn)


def on_join(job_id: str, name: str) -> None:
    """A signed-in user takes their seat in a room they were invited to."""
    session = get()
    if name in seats.table().claim(job_id, user=session.user, signed_in=True,
                                   browser=session.owner):
        session.add_job(job_id)
        take_seat(job_id, name)
        st.session_state["job_select"] = job_id
        st.session_state["new_run_open"] = False  # make room for the room
        st.query_params["job"] = job_id


def adopt_seat(session: SessionState, signed_in: bool, params: Mapping[str, str]) -> str | None:
    """`?job=<id>&seat=<token>` (a room link) or a signed-in user's own seat in `?job=`: hold
    that seat in this session, if no other browser holds it. Returns the one line a link that
    seats nobody here shows (why this browser watches), else None."""
    job_id, token = params.get("job"), params.get(ROOM_LINK_PARAM)
    if not job_id:  # this browser's seats, e.g. a guest's way back from a refused page
        for held_job, name in seats.table().held_by(session.owner):
            if not seat_of(held_job):
                session.add_job(held_job)
                take_seat(held_job, name)
        return None
    if seat_of(job_id):
        return None
    table = seats.table()
    names = table.claim(job_id, user=session.user, signed_in=signed_in, token=token,
                        browser=session.owner)
    if names:
        take_seat(job_id, names[0])
        st.session_state["new_run_open"] = False  # the room, not the New-run form, on top
        return None
    if not token:
        return None
    return logic.watching_note(table.get(job_id) is not None,
                               table.held_elsewhere(job_id, token, session.owner))


HELP_WINDOW = ("Each turn's bid window for the people in the room: no input by its end is a "
               "pass (score 0). The turn closes earlier once everyone has bid.")


def people_picker(session: SessionState, agent_names: Sequence[str]) -> None:
    """People in the next run: each bids for the floor under the agents' rule (after the agents
    in roster order), or one of them picks who speaks."""
    with st.expander("People in the room", icon=":material/person_raised_hand:",
                     expanded=bool(people()), key="room_people_open"):
        signed_in = ui_state.login_configured()
        cols = st.columns([3, 3] if signed_in else [1], vertical_alignment="bottom")
        cols[0].text_input("Person's name", key="room_person_name", max_chars=logic.NAME_CHARS,
                           placeholder="Ann")
        if signed_in:
            cols[1].text_input("Their sign-in email (empty: whoever holds the room link)",
                               key="room_person_user")
        row = st.columns(3, vertical_alignment="center")
        row[0].checkbox("This is me", key="room_person_me",
                        help="This browser session takes the seat when the run starts.")
        row[1].checkbox("Picks who speaks (does not bid)", key="room_person_picker",
                        help="Human as selector: sees the top bids with their drafts and picks "
                             "who speaks; Analysis shows how often the bidding rule agreed.")
        row[2].button("Add person", key="room_add_person", icon=":material/person_add:",
                      on_click=on_add_person, args=(list(agent_names),))
        me = st.session_state.get(ME_KEY)
        for person in people():
            with st.container(horizontal=True, vertical_alignment="center", gap="small"):
                st.button(":material/close:", key=f"room_remove_{person.name}", type="tertiary",
                          help="Remove", on_click=on_remove_person, args=(person.name,))
                role = "picks who speaks" if person.picker else "bids"
                who = f" · {escape_markdown(person.user)}" if person.user else ""
                mine = " · you" if person.name == me else ""
                st.markdown(f"**{escape_markdown(person.name)}** · person, {role}{who}{mine}")
        # No min/max (a browser silently refuses a value outside them, issue 21): the help
        # names the engine's range and Start refuses a bad value with its one-line message.
        nums = st.columns(3)
        nums[0].number_input("Bid window (s)", value=float(chat_default("human_window")),
                             step=1.0, key="room_window", help=_ranged("human_window",
                                                                       HELP_WINDOW))
        nums[1].number_input("Post window (s)", value=float(chat_default("human_post_window")),
                             step=5.0, key="room_post_window", help=_ranged(
                                 "human_post_window", "A winning person's time to write or "
                                 "confirm their message; no post by then and the floor falls "
                                 "to the next bid."))
        nums[2].number_input("Top bids to pick from", value=int(chat_default("selector_top_k")),
                             step=1, key="room_top_k",
                             help=_ranged("selector_top_k", "Human as selector only."))


def _ranged(name: str, text: str) -> str:
    return f"{text} Allowed: {CHAT_BOUNDS[name].text()}."


def adopt(session: SessionState) -> None:
    """A room link (`?job=&seat=`) or a signed-in user's own seat: hold it; then list the live
    rooms that have a seat for this signed-in user, each with a Join button."""
    signed_in = ui_state.login_configured()
    note = adopt_seat(session, signed_in, st.query_params.to_dict())
    if note:
        with st.container(key="room_watching"):
            st.info(escape_markdown(note), icon=":material/visibility:")
    if not signed_in:
        return
    for job_id, name in seats.table().invitations(session.user):
        if seat_of(job_id) is None:
            with st.container(horizontal=True, vertical_alignment="center",
                              key=f"room_invite_{job_id}"):
                st.info(f"You have a seat in a live room as **{escape_markdown(name)}**.",
                        icon=":material/person_raised_hand:")
                st.button("Join", key=f"room_join_{job_id}", type="primary",
                          on_click=on_join, args=(job_id, name))
