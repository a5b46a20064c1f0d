"""What the pages do, as plain functions over a RunStore and a JobRegistry (no streamlit).

Why: pages stay thin (read state, take input, call one function here, render), and every
write the dashboard makes can be tested without a browser or a script run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from groupchat_core import (
    Agent,
    ChatConfig,
    ConfigError,
    Event,
    GroupChat,
    import_bundle,
    is_sim_model,
    load_agents_text,
    load_spec_text,
    prepare_litellm,
)
from groupchat_core.store import RunStore

from .job_registry import JobRegistry
from .presets import DEBATE_TRIO, Preset
from .providers import with_session_keys
from .safety import redact

AGENT_FIELDS = ("agent_name", "system_prompt", "model_name", "temperature", "max_tokens",
                "api_base", "timeout", "tool_choice_mode")
CHAT_PARAMS = ("name", "description", "max_loops", "threshold", "recency_penalty",
               "recency_window", "idle_timeout", "output_type", "seed", "bid_timeout",
               "bid_prompt", "verbose", "bid_cache")
DEMO_NAME = "Demo debate"


# --- agents -------------------------------------------------------------------------------


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


def save_agent(store: RunStore, agent: Agent, original: str | None,
               existing: Iterable[str]) -> None:
    """Create or update (and rename) an agent; a name clash is an error, not an overwrite."""
    taken = set(existing) - {original}
    if agent.agent_name in taken:
        raise ConfigError(f"an agent named {agent.agent_name!r} already exists: pick another "
                          "name, or edit that agent")
    store.save_agent(agent)
    if original and original != agent.agent_name:
        store.delete_agent(original)


def copy_name(name: str, existing: Iterable[str]) -> str:
    taken = set(existing)
    candidate, n = f"{name} (copy)", 2
    while candidate in taken:
        candidate, n = f"{name} (copy {n})", n + 1
    return candidate


def duplicate_agent(store: RunStore, name: str, existing: Iterable[str]) -> str:
    existing = list(existing)
    copy = store.get_agent(name).model_copy(update={"agent_name": copy_name(name, existing)})
    store.save_agent(copy)
    return copy.agent_name


def load_preset(store: RunStore, preset: Preset) -> list[str]:
    """Save the preset's agents (replacing same-named ones) and the room as a store preset."""
    agents = preset.build_agents()
    store.save_agents(agents)
    store.save_preset(preset.name, preset.spec())
    return [a.agent_name for a in agents]


def import_agents(store: RunStore, data: str | bytes, source: str) -> list[str]:
    """Agents from an agents file (or a chat spec's agents), saved all or none."""
    try:
        agents = load_agents_text(data, source)
    except ConfigError as first:
        try:
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            agents = list(load_spec_text(text, source).agents)
        except (ConfigError, UnicodeDecodeError):
            raise first from None
        if not agents:
            raise first from None
    store.save_agents(agents)
    return [a.agent_name for a in agents]


# --- runs ---------------------------------------------------------------------------------


def chat_params(values: Mapping[str, Any]) -> dict[str, Any]:
    """GroupChat keyword arguments from the parameter form (unknown keys dropped)."""
    params = {k: values[k] for k in CHAT_PARAMS if k in values}
    if params.get("bid_timeout") in (0, 0.0):
        params["bid_timeout"] = None
    if "bid_cache" in params:  # on: the engine's own policy (deterministic agents only)
        params["bid_cache"] = None if params["bid_cache"] else False
    return params


def default_params() -> dict[str, Any]:
    """The engine's defaults, except the bid cache: a dashboard run asks every agent afresh
    (a cached sim replays instantly, skipping the simulated latency the live view shows)."""
    return {**ChatConfig().model_dump(include=set(CHAT_PARAMS)), "bid_cache": False}


def build_chat(agents: Sequence[Agent], params: Mapping[str, Any],
               session_keys: Mapping[str, str]) -> GroupChat:
    """A chat over per-job agent copies that carry this session's keys (ConfigError if bad)."""
    return GroupChat(agents=with_session_keys(agents, session_keys), **chat_params(params))


_warm = threading.Lock()
_warming: list[threading.Thread] = []


def warm_up_litellm(agents: Iterable[Agent]) -> bool:
    """Import litellm on a side thread once a room has a non-sim agent; True if started.

    Its import takes seconds; done lazily inside a run, it would happen on the engine's shared
    loop thread and stall every other session's live chat meanwhile.
    """
    if all(is_sim_model(a.model_name) for a in agents):
        return False
    with _warm:
        if _warming:
            return False
        thread = threading.Thread(target=prepare_litellm, name="litellm-import", daemon=True)
        _warming.append(thread)
    thread.start()
    return True


def redacting(observer: Callable[[Event], None],
              secrets: Sequence[str]) -> Callable[[Event], None]:
    """Wrap an observer so no event it sees contains a session key (e.g. echoed in an error)."""
    secrets = [s for s in secrets if s]

    def scrubbed(event: Event) -> None:
        if secrets:
            text = event.model_dump_json()
            if any(s in text for s in secrets):
                event = type(event).model_validate_json(redact(text, secrets))
        observer(event)

    return scrubbed


def start_run(store: RunStore, registry: JobRegistry, owner: str, agents: Sequence[Agent],
              task: str, params: Mapping[str, Any], session_keys: Mapping[str, str]) -> str:
    """Start a recorded chat as a background job of this session; returns the job id."""
    if len(agents) < 2:
        raise ConfigError("pick at least two agents for a chat")
    if not task.strip():
        raise ConfigError("the task must not be empty: it is the first message of the chat")
    chat = build_chat(agents, params, session_keys)
    recorder = redacting(store.recorder(chat), list(session_keys.values()))
    return registry.start_chat(chat, task, owner=owner, extra_observers=[recorder])


def run_demo(store: RunStore) -> str:
    """A fast offline debate (sim trio, no latency), recorded; returns its run id."""
    settings = dict(DEBATE_TRIO.settings)
    chat = GroupChat(name=DEMO_NAME, agents=DEBATE_TRIO.build_agents(latency_s=0.0), **settings)
    store.attach(chat)
    chat.run(DEBATE_TRIO.task)
    return str(chat.last_run.run_id)


def import_run(store: RunStore, data: str | bytes, source: str) -> str:
    """A run bundle into the store, validated completely first (nothing written on error)."""
    return import_bundle(store, data, source)


def delete_runs(store: RunStore, run_ids: Iterable[str]) -> int:
    return sum(store.delete_run(run_id) for run_id in run_ids)
