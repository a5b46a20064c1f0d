"""The Run page's widget callbacks (`on_*`) and the run-form state other pages hand over to.

Why callbacks: they run before the script reruns, so the rerun already shows the outcome (the
new job, a preset's settings) and may set widget values (which is not allowed once a widget has
been drawn). Failures become messages for the user, never tracebacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from groupchat_core import CHAT_SETTINGS, CliError, ConfigError, StoreError
from groupchat_ui.kit import store_access
from groupchat_ui.kit.components import say_at
from groupchat_ui.kit.presets import PRESETS
from groupchat_ui.kit.state import SessionState, actor, get, guests_refused, move
from groupchat_ui.kit.traces import TRACE_KEY

from . import logic, people_view
from .form import PARAM_PREFIX, ROSTER_KEY, TASK_KEY, RunForm
from .form import STREAM_KEY as STREAM_KEY  # the Settings page writes it, the tests read it


def fill_params(values: Mapping[str, Any]) -> None:
    """Load chat parameters into the run form (defaults, a preset, or a stored run's spec);
    the form's settings and their kinds are the schema's (groupchat_core.CHAT_SETTINGS)."""
    for name, value in values.items():
        setting = CHAT_SETTINGS.get(name)
        if setting is None or setting.form is None:
            continue
        if name == "bid_timeout":  # no timeout (None) is 0 in the form
            value = float(value or 0.0)
        elif setting.kind is float:  # a float widget refuses an int value
            value = float(value)
        st.session_state[PARAM_PREFIX + name] = value


@guests_refused("loading a preset")
def on_load_preset(choice_key: str) -> None:
    """Save the built-in room picked in widget `choice_key`, and make it the next run; if that
    would replace saved agents that differ from the preset's, ask first (`on_confirm_preset`).
    """
    name = st.session_state[choice_key]
    session = get()
    try:
        changed = logic.preset_conflicts(store_access.store(), PRESETS[name])
    except StoreError as exc:
        session.notify("error", str(exc))
        return
    if changed:
        session.confirm_preset = (name, tuple(changed))
        return
    _load_preset(name, keep=())


@guests_refused("loading a preset")
def on_confirm_preset(answer: bool | str) -> None:
    """The answer to the preset question: True replaces, "copies" keeps the saved agents and
    adds the preset's under new names, False cancels."""
    session = get()
    pending, session.confirm_preset = session.confirm_preset, None
    if pending is None or answer is False:
        return
    name, changed = pending
    _load_preset(name, keep=changed if answer == "copies" else ())


def _load_preset(name: str, keep: tuple[str, ...]) -> None:
    session, preset = get(), PRESETS[name]
    try:
        names = logic.load_preset(store_access.store(), preset, keep=keep, actor=actor(session))
    except StoreError as exc:
        session.notify("error", str(exc))
        return
    session.roster = list(names)
    st.session_state[ROSTER_KEY] = list(names)
    fill_params({**logic.default_params(),  # no run name: runs are labelled by their task
                 "description": preset.description, **preset.settings})
    st.session_state[TASK_KEY] = preset.task
    store_access.invalidate()
    session.agent_order = [a.agent_name for a in store_access.agents()]
    kept = f" Your {', '.join(keep)} kept; the preset's saved as copies." if keep else ""
    session.notify("success", f"Loaded the {name} preset: {', '.join(names)}.{kept}")


def rename_in_roster(session: SessionState, old: str | None, new: str) -> None:
    """An agent was renamed on the Agents page: keep its place in the next run."""
    if old in session.roster:
        session.roster[session.roster.index(old)] = new
    roster = st.session_state.get(ROSTER_KEY)
    if old and isinstance(roster, list) and old in roster:
        st.session_state[ROSTER_KEY] = [new if n == old else n for n in roster]


def drop_from_roster(session: SessionState, name: str) -> None:
    """An agent was deleted on the Agents page: it can no longer take part."""
    session.roster = [n for n in session.roster if n != name]
    if isinstance(st.session_state.get(ROSTER_KEY), list):
        st.session_state[ROSTER_KEY] = [n for n in st.session_state[ROSTER_KEY] if n != name]


@guests_refused("preparing a run")
def on_roster_changed() -> None:
    get().roster = list(st.session_state.get(ROSTER_KEY) or [])


@guests_refused("preparing a run")
def on_move_in_roster(name: str, delta: int) -> None:
    roster = move(list(st.session_state.get(ROSTER_KEY) or []), name, delta)
    st.session_state[ROSTER_KEY] = roster
    get().roster = roster


@guests_refused("starting a run")
def on_start_run() -> None:
    session, store = get(), store_access.store()
    by_name = {a.agent_name: a for a in store_access.agents()}
    try:
        form = RunForm.from_state(st.session_state.to_dict())
        agents = [by_name[n] for n in form.roster if n in by_name]
        if people_view.people():  # people in the room: seats, links, the live room panel
            job_id = people_view.start(session, form, agents)
        else:
            job_id = logic.start_run(
                store, store_access.job_registry(), session.owner, agents, form.task, form,
                session.provider_keys, user=session.user, user_name=session.user_name,
                stream=form.stream is not False,
                trace=bool(st.session_state.get(TRACE_KEY, False)))
    except (ConfigError, StoreError, CliError) as exc:
        say_at("run_form", "error", f"The run did not start: {exc}")  # under Start
        return
    session.add_job(job_id)
    st.session_state["job_select"] = job_id
    st.session_state["new_run_open"] = False  # make room for the live view
    st.query_params["job"] = job_id


@guests_refused("stopping a run")
def on_stop(job_id: str) -> None:
    """Stop a job: only for the user it runs for (the registry refuses anyone else, so a
    shared `?job=` link lets others watch, never stop)."""
    session = get()
    if not store_access.job_registry().cancel(job_id, user=session.user):
        session.notify("warning", "That run was not stopped: it has ended, or it is not "
                       "yours to stop.")


def on_job_selected() -> None:
    """The job picked in the selector is the one watched from now on (across page switches)."""
    job_id = st.session_state["job_select"]
    get().current_job = job_id
    st.query_params["job"] = job_id
