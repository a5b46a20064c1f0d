"""The Sweeps page's "Export sweep to MLflow": a progress bar while the cells are logged (a
48-run sweep took 76 s with nothing moving), and the results tabs stay on the tab shown.

Why a container of its own: the message after an export was one more element above the
results, which moved the tabs down a place, so the browser drew them anew on their first
tab (Heatmaps). Inside one keyed container the button, the bar and the message come and go
without moving anything after it.
"""

from __future__ import annotations

import streamlit as st

from groupchat_core.store import RunStore
from groupchat_ui.kit import mlflow_export
from groupchat_ui.kit.components import feedback, say_at

KEY = "sw_mlflow"


def progress_text(done: int, total: int) -> str:
    """The bar's words: 'Logging to MLflow: 12 of 48 cells'."""
    return f"Logging to MLflow: {done} of {total} cell{'s' if total != 1 else ''}"


def mlflow_button(store: RunStore, sweep_id: str) -> None:
    """The export button, its progress bar while it runs, then where it wrote (or why not)."""
    where = mlflow_export.tracking_uri() if mlflow_export.mlflow_available() else None
    with st.container(key=f"{KEY}_box"):
        clicked = st.button(
            "Export sweep to MLflow", key=KEY, icon=":material/science:",
            help=(f"Log the sweep (a parent run, a child per cell) to the MLflow tracking "
                  f"store at {where} (MLFLOW_TRACKING_URI chooses another)." if where else
                  f"MLflow is not installed: {mlflow_export.INSTALL}."))
        if clicked:
            bar = st.progress(0.0, text="Logging to MLflow…")

            def progress(done: int, total: int) -> None:
                bar.progress(done / total if total else 1.0, text=progress_text(done, total))

            say_at(KEY, *mlflow_export.export(store, [sweep_id], progress=progress))
            bar.empty()
        feedback(KEY)
