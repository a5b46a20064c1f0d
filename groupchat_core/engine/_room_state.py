"""What a room holds (issue 22): the state behind the Room's lock, and the immutable copies a
UI gets of it (RoomSnapshot, LiveBid, PersonState). Plain dataclasses: no locking here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ._humans import (
    HAND_SCORE,
    HumanAction,
    LowerHand,
    ParticipantKind,
    Pass,
    Pick,
    Post,
    RaiseHand,
    SetBid,
)

RoomPhase = Literal["idle", "bidding", "posting", "picking", "finished"]


@dataclass(frozen=True)
class LiveBid:
    """One bid of the current turn as a UI shows it. `message` is a draft: untrusted text, to
    render inert. `adjusted` / `eligible` are the rule's standing once known (agents' bids)."""

    name: str
    kind: ParticipantKind
    score: float | None = None
    message: str = ""
    adjusted: float | None = None
    eligible: bool | None = None
    hand: bool = False
    passed: bool = False


@dataclass(frozen=True)
class PersonState:
    """A person in the room: hand up or not, whether they have bid this turn, gone or not."""

    name: str
    user: str | None
    hand_up: bool
    bid_in: bool
    left: bool


@dataclass(frozen=True)
class RoomSnapshot:
    """An immutable copy of the room (see Room.snapshot); `version` bumps on every change."""

    version: int
    run_id: str | None
    turn: int
    phase: RoomPhase
    deadline: float | None
    time_left: float | None
    bids: tuple[LiveBid, ...]
    forming: tuple[LiveBid, ...]
    hands: tuple[str, ...]
    people: tuple[PersonState, ...]
    waiting_for: tuple[str, ...]
    poster: str | None
    candidates: tuple[LiveBid, ...]
    rule_pick: str | None
    picker: str | None
    messages: tuple[tuple[str, str], ...]


@dataclass
class Person:
    """A person's state inside the room (the engine's; a UI gets PersonState copies)."""

    name: str
    user: str | None
    hand_up: bool = False
    bid: LiveBid | None = None  # this turn's
    left: bool = False


@dataclass
class State:
    """Everything the room holds, guarded by the Room's lock."""

    run_id: str | None = None
    turn: int = 0
    phase: RoomPhase = "idle"
    deadline: float | None = None
    roster: list[tuple[str, ParticipantKind]] = field(default_factory=list)
    people: dict[str, Person] = field(default_factory=dict)
    hands: list[str] = field(default_factory=list)
    agent_bids: dict[str, LiveBid] = field(default_factory=dict)
    forming: dict[str, LiveBid] = field(default_factory=dict)
    poster: str | None = None
    post: str | None = None
    posted: bool = False
    picker: str | None = None
    candidates: tuple[LiveBid, ...] = ()
    rule_pick: str | None = None
    pick: Pick | None = None
    picked: bool = False
    messages: list[tuple[str, str]] = field(default_factory=list)


def apply_action(s: State, person: Person, action: HumanAction) -> bool:
    """The rules of submitting (the Room's lock held): change the state, or return False
    when the current phase does not take the action."""
    name = person.name
    bidding = s.phase == "bidding"
    if isinstance(action, RaiseHand):
        if not person.hand_up:
            person.hand_up = True
            s.hands.append(name)
        if bidding:
            person.bid = LiveBid(name, "human", HAND_SCORE, hand=True)
        return True
    if isinstance(action, LowerHand):
        was = person.hand_up
        lower_hand(s, person)
        if bidding and person.bid is not None and person.bid.hand:
            person.bid = None
        return was
    if isinstance(action, Pass):
        lower_hand(s, person)
        if bidding:
            person.bid = LiveBid(name, "human", 0.0, passed=True)
        return bidding
    if isinstance(action, SetBid):
        if not bidding:
            return False
        score = min(1.0, max(0.0, float(action.score))) if action.score == action.score \
            else 0.0
        person.bid = LiveBid(name, "human", score, str(action.message).strip(),
                             passed=score == 0.0)
        return True
    if isinstance(action, Post):
        if s.phase != "posting" or s.poster != name or s.posted:
            return False
        s.post, s.posted = str(action.message), True
        return True
    if isinstance(action, Pick):
        if s.phase != "picking" or s.picker != name or s.picked:
            return False
        names = {c.name for c in s.candidates}
        if action.name is not None and action.name not in names:
            return False
        s.pick, s.picked = action, True
        return True
    return False

def lower_hand(s: State, person: Person) -> None:
    """Hand down, out of the queue."""
    person.hand_up = False
    if person.name in s.hands:
        s.hands.remove(person.name)
