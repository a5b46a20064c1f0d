"""Analysis: one stored run's bids, speakers, metrics, turn explanations and downloads."""

from __future__ import annotations

import streamlit as st

from groupchat_core import StoreError
from groupchat_ui.analysis import actions, outcome_view, view
from groupchat_ui.kit import components, state, store_access

session = state.get()
st.title("Analysis")
components.notices(session)
runs = store_access.runs()
asked = st.query_params.get("run")
if asked and not any(str(r).startswith(asked) for r in runs.get("run_id", ())):
    runs = store_access.runs(fresh=True)  # a run recorded since the list was read
if runs.empty or view.no_ended_run(runs):
    st.info("No finished run in the store yet. Run a chat on the Run page, or try a demo: an "
            "offline debate between three simulated agents, recorded in a second.")
    st.button("Run a demo debate", key="demo_run", type="primary", icon=":material/casino:",
              on_click=actions.on_run_demo)
    if runs.empty:
        st.stop()

run_id = view.run_picker(runs, session, view.session_runs(store_access.job_registry(), session),
                         store_access.store().resolve)
if run_id is None:  # the link names no single run: said above, and no other run is shown
    st.stop()
try:
    data = store_access.run_data(run_id)
except StoreError as exc:
    st.error(str(exc))
    st.stop()

view.header(data)
view.metrics(data)
view.tabs(data, run_id)
outcome_view.across_runs(store_access.store())
