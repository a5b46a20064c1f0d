"""Run: pick agents (in order), a task and parameters; watch the chat live; stop it."""

from __future__ import annotations

import os

import streamlit as st

from ui import actions, components, forms, live, pickers, services, state, store_access
from ui.presets import PRESETS
from ui.providers import missing_keys

session = state.get()
registry = store_access.job_registry()
st.title("Run")
components.notices(session)
live.adopt_job_from_url(registry, session)
agents = store_access.agents()

st.session_state.setdefault("new_run_open", not session.job_ids)
with st.expander("New run", key="new_run_open", on_change="rerun", icon=":material/add_circle:"):
    if len(agents) < 2:
        st.info("A chat needs at least two saved agents. Start from a preset (offline "
                "simulations, no key needed) or create agents on the Agents page.")
    cols = st.columns([3, 1], vertical_alignment="bottom")
    cols[0].selectbox("Preset room", list(PRESETS), key="run_preset_choice")
    cols[1].button("Use preset", key="use_preset", on_click=actions.load_preset,
                   args=("run_preset_choice",))
    roster = pickers.roster_picker(agents, session)
    chosen = [a for a in agents if a.agent_name in roster]
    components.key_warnings(missing_keys(chosen, session.provider_keys, os.environ))
    services.warm_up_litellm(chosen)
    with st.form("run_form"):
        st.text_area("Task", key="run_task", persist_state="session",
                     placeholder="Should we adopt AI for medical diagnosis?",
                     help="The first message of the chat (posted as User; it counts toward "
                          "max_loops).")
        forms.param_inputs(services.default_params())
        st.form_submit_button("Start run", key="start_run", type="primary",
                              icon=":material/play_arrow:", on_click=actions.start_run)

job_id = live.pick_job(registry, session)
if job_id is None:
    st.caption("status: idle · no run yet in this session")
else:
    live.job_panel(registry, session, job_id)
