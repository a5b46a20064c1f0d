"""Who may act for which person in a live room: seats, room-link tokens and tab heartbeats (no
streamlit).

Why a table of its own: a room's people are driven from several browser sessions, each of which
must prove it holds a seat before its clicks reach the engine's `Room`. A seat belongs to a
signed-in user (login on), or to whoever holds its room link: a `secrets.token_urlsafe(32)`
token (256 bits). Only the token's SHA-256 is kept, compared with `hmac.compare_digest`, and
never logged or shown after the link is made.

Why a seat has one holder: a link is a bearer token, so opened in a second browser it seated
that browser as the same person too (its hand showed in everyone's queue, nobody was told). A
seat now belongs to the first browser that takes it (its browser id, `?sid=`, so a reload of
that browser takes it again); the link opened in any other browser watches, and is told so. A
signed-in user's own seat is theirs in any browser they sign in to (their sign-in is the proof).

Why heartbeats: a closed tab sends nothing, and a raised hand would keep bidding for someone
who left. Every seated tab's live view beats; a seat silent for LEAVE_AFTER_S is told to the
room as `leave` (a pass; the engine's window would end the turn anyway, so nothing here can
stall a room).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from groupchat_core import Room

LEAVE_AFTER_S = 5.0
TOKEN_BYTES = 32


def new_token() -> str:
    """A room-link token: 32 random bytes, URL-safe (43 characters)."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "replace")).digest()


@dataclass
class Seat:
    """One person of a room: the user it belongs to (None: the link's holder) and the hash of
    its link token. `picker`: the human selector (picks who speaks, does not bid). `holder`:
    the browser id that took it first (None: nobody yet)."""

    name: str
    user: str | None
    digest: bytes = field(repr=False)
    picker: bool = False
    last_seen: float | None = None
    away: bool = False
    holder: str | None = None

    def matches(self, token: str) -> bool:
        return hmac.compare_digest(self.digest, token_hash(token))


@dataclass
class RoomEntry:
    """A live room: the job, the chat (its `room` is read on each poll) and its seats."""

    job_id: str
    chat: Any  # a GroupChat with people
    seats: dict[str, Seat]
    created_at: float = field(default_factory=time.time)

    @property
    def room(self) -> Any:
        return getattr(self.chat, "room", None)


class SeatTable:
    """Process-wide, lock-protected: job id -> RoomEntry."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._rooms: dict[str, RoomEntry] = {}
        self._clock = clock

    def register(self, job_id: str, chat: Any, seats: Iterable[Seat]) -> RoomEntry:
        entry = RoomEntry(job_id, chat, {s.name: s for s in seats})
        with self._lock:
            self._rooms[job_id] = entry
        return entry

    def get(self, job_id: str | None) -> RoomEntry | None:
        with self._lock:
            return self._rooms.get(job_id or "")

    def forget(self, keep: Callable[[str], bool]) -> int:
        """Drop rooms whose job is gone (`keep(job_id)` False); returns how many."""
        with self._lock:
            gone = [j for j in self._rooms if not keep(j)]
            for job_id in gone:
                del self._rooms[job_id]
        return len(gone)

    def claim(self, job_id: str, *, user: str, signed_in: bool, browser: str,
              token: str | None = None) -> list[str]:
        """The seats this browser session may hold: a signed-in user's own seats, a seat whose
        link token it presents (compared in constant time) that no other browser holds yet,
        and a seat this browser already holds (a reload: same `?sid=`, the link's `seat=` may
        be gone). The first browser to claim a seat holds it (`held_elsewhere` says when not).
        """
        entry = self.get(job_id)
        if entry is None:
            return []
        names = []
        with self._lock:
            for seat in entry.seats.values():
                mine = signed_in and seat.user is not None and seat.user == user
                linked = bool(token) and seat.matches(token or "")
                if mine or seat.holder == browser or (linked and seat.holder is None):
                    seat.holder = seat.holder or browser
                    names.append(seat.name)
        return names

    def hold(self, job_id: str, name: str, browser: str) -> bool:
        """The starter's own seat: held by the browser that started the room, if still free."""
        entry = self.get(job_id)
        with self._lock:
            seat = entry.seats.get(name) if entry else None
            if seat is None or seat.holder not in (None, browser):
                return False
            seat.holder = browser
            return True

    def held_by(self, browser: str) -> list[tuple[str, str]]:
        """(job id, seat name) of every live room's seat this browser holds."""
        with self._lock:
            return [(e.job_id, s.name) for e in self._rooms.values()
                    for s in e.seats.values() if s.holder == browser]

    def held_elsewhere(self, job_id: str, token: str, browser: str) -> str | None:
        """The seat this link token opens when another browser holds it (this one watches)."""
        entry = self.get(job_id)
        with self._lock:
            for seat in (entry.seats.values() if entry else ()):
                if seat.matches(token) and seat.holder not in (None, browser):
                    return seat.name
        return None

    def invitations(self, user: str) -> list[tuple[str, str]]:
        """(job id, seat name) of every live room with a seat for this signed-in user."""
        with self._lock:
            return [(e.job_id, s.name) for e in self._rooms.values()
                    for s in e.seats.values() if s.user == user]

    def beat(self, job_id: str, name: str) -> None:
        """A seated tab is alive; a seat that was away is back."""
        entry = self.get(job_id)
        with self._lock:
            seat = entry.seats.get(name) if entry else None
            if seat is not None:
                seat.last_seen, seat.away = self._clock(), False

    def silent(self, job_id: str) -> list[str]:
        """Seats that beat once and then went silent for LEAVE_AFTER_S: newly away (marked so,
        each reported once). The caller tells the room they left."""
        entry = self.get(job_id)
        now = self._clock()
        out = []
        with self._lock:
            for seat in (entry.seats.values() if entry else ()):
                if (not seat.away and seat.last_seen is not None
                        and now - seat.last_seen > LEAVE_AFTER_S):
                    seat.away = True
                    out.append(seat.name)
        return out


def presence(job_id: str, room: Room, me: str | None,
             seat_table: SeatTable | None = None) -> list[str]:
    """What each refresh of an open tab's live view tells the room (room_view.py, every
    REFRESH_S): this tab's seat is alive (back, if it had left), and every seat whose tab went
    silent has left (a pass). The names newly told as left. Any viewer's refresh reports a
    closed tab; with no tab open, the engine's window ends the turn."""
    seat_table = seat_table or _table
    if me is not None:
        seat_table.beat(job_id, me)
        if any(p.name == me and p.left for p in room.snapshot().people):
            room.join(me)
    gone = seat_table.silent(job_id)
    for name in gone:
        room.leave(name)
    return gone


_table = SeatTable()


def table() -> SeatTable:
    """The process-wide seat table (every session of this server shares it)."""
    return _table
