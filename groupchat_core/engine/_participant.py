"""People in the room (issue 22): the human participant and what a headless player (a
notebook, a test, the terminal) is asked, once per phase it takes part in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from .._errors import ConfigError
from ._humans import HUMAN_DESCRIPTION, HumanAction, Phase
from ._room import Room
from ._room_state import LiveBid


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


HumanCallback = Callable[[HumanPrompt], Awaitable[HumanAction | None]]
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
