"""The Agents page's widget callbacks (`on_*`): read the submitted widgets, call one function
of `logic`, update session state.

Why callbacks: they run before the script reruns, so the rerun already shows the outcome (the
saved agent, a field's error) and may set widget values (which is not allowed once a widget has
been drawn). Failures become messages for the user, never tracebacks. Loading a preset prepares
the next run, so it is the Run page's callback (`on_load_preset`), offered here too.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from groupchat_core import SIM_MODELS, Agent, ConfigError, StoreError
from groupchat_ui.kit import store_access
from groupchat_ui.kit.components import say_at
from groupchat_ui.kit.state import SessionState, actor, get, guests_refused, move
from groupchat_ui.run.actions import (
    drop_from_roster,
    on_confirm_preset,
    on_load_preset,
    rename_in_roster,
)

from . import logic

__all__ = ["AGENT_KEYS", "OTHER_MODEL", "agent_form_values", "fill_agent_form",
           "on_ask_delete_agent", "on_confirm_delete_agent", "on_confirm_preset",
           "on_confirm_import", "on_delete_agent", "on_duplicate_agent", "on_edit_agent",
           "on_import_agents",
           "on_load_preset", "on_move_agent", "on_new_agent", "on_save_agent",
           "ask_to_show_form", "SCROLL_KEY"]

OTHER_MODEL = "other: a litellm model string"
AGENT_KEYS = {
    "agent_name": "agent_form_name", "system_prompt": "agent_form_role",
    "model_choice": "agent_form_model", "custom_model": "agent_form_custom_model",
    "temperature": "agent_form_temperature", "max_tokens": "agent_form_max_tokens",
    "api_base": "agent_form_api_base", "timeout": "agent_form_timeout",
    "tool_choice_mode": "agent_form_tool_mode", "sim_latency": "agent_form_sim_latency",
}


def _names() -> list[str]:
    return [a.agent_name for a in store_access.agents()]


def fill_agent_form(agent: Agent | None, default_model: str) -> None:
    """Load an agent (or a blank one) into the form; call from callbacks or before rendering."""
    a = agent or Agent(agent_name="New agent", model_name=default_model)
    sim = a.model_name in SIM_MODELS
    values = {
        "agent_name": "" if agent is None else a.agent_name, "system_prompt": a.system_prompt,
        "model_choice": a.model_name if sim else OTHER_MODEL,
        "custom_model": "" if sim else a.model_name, "temperature": float(a.temperature),
        "max_tokens": int(a.max_tokens), "api_base": a.api_base or "",
        "timeout": float(a.timeout), "tool_choice_mode": a.tool_choice_mode or "",
        "sim_latency": float(a.litellm_kwargs.get("sim_latency", 0.0)),
    }
    for field, key in AGENT_KEYS.items():
        st.session_state[key] = values[field]


def agent_form_values() -> dict[str, Any]:
    """The submitted form as Agent fields (model resolved from the two model widgets)."""
    raw = {field: st.session_state.get(key) for field, key in AGENT_KEYS.items()}
    custom = str(raw.pop("custom_model") or "").strip()
    choice = raw.pop("model_choice")
    raw["model_name"] = custom if choice == OTHER_MODEL else choice
    return raw


@guests_refused("saving an agent")
def on_save_agent() -> None:
    """Save the form: a new agent (then the form is blank again, ready for the next one), or
    the agent being edited (renamed only in edit mode, when its name was changed)."""
    session = get()
    values = agent_form_values()
    if not values["model_name"]:
        session.form_errors = {"model_name": "type a litellm model string (or pick a sim/ "
                                             "model)"}
        return
    old = session.editing
    try:
        agent = logic.agent_from_values(values)
        outcome = logic.save_agent(store_access.store(), agent, old, _names(), actor(session))
    except ValidationError as exc:
        session.form_errors = logic.field_errors(exc)
        return
    except (ConfigError, StoreError) as exc:
        session.form_errors = {"agent_name": str(exc)}
        return
    store_access.invalidate()
    session.form_errors = {}
    new = agent.agent_name
    if outcome == "created":
        fill_agent_form(None, session.default_model)  # the next agent starts blank
        session.editing = None
        session.notify("success", f"Saved new agent {new}. The form is blank for the next one.")
        return
    session.editing = new
    if outcome == "renamed" and old is not None:
        _renamed(session, old, new)
        session.notify("success", f"Renamed {old} to {new} and saved it. Past runs keep the "
                                  f"name {old}.")
    else:
        session.notify("success", f"Saved changes to {new}.")


def _renamed(session: SessionState, old: str, new: str) -> None:
    session.agent_order = [new if n == old else n for n in session.agent_order]
    rename_in_roster(session, old, new)


@guests_refused("editing an agent")
def on_edit_agent(name: str) -> None:
    session = get()
    try:
        logic.check_may_edit(store_access.store(), name, actor(session))
        fill_agent_form(store_access.store().get_agent(name), session.default_model)
    except (ConfigError, StoreError) as exc:
        session.notify("error", str(exc))
        return
    session.editing, session.form_errors = name, {}
    ask_to_show_form()


def ask_to_show_form() -> None:
    """Have the next render bring the agent form into view (`view.show_form_once`): on a phone
    the form sits below the list, so an Edit click left it off-screen. A counter, not a flag,
    so a second Edit scrolls again."""
    st.session_state[SCROLL_KEY] = int(st.session_state.get(SCROLL_KEY) or 0) + 1


SCROLL_KEY = "agent_form_scroll"


@guests_refused("editing an agent")
def on_new_agent() -> None:
    session = get()
    fill_agent_form(None, session.default_model)
    session.editing, session.form_errors = None, {}


@guests_refused("duplicating an agent")
def on_duplicate_agent(name: str) -> None:
    session = get()
    try:
        copy = logic.duplicate_agent(store_access.store(), name, _names(), actor(session))
    except StoreError as exc:
        session.notify("error", str(exc))
        return
    store_access.invalidate()
    session.agent_order = _names()
    session.notify("success", f"Duplicated {name} as {copy}.")


@guests_refused("deleting an agent")
def on_ask_delete_agent(name: str) -> None:
    """The trash button only asks; `on_confirm_delete_agent` deletes (as Runs does)."""
    get().confirm_agent_delete = name


@guests_refused("deleting an agent")
def on_confirm_delete_agent(confirmed: bool) -> None:
    session = get()
    name, session.confirm_agent_delete = session.confirm_agent_delete, None
    if confirmed and name:
        on_delete_agent(name)


@guests_refused("deleting an agent")
def on_delete_agent(name: str) -> None:
    session = get()
    try:
        logic.delete_agent(store_access.store(), name, actor(session))
    except (ConfigError, StoreError) as exc:
        session.notify("error", str(exc))
        return
    session.agent_order = [n for n in session.agent_order if n != name]
    drop_from_roster(session, name)
    if session.editing == name:
        on_new_agent()
    store_access.invalidate()
    session.notify("success", f"Deleted agent {name}.")


@guests_refused("reordering the agents")
def on_move_agent(name: str, delta: int, current: list[str]) -> None:
    """Move an agent up or down; the order is stored, so a reload keeps it."""
    session, order = get(), move(current, name, delta)
    try:
        store_access.store().set_agent_order(order)
    except StoreError as exc:
        session.notify("error", str(exc))
        return
    store_access.invalidate()
    session.agent_order = order


@guests_refused("importing agents")
def on_import_agents() -> None:
    """Import the chosen file; if it would replace saved agents that differ from its own, ask
    first (`on_confirm_import`), as a preset does."""
    session, upload = get(), st.session_state.get("agents_upload")
    if upload is None:  # the outcome shows under the file field (components.feedback)
        say_at("agents_upload", "error", "Choose a JSON or YAML agents file first.")
        return
    store = store_access.store()
    try:
        agents = logic.parse_agents(upload.getvalue(), upload.name)
        logic.check_may_replace(store, agents, actor(session))
        changed = logic.import_conflicts(store, agents)
    except (ConfigError, StoreError) as exc:
        say_at("agents_upload", "error", f"Nothing was imported from {upload.name}: {exc}")
        return
    session.confirm_import = None
    if changed:
        session.confirm_import = (upload.name, tuple(agents), tuple(changed))
        return
    _import(session, upload.name, agents, keep=())


@guests_refused("importing agents")
def on_confirm_import(answer: bool | str) -> None:
    """The answer to the import question: True replaces, "copies" keeps the saved agents and
    adds the file's under new names, False cancels (nothing is imported)."""
    session = get()
    pending, session.confirm_import = session.confirm_import, None
    if pending is None:
        return
    source, agents, changed = pending
    if answer is False:
        say_at("agents_upload", "info", f"Nothing was imported from {source}.")
        return
    _import(session, source, list(agents), keep=changed if answer == "copies" else ())


def _import(session: SessionState, source: str, agents: list[Agent],
            keep: tuple[str, ...]) -> None:
    try:
        names = logic.save_imported(store_access.store(), agents, actor(session), keep)
    except (ConfigError, StoreError) as exc:
        say_at("agents_upload", "error", f"Nothing was imported from {source}: {exc}")
        return
    store_access.invalidate()
    session.agent_order = _names()
    if session.editing in names:  # the open form shows what was imported, not the old prompt
        fill_agent_form(store_access.store().get_agent(session.editing), session.default_model)
        session.form_errors = {}
    kept = f" Your {', '.join(keep)} kept; the file's saved as copies." if keep else ""
    say_at("agents_upload", "success",
           f"Imported {len(names)} agents: {', '.join(names)}.{kept}")
