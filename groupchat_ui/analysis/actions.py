"""The Analysis page's widget callbacks (`on_*`), and `select_run`, which other pages call to
open a run here.

Why callbacks: they run before the script reruns, so the rerun already shows the chosen run.
"""

from __future__ import annotations

import streamlit as st

from groupchat_core import ConfigError, StoreError
from groupchat_ui.kit import store_access
from groupchat_ui.kit.state import get, guests_refused

from . import logic


def select_run(run_id: str) -> None:
    """Make `run_id` the run Analysis shows (this session's choice, the picker, `?run=`)."""
    get().selected_run = run_id
    st.session_state["analysis_run"] = run_id
    st.query_params["run"] = run_id
    st.query_params.pop("turn", None)  # a turn of the run shown before
    st.query_params.pop("bid", None)


@guests_refused("the Analysis page")
def on_run_picked() -> None:
    if st.session_state.get("analysis_run"):  # None: the empty picker under a bad link
        select_run(st.session_state["analysis_run"])


@guests_refused("the Analysis page")
def on_kind() -> None:
    """Switching between single and sweep runs: the picker then offers that kind's newest."""
    st.session_state.pop("analysis_run", None)
    st.query_params.pop("run", None)
    get().selected_run = None


@guests_refused("running the demo")
def on_run_demo() -> None:
    session = get()
    try:
        run_id = logic.run_demo(store_access.store())
    except (ConfigError, StoreError) as exc:
        session.notify("error", f"The demo did not run: {exc}")
        return
    store_access.invalidate()
    select_run(run_id)
