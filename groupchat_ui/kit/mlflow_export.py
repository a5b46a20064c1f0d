"""The Runs and Sweeps pages' "Export to MLflow" (the CLI's `export --to mlflow`): where it
writes, and what the button says afterwards. Pure: no streamlit here (components.mlflow_button
draws it).

Where: MLFLOW_TRACKING_URI when the server has it, else a local tracking store next to the run
store (`mlflow.db` in its folder; MLflow's own UI reads it with `mlflow ui --backend-store-uri
sqlite:///...`). MLflow is an optional extra: without it the button says how to install it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

INSTALL = "pip install 'groupchat-lab[mlflow]'"


def mlflow_available() -> bool:
    """Whether the MLflow client (the [mlflow] extra) is installed."""
    return importlib.util.find_spec("mlflow") is not None


def tracking_uri(environ: Mapping[str, str] | None = None) -> str:
    """MLFLOW_TRACKING_URI, else `sqlite:///<the run store's folder>/mlflow.db` (the working
    directory when the store is not a SQLite file)."""
    env = os.environ if environ is None else environ
    if env.get("MLFLOW_TRACKING_URI"):
        return env["MLFLOW_TRACKING_URI"]
    from groupchat_core.store import data_location

    path = data_location().path
    folder = path.parent if path is not None else Path.cwd()
    return f"sqlite:///{folder / 'mlflow.db'}"


def export(store: Any, ids: Sequence[str], uri: str | None = None,
           progress: Callable[[int, int], None] | None = None) -> tuple[str, str]:
    """Log each run or sweep id to MLflow: (kind of message, its text) for the page;
    `progress(done, total)` hears of a sweep's cells as they are logged."""
    if not mlflow_available():
        return "error", f"MLflow is not installed on this server: {INSTALL}, then restart it."
    from groupchat_core.integrations import export_mlflow

    uri = uri or tracking_uri()
    done: list[str] = []
    for ident in ids:
        try:
            kind, mlflow_id = export_mlflow(store, ident, uri, progress=progress)
        except Exception as exc:  # the tracking store refused: say so, keep what was logged
            from groupchat_core import mask_secrets

            return "error", (f"Logged {len(done)} of {len(ids)} to MLflow at {uri}; "
                             f"{ident[:8]} failed: {mask_secrets(str(exc), ())[:300]}")
        done.append(f"{kind} {ident[:8]} as MLflow run {mlflow_id}")
    return "success", f"Logged to MLflow at {uri}: " + "; ".join(done) + "."
