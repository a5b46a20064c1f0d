"""The Settings page's widget callbacks (`on_*`): provider keys for this session, preferences.

Why callbacks: they run before the script reruns, so the rerun already shows the outcome, and
they may clear the key inputs (which is not allowed once a widget has been drawn).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from groupchat_core import ConfigError, set_max_inflight_calls
from ui.kit.providers import PROVIDER_KEYS
from ui.kit.state import get


def on_save_keys() -> None:
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


def on_forget_key(env: str) -> None:
    get().provider_keys.pop(env, None)


def on_save_preferences() -> None:
    session = get()
    session.default_model = st.session_state["pref_default_model"]
    limit: Any = st.session_state["pref_inflight"]
    try:
        set_max_inflight_calls(int(limit))
    except ConfigError as exc:
        session.notify("error", str(exc))
        return
    session.notify("success", "Preferences saved.")
