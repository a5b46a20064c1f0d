"""Run: pick agents (in order), a task and parameters; watch the chat live; stop it."""

from __future__ import annotations

import streamlit as st

from groupchat_ui.kit import components, state, store_access
from groupchat_ui.run import actions, live_view, people_view, view

session = state.get()
registry = store_access.job_registry()
st.title("Run")
components.notices(session)
live_view.adopt_job_from_url(registry, session)
people_view.adopt(session)  # a room link's seat, a signed-in user's invitations
if session.guest:  # a room link's holder: its room only (kit/access.py), no New run
    st.caption("You joined through a room link: this browser can take part in that room only.")
else:
    components.preset_confirm(session, actions.on_confirm_preset)
    view.new_run(session, store_access.agents())

job_id = live_view.pick_job(registry, session)
if job_id is None:
    st.caption("status: idle · no run yet in this session")
else:
    live_view.job_panel(registry, session, job_id)
