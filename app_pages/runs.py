"""Runs: every stored run, filtered; open one, compare two, delete, import a bundle."""

from __future__ import annotations

import streamlit as st

from groupchat_core import CHAT_BOUNDS, RUN_STATUSES
from groupchat_ui.kit import components, state, store_access
from groupchat_ui.runs import actions, logic, view

session = state.get()
st.title("Runs")
components.notices(session)
every = store_access.runs()
names = sorted({n.strip() for row in every["agents"].dropna() for n in row.split(",")})
scope = view.scope(every)
with st.form("runs_filters"):
    top = st.columns(4)
    status = top[0].selectbox("Status", ["any", *RUN_STATUSES], key="filter_status")
    agent = top[1].selectbox("Agent", ["any", *names], key="filter_agent")
    since = top[2].date_input("Since", value=None, key="filter_since")
    text = top[3].text_input("Name or task contains", key="filter_text")
    ranges = st.columns(2)
    low, high = CHAT_BOUNDS["threshold"].low, CHAT_BOUNDS["threshold"].high  # the engine's
    threshold = ranges[0].slider("threshold", low, high, (low, high), 0.05, key="filter_threshold")
    most = int(CHAT_BOUNDS["max_loops"].high)
    loops = ranges[1].slider("max_loops", 1, most, (1, most), key="filter_max_loops")
    st.form_submit_button("Apply filters", key="apply_filters")

runs = store_access.runs(None if status == "any" else status, None if agent == "any" else agent,
                         since.isoformat() if since else None)
runs = logic.filter_runs(logic.in_scope(runs, scope), text=text, threshold=threshold,
                         max_loops=loops)
st.caption(f"{len(runs)} run(s)")
table = st.dataframe(view.table(runs), key="runs_table", on_select="rerun", hide_index=True,
                     selection_mode="multi-row")
picked = [runs.iloc[i]["run_id"] for i in table.selection.rows if i < len(runs)]

acts = st.columns(4)
if acts[0].button("Open in Analysis", key="open_run", disabled=len(picked) != 1):
    actions.open_in_analysis(picked[0])
compare = acts[1].toggle("Compare the two selected", key="compare_runs", disabled=len(picked) != 2)
acts[2].button("Delete selected", key="delete_runs", disabled=not picked,
            on_click=actions.on_ask_delete, args=(picked,))
with acts[3]:
    components.mlflow_button(store_access.store(), picked, "runs_mlflow", what="runs")
components.feedback(actions.DELETE_SLOT)
if session.confirm_delete:
    components.confirm(view.delete_question(every, session.confirm_delete),
                       "confirm_delete", actions.on_confirm_delete, yes="Yes, delete")
if compare and len(picked) == 2:
    view.compare(store_access.run_data(picked[0]), store_access.run_data(picked[1]))

with st.form("import_bundle_form"):  # not cleared on submit: a failed file stays to retry
    st.file_uploader("Import a run bundle (.json)", type=["json"], key=actions.IMPORT_SLOT,
                     help="A bundle exported from the Analysis page. It is checked completely "
                          "first: a bad file changes nothing.")
    st.form_submit_button("Import bundle", key="import_bundle", on_click=actions.on_import_bundle)
components.feedback(actions.IMPORT_SLOT)
