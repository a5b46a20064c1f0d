"""Typed session state behind one key: a dataclass instead of loose string keys.

Why: every page reads the same few facts about the browser session (who owns which jobs, which
agents are in the room, the provider keys typed in Settings), and a typo in a string key fails
silently. Widget values live in `st.session_state` under their own `key=`s (kept across page
switches with `persist_state="session"`); everything else lives here.

Provider keys are held only in this object, in the server's memory for this session: they are
never written to the store, a file, a log, `os.environ` or the page (the repr hides them).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import streamlit as st

from groupchat_core import DEFAULT_MODEL

STATE_KEY = "groupchat_lab"


@dataclass
class SessionState:
    """Everything the dashboard remembers about one browser session."""

    owner: str = field(default_factory=lambda: uuid.uuid4().hex)  # job registry owner id
    provider_keys: dict[str, str] = field(default_factory=dict, repr=False)  # env name -> key
    job_ids: list[str] = field(default_factory=list)  # this session's jobs, oldest first
    current_job: str | None = None
    sweep_jobs: list[str] = field(default_factory=list)  # this session's sweep jobs, oldest first
    roster: list[str] = field(default_factory=list)  # agents of the next run, in order
    agent_order: list[str] = field(default_factory=list)  # order of the Agents page list
    editing: str | None = None  # agent shown in the form (None: a new agent)
    form_errors: dict[str, str] = field(default_factory=dict)
    default_model: str = DEFAULT_MODEL
    selected_run: str | None = None
    confirm_delete: tuple[str, ...] = ()
    notices: list[tuple[str, str]] = field(default_factory=list)  # (kind, text), shown once

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
        return [v for v in self.provider_keys.values() if v]


def get() -> SessionState:
    """This session's state, created on first use (setdefault-style)."""
    current = st.session_state.get(STATE_KEY)
    if not isinstance(current, SessionState):
        current = SessionState()
        st.session_state[STATE_KEY] = current
    return current


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
