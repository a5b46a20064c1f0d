"""The Runs page's widget callbacks (`on_*`): delete (after a confirmation), import a bundle,
and open a run in Analysis.

Why callbacks: they run before the script reruns, so the rerun already shows the outcome.
"""

from __future__ import annotations

import streamlit as st

from groupchat_core import ConfigError, StoreError
from groupchat_ui.analysis.actions import select_run
from groupchat_ui.kit import store_access
from groupchat_ui.kit.components import say_at
from groupchat_ui.kit.state import get, guests_refused

from . import logic


def open_in_analysis(run_id: str) -> None:
    """Switch to the Analysis page showing `run_id` (call from the script, not a callback)."""
    select_run(run_id)
    st.switch_page("app_pages/analysis.py", query_params={"run": run_id})


DELETE_SLOT = "delete_runs"


@guests_refused("deleting runs")
def on_ask_delete(run_ids: list[str]) -> None:
    """Ask before deleting; runs started by someone else are refused here, with who."""
    session = get()
    try:
        runs = store_access.store().list_runs()
        others = logic.not_deletable(runs, run_ids, session.user)
    except StoreError as exc:
        say_at(DELETE_SLOT, "error", f"Nothing was deleted: {exc}")
        return
    if others:
        say_at(DELETE_SLOT, "error", logic.refusal_text(logic.run_names(runs, others)))
        return
    session.confirm_delete = tuple(run_ids)


@guests_refused("deleting runs")
def on_confirm_delete(confirmed: bool) -> None:
    session = get()
    ids, session.confirm_delete = session.confirm_delete, ()
    if confirmed and ids:
        count = logic.delete_runs(store_access.store(), ids, session.user)
        store_access.invalidate()
        st.session_state.pop("runs_table", None)
        session.notify("success", f"Deleted {count} run(s).")


IMPORT_SLOT = "bundle_upload"


@guests_refused("importing a run")
def on_import_bundle() -> None:
    """Import the chosen bundle; the outcome shows under the file field, which keeps the file
    (to fix or retry a failed import)."""
    upload = st.session_state.get(IMPORT_SLOT)
    if upload is None:
        say_at(IMPORT_SLOT, "error", "Choose a run bundle (.json) first.")
        return
    try:
        session = get()
        run_id = logic.import_run(store_access.store(), upload.getvalue(), upload.name,
                                  user=session.user, user_name=session.user_name)
    except (ConfigError, StoreError) as exc:
        say_at(IMPORT_SLOT, "error", f"Nothing was imported from {upload.name}: {exc}")
        return
    store_access.invalidate()
    say_at(IMPORT_SLOT, "success", f"Imported run {run_id} from {upload.name}.")
