"""Traced sweeps (issue 23 item 1: `groupchat.sweep.id` and `.cell`): each cell's chat is one
trace whose run span names its sweep and cell, through the one cell runner (CellRun) that the
local executor and the Ray worker share; `sweep run` turns it on like `run`."""

from __future__ import annotations

import asyncio
import json
import pickle

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groupchat_core.cli import main
from groupchat_core.integrations import CellTracer
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep

pytestmark = pytest.mark.usefixtures("fresh_engines")
AGENTS = [{"agent_name": "A", "model_name": "sim/eager"},
          {"agent_name": "B", "model_name": "sim/contrarian"}]


def test_each_cell_is_a_trace_carrying_its_sweep_and_cell():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    sweep = parse_sweep({"base": {"max_loops": 3, "agents": AGENTS},
                         "grid": {"threshold": [0.2, 0.6]}, "tasks": ["Go?"],
                         "concurrency": 1, "bid_cache": False})
    store = RunStore()
    outcome = run_sweep(sweep, store, tracing=CellTracer(provider, user_id="alice"))
    assert outcome.cells_done == 2
    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.parent is None]
    runs = store.list_runs(sweep_id=outcome.sweep_id)
    assert len(roots) == 2 and len({r.context.trace_id for r in roots}) == 2
    assert {r.attributes["groupchat.sweep.id"] for r in roots} == {outcome.sweep_id}
    cells = {r.attributes["gen_ai.conversation.id"]: r.attributes["groupchat.sweep.cell"]
             for r in roots}
    assert cells == dict(zip(runs["run_id"], runs["cell"], strict=True))
    assert {r.attributes["groupchat.threshold"] for r in roots} == {0.2, 0.6}
    assert {r.attributes["user.id"] for r in roots} == {"alice"}
    assert any(s.name.startswith("invoke_agent ") for s in spans)


def test_a_cell_tracer_travels_to_a_worker_without_its_provider():
    """A Ray worker gets the tracer by pickling; the SDK provider stays with the driver (the
    worker builds one from its own OTEL_* environment)."""
    tracer = CellTracer(TracerProvider(), capture_content=True, user_id="bo")
    copy = pickle.loads(pickle.dumps(tracer))
    assert copy.tracer_provider is None
    assert (copy.capture_content, copy.user_id) == (True, "bo")


def test_sweep_run_traces_its_cells_through_the_otel_environment(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    spec = tmp_path / "sweep.json"
    spec.write_text(json.dumps({"base": {"max_loops": 3, "agents": AGENTS},
                                "grid": {"threshold": [0.3]}, "tasks": ["Go?"],
                                "bid_cache": False}))
    assert main(["sweep", str(spec), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert '"groupchat.sweep.id"' in err and '"groupchat.sweep.cell"' in err


def test_the_ray_workers_cell_function_traces_its_cell_too(monkeypatch):
    """What a Ray worker runs (CellWorker.run_cell) goes through the same CellRun: its chat's trace
    names the sweep and the cell (called in-process here: no cluster needed for the wiring)."""
    from groupchat_core.sweeps import CellJob
    from groupchat_core.sweeps import _ray_worker as ray_cells

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(ray_cells, "worker_label", lambda: ("here", 1, "host"))
    job = CellJob(sweep_id="s-ray", cell="threshold=0.3", index=0, task="Go?",
                  spec={"max_loops": 3, "threshold": 0.3, "agents": AGENTS})
    async def collect():
        return [item async for item in ray_cells.CellWorker().run_cell(
            job.model_dump(), False, False, ray_cells.Secrets({}), CellTracer(provider))]

    items = asyncio.run(collect())
    assert items[-1]["kind"] == "result"
    (root,) = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert root.attributes["groupchat.sweep.id"] == "s-ray"
    assert root.attributes["groupchat.sweep.cell"] == "threshold=0.3"
