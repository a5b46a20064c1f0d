"""One fold of a run's live events into immutable states (docs/engine.md §10).

Why one: the dashboard's job folded a run's events into its transcript, turns and bids, and a
second observer folded the streamed deltas into the candidates forming, masking them again. A
`LiveRun` watches one run (`arun_record(task, observers=[live])`) and folds both; whoever shows
the run (the job table, a page, a notebook) reads `state()`, an immutable copy. The engine has
already masked every text it emits (the turn loop the bids, the delta gate the deltas), so the
fold shows them as they come.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .._records import (
    Bid,
    BidDelta,
    BidReceived,
    Event,
    Message,
    MessagePosted,
    RunFinished,
    RunRecord,
    RunStarted,
    Turn,
    TurnCompleted,
    TurnStarted,
)

FORMING_CHARS = 4_000
"""Of a forming message kept live (the bid log has the whole reply)."""

Candidate = tuple[float | None, str, bool]
"""A streamed candidate: its score (None until its number is complete), its message so far (the
first FORMING_CHARS characters), and whether its bid is in."""



def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class LiveState:
    """A run as its events have shown it so far (the models inside are shared: read-only)."""

    run_id: str | None = None
    agents: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=_empty)  # its ChatConfig, once started
    turn: int = 0  # the turn under way (or the last one)
    bids: tuple[Bid, ...] = ()  # that turn's bids as they arrived; winner set once it ended
    bids_by_turn: Mapping[int, tuple[Bid, ...]] = field(default_factory=_empty)
    turns: tuple[Turn, ...] = ()
    messages: tuple[Message, ...] = ()  # the task first, then each posted reply
    candidates: Mapping[str, Candidate] = field(default_factory=_empty)  # the turn, streamed
    deltas: int = 0  # streamed deltas folded, over the whole run
    events: int = 0  # events folded, deltas not counted
    record: RunRecord | None = None  # once the run finished


class LiveRun:
    """An observer of one run that folds its events and streamed deltas (`state()`).

    Called on the engine's loop thread (`thread_safe`): each event only appends under a lock.
    It asks for deltas, so a chat with `stream_bids` on streams while it watches."""

    wants = frozenset({"run_started", "turn_started", "bid", "bid_delta", "speaker_selected",
                       "lull", "turn_completed", "message_posted", "run_finished"})  # all
    thread_safe = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: RunStarted | None = None
        self._turn = 0
        self._bids: list[Bid] = []
        self._by_turn: dict[int, tuple[Bid, ...]] = {}
        self._turns: list[Turn] = []
        self._messages: list[Message] = []
        self._candidates: dict[str, Candidate] = {}
        self._deltas = self._events = 0
        self._record: RunRecord | None = None

    def __call__(self, event: Event) -> None:
        with self._lock:
            if isinstance(event, BidDelta):
                if event.turn == self._turn:
                    self._deltas += 1
                    self._candidates[event.agent] = (event.score,
                                                     event.message[:FORMING_CHARS], False)
                return
            self._events += 1
            if isinstance(event, RunStarted):
                self._started = event
            elif isinstance(event, TurnStarted):
                self._turn, self._bids, self._candidates = event.turn, [], {}
            elif isinstance(event, BidReceived):
                bid = event.bid
                self._bids.append(bid)
                self._by_turn[bid.turn] = (*self._by_turn.get(bid.turn, ()), bid)
                if bid.turn == self._turn:
                    self._candidates[bid.agent] = (bid.score, bid.message[:FORMING_CHARS], True)
            elif isinstance(event, TurnCompleted):
                final = tuple(b.model_copy() for b in event.bids)  # with winner flags set
                self._bids, self._by_turn[event.turn.turn] = list(final), final
                self._turns.append(event.turn.model_copy())
            elif isinstance(event, MessagePosted):
                self._messages.append(event.message.model_copy())
            elif isinstance(event, RunFinished):
                self._record = event.record

    def state(self) -> LiveState:
        """The run as of now: an immutable copy, safe to read on any thread."""
        with self._lock:
            started = self._started
            return LiveState(
                run_id=started.run_id if started else None,
                agents=tuple(started.agents) if started else (),
                config=MappingProxyType(dict(started.config) if started else {}),
                turn=self._turn, bids=tuple(self._bids),
                bids_by_turn=MappingProxyType(dict(self._by_turn)), turns=tuple(self._turns),
                messages=tuple(self._messages),
                candidates=MappingProxyType(dict(self._candidates)), deltas=self._deltas,
                events=self._events, record=self._record)
