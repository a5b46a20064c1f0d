"""People in the room (issue 22): the human participant, what a person can do, and what a
headless player (a notebook, a test, the terminal) is asked.

A person bids for the floor under the agents' rule (docs/engine.md, "Human participants"): their
bid is an ordinary `Bid` with `kind="human"`, adjusted, thresholded and tie-broken by
`select_speaker` like any other. These are plain frozen dataclasses so a UI on another thread
can build and pass them without touching the engine's loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from .._errors import ConfigError

if TYPE_CHECKING:
    from ._room import LiveBid, Room

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


@dataclass(frozen=True)
class HumanPrompt:
    """What a headless player is asked, once per phase it takes part in.

    `deadline` is on the room's clock (`room.clock()`); `draft` is their bid's draft in the
    post phase; `candidates` / `rule_pick` are the top-k bids and the rule's choice in the pick
    phase; `history` is (role, text) of the conversation so far (untrusted text)."""

    phase: Phase
    turn: int
    name: str
    room: Room
    deadline: float
    draft: str = ""
    candidates: tuple[LiveBid, ...] = ()
    rule_pick: str | None = None
    history: tuple[tuple[str, str], ...] = ()

    def time_left(self) -> float:
        """Seconds until the phase closes (never negative)."""
        return max(0.0, self.deadline - self.room.clock())


HumanCallback = Callable[[HumanPrompt], Awaitable["HumanAction | None"]]
"""A headless player: called on the engine's loop, cancelled at the phase's deadline; None, an
exception or a cancellation all count as no input."""


@dataclass(frozen=True)
class Human:
    """A person in the roster (`kind` "human"), listed among the agents of a GroupChat.

    `name`: unique across the roster; it is Bid.agent, Message.role and Turn.winner.
    `user`: the signed-in user it belongs to (email or subject), None when anyone holding the
    room may play it. `callback`: a headless player; None when a UI drives it through
    `GroupChat.room` from another thread."""

    name: str
    user: str | None = None
    description: str = HUMAN_DESCRIPTION
    callback: HumanCallback | None = None
    kind: Literal["human"] = "human"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 200:
            raise ConfigError("a Human needs a name of 1 to 200 characters, e.g. Human(name='Ann')")
        if self.callback is not None and not callable(self.callback):
            raise ConfigError(f"Human {self.name!r}: callback must be an async function taking a "
                             "HumanPrompt")
