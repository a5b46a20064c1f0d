"""People in the room without streamlit: the people of the next run, starting a room as a job,
and what the live room panel shows (labels, rows, which controls a seat has now).

Why here and not in run/: a room adds seats, links and a second kind of participant; the Run
page calls `start_room` instead of `run.logic.start_run` when the roster has people.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groupchat_core import Agent, ConfigError, GroupChat, Human, LiveBid, PersonState, RoomSnapshot
from groupchat_core.store import RunStore
from groupchat_ui.kit.access import ROOM_LINK_PARAM
from groupchat_ui.kit.jobs import LOCAL_USER, JobRegistry
from groupchat_ui.kit.providers import with_session_keys

from . import room_seats as seats
from .form import RunForm
from .logic import as_form

NAME_CHARS = 60


@dataclass(frozen=True)
class Person:
    """A person of the next run: display name, the signed-in user the seat belongs to (None:
    whoever holds the room link), and whether they pick who speaks instead of bidding."""

    name: str
    user: str | None = None
    picker: bool = False


def add_person(people: Sequence[Person], name: str, user: str | None, *, picker: bool,
               taken: Sequence[str]) -> list[Person]:
    """`people` with one more; ConfigError (one line, saying the fix) for a bad entry."""
    name = " ".join(str(name).split())
    if not name or len(name) > NAME_CHARS:
        raise ConfigError(f"a person needs a name of 1 to {NAME_CHARS} characters")
    if name in taken or any(p.name == name for p in people):
        raise ConfigError(f"the name {name!r} is taken in this room: pick another")
    if picker and any(p.picker for p in people):
        raise ConfigError("the room already has a person who picks who speaks: remove them "
                          "first")
    return [*people, Person(name, (user or "").strip() or None, picker)]


@dataclass(frozen=True)
class RoomStart:
    """A started room: its job, and each link-seat's token (shown once to whoever started it)."""

    job_id: str
    tokens: Mapping[str, str]


def start_room(store: RunStore, registry: JobRegistry, owner: str, agents: Sequence[Agent],
               people: Sequence[Person], task: str, params: Mapping[str, Any] | RunForm,
               session_keys: Mapping[str, str], *, user: str = LOCAL_USER,
               user_name: str | None = None, stream: bool = True,
               room_settings: Mapping[str, Any] | None = None,
               table: seats.SeatTable | None = None) -> RoomStart:
    """Start a recorded chat with people as a background job (as run.logic.start_run) and
    register its seats; every seat gets a link token (a signed-in user's seat may also be
    taken by signing in as them)."""
    bidders = [p for p in people if not p.picker]
    pickers = [p for p in people if p.picker]
    if len(agents) < 1:
        raise ConfigError("a room with people needs at least one agent")
    if len(agents) + len(bidders) < 2:
        raise ConfigError("a chat needs at least two participants: add an agent or a person")
    if not task.strip():
        raise ConfigError("the task must not be empty: it is the first message of the chat")
    form = as_form(params).model_copy(update={"stream": stream})
    humans = [Human(name=p.name, user=p.user) for p in bidders]
    extra = dict(room_settings or {})
    if pickers:
        extra["human_selector"] = Human(name=pickers[0].name, user=pickers[0].user)
    chat = GroupChat(agents=[*with_session_keys(agents, session_keys), *humans],
                     **form.chat_kwargs(), **extra)
    # no key needs masking here: the engine has masked every text of every event
    recorder = store.recorder(chat, owner=user, owner_name=user_name or user)
    tokens = {p.name: seats.new_token() for p in people}
    job_id = registry.start_chat(chat, task, owner=owner, extra_observers=[recorder],
                                 user=user, user_name=user_name)
    (table or seats.table()).register(job_id, chat, [
        seats.Seat(p.name, p.user, seats.token_hash(tokens[p.name]), p.picker)
        for p in people])
    return RoomStart(job_id, tokens)


# --- what the room panel shows -------------------------------------------------------------

PHASES = {"idle": "waiting for the first turn", "bidding": "bidding",
          "posting": "the winner is writing", "picking": "a person picks who speaks",
          "finished": "the room has ended"}


def time_left_label(snap: RoomSnapshot) -> str:
    """`Turn 3 · bidding · 12 s left` (a stable line the browser tests read)."""
    phase = PHASES.get(snap.phase, str(snap.phase))
    left = "" if snap.time_left is None or snap.phase in ("idle", "finished") else \
        f" · {snap.time_left:.0f} s left"
    return f"Turn {snap.turn} · {phase}{left}" if snap.turn else f"Room · {phase}"


def bid_status(bid: LiveBid) -> str:
    """One bid as a short label: `score 0.80 (hand up)`, `passed`, `writing…`."""
    if bid.passed:
        return "passed"
    if bid.score is None:
        return "writing…"
    how = " (hand up)" if bid.hand else ""
    adjusted = "" if bid.adjusted is None or bid.adjusted == bid.score else \
        f", adjusted {bid.adjusted:.2f}"
    return f"score {bid.score:.2f}{adjusted}{how}"


def bid_rows(snap: RoomSnapshot, roster: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """(name, kind, status, draft) for every participant this turn, in roster order: bids in,
    bids still forming, and who has not bid yet."""
    seen: dict[str, Any] = {b.name: b for b in snap.forming}
    seen.update({b.name: b for b in snap.bids})
    people = {p.name for p in snap.people}
    names = list(roster) + [n for n in seen if n not in roster]
    rows = []
    for name in names:
        kind = "person" if name in people else "agent"
        bid = seen.get(name)
        if bid is None:
            rows.append((name, kind, "no bid yet", ""))
        else:
            rows.append((name, kind, bid_status(bid), bid.message or ""))
    return rows


def hand_queue(snap: RoomSnapshot) -> list[str]:
    """Hands up in the order they went up: `1. Ann`."""
    return [f"{i}. {name}" for i, name in enumerate(snap.hands, start=1)]


def my_phase(snap: RoomSnapshot, me: str | None) -> str | None:
    """What this seat can do now: "bid", "post", "pick", or None (watch)."""
    if me is None:
        return None
    if snap.phase == "bidding" and any(p.name == me for p in snap.people):
        return "bid"
    if snap.phase == "posting" and snap.poster == me:
        return "post"
    if snap.phase == "picking" and snap.picker == me:
        return "pick"
    return None


def person_state(snap: RoomSnapshot, me: str) -> PersonState | None:
    return next((p for p in snap.people if p.name == me), None)


def room_link(base: str, job_id: str, token: str) -> str:
    """The link that seats its holder (login off): `<base>/run?job=<id>&seat=<token>`."""
    return f"{base.rstrip('/')}/run?job={job_id}&{ROOM_LINK_PARAM}={token}"


def watching_note(room_live: bool, held_by_other: str | None) -> str:
    """Why a room link seats nobody in this browser, in one line: the seat is another
    browser's (the first to open the link holds it), the token opens no seat, or the room is
    not (or no longer) on this server."""
    if held_by_other is not None:
        return (f"You are watching: the seat of {held_by_other} is held by the browser that "
                "opened this link first (a link seats one browser). To take part, use that "
                "browser.")
    if room_live:
        return ("You are watching: this link's seat token opens no seat in this room. Check "
                "the link you were sent, or ask whoever started the room for yours.")
    return ("This room link's room is not on this server: it has ended (and expired), or the "
            "link is wrong. Ask whoever started the room.")

