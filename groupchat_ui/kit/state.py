"""Typed session state behind one key: a dataclass instead of loose string keys.

Why: every page reads the same few facts about the browser session (who owns which jobs, which
agents are in the room, the provider keys typed in Settings), and a typo in a string key fails
silently. Widget values live in `st.session_state` under their own `key=`s (kept across page
switches with `persist_state="session"`); everything else lives here.

Provider keys are held only in this object, in the server's memory for this session: they are
never written to the store, a file, a log, `os.environ` or the page (the repr hides them).

Why a browser id in the URL (`?sid=<owner>`): a reload starts a new Streamlit session, and
everything above would be gone, including which jobs are this browser's. The session's owner id
(the job registry's owner, an unguessable uuid4 hex) rides along in the query string, so a reload
picks the same owner up again and finds its jobs in the process-wide registry (`reattach`).
Whoever has the URL has the jobs, as with `?job=`; keys are never in it, so they do not survive.
Cookies would be nicer but Streamlit can only read them (st.context.cookies), not set them.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec

import streamlit as st

from groupchat_core import DEFAULT_MODEL, Agent, hold_secrets

from . import access
from .access import Actor
from .form_memory import claim as claim_owner
from .jobs import LOCAL_USER, JobRegistry

P = ParamSpec("P")

STATE_KEY = "groupchat_lab"
BROWSER_PARAM = "sid"  # the query parameter that carries the browser's owner id
_OWNER = re.compile(r"^[0-9a-f]{32}$")


@dataclass
class SessionState:
    """Everything the dashboard remembers about one browser session."""

    owner: str = field(default_factory=lambda: uuid.uuid4().hex)  # job registry owner id
    # Who this session acts for (identify): the signed-in user's email (else subject) and
    # name, or "local" on a server without login, where every session is the same person.
    user: str = LOCAL_USER
    user_name: str = LOCAL_USER
    provider_keys: dict[str, str] = field(default_factory=dict, repr=False)  # env name -> key
    job_ids: list[str] = field(default_factory=list)  # this session's jobs, oldest first
    current_job: str | None = None
    sweep_jobs: list[str] = field(default_factory=list)  # this session's sweep jobs, oldest first
    roster: list[str] = field(default_factory=list)  # agents of the next run, in order
    agent_order: list[str] = field(default_factory=list)  # the stored agent order, as last read
    editing: str | None = None  # agent shown in the form (None: a new agent)
    form_errors: dict[str, str] = field(default_factory=dict)
    default_model: str = DEFAULT_MODEL
    selected_run: str | None = None
    confirm_delete: tuple[str, ...] = ()  # runs waiting for "Yes, delete" (Runs page)
    confirm_agent_delete: str | None = None  # agent waiting for "Yes, delete" (Agents page)
    confirm_sweep_delete: str | None = None  # sweep waiting for "Yes, delete" (Sweeps page)
    confirm_preset: tuple[str, tuple[str, ...]] | None = None  # (preset, agents it would change)
    # an agents file waiting for "replace / keep mine / cancel": (file, its agents, the saved
    # agents it would change)
    confirm_import: tuple[str, tuple[Agent, ...], tuple[str, ...]] | None = None
    notices: list[tuple[str, str]] = field(default_factory=list)  # (kind, text), shown once
    # The owner id came from `?sid=` and is not yet checked against who signed in (reattach).
    from_link: bool = False
    # A room guest (login off, arrived through a room link): its room only, for good
    # (access.is_guest); set by `identify`, never cleared within the session.
    guest: bool = False

    def add_job(self, job_id: str) -> None:
        if job_id not in self.job_ids:
            self.job_ids.append(job_id)
        self.current_job = job_id

    def notify(self, kind: str, text: str) -> None:
        """Queue a message for the next render (a callback's outcome survives the rerun)."""
        self.notices.append((kind, text))

    def take_notices(self) -> list[tuple[str, str]]:
        notices, self.notices = self.notices, []
        return notices

    def secrets(self) -> list[str]:
        keys = [v for v in self.provider_keys.values() if v]
        hold_secrets(keys)  # masked in every chat's model output, whoever runs it
        return keys


def get() -> SessionState:
    """This session's state, created on first use (setdefault-style); a new session takes its
    owner id from `?sid=` when the URL has a well-formed one (a reload of this browser)."""
    current = st.session_state.get(STATE_KEY)
    if not isinstance(current, SessionState):
        sid = st.query_params.get(BROWSER_PARAM) or ""
        current = (SessionState(owner=sid, from_link=True) if _OWNER.match(sid)
                   else SessionState())
        st.session_state[STATE_KEY] = current
    return current


def _secret_values(section: Any) -> list[str]:
    """The `*secret*` values of a secrets.toml section and its subsections ([auth.google])."""
    found: list[str] = []
    for key, value in section.items():
        if isinstance(value, str) and "secret" in str(key).lower():
            found.append(value)
        elif hasattr(value, "items"):
            found.extend(_secret_values(value))
    return found


def login_configured() -> bool:
    """Whether `[auth]` is set in .streamlit/secrets.toml: a shared server where everyone signs
    in. Without it (the local single-user case) nobody signs in and everyone is "local"."""
    try:
        configured = "auth" in st.secrets
        if configured:  # the OIDC client and cookie secrets: never in any model output
            hold_secrets(_secret_values(st.secrets["auth"]))
        return configured
    except FileNotFoundError:  # no secrets.toml at all (StreamlitSecretNotFoundError)
        return False


def identify(session: SessionState) -> bool:
    """Set who the session acts for from the signed-in user (st.user); False when login is
    configured and nobody is signed in (the caller shows only the login then)."""
    if not login_configured():
        guests = access.guest_browsers()
        session.guest = access.is_guest(
            login=False, was_guest=session.guest,
            link_in_url=bool(st.query_params.get(access.ROOM_LINK_PARAM)),
            guest_browser=session.owner in guests)
        if session.guest:
            guests.remember(session.owner)  # a reload of this browser is a guest again
        session.user = session.user_name = access.GUEST_USER if session.guest else LOCAL_USER
        return True
    session.guest = False  # login on: the owner rules hold; a room link only seats
    if not st.user.get("is_logged_in"):  # absent too where auth is not set up (AppTest)
        return False
    ident = _printable(st.user.get("email") or st.user.get("sub"))[:320]
    if not ident:
        return False  # a provider that names nobody: nothing to own runs by
    session.user = ident
    session.user_name = _printable(st.user.get("name"))[:200] or ident
    return True


def actor(session: SessionState) -> Actor:
    """Who this session's writes are made for (call after `identify`): the signed-in user
    when login is configured, else the one local user who may edit everything."""
    return Actor(session.user, session.user_name, signed_in=login_configured())


def guests_refused(what: str) -> Callable[[Callable[P, None]], Callable[P, None]]:
    """Refuse a callback to a room guest, with a one-line notice, before it does anything.

    Why on the callback and not only by hiding its button: a guest's browser can send any
    widget event its session has seen, and a hidden button is no refusal. Every action outside
    the room (start, stop, delete, edit, import, settings...) is wrapped; the room's own
    (run/people_view.py) are not."""

    def wrap(callback: Callable[P, None]) -> Callable[P, None]:
        @functools.wraps(callback)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
            session = get()
            if session.guest:
                session.notify("error", access.guest_refusal(what))
                return
            callback(*args, **kwargs)

        return guarded

    return wrap


def _printable(value: object) -> str:
    """A claim as plain text (claims come from the identity provider: shown in tables)."""
    return "".join(c for c in str(value or "") if c.isprintable()).strip()


def reattach(session: SessionState, registry: JobRegistry) -> None:
    """Keep the owner id in the URL (pages drop query parameters when switching) and adopt
    the owner's jobs the registry still holds: after a reload, or started in another tab of
    the same browser. Call once per script run, before any page renders (after `identify`).

    With login on, an owner id is kept only by the user whose session made it: a signed-in
    user opening another's link (its `?sid=`) gets an owner id of their own, so they neither
    read nor write the other's drafts and jobs (issue 38); the link's `?run=`, `?sweep=` stay.
    """
    if login_configured() and not claim_owner(session.owner, session.user,
                                              from_link=session.from_link):
        session.owner = uuid.uuid4().hex
        claim_owner(session.owner, session.user, from_link=False)
    session.from_link = False
    if st.query_params.get(BROWSER_PARAM) != session.owner:
        st.query_params[BROWSER_PARAM] = session.owner
    for job in registry.jobs_for(session.owner, session.user):
        if job.id not in session.job_ids:
            session.job_ids.append(job.id)
    for task in registry.tasks_for(session.owner, "sweep", session.user):
        if task.id not in session.sweep_jobs:
            session.sweep_jobs.append(task.id)


def ordered(names: list[str], preferred: list[str]) -> list[str]:
    """`names` in the `preferred` order first, the rest after in their own order."""
    known = [n for n in preferred if n in names]
    return known + [n for n in names if n not in known]


def move(names: list[str], name: str, delta: int) -> list[str]:
    """`names` with `name` moved up (-1) or down (+1), clamped at the ends."""
    out = list(names)
    if name in out:
        i = out.index(name)
        j = min(max(i + delta, 0), len(out) - 1)
        out.insert(j, out.pop(i))
    return out
