"""The Agents page without streamlit: form values to an Agent, saving, renaming, duplicating
and importing agents.

Why: every write the page makes can be tested without a browser or a script run, and a name
clash is an error the form shows, never a silent overwrite. Every write names its `Actor`:
with login on, only an agent's owner (or an admin) may change it (kit/access.py); others may
use and duplicate it, and what they save, import or duplicate is theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from groupchat_core import Agent, ConfigError, is_sim_model, load_agents_text, load_spec_text
from groupchat_core.store import RunStore
from groupchat_ui.kit.access import Actor, may_edit_agent, not_your_agent
from groupchat_ui.kit.jobs import LOCAL_USER
from groupchat_ui.kit.labels import changed_agents, unused_name

LOCAL_ACTOR = Actor(LOCAL_USER, LOCAL_USER)  # a server without login: one local user

AGENT_FIELDS = ("agent_name", "system_prompt", "model_name", "temperature", "max_tokens",
                "api_base", "timeout", "tool_choice_mode")


def agent_from_values(values: Mapping[str, Any]) -> Agent:
    """An Agent from form values: blank optional fields become None; sim latency is kept."""
    data = {k: values[k] for k in AGENT_FIELDS if k in values}
    data["api_base"] = (data.get("api_base") or "").strip() or None
    data["agent_name"] = str(data.get("agent_name") or "").strip()
    data["tool_choice_mode"] = data.get("tool_choice_mode") or None
    latency = float(values.get("sim_latency") or 0.0)
    model = str(data.get("model_name") or "")
    data["litellm_kwargs"] = {"sim_latency": latency} if latency and is_sim_model(model) else {}
    return Agent.model_validate(data)


def field_errors(exc: ValidationError) -> dict[str, str]:
    """One readable message per form field, from a pydantic error (input never echoed)."""
    errors: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        where = str(err["loc"][0]) if err["loc"] else "form"
        if where == "litellm_kwargs":
            where = "sim_latency"
        errors.setdefault(where, err["msg"].removeprefix("Value error, "))
    return errors


def check_may_edit(store: RunStore, name: str, actor: Actor) -> None:
    """A ConfigError naming the owner unless `actor` may edit, rename or delete agent `name`."""
    owner, owner_name = store.agent_owners().get(name, (None, None))
    if not may_edit_agent(owner, actor.user, signed_in=actor.signed_in):
        raise ConfigError(not_your_agent(name, owner_name))


def editable(store: RunStore, actor: Actor) -> dict[str, bool]:
    """Which saved agents `actor` may edit, rename or delete (by name)."""
    return {name: may_edit_agent(owner, actor.user, signed_in=actor.signed_in)
            for name, (owner, _) in store.agent_owners().items()}


def save_agent(store: RunStore, agent: Agent, original: str | None,
               existing: Iterable[str], actor: Actor = LOCAL_ACTOR) -> str:
    """Create a new agent (`original` None) or update agent `original`, renaming it when the
    name changed (in its place in the saved order); a name clash is an error, not an
    overwrite, and so is a change to an agent `actor` may not edit. Returns what happened:
    "created", "updated" or "renamed"."""
    taken = set(existing) - {original}
    if agent.agent_name in taken:
        raise ConfigError(f"an agent named {agent.agent_name!r} already exists: pick another "
                          "name, or edit that agent")
    if original:
        check_may_edit(store, original, actor)
    if original and original != agent.agent_name:
        store.rename_agent(original, agent)
        return "renamed"
    store.save_agent(agent, owner=actor.user, owner_name=actor.user_name)
    return "updated" if original else "created"


def delete_agent(store: RunStore, name: str, actor: Actor = LOCAL_ACTOR) -> bool:
    """Delete agent `name` if `actor` may (ConfigError naming the owner otherwise)."""
    check_may_edit(store, name, actor)
    return store.delete_agent(name)


def copy_name(name: str, existing: Iterable[str]) -> str:
    return unused_name(name, "copy", existing)


def duplicate_agent(store: RunStore, name: str, existing: Iterable[str],
                    actor: Actor = LOCAL_ACTOR) -> str:
    """A copy of agent `name` (anyone's), saved right after it in the stored order and owned
    by `actor`."""
    existing = list(existing)
    copy = store.get_agent(name).model_copy(update={"agent_name": copy_name(name, existing)})
    store.save_agent(copy, owner=actor.user, owner_name=actor.user_name)
    order = [n for n in existing if n != copy.agent_name]
    order.insert(order.index(name) + 1 if name in order else len(order), copy.agent_name)
    store.set_agent_order(order)
    return copy.agent_name


def parse_agents(data: str | bytes, source: str) -> list[Agent]:
    """The agents of an agents file, or else of a chat spec (ConfigError naming the problem)."""
    try:
        return load_agents_text(data, source)
    except ConfigError as first:
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            agents = list(load_spec_text(text, source).agents)
        except (ConfigError, UnicodeDecodeError):
            raise first from None
        if not agents:
            raise first from None
        return agents


def check_may_replace(store: RunStore, agents: Iterable[Agent], actor: Actor) -> None:
    """A ConfigError naming the owner if an import would replace someone else's agent."""
    owners = store.agent_owners()
    for agent in agents:
        if agent.agent_name in owners:
            check_may_edit(store, agent.agent_name, actor)


def import_conflicts(store: RunStore, agents: Iterable[Agent]) -> list[str]:
    """Saved agents an import would replace that differ from the file's: the page asks first
    (as a preset does), since an import replaced them without a word (issue 38)."""
    return changed_agents(store.saved_agents()[0], agents)


def save_imported(store: RunStore, agents: Iterable[Agent], actor: Actor = LOCAL_ACTOR,
                  keep: Iterable[str] = ()) -> list[str]:
    """Save imported agents all or none, owned by `actor`; the saved agents named in `keep`
    stay as they are and the file's versions are saved as copies ("name (imported)").
    Replacing an agent of someone else's is refused (nothing is saved). Returns the names
    as saved, in the file's order."""
    kept, taken = set(keep), [name for name, _, _ in store.agents_version()]
    out = []
    for agent in agents:
        if agent.agent_name in kept:
            name = unused_name(agent.agent_name, "imported", taken)
            agent = agent.model_copy(update={"agent_name": name})
        taken.append(agent.agent_name)
        out.append(agent)
    check_may_replace(store, out, actor)
    store.save_agents(out, owner=actor.user, owner_name=actor.user_name)
    return [a.agent_name for a in out]


def import_agents(store: RunStore, data: str | bytes, source: str,
                  actor: Actor = LOCAL_ACTOR) -> list[str]:
    """Agents from an agents file (or a chat spec's agents), saved all or none, owned by
    `actor`; replacing an agent of someone else's is refused (nothing is imported)."""
    return save_imported(store, parse_agents(data, source), actor)
