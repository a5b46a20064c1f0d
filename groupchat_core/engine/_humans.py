"""People in the room (issue 22): what a person can do (the actions) and the constants of
their bids; the participant itself is in _participant.py.

A person bids for the floor under the agents' rule (docs/engine.md, "Human participants"): their
bid is an ordinary `Bid` with `kind="human"`, adjusted, thresholded and tie-broken by
`select_speaker` like any other. These are plain frozen dataclasses so a UI on another thread
can build and pass them without touching the engine's loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HAND_SCORE = 0.8
"""The bid of a raised hand: above the default threshold (0.5), and still above it after the
default recency penalty (0.3) would not matter, since the hand lowers when the person wins."""

HUMAN_DESCRIPTION = "a person in the room"
HUMAN_PATH: Literal["human"] = "human"
"""Bid.path of a person's bid (no model call: calls 0)."""

ParticipantKind = Literal["agent", "human"]
Phase = Literal["bid", "post", "pick"]


@dataclass(frozen=True)
class RaiseHand:
    """A standing bid of HAND_SCORE, kept across turns until the person wins or lowers it."""


@dataclass(frozen=True)
class LowerHand:
    """Hand down; the person has then not bid this turn (they may still bid or pass)."""


@dataclass(frozen=True)
class SetBid:
    """A bid for this turn only: score in [0, 1] (clamped as an agent's is), optional draft."""

    score: float
    message: str = ""


@dataclass(frozen=True)
class Pass:
    """Score 0 this turn; lowers a raised hand too (a deliberate pass means "not now")."""


@dataclass(frozen=True)
class Post:
    """The winner's message in their second window; "" confirms their draft (no text and no
    draft is no post)."""

    message: str = ""


@dataclass(frozen=True)
class Pick:
    """Human as selector: the candidate who speaks; None accepts the rule's pick."""

    name: str | None = None


HumanAction = RaiseHand | LowerHand | SetBid | Pass | Post | Pick
"""Everything a person can submit (Room.submit, or a callback's return value)."""
