"""The two forms of the dashboard: an agent, and a chat's parameters (with the reference help).

Why keyed widgets filled through `st.session_state`: Edit, New and preset buttons load values
into the form from callbacks, validation runs in the submit callback, and the error for a field
is shown right under that field on the next render. `persist_state="session"` keeps a draft
across page switches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from groupchat_core import OUTPUT_TYPES, SIM_MODELS, Agent

from .providers import MODEL_HINT, model_label

OTHER_MODEL = "other: a litellm model string"
TOOL_MODES = ("", "forced", "required", "auto", "json")
_AGENT_KEYS = {
    "agent_name": "agent_form_name", "system_prompt": "agent_form_role",
    "model_choice": "agent_form_model", "custom_model": "agent_form_custom_model",
    "temperature": "agent_form_temperature", "max_tokens": "agent_form_max_tokens",
    "api_base": "agent_form_api_base", "timeout": "agent_form_timeout",
    "tool_choice_mode": "agent_form_tool_mode", "sim_latency": "agent_form_sim_latency",
}
PERSIST: Any = "session"

PARAM_HELP = {
    "name": "Name of the chat: shown in the run list, the analysis page and exports.",
    "description": "What this chat is for; kept with the run's configuration.",
    "max_loops": "Hard cap on the total number of messages posted, including the initial user "
                 "task. When this many messages have been published the chat stops.",
    "threshold": "Minimum (recency-adjusted) bid a reply must exceed to take the floor. Raise it "
                 "for a more selective room; lower it for livelier chatter. A turn where no "
                 "agent clears it ends the chat.",
    "recency_penalty": "Amount subtracted from the bid of any agent that spoke within the last "
                       "recency_window turns, so the floor rotates instead of one agent "
                       "monologuing. Set to 0.0 to disable.",
    "recency_window": "How many of the most recent speakers are subject to recency_penalty.",
    "idle_timeout": "Accepted for backward compatibility only. Not used to end the chat.",
    "output_type": "Format of the value run() returns (list, dict, str, final, json, yaml, "
                   "xml, ...). The dashboard always shows the full transcript; this is kept in "
                   "the run's spec for scripts that re-run it.",
    "seed": "Seed of the simulated (sim/) agents: the same seed replays the same chat.",
    "bid_timeout": "Seconds each bid may take before it counts as failed (0: no limit beyond "
                   "each agent's own timeout).",
    "bid_prompt": "The template every agent bids with; placeholders such as {threshold} are "
                  "filled with this room's real numbers.",
    "verbose": "Also log bids and print each message on the server's console.",
    "bid_cache": "Answer repeated bid requests of deterministic agents (sim/ models, "
                 "temperature 0) from this server's cache: the same results, at once (a sim's "
                 "simulated latency is skipped). Off: every agent is asked afresh.",
}


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
    for field, key in _AGENT_KEYS.items():
        st.session_state[key] = values[field]


def agent_form_values() -> dict[str, Any]:
    """The submitted form as Agent fields (model resolved from the two model widgets)."""
    raw = {field: st.session_state.get(key) for field, key in _AGENT_KEYS.items()}
    custom = str(raw.pop("custom_model") or "").strip()
    choice = raw.pop("model_choice")
    raw["model_name"] = custom if choice == OTHER_MODEL else choice
    return raw


def _error(errors: Mapping[str, str], *fields: str) -> None:
    for field in fields:
        if field in errors:
            st.error(errors[field], icon=":material/error:")


def agent_form(title: str, errors: Mapping[str, str], on_save: Callable[[], None]) -> None:
    """The agent form; `on_save` runs as the submit callback (it validates and saves)."""
    if _AGENT_KEYS["agent_name"] not in st.session_state:
        fill_agent_form(None, SIM_MODELS[0])
    k = _AGENT_KEYS
    with st.form("agent_form"):
        st.markdown(f"**{title}**")
        st.text_input("Name", key=k["agent_name"], persist_state=PERSIST,
                      help="Unique: names identify speakers in the chat.")
        _error(errors, "agent_name", "form")
        st.text_area("Role (system prompt)", key=k["system_prompt"], persist_state=PERSIST,
                     help="Who this agent is. Simulated agents bid higher when the "
                          "conversation touches the words of their role.")
        st.selectbox("Model", [*SIM_MODELS, OTHER_MODEL], key=k["model_choice"],
                     format_func=model_label, persist_state=PERSIST,
                     help="sim/ models are offline simulations, not language models.")
        st.text_input("litellm model string (when Model is 'other')", key=k["custom_model"],
                      placeholder="e.g. gpt-4o-mini or ollama/llama3.2", persist_state=PERSIST,
                      help=f"Used only when Model is '{OTHER_MODEL}': {MODEL_HINT}.")
        _error(errors, "model_name")
        cols = st.columns(2)
        cols[0].number_input("Temperature", 0.0, 2.0, step=0.1, key=k["temperature"],
                             persist_state=PERSIST)
        cols[1].number_input("Max tokens", 1, 200_000, step=64, key=k["max_tokens"],
                             persist_state=PERSIST)
        _error(errors, "temperature", "max_tokens")
        with st.expander("Advanced"):
            _advanced_fields(errors)
        st.form_submit_button("Save agent", key="save_agent", type="primary", on_click=on_save)


def _advanced_fields(errors: Mapping[str, str]) -> None:
    k = _AGENT_KEYS
    st.text_input("api_base (optional)", key=k["api_base"], persist_state=PERSIST,
                  placeholder="http://127.0.0.1:8000/v1",
                  help="Base URL of an OpenAI-compatible server (vLLM, llama.cpp, LM Studio); "
                       "leave empty for the provider's default.")
    st.number_input("Timeout per request (s)", 0.1, 3600.0, key=k["timeout"],
                    persist_state=PERSIST)
    st.selectbox("Tool choice mode", TOOL_MODES, key=k["tool_choice_mode"],
                 format_func=lambda m: m or "automatic (fall back as needed)",
                 persist_state=PERSIST,
                 help="json: ask for a plain-text JSON bid, for models or servers without "
                      "tool support.")
    st.number_input("Simulated latency per bid (s, sim/ models only)", 0.0, 60.0, step=0.1,
                    key=k["sim_latency"], persist_state=PERSIST)
    _error(errors, "api_base", "timeout", "tool_choice_mode", "sim_latency")


def param_inputs(defaults: Mapping[str, Any]) -> None:
    """Every GroupChat parameter, keyed `run_param_<name>`; call inside the run form."""
    if "run_param_name" not in st.session_state:
        fill_params(defaults)
    p = "run_param_"
    cols = st.columns(3)
    cols[0].number_input("max_loops", 1, 1000, key=p + "max_loops", help=PARAM_HELP["max_loops"],
                         persist_state=PERSIST)
    cols[1].number_input("threshold", -1.0, 2.0, step=0.05, key=p + "threshold",
                         help=PARAM_HELP["threshold"], persist_state=PERSIST)
    cols[2].number_input("recency_penalty", -1.0, 2.0, step=0.05, key=p + "recency_penalty",
                         help=PARAM_HELP["recency_penalty"], persist_state=PERSIST)
    cols = st.columns(3)
    cols[0].number_input("recency_window", 0, 100, key=p + "recency_window",
                         help=PARAM_HELP["recency_window"], persist_state=PERSIST)
    cols[1].number_input("seed", 0, 2**31 - 1, key=p + "seed", help=PARAM_HELP["seed"],
                         persist_state=PERSIST)
    cols[2].number_input("bid_timeout (s)", 0.0, 3600.0, key=p + "bid_timeout",
                         help=PARAM_HELP["bid_timeout"], persist_state=PERSIST)
    with st.expander("More parameters"):
        st.text_input("name", key=p + "name", help=PARAM_HELP["name"], persist_state=PERSIST)
        st.text_input("description", key=p + "description", help=PARAM_HELP["description"],
                      persist_state=PERSIST)
        st.selectbox("output_type", OUTPUT_TYPES, key=p + "output_type",
                     help=PARAM_HELP["output_type"], persist_state=PERSIST)
        st.number_input("idle_timeout (s)", 0.0, 3600.0, key=p + "idle_timeout",
                        help=PARAM_HELP["idle_timeout"], persist_state=PERSIST)
        st.text_area("bid_prompt", key=p + "bid_prompt", height=200,
                     help=PARAM_HELP["bid_prompt"], persist_state=PERSIST)
        st.checkbox("verbose", key=p + "verbose", help=PARAM_HELP["verbose"],
                    persist_state=PERSIST)
        st.checkbox("reuse cached bids", key=p + "bid_cache", help=PARAM_HELP["bid_cache"],
                    persist_state=PERSIST)


def fill_params(values: Mapping[str, Any]) -> None:
    """Load chat parameters into the run form (defaults, a preset, or a stored run's spec)."""
    for name, value in values.items():
        if name in PARAM_HELP:
            if name == "bid_timeout":
                value = float(value or 0.0)
            elif name in ("threshold", "recency_penalty", "idle_timeout"):
                value = float(value)
            st.session_state["run_param_" + name] = value


def param_values() -> dict[str, Any]:
    return {name: st.session_state.get("run_param_" + name) for name in PARAM_HELP}
