"""Agents: create, edit, duplicate, reorder and delete the agents rooms are made of."""

from __future__ import annotations

import streamlit as st

from groupchat_core import dump_agents
from groupchat_ui.agents import actions, view
from groupchat_ui.kit import components, safety, state, store_access
from groupchat_ui.kit.presets import PRESETS

session = state.get()
st.title("Agents")
components.notices(session)
agents = store_access.agents()
for problem in store_access.agent_problems():  # saved before a rule they break: say so
    st.warning(safety.escape_markdown(problem), icon=":material/warning:")
left, right = st.columns([3, 2], gap="large")

with left:
    st.subheader("Saved agents")
    if not agents:
        st.info("No agents yet: load a preset below, or create one with the form.")
    names = view.agent_rows(agents, session)

    st.subheader("Start from a preset")
    choice = st.selectbox("Preset", list(PRESETS), key="preset_choice",
                          format_func=lambda n: f"{n}: {PRESETS[n].description}",
                          help="Saves the preset's agents and prepares the Run page with its "
                               "settings and task; asks first if that would change agents "
                               "you edited.")
    st.button("Load preset", key="load_preset", on_click=actions.on_load_preset,
              args=("preset_choice",))
    components.preset_confirm(session, actions.on_confirm_preset)

    st.subheader("Import and export")
    with st.form("import_agents_form"):  # not cleared on submit: a failed file stays to retry
        st.file_uploader("Agents file (JSON or YAML)", type=["json", "yaml", "yml"],
                         key="agents_upload",
                         help="{schema_version: 1, agents: [...]} as exported here, or a chat "
                              "spec file. Files never carry API keys.")
        st.form_submit_button("Import agents", key="import_agents",
                              on_click=actions.on_import_agents)
    view.import_confirm(session)
    components.feedback("agents_upload")
    by_name = {a.agent_name: a for a in agents}
    in_order = [by_name[n] for n in names]
    cols = st.columns(2)
    cols[0].download_button("Export JSON", dump_agents(in_order, "json") if in_order else "",
                            "agents.json", "application/json", key="export_json",
                            on_click="ignore", disabled=not in_order)
    cols[1].download_button("Export YAML", dump_agents(in_order, "yaml") if in_order else "",
                            "agents.yaml", "application/yaml", key="export_yaml",
                            on_click="ignore", disabled=not in_order)

with right:
    view.agent_form(session.editing, session.form_errors, on_save=actions.on_save_agent)
    view.show_form_once()
    st.button("New agent", key="new_agent", icon=":material/person_add:",
              on_click=actions.on_new_agent,
              help="A blank form; an agent being edited is left as last saved.")
