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
