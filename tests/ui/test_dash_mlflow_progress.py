"""Export of a sweep to MLflow from the Sweeps page (issue 41): progress per cell while it runs,
and the results tabs stay where they were (a 48-run sweep took 76 s with nothing moving, then
the tabs jumped back to Heatmaps: the message afterwards moved them down a place)."""

from __future__ import annotations

from typing import Any

import pytest
from mlflow.tracking import MlflowClient
from streamlit.testing.v1 import AppTest

from groupchat_core.store import RunStore
from groupchat_ui.kit import mlflow_export
from groupchat_ui.sweeps import export_view
from tests.helpers.app_helpers import goto, sim_sweep


def tabs_place(at: AppTest) -> int:
    """Where the results tabs sit among the page's top-level elements."""
    (place,) = [i for i, node in at.main.children.items()
                if getattr(node, "type", None) == "tab_container"]
    return int(place)


def box_text(at: AppTest) -> str:
    box = next(node for node in at.main.children.values()
               if getattr(node, "key", None) == f"{export_view.KEY}_box")
    return " ".join(str(getattr(e, "value", "")) for e in box.children.values())


def test_the_tabs_keep_their_place_through_an_export(app: AppTest, monkeypatch: Any,
                                                      tmp_path: Any):
    uri = f"sqlite:///{tmp_path / 'tracking.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    sweep = sim_sweep(RunStore(), "tracked", (0.4, 0.6), 3)
    goto(app, "sweeps", sweep=sweep)
    before = tabs_place(app)
    app.button(key=export_view.KEY).click().run()
    assert not app.exception, [e.value for e in app.exception]
    said = box_text(app).replace("\\", "")  # markdown escapes
    assert f"Logged to MLflow at {uri}: sweep {sweep[:8]} as MLflow run " in said
    assert tabs_place(app) == before  # the message is inside the button's own container
    app.run()  # the message is shown once; the tabs still do not move
    assert tabs_place(app) == before and "Logged to MLflow" not in box_text(app)


def test_a_sweeps_cells_report_progress_as_they_are_logged(tmp_path: Any):
    uri = f"sqlite:///{tmp_path / 'tracking.db'}"
    store = RunStore()
    sweep = sim_sweep(store, "counted", (0.2, 0.4, 0.6), 3)
    heard: list[tuple[int, int]] = []
    kind, text = mlflow_export.export(store, [sweep], uri,
                                      progress=lambda done, total: heard.append((done, total)))
    assert kind == "success", text
    assert heard == [(0, 3), (1, 3), (2, 3), (3, 3)]
    client = MlflowClient(tracking_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "groupchat-lab"]
    assert len(client.search_runs([experiment.experiment_id])) == 4  # the sweep, 3 cells


@pytest.mark.parametrize(("done", "total", "text"), [
    (0, 48, "Logging to MLflow: 0 of 48 cells"), (1, 1, "Logging to MLflow: 1 of 1 cell")])
def test_the_bar_says_how_many_cells(done: int, total: int, text: str):
    assert export_view.progress_text(done, total) == text
