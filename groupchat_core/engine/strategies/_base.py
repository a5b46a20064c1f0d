"""What every strategy shares: the `Floor` a turn runs on (the turn loop), the `Strategy` base,
the turn row, the recent speakers, and the sum of a bid's calls.

A strategy decides who is asked and who speaks on one turn (`turn`), and re-makes that decision
for a recorded turn (`replay`, a bundle's import check): the same rules both ways. The loop
keeps what every strategy shares: collecting bids, settling a turn, posting, stopping.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import ClassVar, Protocol

from ..._agent import Agent
from ..._config import ChatConfig
from ..._records import Bid, Event, RunRecord, Turn, TurnReason
from .._selection import Selection, candidate, select_speaker


class Floor(Protocol):
    """What a strategy's turn uses of the run (the TurnLoop): its agents, state and the shared
    steps (ask, settle, emit)."""

    config: ChatConfig
    agents: list[Agent]
    record: RunRecord
    history: list[tuple[str, str]]
    recent: deque[str]

    async def collect_bids(self, turn: int, mode: str = "bid",
                           first: int | None = None) -> list[Bid]:
        """Every agent (or the `first` ones) bids concurrently on the same snapshot."""

    async def one_bid(self, turn: int, pos: int, mode: str) -> Bid:
        """The agent at `pos` alone bids."""

    def settle(self, turn: int, bids: list[Bid], selection: Selection,
               rule_winner: str | None = None, human_pick: str | None = None,
               selector_reason: str | None = None) -> str | None:
        """Record the turn, post the winner; a stop reason or None."""

    def bid_limit(self, agent: Agent) -> float:
        """Seconds one call of `agent` may take."""

    def emit(self, event: Event) -> None:
        """An event to the room and the observers."""


def recent_speakers(window: int) -> deque[str]:
    """The speakers the recency penalty looks at: the last `window` winners (none at 0). The
    turn loop keeps them so, and a bundle's check replays them so."""
    return deque(maxlen=max(window, 0))


def turn_row(turn: int, bids: Sequence[Bid], s: Selection) -> Turn:
    """The turn's row in the record, from its bids and selection (the turn loop's and a
    bundle's check's)."""
    return Turn(
        turn=turn,
        winner=bids[s.winner].agent if s.winner is not None else None,
        winning_adjusted=s.winning_adjusted,
        runner_up_adjusted=s.runner_up_adjusted,
        margin=s.margin,
        lull=s.winner is None and s.reason == "lull",
        reason=s.reason,
        penalty_changed_winner=s.penalty_changed_winner,
        failed_bids=sum(b.failed for b in bids),
    )


def rules_note(config: ChatConfig, recent: Sequence[str]) -> str:
    """What selection read, for an error that says a recorded turn contradicts it."""
    speakers = ", ".join(map(repr, recent)) or "none"
    return (f"threshold {config.threshold:g}, recency penalty {config.recency_penalty:g}, "
            f"window {config.recency_window}; recent speakers: {speakers}")


def add_call(bid: Bid, other: Bid) -> None:
    """Count another call on `bid` (bid_then_speak's written message, the selector's pick):
    totals stay the sums over the bids, and a call the cache answered stays counted in
    cached_calls (`cached` keeps saying whether the row's own first call was a hit). Unknown
    token counts and costs stay unknown only when both are."""
    bid.calls += other.calls
    bid.cached_calls += other.cached_calls
    bid.latency_ms = (bid.latency_ms or 0.0) + (other.latency_ms or 0.0)
    for name in ("prompt_tokens", "completion_tokens", "cost_usd"):
        mine, theirs = getattr(bid, name), getattr(other, name)
        if mine is None and theirs is None:
            continue
        setattr(bid, name, (mine or 0) + (theirs or 0))


def picked(row: Turn) -> bool:
    """Whether a person chose the turn's speaker (human as selector)."""
    return row.rule_winner is not None or row.human_pick is not None


class Strategy:
    """One way of choosing who speaks (docs/engine.md §16), for one run or one bundle check.

    `config`: the chat's settings (threshold, penalty, seed, ...); `agents`: how many take
    part (list positions 0 .. agents - 1)."""

    name: ClassVar[str]
    asks_one: ClassVar[bool] = False
    """Whether a turn holds one bid (the asked agent's) rather than everyone's."""

    def __init__(self, config: ChatConfig, agents: int) -> None:
        self.config = config
        self.agents = agents

    def begin(self, run_id: str) -> None:
        """The run starts (after RunStarted, before the task is posted)."""

    def end(self) -> None:
        """The run's turns are over (or it was cancelled or failed)."""

    async def turn(self, floor: Floor, turn: int) -> str | None:
        """Play turn `turn` on the floor; a stop reason or None."""
        raise NotImplementedError

    def select(self, bids: Sequence[Bid], recent: Sequence[str]) -> Selection:
        """§6's rule over the bids, with this chat's threshold and penalty."""
        return select_speaker([candidate(b) for b in bids], list(recent),
                              self.config.threshold, self.config.recency_penalty)

    def replay(self, row: Turn, bids: Sequence[Bid], recent: Sequence[str]) -> Selection:
        """The Selection this strategy made for a recorded turn (its bids in list order, the
        recent speakers before it). Raises ValueError naming what no run of it could have
        recorded."""
        if picked(row):
            raise ValueError("rule_winner / human_pick are recorded, but a person picks the "
                             f"speaker only under strategy 'bidding', not {self.name!r}")
        try:
            return self._replay(row, bids, recent)
        except ValueError as exc:
            raise ValueError(f"{exc} (strategy {self.name})") from None

    def _replay(self, row: Turn, bids: Sequence[Bid], recent: Sequence[str]) -> Selection:
        raise NotImplementedError


class Named(Strategy):
    """A strategy that names one agent a turn (by schedule or a selector model): its bid is
    recorded and its score ignored (`assigned`)."""

    asks_one = True
    reason: ClassVar[TurnReason]

    def _replay(self, row: Turn, bids: Sequence[Bid], recent: Sequence[str]) -> Selection:
        if len(bids) != 1:
            raise ValueError(f"{len(bids)} bids on the turn; {self.name} asks one agent a turn")
        return self._replay_one(row, bids[0])

    def _replay_one(self, row: Turn, bid: Bid) -> Selection:
        raise NotImplementedError
