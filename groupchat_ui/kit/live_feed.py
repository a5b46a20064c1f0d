"""A chat job's live channel: its events numbered and fanned out to the pages watching it (no
streamlit; issue 41, point 1: "Push, not polling").

Why: the Run page redrew a timed fragment every half second, so tokens reached the screen in
0.5 s steps and every open tab reran twice a second. Now the job's run has one more observer,
a `LiveFeed`, beside its fold (`groupchat_core.LiveRun`): each event the screen needs becomes a
small JSON-able entry with a sequence number, appended to a log and handed at once to every
subscribed stream (kit/live_routes.py serves them as server-sent events).

Resumable without losing or repeating a token: a stream that reconnects says the last number
it saw (`Last-Event-ID`) and gets exactly the entries after it. The log holds only the turn
under way (a new turn is a reset point: its candidates start empty), so it stays small; a
stream further behind than the log reaches gets one `reset` entry (the turn and every
candidate's text so far, numbered as the newest entry) and goes on from there.

Never slows the engine: the engine's thread only appends under a lock and schedules a put on
each stream's own loop. Each stream's queue is bounded (CLIENT_QUEUE); a stream whose reader
falls that far behind is dropped (its browser reconnects and resumes), and a gone one is
unsubscribed when its connection closes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groupchat_core import (
    BidDelta,
    BidReceived,
    Event,
    LiveRun,
    TurnCompleted,
    TurnStarted,
)

CLIENT_QUEUE = 256  # entries a stream may fall behind before it is dropped
MAX_LOG = 8_192  # entries kept for resuming within one turn; further back: a reset
FORMING_CHARS = 4_000  # of a candidate's text sent (the fold keeps as many)

Entry = tuple[int, Mapping[str, Any]]  # (sequence number, payload)


@dataclass(eq=False)
class Subscription:
    """One stream's place in a feed: a bounded queue filled on its own loop."""

    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Entry] = field(default_factory=lambda: asyncio.Queue(CLIENT_QUEUE))
    dropped: bool = False  # fell CLIENT_QUEUE entries behind: its stream ends, it reconnects

    def offer(self, entry: Entry) -> None:
        """On the stream's loop: queue the entry, or drop a reader that is too far behind."""
        if self.dropped:
            return
        try:
            self.queue.put_nowait(entry)
        except asyncio.QueueFull:
            self.dropped = True


class LiveFeed:
    """An observer of one chat run (thread_safe, on the engine's loop): its entries, numbered.

    Entries (`t`): `turn` (a turn began: no candidates yet), `tok` (a candidate's text grew by
    `add`), `text` (a candidate's text replaced, when a delta did not extend it), `bid` (a
    candidate's bid is in: its score and whole text), `settled` (the turn ended), `end` (the
    job ended: sent by `close()`, which the job table calls once the job's status is final,
    so a page that reruns on it reads the final status, never `running`); a late stream's
    first entry may be `reset`."""

    wants = LiveRun.wants
    thread_safe = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = 0  # the newest entry's number
        self._log: list[Entry] = []  # the turn under way's entries (at most MAX_LOG)
        self._turn = 0
        self._cands: dict[str, list[Any]] = {}  # agent -> [score, text so far, bid in]
        self._ended = False
        self._subs: list[Subscription] = []

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self._ended:  # a Stop closed it: what the run says while unwinding is not shown
                return
            payload = self._fold(event)
            if payload is not None:
                self._publish(payload)

    def _fold(self, event: Event) -> dict[str, Any] | None:
        """The entry an event makes (None: nothing the stream shows), folding it in."""
        if isinstance(event, BidDelta):
            if event.turn != self._turn:
                return None
            text = event.message[:FORMING_CHARS]
            cand = self._cands.setdefault(event.agent, [None, "", False])
            old, cand[0], cand[1] = cand[1], event.score, text
            if text.startswith(old):
                return {"t": "tok", "agent": event.agent, "score": event.score,
                        "add": text[len(old):]}
            return {"t": "text", "agent": event.agent, "score": event.score, "text": text}
        if isinstance(event, TurnStarted):
            self._turn, self._cands, self._log = event.turn, {}, []
            return {"t": "turn", "turn": event.turn}
        if isinstance(event, BidReceived) and event.bid.turn == self._turn:
            bid = event.bid
            self._cands[bid.agent] = [bid.score, bid.message[:FORMING_CHARS], True]
            return {"t": "bid", "agent": bid.agent, "score": bid.score,
                    "text": bid.message[:FORMING_CHARS]}
        if isinstance(event, TurnCompleted):
            return {"t": "settled", "turn": event.turn.turn}
        return None  # the run's end is `close()`'s: only once the job's status is final

    def _end(self) -> dict[str, Any] | None:
        if self._ended:
            return None
        self._ended = True
        return {"t": "end"}

    def close(self) -> None:
        """The job ended (the registry calls this however it ended: a Stop may come before
        the run's own `run_finished`): one `end` entry, if the run has not sent it."""
        with self._lock:
            payload = self._end()
            if payload is not None:
                self._publish(payload)

    def _publish(self, payload: Mapping[str, Any]) -> None:
        """Under the lock: number the entry, keep it for resuming, hand it to every stream."""
        self._seq += 1
        entry = (self._seq, payload)
        if payload["t"] == "end":  # nothing more comes: a stream behind it gets a reset
            self._log = []
        self._log.append(entry)
        if len(self._log) > MAX_LOG:
            del self._log[:len(self._log) - MAX_LOG]
        for sub in list(self._subs):
            try:
                sub.loop.call_soon_threadsafe(sub.offer, entry)
            except RuntimeError:  # its loop has closed (the server stopped)
                self._subs.remove(sub)

    def subscribe(self, after: int | None,
                  loop: asyncio.AbstractEventLoop) -> tuple[list[Entry], Subscription]:
        """What a stream that last saw entry `after` (None: a new stream) has missed, and its
        subscription to what comes next, taken at one instant (nothing lost in between)."""
        sub = Subscription(loop)
        with self._lock:
            self._subs.append(sub)
            return self._since(after), sub

    def _since(self, after: int | None) -> list[Entry]:
        first = self._log[0][0] if self._log else self._seq + 1
        if after is not None and first - 1 <= after <= self._seq:
            return [e for e in self._log if e[0] > after]
        return [(self._seq, self._reset())]  # a new stream, or one the log cannot resume

    def _reset(self) -> dict[str, Any]:
        return {"t": "reset", "turn": self._turn, "ended": self._ended,
                "cands": {a: list(c) for a, c in self._cands.items()}}

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    @property
    def streams(self) -> int:
        """Streams subscribed now."""
        with self._lock:
            return len(self._subs)

    @property
    def ended(self) -> bool:
        with self._lock:
            return self._ended
