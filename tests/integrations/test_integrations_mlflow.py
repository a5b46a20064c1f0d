"""MLflow export (issue 23 item 2): a recorded run, or a sweep as a parent with a child per
cell, logged to a real local tracking store and read back with MLflow's own client.

Private imports (run_metrics): units tested as such, which no public module exports."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from groupchat_core import bids_csv
from groupchat_core.cli import main
from groupchat_core.integrations import export_run_mlflow, export_sweep_mlflow
from groupchat_core.integrations._mlflow import run_metrics
from groupchat_core.store import RunStore
from tests.helpers import ROOT as REPO

# MLflow's own SQLAlchemy mappers use a loader SQLAlchemy 2.1 deprecates (not our code).
pytestmark = pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy")

DEBATE = str(REPO / "examples" / "debate.yaml")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch, fresh_engines):
    monkeypatch.chdir(tmp_path)  # a new sqlite experiment keeps its artifacts in ./mlruns


def recorded(capsys) -> str:
    assert main(["run", DEBATE, "--task", "Adopt AI?", "--quiet", "--max-loops", "4"]) == 0
    return capsys.readouterr().err.strip().splitlines()[-1].removeprefix("run ")


def opened() -> RunStore:
    import os

    return RunStore(os.environ["GROUPCHAT_DB"])


def test_a_run_round_trips_through_a_local_tracking_store(capsys, tmp_path):
    run_id = recorded(capsys)
    store = opened()
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    mlflow_id = export_run_mlflow(store, run_id[:10], uri)
    client = MlflowClient(tracking_uri=uri)
    got = client.get_run(mlflow_id)
    spec = store.spec(run_id)
    assert got.info.status == "FINISHED"
    assert got.data.params["threshold"] == str(spec.threshold)
    assert got.data.params["recency_penalty"] == str(spec.recency_penalty)
    assert got.data.params["recency_window"] == str(spec.recency_window)
    assert got.data.params["max_loops"] == "4"
    assert got.data.params["models"] == ",".join(
        f"{a.agent_name}={a.model_name}" for a in spec.agents)
    assert got.data.tags["groupchat.run_id"] == run_id
    assert got.data.tags["groupchat.simulated"] == "true"
    assert got.data.tags["groupchat.stop_reason"] == store.load_run(run_id).stop_reason
    assert got.data.params["agents"] == str(len(spec.agents))
    assert got.data.params["seed"] == str(spec.seed)
    assert got.data.params["output_type"] == spec.output_type
    expected = run_metrics(store, run_id)
    assert expected["turns"] == len(store.load_run(run_id).turns)
    assert {"evenness", "gini", "messages_posted", "total_calls"} <= set(expected)
    whole_run = {k: v for k, v in got.data.metrics.items() if not k.startswith("turn.")}
    assert whole_run == pytest.approx(expected)
    record = store.load_run(run_id)
    margins = client.get_metric_history(mlflow_id, "turn.winning_adjusted")
    steps = sorted((m.step, m.value) for m in margins)
    wanted = [(t.turn, t.winning_adjusted) for t in record.turns if t.winning_adjusted is not None]
    assert [s for s, _ in steps] == [s for s, _ in wanted]
    assert [v for _, v in steps] == pytest.approx([v for _, v in wanted])
    names = sorted(a.path for a in client.list_artifacts(mlflow_id))
    assert names == ["bids.csv", "bundle.json"]
    local = client.download_artifacts(mlflow_id, "bids.csv", str(tmp_path))
    assert Path(local).read_text(encoding="utf-8") == bids_csv(store, run_id)
    assert (tmp_path / "mlruns").is_dir()  # a new sqlite experiment keeps artifacts in ./mlruns
    experiment = client.get_experiment(got.info.experiment_id)
    assert experiment.name == "groupchat-lab"


def test_export_to_mlflow_on_the_command_line(capsys, tmp_path):
    run_id = recorded(capsys)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert main(["export", run_id[:8], "--to", "mlflow", "--tracking-uri", uri,
                 "--experiment", "mine"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"run {run_id[:8]} logged to MLflow as run ")
    mlflow_id = out.split(" as run ")[1].split()[0]
    got = MlflowClient(tracking_uri=uri).get_run(mlflow_id)
    assert got.data.tags["groupchat.run_id"] == run_id


def test_export_to_mlflow_without_a_uri_is_one_line(capsys, monkeypatch):
    run_id = recorded(capsys)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["export", run_id, "--to", "mlflow"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --to mlflow needs --tracking-uri URI (or MLFLOW_TRACKING_URI), e.g. "
        "--tracking-uri sqlite:///mlflow.db"]


def test_mlflows_deprecated_file_store_is_one_line(capsys, tmp_path, monkeypatch):
    run_id = recorded(capsys)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    uri = (tmp_path / "mlruns").as_uri()
    assert main(["export", run_id, "--to", "mlflow", "--tracking-uri", uri]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: MLflow's file store is deprecated and refuses to open: use --tracking-uri "
        "sqlite:///mlflow.db (or set MLFLOW_ALLOW_FILE_STORE=true)"]


SWEEP = """schema_version: 1
name: tiny
base:
  max_loops: 3
  agents:
    - {agent_name: A, model_name: sim/eager}
    - {agent_name: B, model_name: sim/reserved}
grid:
  threshold: [0.3, 0.6]
tasks: ["Adopt AI?"]
repeats: 1
"""


def test_a_sweep_is_a_parent_run_with_a_child_per_cell(capsys, tmp_path):
    from groupchat_core.sweeps import load_sweep, run_sweep, sweep_results

    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP, encoding="utf-8")
    store = opened()
    outcome = run_sweep(load_sweep(path), store)
    frame = sweep_results(store, outcome.sweep_id)
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    parent_id = export_sweep_mlflow(store, outcome.sweep_id[:8], uri)
    client = MlflowClient(tracking_uri=uri)
    parent = client.get_run(parent_id)
    assert parent.data.tags["groupchat.sweep_id"] == outcome.sweep_id
    assert parent.data.params["cells"] == "2"
    assert parent.data.params["varying"] == "threshold"
    assert [a.path for a in client.list_artifacts(parent_id)] == ["sweep.json"]
    children = client.search_runs([parent.info.experiment_id],
                                  f"tags.mlflow.parentRunId = '{parent_id}'")
    assert sorted(c.data.tags["groupchat.run_id"] for c in children) == sorted(frame["run_id"])
    assert sorted(c.data.params["threshold"] for c in children) == ["0.3", "0.6"]
    assert all(c.data.metrics["turns"] >= 1 for c in children)
    # The same command exports a sweep when given its id.
    assert main(["export", outcome.sweep_id, "--to", "mlflow", "--tracking-uri", uri]) == 0
    assert capsys.readouterr().out.startswith(f"sweep {outcome.sweep_id} logged to MLflow")
