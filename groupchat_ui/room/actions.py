"""The room's widget callbacks: the people of the next run, and a seat's clicks in a live room.

Why callbacks: they run before the rerun, so the panel redrawn next already shows the hand up or
the bid in. A click reaches the engine only for a seat this session holds (`seat_of`); the
engine's Room takes it or not (a closed window ignores it), and the page says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from groupchat_core import ConfigError, LowerHand, Pass, Pick, Post, RaiseHand, SetBid
from groupchat_ui.kit import store_access
from groupchat_ui.kit.state import SessionState, get

from . import logic, seats

PEOPLE_KEY = "room_people"  # list[logic.Person] of the next run
ME_KEY = "room_me"  # the name of the person of the next run who is this session
SEATS_KEY = "room_seats"  # job id -> the seat name this session holds
TOKENS_KEY = "room_tokens"  # job id -> {seat name: link token} (only the starter's session)
SETTINGS = {"human_window": "room_window", "human_post_window": "room_post_window",
            "selector_top_k": "room_top_k"}


def people() -> list[logic.Person]:
    return list(st.session_state.get(PEOPLE_KEY) or [])


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
    started = logic.start_room(
        store_access.store(), store_access.job_registry(), session.owner, agents, people(),
        form.task, form, session.provider_keys, user=session.user, user_name=session.user_name,
        stream=form.stream is not False, room_settings=room_settings())
    st.session_state.setdefault(TOKENS_KEY, {})[started.job_id] = dict(started.tokens)
    me = st.session_state.get(ME_KEY)
    if isinstance(me, str) and me in started.tokens:
        take_seat(started.job_id, me)
    return started.job_id


def take_seat(job_id: str, name: str) -> None:
    st.session_state.setdefault(SEATS_KEY, {})[job_id] = name


def seat_of(job_id: str) -> str | None:
    seat = (st.session_state.get(SEATS_KEY) or {}).get(job_id)
    return seat if isinstance(seat, str) else None


def _submit(job_id: str, action: Any) -> None:
    name, entry = seat_of(job_id), seats.table().get(job_id)
    room = entry.room if entry is not None else None
    if name is None or room is None:
        return
    if not room.submit(name, action):
        get().notify("warning", "Too late: that window had closed, so the room went on.")


def on_raise(job_id: str) -> None:
    _submit(job_id, RaiseHand())


def on_lower(job_id: str) -> None:
    _submit(job_id, LowerHand())


def on_pass(job_id: str) -> None:
    _submit(job_id, Pass())


def on_bid(job_id: str, turn: int) -> None:
    state = st.session_state
    score = float(state.get(f"room_score_{job_id}") or 0.0)
    _submit(job_id, SetBid(score, str(state.get(f"room_draft_{job_id}_{turn}") or "")))


def on_post(job_id: str, turn: int) -> None:
    _submit(job_id, Post(str(st.session_state.get(f"room_post_{job_id}_{turn}") or "")))


def on_pick(job_id: str, who: str | None) -> None:
    _submit(job_id, Pick(who))


def on_join(job_id: str, name: str) -> None:
    """A signed-in user takes their seat in a room they were invited to."""
    session = get()
    if name in seats.table().claim(job_id, user=session.user, signed_in=True):
        session.add_job(job_id)
        take_seat(job_id, name)
        st.session_state["job_select"] = job_id
        st.query_params["job"] = job_id


def adopt_seat(session: SessionState, signed_in: bool, params: Mapping[str, str]) -> None:
    """`?job=<id>&seat=<token>` (a room link) or a signed-in user's own seat in `?job=`: hold
    that seat in this session."""
    job_id = params.get("job")
    if not job_id or seat_of(job_id):
        return
    names = seats.table().claim(job_id, user=session.user, signed_in=signed_in,
                                token=params.get("seat"))
    if names:
        take_seat(job_id, names[0])
