"""The room: the live, thread-safe state of a chat with people in it (issue 22).

The engine runs on its loop thread; a browser session, the terminal or a test acts from others.
Everything a person does goes through `Room.submit` (any thread): a lock guards the state, a
condition wakes threads waiting in `wait_for`, and the engine's loop is woken with
`call_soon_threadsafe`. A UI reads `snapshot()` (an immutable copy) or `subscribe`s to changes.
The room follows a run from the engine's events, the ones observers get (`observe`); methods
starting with `_` are the people's windows (engine/_people.py, on the engine's loop only).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from .._records import BidDelta, BidReceived, Event, MessagePosted
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
from ._room_state import (
    LiveBid,
    Person,
    PersonState,
    RoomSnapshot,
    State,
    apply_action,
    lower_hand,
)

logger = logging.getLogger("groupchat_core")
Subscriber = Callable[[RoomSnapshot], None]


class Room:
    """The live room of one GroupChat (`GroupChat.room`); reset when a run starts.

    `clock`: the time base of deadlines and `time_left` (monotonic seconds; injectable for
    tests). Every public method is safe from any thread."""

    def __init__(self, people: Sequence[tuple[str, str | None]] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._state = State(people={n: Person(n, u) for n, u in people})
        self._version = 0
        self._subscribers: list[Subscriber] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    # --- what a UI reads -------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Bumps on every change: poll it to redraw only when something happened."""
        with self._lock:
            return self._version

    @property
    def people(self) -> tuple[str, ...]:
        """The names of the people in the room (bidders and the selector), roster order."""
        with self._lock:
            return tuple(self._state.people)

    def snapshot(self) -> RoomSnapshot:
        """An immutable copy of the whole room, with `time_left` at this moment."""
        with self._lock:
            s = self._state
            left = None if s.deadline is None else max(0.0, s.deadline - self.clock())
            bids: list[LiveBid] = []
            for name, kind in s.roster:
                bid = s.agent_bids.get(name) if kind == "agent" else s.people[name].bid
                if bid is not None:
                    bids.append(bid)
            people = tuple(PersonState(p.name, p.user, p.hand_up, p.bid is not None, p.left)
                           for p in s.people.values())
            return RoomSnapshot(
                self._version, s.run_id, s.turn, s.phase, s.deadline, left, tuple(bids),
                tuple(s.forming.values()), tuple(s.hands), people, self._waiting_for(),
                s.poster, s.candidates, s.rule_pick, s.picker, tuple(s.messages))

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Call `fn(snapshot)` after every change, on the engine's loop thread (or the thread
        that changed the room when no run is on): it must be quick and must not raise (a
        raising subscriber is logged). Returns the function that unsubscribes it."""
        with self._lock:
            self._subscribers.append(fn)

        def unsubscribe() -> None:
            with self._lock:
                if fn in self._subscribers:
                    self._subscribers.remove(fn)

        return unsubscribe

    def wait_for(self, pred: Callable[[RoomSnapshot], bool],
                 timeout: float | None = None) -> RoomSnapshot | None:
        """Block this thread (never the engine's loop) until `pred(snapshot)` holds; the
        snapshot, or None at the timeout."""
        ends = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while True:
                snap = self.snapshot()
                if pred(snap):
                    return snap
                remaining = None if ends is None else ends - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._changed.wait(remaining)

    # --- what a person does ----------------------------------------------------------------

    def submit(self, name: str, action: HumanAction, turn: int | None = None) -> bool:
        """Act for the person `name`: True when the room took it, False when the current phase
        does not (window closed, not their post or pick, unknown name, finished run). `turn`:
        the turn the person saw when acting; a room already on another turn refuses it (a click
        that arrived late must not pick, pass or post in the next turn)."""
        with self._lock:
            s = self._state
            person = s.people.get(name)
            if person is None or s.phase == "finished" or turn not in (None, s.turn):
                return False
            taken = apply_action(s, person, action)
            if taken:
                self._touch()
        return taken

    def raise_hand(self, name: str) -> bool:
        return self.submit(name, RaiseHand())

    def lower_hand(self, name: str) -> bool:
        return self.submit(name, LowerHand())

    def bid(self, name: str, score: float, message: str = "") -> bool:
        return self.submit(name, SetBid(score, message))

    def pass_turn(self, name: str) -> bool:
        return self.submit(name, Pass())

    def post(self, name: str, message: str) -> bool:
        return self.submit(name, Post(message))

    def pick(self, name: str, who: str | None) -> bool:
        return self.submit(name, Pick(who))

    def leave(self, name: str) -> bool:
        """The person left (closed the tab): a pass now and on later turns, hand down, no post,
        no pick, until `join`. Never a stalled room."""
        with self._lock:
            s = self._state
            person = s.people.get(name)
            if person is None:
                return False
            person.left = True
            lower_hand(s, person)
            if s.phase == "bidding":
                person.bid = LiveBid(name, "human", 0.0, passed=True)
            if s.phase == "posting" and s.poster == name:
                s.posted, s.post = True, None
            if s.phase == "picking" and s.picker == name:
                s.picked, s.pick = True, None
            self._touch()
        return True

    def join(self, name: str) -> bool:
        """The person is back (after `leave`): from the next window on they bid again."""
        with self._lock:
            person = self._state.people.get(name)
            if person is None:
                return False
            person.left = False
            self._touch()
        return True

    def _waiting_for(self) -> tuple[str, ...]:
        s = self._state
        if s.phase == "bidding":
            waiting = [n for n, k in s.roster if k == "agent" and n not in s.agent_bids]
            return (*waiting, *(n for n, k in s.roster
                                if k == "human" and s.people[n].bid is None))
        if s.phase == "posting" and not s.posted and s.poster is not None:
            return (s.poster,)
        if s.phase == "picking" and not s.picked and s.picker is not None:
            return (s.picker,)
        return ()

    def _touch(self) -> None:
        """A change (lock held): bump the version, wake waiting threads and the engine, and
        have the subscribers called with the new snapshot."""
        self._version += 1
        self._changed.notify_all()
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(wake.set)
                if self._subscribers:
                    loop.call_soon_threadsafe(self._publish)
                return
            except RuntimeError:  # the loop closed meanwhile
                pass
        self._publish()

    def _publish(self) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        if not subscribers:
            return
        snap = self.snapshot()
        for fn in subscribers:
            try:
                fn(snap)
            except Exception:
                logger.exception("room subscriber %r failed", fn)

    # --- what the run tells it (on the engine's loop) --------------------------------------------

    def observe(self, event: Event) -> None:
        """Follow the run from the events its observers get: a posted message joins the
        room's messages, a received bid takes its place on the floor (an agent's, or a person's
        with its standing), a streamed bid shows as forming. Other kinds change nothing."""
        if isinstance(event, MessagePosted):
            self._message(event.message.role, event.message.content)
        elif isinstance(event, BidReceived):
            bid = event.bid
            if bid.kind == "human":
                self._settled_bid(bid.agent, bid.adjusted, bid.eligible)
            else:
                self._agent_bid(LiveBid(bid.agent, "agent", bid.score, bid.message,
                                        bid.adjusted, bid.eligible))
        elif isinstance(event, BidDelta):
            self._agent_forming(event.agent, event.score, event.message)

    # --- the engine's side (on its loop) ------------------------------------------------------

    def _start(self, run_id: str, roster: Sequence[tuple[str, ParticipantKind]],
               picker: str | None) -> None:
        """A run starts on the running loop: fresh turn state. A hand raised while the room
        waited for its first run stays up (a page shows the room as soon as the job is
        started, before the job's thread gets here: that hand was lowered unseen); a hand
        left up by an earlier run goes down (a finished room takes no actions)."""
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        with self._lock:
            before = self._state
            waited = before.phase == "idle"  # no run yet: its hands are this run's
            people = before.people
            for p in people.values():
                p.hand_up, p.bid = p.hand_up and waited, None
            self._state = State(run_id=run_id, roster=list(roster), people=people,
                                 picker=picker, hands=list(before.hands) if waited else [])
            self._touch()

    def _open_bidding(self, turn: int, window: float) -> None:
        with self._lock:
            s = self._state
            s.turn, s.phase, s.deadline = turn, "bidding", self.clock() + window
            s.agent_bids, s.forming = {}, {}
            s.poster, s.post, s.posted = None, None, False
            s.candidates, s.rule_pick, s.pick, s.picked = (), None, None, False
            for name, kind in s.roster:
                if kind != "human":
                    continue
                p = s.people[name]
                p.bid = (LiveBid(name, "human", 0.0, passed=True) if p.left else
                         LiveBid(name, "human", HAND_SCORE, hand=True) if p.hand_up else None)
            self._touch()

    def _agent_bid(self, bid: LiveBid) -> None:
        with self._lock:
            self._state.agent_bids[bid.name] = bid
            self._state.forming.pop(bid.name, None)
            self._touch()

    def _agent_forming(self, name: str, score: float | None, message: str) -> None:
        with self._lock:
            if name not in self._state.agent_bids:
                self._state.forming[name] = LiveBid(name, "agent", score, message)
                self._touch()

    def _kick(self) -> None:
        """Wake the engine's wait (on its loop): something it waits on besides the room
        changed (the agents' bids are all in)."""
        if self._wake is not None:
            self._wake.set()

    def _everyone_bid(self, agents_done: bool) -> bool:
        with self._lock:
            s = self._state
            return agents_done and all(s.people[n].bid is not None
                                       for n, k in s.roster if k == "human")

    def _close_bidding(self) -> dict[str, LiveBid]:
        """The window closed: people who did not bid pass. Their final bids by name."""
        with self._lock:
            s = self._state
            out: dict[str, LiveBid] = {}
            for name, kind in s.roster:
                if kind == "human":
                    p = s.people[name]
                    if p.bid is None:
                        p.bid = LiveBid(name, "human", 0.0, passed=True)
                    out[name] = p.bid
            s.phase, s.deadline = "idle", None
            self._touch()
            return out

    def _settled_bid(self, name: str, adjusted: float | None, eligible: bool | None) -> None:
        with self._lock:
            p = self._state.people.get(name)
            if p is not None and p.bid is not None:
                p.bid = replace(p.bid, adjusted=adjusted, eligible=eligible)
                self._touch()

    def _open_post(self, name: str, window: float) -> None:
        with self._lock:
            s = self._state
            s.phase, s.deadline, s.poster = "posting", self.clock() + window, name
            s.post, s.posted = None, s.people[name].left
            self._touch()

    def _posted_yet(self) -> bool:
        with self._lock:
            return self._state.posted

    def _close_post(self) -> str | None:
        """The post window closed: the text they posted ("" confirms the draft), or None."""
        with self._lock:
            s = self._state
            text = s.post if s.posted else None
            s.phase, s.deadline, s.poster = "idle", None, None
            self._touch()
            return text

    def _open_pick(self, candidates: Sequence[LiveBid], rule_pick: str | None,
                   window: float) -> None:
        with self._lock:
            s = self._state
            assert s.picker is not None
            s.phase, s.deadline = "picking", self.clock() + window
            s.candidates, s.rule_pick = tuple(candidates), rule_pick
            s.pick, s.picked = None, s.people[s.picker].left
            self._touch()

    def _picked_yet(self) -> bool:
        with self._lock:
            return self._state.picked

    def _close_pick(self) -> Pick | None:
        with self._lock:
            s = self._state
            pick = s.pick if s.picked else None
            s.phase, s.deadline = "idle", None
            self._touch()
            return pick

    def _won(self, name: str) -> None:
        """A person won the floor: their hand lowers."""
        with self._lock:
            p = self._state.people.get(name)
            if p is not None and p.hand_up:
                lower_hand(self._state, p)
                self._touch()

    def _message(self, role: str, content: str) -> None:
        with self._lock:
            self._state.messages.append((role, content))
            self._touch()

    def _finish(self) -> None:
        with self._lock:
            s = self._state
            s.phase, s.deadline = "finished", None
            self._touch()
        self._loop, self._wake = None, None

    async def _wait(self, done: Callable[[], bool], seconds: float) -> bool:
        """Wait on the engine's loop until `done()` holds or `seconds` pass; whether
        it held. Woken by every change (any thread), never polling."""
        wake = self._wake
        assert wake is not None, "the room's run has not started"
        loop = asyncio.get_running_loop()
        ends = loop.time() + max(0.0, seconds)
        while True:
            wake.clear()
            if done():
                return True
            remaining = ends - loop.time()
            if remaining <= 0:
                return done()
            try:
                async with asyncio.timeout(remaining):
                    await wake.wait()
            except TimeoutError:
                return done()
