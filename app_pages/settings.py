"""Settings: provider keys for this browser session only, defaults (how long each lasts is
said on the page: nothing here is saved), remembered tool-choice modes, and where data lives."""

from __future__ import annotations

import os

import streamlit as st

from groupchat_core import PROCESS_BOUNDS, SIM_MODELS, max_inflight_calls
from groupchat_ui.kit import components, state, store_access
from groupchat_ui.kit.providers import PROVIDER_KEYS, model_label
from groupchat_ui.settings import actions, view

_LIMIT = PROCESS_BOUNDS["max_inflight_calls"]  # the engine's range
INFLIGHT = (int(_LIMIT.low), int(_LIMIT.high))

session = state.get()
st.title("Settings")
components.notices(session)

st.subheader("Provider keys (this browser session only)")
st.caption("Keys typed here stay in this session's server memory: never saved to the store, "
           "exports, logs or the environment, never shown again, gone when the tab is reloaded or "
           "closed (or when you clear them below). "
           "Keys in the server's environment apply to every session. A provider key (here or "
           "the server's) goes only to its provider's own API, or to an API base the admin "
           "trusts (GROUPCHAT_TRUSTED_API_BASES); for any other api_base, type a key for it "
           "below.")
with st.form("keys_form", clear_on_submit=True):
    cols = st.columns(2)
    for i, (env, label) in enumerate(PROVIDER_KEYS.items()):
        where = ("set ✓ (this session)" if env in session.provider_keys
                 else "set ✓ (server environment)" if os.environ.get(env) else "not set")
        cols[i % 2].text_input(f"{env} ({label}): {where}", type="password", key=f"key_{env}",
                               autocomplete="off", placeholder="paste a key to set it")
    st.form_submit_button("Save keys for this session", key="save_keys",
                          on_click=actions.on_save_keys)
view.endpoint_key_form()
with st.container(horizontal=True):
    for env in list(session.provider_keys):
        st.button(f"Clear {env}", key=f"forget_{env}", icon=":material/key_off:",
                  on_click=actions.on_forget_key, args=(env,))
    st.button("Clear every key of this session", key="clear_keys", icon=":material/delete:",
              disabled=not session.provider_keys, on_click=actions.on_clear_keys)
components.feedback("keys")

st.subheader("Defaults")
st.caption("Not saved anywhere: the default model lasts for this browser tab (page switches "
           "keep it; a reload or a closed tab resets it); the in-flight limit applies to the "
           "whole server, every session, until the server restarts (set GROUPCHAT_MAX_INFLIGHT "
           "in its environment to start with another value).")
with st.form("preferences_form"):
    st.selectbox("Default model for new agents", SIM_MODELS, format_func=model_label,
                 index=SIM_MODELS.index(session.default_model)
                 if session.default_model in SIM_MODELS else 0, key="pref_default_model",
                 help="For this browser tab only, until it is reloaded or closed.")
    st.number_input("In-flight model call limit", *INFLIGHT, value=max_inflight_calls(),
                    key="pref_inflight",
                    help="How many model calls may be in flight at once, across every chat "
                         "and session of this server (sim/ models are not limited), until the "
                         "server restarts.")
    st.form_submit_button("Apply", key="save_preferences",
                          on_click=actions.on_save_preferences)
components.feedback("preferences")

st.subheader("Live bids")
view.streaming()

st.subheader("Traces")
view.traces()

st.subheader("Tool-choice modes remembered")
view.remembered_modes()

st.subheader("Data")
view.data_home(store_access.data_location())
