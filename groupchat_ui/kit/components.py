"""Rendering pieces every page shares: notices, chat bubbles, metric cards and the sidebar.

Why one module: every place that shows an agent message goes through `bubble`, so untrusted
model output is always rendered by `safe_markdown` (no raw HTML, no remote images), and every
model is labelled the same way ("(simulated)" for sim/ models).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from groupchat_core import JobStatus, Message, StoreError

from . import state as _state
from .jobs import JobRegistry
from .labels import local_time, run_title
from .metrics import Card
from .providers import model_label
from .safety import escape_markdown, safe_markdown
from .state import SessionState
from .store_access import store
from .sweep_status import sweep_status

__all__ = ["bubble", "cards", "confirm", "feedback", "login_screen", "notices", "preset_confirm",
           "say_at", "sidebar"]

_ICONS: dict[JobStatus, str] = {"queued": ":material/schedule:", "running": ":material/autorenew:",
          "finished": ":material/check_circle:", "cancelled": ":material/stop_circle:",
          "error": ":material/error:"}


def notices(session: SessionState) -> None:
    """Show (once) what callbacks queued: saved, deleted, imported, failed."""
    show = {"success": st.success, "error": st.error, "warning": st.warning, "info": st.info}
    for kind, text in session.take_notices():
        show.get(kind, st.info)(escape_markdown(text))


def say_at(slot: str, kind: str, text: str) -> None:
    """Queue a message to show next to the control `slot` (not at the top of the page, where it
    scrolls out of sight): a callback's outcome, shown once by `feedback(slot)`."""
    st.session_state[f"feedback_{slot}"] = (kind, text)


def feedback(slot: str) -> None:
    """Show (once) what `say_at(slot, ...)` queued; call right under the control."""
    queued = st.session_state.pop(f"feedback_{slot}", None)
    if queued:
        kind, text = queued
        show = {"success": st.success, "error": st.error, "warning": st.warning}
        show.get(kind, st.info)(escape_markdown(text))


def confirm(text: str, key: str, on_answer: Callable[[Any], None], *, yes: str = "Yes",
            no: str = "Cancel", more: Sequence[tuple[str, str]] = ()) -> None:
    """Two-step confirmation next to the control that asked (Runs' delete, Agents' delete,
    a preset over edited agents): a warning and buttons calling `on_answer(True)`,
    `on_answer(False)` or `on_answer(value)` for each `(label, value)` in `more`.

    Why inline, not a dialog: the question stays next to its cause, a rerun cannot lose it
    (it lives in session state until answered), and AppTest can click it."""
    with st.container(border=True, key=f"{key}_box"):
        st.warning(text, icon=":material/warning:")
        with st.container(horizontal=True, gap="small"):
            st.button(yes, key=f"{key}_yes", type="primary", on_click=on_answer, args=(True,))
            for label, value in more:
                st.button(label, key=f"{key}_{value}", on_click=on_answer, args=(value,))
            st.button(no, key=f"{key}_no", on_click=on_answer, args=(False,))


def preset_confirm(session: SessionState, on_answer: Callable[[Any], None]) -> None:
    """Ask before a preset replaces saved agents that differ from its own (the Agents and Run
    pages' preset buttons): replace them, keep them and load the preset's as copies, or cancel.
    """
    if session.confirm_preset is None:
        return
    preset, changed = session.confirm_preset
    names = ", ".join(escape_markdown(n) for n in changed)
    confirm(f"The {escape_markdown(preset)} preset would replace your saved {names} "
            "(they differ from the preset's). Nothing can undo that.", "confirm_preset",
            on_answer, yes="Replace them", more=[("Keep mine, add the preset's as copies",
                                                  "copies")])


PERSON_AVATAR, AGENT_AVATAR, TASK_AVATAR = ":material/face:", ":material/smart_toy:", \
    ":material/person:"


def bubble(message: Message, *, model: str | None = None, turn: int | None = None,
           text: str | None = None, streaming: bool = False, person: bool = False) -> None:
    """One chat message; agent text is untrusted, so it is rendered inert. A person's post
    (`person`) has a face and says "person" where a model's says its model."""
    is_task = message.score is None
    avatar = TASK_AVATAR if is_task else PERSON_AVATAR if person else AGENT_AVATAR
    with st.chat_message("user" if is_task else message.role, avatar=avatar):
        meta = [f"**{escape_markdown(message.role)}**"]
        if person and not is_task:
            meta.append("person")
        elif model:
            meta.append(escape_markdown(model_label(model)))
        if message.score is not None:
            meta.append(f"score {message.score:.2f}")
        if turn:
            meta.append(f"turn {turn}")
        st.markdown(" · ".join(meta))
        body = message.content if text is None else text
        st.markdown(safe_markdown(body) + (" ▌" if streaming else ""))


def cards(shown: Sequence[Card], per_row: int = 5) -> None:
    """Metrics in bordered cards; a card's note (e.g. who monologued) sits under its value."""
    for start in range(0, len(shown), per_row):
        cols = st.columns(per_row)
        for col, (label, value, help_text, note) in zip(cols, shown[start:start + per_row],
                                                        strict=False):
            note = escape_markdown(note) if note else None  # markdown; may be an agent name
            col.metric(label, value, delta=note, delta_color="off", delta_arrow="off",
                       help=help_text or None, border=True)


def login_screen() -> None:
    """All a signed-out visitor sees on a server with login: what this is, and Log in."""
    with st.container(key="login_screen"):
        st.title("GroupChat Lab")
        st.write("This lab is shared by a team: sign in to run chats and sweeps and to see "
                 "the team's runs.")
        if st.button("Log in", key="login", type="primary", icon=":material/login:"):
            st.login()  # to the identity provider configured under [auth]


def _signed_in(session: SessionState) -> None:
    """Who is signed in, and Log out (only on a server with login)."""
    if not _state.login_configured():
        return
    with st.container(key="signed_in"):
        who = escape_markdown(session.user_name)
        extra = "" if session.user_name == session.user else (
            f" ({escape_markdown(session.user)})")
        st.caption(f"Signed in as **{who}**{extra}")
        if st.button("Log out", key="logout", icon=":material/logout:"):
            st.logout()  # forgets the login cookie and starts a new, signed-out session


def sidebar(session: SessionState, registry: JobRegistry, location: str) -> None:
    """Who is signed in; jobs of this browser session only (never another session's), newest
    first; where data lives."""
    st.logo(APP_LOGO, size="large")  # the app's name atop the sidebar (and in its collapsed bar)
    with st.sidebar:
        _signed_in(session)
        jobs = registry.jobs_for(session.owner, session.user)
        _sweep_jobs(session, registry, len(jobs), len([j for j in jobs if not j.done]))
        for job in reversed(jobs[-5:]):
            label = job_link_label(job.config.get("name"), job.task, job.created_at,
                                   job.run_id or job.id)
            names = ", ".join(job.agents or job.models) or "?"
            st.page_link("app_pages/run.py", label=escape_markdown(label),  # labels are markdown
                         icon=_ICONS.get(job.status), query_params={"job": job.id},
                         help=escape_markdown(f"{job.status} · by {job.user_name} · agents "
                                              f"{names} · job {job.id}"))
        st.divider()
        st.caption(f"Data: `{location}`")
        st.caption("sim/ models are offline simulations, not language models.")


# The app's name as a small wordmark (inline SVG, no file to ship or fetch): the sidebar showed
# the pages but nowhere the app's name.
APP_LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 150 24" width="150" height="24">'
            '<path fill="#ff4b4b" d="M21 6h-2v9H6v2c0 .55.45 1 1 1h11l4 4V7c0-.55-.45-1-1-1zm-4 6'
            'V3c0-.55-.45-1-1-1H3c-.55 0-1 .45-1 1v14l4-4h10c.55 0 1-.45 1-1z"/><text x="28" '
            'y="17" font-family="sans-serif" font-size="15" font-weight="600" fill="#31333f">'
            'GroupChat Lab</text></svg>')


def job_link_label(name: str | None, task: str | None, created_at: Any, ident: str) -> str:
    """A sidebar job's label: start time and id first, then the name or task, so a label cut
    short by the sidebar's width still tells jobs apart (with the title first, several long
    tasks read the same: the time and id were cut off)."""
    when = local_time(created_at, seconds=False, date=False)
    return " · ".join(p for p in (when, str(ident)[:8], run_title(name, task)) if p)


_TIMER_OWNER = "_page_timer_owner"


def begin_page() -> None:
    """A new full run of the page: its one timer is free again (`refresh_every`)."""
    st.session_state[_TIMER_OWNER] = None


def refresh_every(owner: str, seconds: float | None) -> float | None:
    """`run_every` for a fragment: the page's one timer goes to the first fragment that asks on
    this run, every other gets none. Why: Streamlit 1.67's browser side crashes now and then
    when several timed fragments rerun beside a full run, leaving the page blank for good
    (BENCHMARKS.md, "A page that went blank"): at most one timer per page, whatever it holds."""
    holder = st.session_state.get(_TIMER_OWNER)
    granted = timer_granted(holder, owner, seconds)
    if granted is not None:
        st.session_state[_TIMER_OWNER] = owner
    return granted


def timer_granted(holder: str | None, owner: str, seconds: float | None) -> float | None:
    """The rule of `refresh_every`, pure: the holder keeps the timer; nobody holds it: the
    asker gets it."""
    if seconds is None or holder not in (None, owner):
        return None
    return seconds


def _sweep_jobs(session: SessionState, registry: JobRegistry, chats: int, running: int) -> None:
    """The session's job count (chats and sweeps) and its sweeps, each with the same status
    line as the Sweeps page (sweep_status.py), as of this page run. Never timed: the sidebar is
    drawn before the page, and the page's one timer belongs to its own live view."""

    def lines() -> None:
        sweeps = registry.tasks_for(session.owner, "sweep", session.user)
        busy = running + sum(not t.done for t in sweeps)
        st.caption(f"Jobs of this session: {busy} running, {chats + len(sweeps)} in all")
        for task in reversed(sweeps[-3:]):
            try:
                status = sweep_status(store(), job=task)
            except StoreError:
                continue
            params = {"sweep": status.sweep_id} if status.sweep_id else None
            st.page_link("app_pages/sweeps.py", label=f"{escape_markdown(status.name or 'sweep')}"
                         f" · {status.state}", icon=_ICONS.get(task.status),
                         query_params=params, help=f"job {task.id}")
            st.caption(status.text(), help="The same line as on the Sweeps page.")

    lines()


def mlflow_button(store: Any, ids: Sequence[str], key: str, label: str = "Export to MLflow",
                  what: str = "run") -> None:
    """Log the chosen runs (or a sweep) to MLflow (kit/mlflow_export.py); the message under
    it says where it wrote, or how to install MLflow."""
    from groupchat_ui.kit import mlflow_export

    def on_click() -> None:
        say_at(key, *mlflow_export.export(store, list(ids)))

    where = mlflow_export.tracking_uri() if mlflow_export.mlflow_available() else None
    st.button(label, key=key, icon=":material/science:", disabled=not ids, on_click=on_click,
              help=(f"Log the selected {what} to the MLflow tracking store at {where} "
                    "(MLFLOW_TRACKING_URI chooses another)." if where else
                    f"MLflow is not installed: {mlflow_export.INSTALL}."))
    feedback(key)
