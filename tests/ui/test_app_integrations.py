"""The dashboard's bridges (AppTest): the Settings switch that traces runs started here, and
"Export to MLflow" on the Runs and Sweeps pages (read back with MLflow's own client), with
progress per cell and the results tabs kept in place (issue 41); one line when either is missing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mlflow.tracking import MlflowClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from streamlit.testing.v1 import AppTest

from groupchat_core.integrations import tracer_provider_from_env
from groupchat_core.store import RunStore
from groupchat_ui.analysis import logic as analysis_logic
from groupchat_ui.kit import jobs as job_registry
from groupchat_ui.kit import mlflow_export, store_access, traces
from groupchat_ui.sweeps import export_view
from tests.helpers.app_helpers import (
    fill,
    goto,
    new_app,
    poll,
    preset_run_form,
    query,
    select_rows,
    session,
    sim_sweep,
    small_grid,
    status,
    sweep_status,
)

pytestmark = pytest.mark.usefixtures("fresh_engines")


@pytest.fixture
def app() -> Iterator[AppTest]:
    provider = traces.server_tracer_provider  # the real one, cached per server
    provider.cache_clear()
    yield new_app()
    job_registry.registry().shutdown()
    provider.cache_clear()


def run_a_chat(app: AppTest) -> str:
    fill(preset_run_form(app), run_param_max_loops=3)
    app.button(key="start_run").click().run()
    assert not app.error, [e.value for e in app.error]
    poll(app, lambda at: status(at).startswith("status: finished"), "the run to finish")
    run_id = job_registry.registry().snapshot(session(app).current_job).run_id
    assert run_id
    return run_id


def tabs_place(at: AppTest) -> int:
    """Where the results tabs sit among the page's top-level elements."""
    (place,) = [i for i, node in at.main.children.items()
                if getattr(node, "type", None) == "tab_container"]
    return int(place)


def box_text(at: AppTest) -> str:
    box = next(node for node in at.main.children.values()
               if getattr(node, "key", None) == f"{export_view.KEY}_box")
    return " ".join(str(getattr(e, "value", "")) for e in box.children.values())


def test_the_traces_switch_traces_runs_and_sweep_cells_started_here_and_says_where(app,
                                                                                  monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "lab-test")
    spans = InMemorySpanExporter()
    monkeypatch.setattr(traces, "server_tracer_provider", lambda: tracer_provider_from_env(
        {"OTEL_TRACES_EXPORTER": "none"}, exporters=[spans]))
    run_a_chat(app)
    assert spans.get_finished_spans() == ()  # off by default

    goto(app, "settings")
    caption = " ".join(c.value for c in app.caption)
    assert ("Spans of service 'lab-test' go over OTLP/HTTP to "
            "http://127.0.0.1:4318/v1/traces.") in caption
    app.toggle(key="pref_trace_runs").set_value(True).run()
    run_id = run_a_chat(app)
    finished = spans.get_finished_spans()
    runs = [s for s in finished if s.name.startswith("invoke_workflow")]
    assert len(runs) == 1 and runs[0].attributes["gen_ai.conversation.id"] == run_id
    assert {s.context.trace_id for s in finished} == {runs[0].context.trace_id}  # one trace
    assert any(s.name.startswith("invoke_agent ") for s in finished)
    assert runs[0].attributes["user.id"] == "local"

    spans.clear()  # then each cell of a sweep started here
    small_grid(goto(app, "sweeps"), repeats=1, max_loops=3, penalties="0.3")  # 2 cells
    app.button(key="sw_start").click().run()
    assert not app.error, [e.value for e in app.error]
    poll(app, lambda at: sweep_status(at).startswith("sweep status: finished"),
         "the sweep to finish")
    sweep = query(app, "sweep")
    roots = [s for s in spans.get_finished_spans() if s.name.startswith("invoke_workflow")]
    runs = RunStore().list_runs(sweep_id=sweep)
    assert len(runs) == 2 and len(roots) == 2  # one trace per cell, nothing else
    assert {r.attributes["groupchat.sweep.id"] for r in roots} == {sweep}
    assert {r.attributes["gen_ai.conversation.id"]: r.attributes["groupchat.sweep.cell"]
            for r in roots} == dict(zip(runs["run_id"], runs["cell"], strict=True))
    assert {r.attributes["user.id"] for r in roots} == {"local"}


def test_runs_and_sweeps_export_to_a_local_mlflow_store_and_say_where(app, monkeypatch,
                                                                      tmp_path):
    uri = f"sqlite:///{tmp_path / 'tracking.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    store = RunStore()
    run_id = analysis_logic.run_demo(store)  # a run to export
    store_access.invalidate()
    goto(app, "runs")
    assert app.button(key="runs_mlflow").disabled  # nothing selected
    select_rows(app, [0])
    app.button(key="runs_mlflow").click().run()
    said = " ".join(s.value for s in app.success).replace("\\", "")  # markdown escapes
    assert f"Logged to MLflow at {uri}: run {run_id[:8]} as MLflow run " in said, \
        [e.value for e in app.error]
    client = MlflowClient(tracking_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "groupchat-lab"]
    (logged,) = client.search_runs([experiment.experiment_id])
    assert logged.data.tags["groupchat.run_id"] == run_id
    assert logged.info.run_id in said

    sweep = sim_sweep(store, "tracked", (0.4, 0.6), 3)
    goto(app, "sweeps", sweep=sweep)
    assert not app.error, [e.value for e in app.error]
    before = tabs_place(app)  # a 48-run export moved the tabs back to Heatmaps (issue 41)
    app.button(key=export_view.KEY).click().run()
    said = box_text(app).replace("\\", "")  # the button's own container; markdown escapes
    assert f"Logged to MLflow at {uri}: sweep {sweep[:8]} as MLflow run " in said, \
        [e.value for e in app.error]
    assert len(client.search_runs([experiment.experiment_id])) == 4  # run, sweep, 2 cells
    assert tabs_place(app) == before
    app.run()  # the message is shown once; the tabs still do not move
    assert tabs_place(app) == before and "Logged to MLflow" not in box_text(app)

    counted = sim_sweep(store, "counted", (0.2, 0.4, 0.6), 3)
    heard: list[tuple[int, int]] = []
    kind, text = mlflow_export.export(store, [counted], uri,
                                      progress=lambda done, total: heard.append((done, total)))
    assert kind == "success", text
    assert heard == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert len(client.search_runs([experiment.experiment_id])) == 8  # and a sweep, 3 cells


def test_without_the_sdk_or_mlflow_the_controls_say_how_to_install_them(app, monkeypatch):
    monkeypatch.setattr(traces, "tracing_available", lambda: False)
    monkeypatch.setattr(mlflow_export, "mlflow_available", lambda: False)
    goto(app, "settings")
    assert app.toggle(key="pref_trace_runs").disabled
    assert any("pip install 'groupchat-lab[traces]'" in c.value for c in app.caption)
    analysis_logic.run_demo(RunStore())  # a run to export
    store_access.invalidate()
    goto(app, "runs")
    select_rows(app, [0])
    app.button(key="runs_mlflow").click().run()
    assert [e.value for e in app.error] == [
        "MLflow is not installed on this server: pip install 'groupchat-lab\\[mlflow\\]', "
        "then restart it."]


@pytest.mark.parametrize(("done", "total", "text"), [
    (0, 48, "Logging to MLflow: 0 of 48 cells"), (1, 1, "Logging to MLflow: 1 of 1 cell")])
def test_the_export_bar_says_how_many_cells(done: int, total: int, text: str):
    assert export_view.progress_text(done, total) == text
