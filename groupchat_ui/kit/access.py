"""Who may edit, rename or delete a saved agent, and who is an administrator.

Why: saved agents are shared by everyone on a server, and an agent decides where a run's
requests go (its api_base). With login on, an agent belongs to the user who saved or imported
it: others may use and duplicate it (the copy is theirs) but not change it, or they could point
someone else's agent at their own server. Ownerless agents (saved before owners were kept, or
by the CLI) are read-only for signed-in users. Administrators, listed by email or subject in
GROUPCHAT_ADMINS (a comma list), may change any agent. Without login (one local user) every
agent stays editable, as before owners were kept.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

ADMINS_ENV = "GROUPCHAT_ADMINS"


@dataclass(frozen=True)
class Actor:
    """Who a write is made for: the session's user, and whether they signed in (login on)."""

    user: str
    user_name: str
    signed_in: bool = False


def admins(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The administrators' identities (emails compared case-insensitively)."""
    env = os.environ if environ is None else environ
    return frozenset(a.strip().lower() for a in env.get(ADMINS_ENV, "").split(",") if a.strip())


def is_admin(user: str, environ: Mapping[str, str] | None = None) -> bool:
    return bool(user) and user.strip().lower() in admins(environ)


def may_edit_agent(owner: str | None, user: str, *, signed_in: bool,
                   environ: Mapping[str, str] | None = None) -> bool:
    """Whether `user` may edit, rename or delete an agent owned by `owner`: anyone without
    login; with login its owner or an admin (ownerless agents: admins only)."""
    if not signed_in:
        return True
    return (owner is not None and owner == user) or is_admin(user, environ)


def not_your_agent(name: str, owner_name: str | None) -> str:
    """The one-line reason an Edit, rename or Delete is refused."""
    whose = f"belongs to {owner_name}" if owner_name else "has no owner (saved before owners " \
                                                          "were kept, or by the CLI)"
    return (f"The agent {name!r} {whose}: you can use and duplicate it, but only its owner or "
            "an admin can edit, rename or delete it. Duplicate it to make a copy of your own.")


# --- room guests (login off) ---------------------------------------------------------------
# Why: without login every session is the one local user, so a room link (the `?seat=` a
# starter hands out, run/room_logic.room_link) made its holder a full user. A session that
# arrived through a room link is a *guest* instead, for the life of the session: it may take
# part in its room (bid, post, raise or lower a hand, pick; closing the tab leaves) and watch,
# nothing else. It never becomes the local user within that session; a reload of its browser
# (the same `?sid=`) is a guest again. With login on, nobody is a guest: the owner rules hold,
# and a link only seats (run/room_seats.py).

GUEST_USER = "room guest"  # who a guest acts for: owns nothing, so the owner rules refuse too
ROOM_LINK_PARAM = "seat"  # the query parameter of a room link that carries the seat's token
GUEST_PAGES = frozenset({"run", ""})  # the Run page, and the root that opens it
GUEST_BROWSERS_MAX = 10_000


def is_guest(*, login: bool, was_guest: bool, link_in_url: bool, guest_browser: bool) -> bool:
    """Whether a session is a room guest: never with login on; without it once it arrived
    through a room link (or its browser id did before), for good."""
    if login:
        return False
    return was_guest or link_in_url or guest_browser


def guest_may_open(url_path: str) -> bool:
    """A guest sees the Run page (its room) and nothing else."""
    return url_path in GUEST_PAGES


def guest_refusal(what: str) -> str:
    """The one-line reason a guest's request is refused (names the problem and the way on)."""
    return (f"Not allowed: {what} is not open to a room guest. This browser joined through a "
            "room link, so it can only take part in that room (bid, post, raise or lower a "
            "hand); ask whoever started the room.")


class GuestBrowsers:
    """The browser ids (`?sid=`) that arrived through a room link, so a reload of such a browser
    without the link's `seat=` is still a guest. Bounded: the oldest are forgotten first."""

    def __init__(self, limit: int = GUEST_BROWSERS_MAX) -> None:
        self._lock = threading.Lock()
        self._ids: dict[str, None] = {}  # insertion order: oldest first
        self._limit = limit

    def remember(self, browser: str) -> None:
        with self._lock:
            self._ids.pop(browser, None)
            self._ids[browser] = None
            while len(self._ids) > self._limit:
                del self._ids[next(iter(self._ids))]

    def __contains__(self, browser: object) -> bool:
        with self._lock:
            return browser in self._ids

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)


_guest_browsers = GuestBrowsers()


def guest_browsers() -> GuestBrowsers:
    """The process-wide set (every session of this server shares it)."""
    return _guest_browsers
