"""Widget callbacks: read the submitted widgets, call one service, update session state.

Why callbacks: they run before the script reruns, so the rerun already shows the outcome (the
saved agent, the new job, a field's error) and may set widget values (which is not allowed once
a widget has been drawn). Failures become messages for the user, never tracebacks.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from groupchat_core import ConfigError, StoreError, set_max_inflight_calls

from . import forms, services, store_access
from .presets import PRESETS
from .providers import PROVIDER_KEYS
from .state import SessionState, get

ROSTER_KEY = "run_roster"


def _names() -> list[str]:
    return [a.agent_name for a in store_access.agents()]


# --- agents -------------------------------------------------------------------------------


def save_agent() -> None:
    session = get()
    values = forms.agent_form_values()
    if not values["model_name"]:
        session.form_errors = {"model_name": "type a litellm model string (or pick a sim/ "
                                             "model)"}
        return
    try:
        agent = services.agent_from_values(values)
        services.save_agent(store_access.store(), agent, session.editing, _names())
    except ValidationError as exc:
        session.form_errors = services.field_errors(exc)
        return
    except (ConfigError, StoreError) as exc:
        session.form_errors = {"agent_name": str(exc)}
        return
    _renamed(session, session.editing, agent.agent_name)
    session.form_errors, session.editing = {}, agent.agent_name
    store_access.invalidate()
    session.notify("success", f"Saved agent {agent.agent_name}.")


def _renamed(session: SessionState, old: str | None, new: str) -> None:
    for names in (session.agent_order, session.roster):
        if old in names:
            names[names.index(old)] = new
    if new not in session.agent_order:
        session.agent_order.append(new)
    roster = st.session_state.get(ROSTER_KEY)
    if old and isinstance(roster, list) and old in roster:
        st.session_state[ROSTER_KEY] = [new if n == old else n for n in roster]


def edit_agent(name: str) -> None:
    session = get()
    try:
        forms.fill_agent_form(store_access.store().get_agent(name), session.default_model)
    except StoreError as exc:
        session.notify("error", str(exc))
        return
    session.editing, session.form_errors = name, {}


def new_agent() -> None:
    session = get()
    forms.fill_agent_form(None, session.default_model)
    session.editing, session.form_errors = None, {}


def duplicate_agent(name: str) -> None:
    session = get()
    copy = services.duplicate_agent(store_access.store(), name, _names())
    order = session.agent_order
    order.insert(order.index(name) + 1 if name in order else len(order), copy)
    store_access.invalidate()
    session.notify("success", f"Duplicated {name} as {copy}.")


def delete_agent(name: str) -> None:
    session = get()
    store_access.store().delete_agent(name)
    session.agent_order = [n for n in session.agent_order if n != name]
    session.roster = [n for n in session.roster if n != name]
    if isinstance(st.session_state.get(ROSTER_KEY), list):
        st.session_state[ROSTER_KEY] = [n for n in st.session_state[ROSTER_KEY] if n != name]
    if session.editing == name:
        new_agent()
    store_access.invalidate()
    session.notify("success", f"Deleted agent {name}.")


def move(names: list[str], name: str, delta: int) -> list[str]:
    """`names` with `name` moved up (-1) or down (+1), clamped at the ends."""
    out = list(names)
    if name in out:
        i = out.index(name)
        j = min(max(i + delta, 0), len(out) - 1)
        out.insert(j, out.pop(i))
    return out


def move_agent(name: str, delta: int, current: list[str]) -> None:
    get().agent_order = move(current, name, delta)


def load_preset(choice_key: str) -> None:
    """Save the built-in room picked in widget `choice_key`, and make it the next run."""
    name = st.session_state[choice_key]
    session, preset = get(), PRESETS[name]
    try:
        names = services.load_preset(store_access.store(), preset)
    except StoreError as exc:
        session.notify("error", str(exc))
        return
    session.roster = list(names)
    session.agent_order = names + [n for n in session.agent_order if n not in names]
    st.session_state[ROSTER_KEY] = list(names)
    forms.fill_params({**services.default_params(), "name": preset.name,
                       "description": preset.description, **preset.settings})
    st.session_state["run_task"] = preset.task
    store_access.invalidate()
    session.notify("success", f"Loaded the {name} preset: {', '.join(names)}.")


def import_agents() -> None:
    session, upload = get(), st.session_state.get("agents_upload")
    if upload is None:
        session.notify("error", "Choose a JSON or YAML agents file first.")
        return
    try:
        names = services.import_agents(store_access.store(), upload.getvalue(), upload.name)
    except (ConfigError, StoreError) as exc:
        session.notify("error", f"Nothing was imported: {exc}")
        return
    session.agent_order += [n for n in names if n not in session.agent_order]
    store_access.invalidate()
    session.notify("success", f"Imported {len(names)} agents: {', '.join(names)}.")


# --- runs ---------------------------------------------------------------------------------


def roster_changed() -> None:
    get().roster = list(st.session_state.get(ROSTER_KEY) or [])


def move_in_roster(name: str, delta: int) -> None:
    roster = move(list(st.session_state.get(ROSTER_KEY) or []), name, delta)
    st.session_state[ROSTER_KEY] = roster
    get().roster = roster


def start_run() -> None:
    session, store = get(), store_access.store()
    by_name = {a.agent_name: a for a in store_access.agents()}
    roster = [n for n in st.session_state.get(ROSTER_KEY) or [] if n in by_name]
    try:
        job_id = services.start_run(
            store, store_access.job_registry(), session.owner, [by_name[n] for n in roster],
            str(st.session_state.get("run_task") or ""), forms.param_values(),
            session.provider_keys)
    except (ConfigError, StoreError) as exc:
        session.notify("error", f"The run did not start: {exc}")
        return
    session.add_job(job_id)
    st.session_state["job_select"] = job_id
    st.session_state["new_run_open"] = False  # make room for the live view
    st.query_params["job"] = job_id


def job_selected() -> None:
    st.query_params["job"] = st.session_state["job_select"]


# --- analysis and runs --------------------------------------------------------------------


def run_demo() -> None:
    session = get()
    try:
        run_id = services.run_demo(store_access.store())
    except (ConfigError, StoreError) as exc:
        session.notify("error", f"The demo did not run: {exc}")
        return
    store_access.invalidate()
    select_run(run_id)


def select_run(run_id: str) -> None:
    get().selected_run = run_id
    st.session_state["analysis_run"] = run_id
    st.query_params["run"] = run_id


def run_picked() -> None:
    select_run(st.session_state["analysis_run"])


def ask_delete(run_ids: list[str]) -> None:
    get().confirm_delete = tuple(run_ids)


def confirm_delete(confirmed: bool) -> None:
    session = get()
    ids, session.confirm_delete = session.confirm_delete, ()
    if confirmed and ids:
        count = services.delete_runs(store_access.store(), ids)
        store_access.invalidate()
        st.session_state.pop("runs_table", None)
        session.notify("success", f"Deleted {count} run(s).")


def import_bundle() -> None:
    session, upload = get(), st.session_state.get("bundle_upload")
    if upload is None:
        session.notify("error", "Choose a run bundle (.json) first.")
        return
    try:
        run_id = services.import_run(store_access.store(), upload.getvalue(), upload.name)
    except (ConfigError, StoreError) as exc:
        session.notify("error", f"Nothing was imported: {exc}")
        return
    store_access.invalidate()
    session.notify("success", f"Imported run {run_id}.")


# --- settings -----------------------------------------------------------------------------


def save_keys() -> None:
    """Keep typed keys in this session only; clear the inputs so no widget holds them."""
    session, saved = get(), []
    for env in PROVIDER_KEYS:
        value = str(st.session_state.get(f"key_{env}") or "").strip()
        if value:
            session.provider_keys[env] = value
            saved.append(env)
        st.session_state[f"key_{env}"] = ""
    session.notify("success" if saved else "info",
                   f"Set for this browser session: {', '.join(saved)}." if saved
                   else "No key was typed.")


def forget_key(env: str) -> None:
    get().provider_keys.pop(env, None)


def save_preferences() -> None:
    session = get()
    session.default_model = st.session_state["pref_default_model"]
    limit: Any = st.session_state["pref_inflight"]
    try:
        set_max_inflight_calls(int(limit))
    except ConfigError as exc:
        session.notify("error", str(exc))
        return
    session.notify("success", "Preferences saved.")
