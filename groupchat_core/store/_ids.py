"""Which run or sweep an id typed by a person means: the full id or a unique prefix of it.

Why one function: the dashboard's links (`?run=`, `?sweep=`) and the CLI's arguments take the
same ids, and the dashboard once opened the newest run for a prefix it did not know, without a
word (issue 38). Here an id names exactly one item or is an error saying what was asked, why it
names none, and the closest ids there are; the store's `resolve` and `resolve_sweep` call it.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import case

from .._errors import StoreError

MIN_PREFIX = 4  # shorter prefixes name too many ids to be meant (a full id may be shorter)
SHOWN = 12  # characters of an id shown in a message (the id `sweep list` prints)
MATCHES_READ = 6  # prefix matches read: enough to say "ambiguous" and show a few


class UnknownId(StoreError):
    """An id that names no single run or sweep: unknown, ambiguous or too short."""

    def __init__(self, message: str, kind: str, wanted: str, closest: Sequence[str]) -> None:
        super().__init__(message)
        self.kind, self.wanted, self.closest = kind, wanted, tuple(closest)


def exact_first(column: Any, wanted: str) -> Any:
    """An ORDER BY term putting the id equal to `wanted` before the ids it is a prefix of."""
    return case((column == wanted, 0), else_=1)


def like_prefix(prefix: str) -> str:
    """A LIKE pattern for ids starting with `prefix` (its %, _ and \\ taken literally)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def resolve_id(kind: str, wanted: str, matches: Sequence[str],
               every: Callable[[], Sequence[str]], where: str = "") -> str:
    """The one id of `kind` ("run", "sweep") that `wanted` names, given the stored ids starting
    with `wanted` (`matches`, a few suffice) and, to name the closest ids when none matches,
    all ids (`every`, newest first, called only then). UnknownId otherwise."""
    if wanted in matches:
        return wanted  # a full id, even one that is also the prefix of another
    if not wanted.strip():
        raise UnknownId(f"no {kind} id given: pass a {kind} id or a unique prefix of one",
                        kind, wanted, ())
    if matches and len(wanted) < MIN_PREFIX:
        shown = ", ".join(short(m) for m in matches[:3])
        raise UnknownId(f"{kind} id {wanted!r} is too short: give at least {MIN_PREFIX} "
                        f"characters of the id (e.g. {shown})", kind, wanted, matches[:3])
    if len(matches) == 1:
        return matches[0]
    if matches:
        more = "" if len(matches) < MATCHES_READ else ", …"
        shown = ", ".join(short(m) for m in matches[:MATCHES_READ - 1]) + more
        raise UnknownId(f"{kind} id {wanted!r} is ambiguous: it starts {shown}; give more "
                        "characters", kind, wanted, matches[:MATCHES_READ - 1])
    near = closest(wanted, every())
    hint = (f"; closest: {', '.join(short(n) for n in near)}" if near
            else f"; there are no {kind}s yet")
    raise UnknownId(f"no {kind} {wanted!r}{where}{hint}", kind, wanted, near)


def closest(wanted: str, ids: Sequence[str], n: int = 3) -> list[str]:
    """Up to `n` ids most like `wanted`: the longest shared start first, then the most
    similar start (a typo in the middle), then the store's order."""
    def rank(pair: tuple[int, str]) -> tuple[int, float, int]:
        i, candidate = pair
        start = candidate[:len(wanted)]
        shared = next((k for k, (a, b) in enumerate(zip(wanted, start, strict=False))
                       if a != b), min(len(wanted), len(start)))
        ratio = difflib.SequenceMatcher(None, wanted, start).ratio()
        return (-shared, -ratio, i)

    return [c for _, c in sorted(enumerate(ids), key=rank)[:n]]


def short(ident: str) -> str:
    """An id as a message shows it: its first SHOWN characters (enough to be typed back)."""
    return ident if len(ident) <= SHOWN else ident[:SHOWN] + "…"
