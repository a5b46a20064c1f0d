"""Sweeps: define a parameter grid, run it in the background, read its results and what-ifs."""

from __future__ import annotations

import streamlit as st

from groupchat_core import SIM_NOTE, StoreError
from groupchat_ui.kit import components, state, store_access
from groupchat_ui.sweeps import export_view, results_view, view
from groupchat_ui.sweeps.logic import RESUMABLE

session = state.get()
registry = store_access.job_registry()
store = store_access.store()
st.title("Sweeps")
components.notices(session)
st.info(f"Offline by default. {SIM_NOTE}", icon=":material/science:")

with st.expander("New sweep", expanded=not session.sweep_jobs, icon=":material/grid_on:"):
    spec = view.define(store, store_access.agents())
    view.launch(registry, store, session, spec, view.where())

view.live(registry, store, session)

st.subheader("Results")
sweep_id = results_view.pick(store)
if sweep_id is None:
    st.stop()
try:
    info = results_view.header(store, sweep_id, registry, session.owner)
except StoreError as exc:
    st.error(str(exc))
    st.stop()
mine_running = any(not s.done for s in registry.tasks_for(session.owner, "sweep"))
if info["status"] in RESUMABLE and not mine_running:
    view.resume_button(registry, store, session, info["sweep_id"], "sw_resume")
view.delete_button(store, session, info, running=info["status"] == "running")
export_view.mlflow_button(store, info["sweep_id"])
results_view.results(store, sweep_id, registry)
