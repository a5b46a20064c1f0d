"""The Settings page's widget callbacks (`on_*`): provider keys for this session, preferences.

Why callbacks: they run before the script reruns, so the rerun already shows the outcome, and
they may clear the key inputs (which is not allowed once a widget has been drawn).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from groupchat_core import ConfigError, forget_remembered_modes, set_max_inflight_calls
from groupchat_ui.kit.components import say_at
from groupchat_ui.kit.providers import PROVIDER_KEYS, endpoint_key_name
from groupchat_ui.kit.state import get, guests_refused


@guests_refused("the Settings page")
def on_save_keys() -> None:
    """Keep typed keys in this session only; clear the inputs so no widget holds them."""
    session, saved = get(), []
    for env in PROVIDER_KEYS:
        value = str(st.session_state.get(f"key_{env}") or "").strip()
        if value:
            session.provider_keys[env] = value
            saved.append(env)
        st.session_state[f"key_{env}"] = ""
    say_at("keys", "success" if saved else "info",
           f"Set for this browser session (until the tab is reloaded or closed): "
           f"{', '.join(saved)}." if saved else "No key was typed.")


@guests_refused("the Settings page")
def on_save_endpoint_key() -> None:
    """Keep a key for one API base (an agent's own server) in this session only: it goes to
    agents whose api_base is exactly that base, and nowhere else."""
    base = str(st.session_state.get("endpoint_key_base") or "").strip()
    value = str(st.session_state.get("endpoint_key_value") or "").strip()
    st.session_state["endpoint_key_value"] = ""
    name = endpoint_key_name(base)
    if name is None or not value:
        say_at("keys", "error", "Give an http(s) API base URL (no user name, query or "
               "fragment), e.g. https://llm.example.org/v1, and the key for it."
               if name is None else f"No key was typed for {name}.")
        return
    get().provider_keys[name] = value
    st.session_state["endpoint_key_base"] = ""
    say_at("keys", "success", f"Set a key for {name} for this browser session: only agents "
           "whose api_base is exactly this base get it.")


@guests_refused("the Settings page")
def on_forget_key(env: str) -> None:
    get().provider_keys.pop(env, None)
    say_at("keys", "success", f"Cleared {env} from this session.")


@guests_refused("the Settings page")
def on_clear_keys() -> None:
    session = get()
    cleared = sorted(session.provider_keys)
    session.provider_keys.clear()
    say_at("keys", "success", f"Cleared every key of this session: {', '.join(cleared)}."
           if cleared else "This session held no key.")


@guests_refused("the Settings page")
def on_save_preferences() -> None:
    session = get()
    session.default_model = st.session_state["pref_default_model"]
    limit: Any = st.session_state["pref_inflight"]
    try:
        set_max_inflight_calls(int(limit))
    except ConfigError as exc:
        say_at("preferences", "error", str(exc))
        return
    say_at("preferences", "success",
           f"Applied, not saved: new agents default to {session.default_model} in this tab "
           f"until it is reloaded; the server allows {int(limit)} model calls in flight until "
           "it restarts.")


@guests_refused("the Settings page")
def on_reprobe() -> None:
    """Forget every remembered tool-choice mode: the next bid of each model probes again."""
    forget_remembered_modes()
    say_at("modes", "success", "Forgotten: the next bid of each model probes from forced "
           "tool choice again.")


STREAM_KEY = "stream_bids"  # read by the Run page when it starts a run (default on)


@guests_refused("the Settings page")
def on_stream_bids() -> None:
    """Keep the toggle's value where the Run page reads it (widget state is dropped on page
    switches; this key is not)."""
    st.session_state[STREAM_KEY] = bool(st.session_state["pref_stream_bids"])


@guests_refused("the Settings page")
def on_trace_runs() -> None:
    """Keep the switch where the Run page reads it when it starts a run (kit/traces.py)."""
    from groupchat_ui.kit.traces import TRACE_KEY

    st.session_state[TRACE_KEY] = bool(st.session_state["pref_trace_runs"])
