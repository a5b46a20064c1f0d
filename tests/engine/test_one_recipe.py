"""Issue 25 item 5: one Observer Protocol, one cell runner for both executors, one job table,
a typed model for the Run form. Private imports (the registry's job): to wait on its event."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from groupchat_core import Agent, ConfigError, Event, GroupChat, LiveRun, Observer
from groupchat_core.sweeps import CellJob, _executor, _ray_worker, parse_sweep, run_sweep
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.run import logic
from groupchat_ui.run.form import RunForm

SIMS = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("A", "B")]


@pytest.fixture
def store(sqlite_store):  # SQLite only (tests/conftest.py's)
    return sqlite_store


# --- the Observer Protocol ----------------------------------------------------------------


class OnlyTheEnd:
    """An observer declaring both attributes the Protocol documents."""

    wants = frozenset({"run_finished"})
    thread_safe = True

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def __call__(self, event: Event) -> None:
        self.kinds.append(event.kind)


def test_observers_are_one_public_protocol_whose_attributes_the_engine_honours() -> None:
    assert "wants" in (Observer.__doc__ or "") and "thread_safe" in (Observer.__doc__ or "")
    every: list[str] = []

    def plain(event: Event) -> None:  # a plain function is an Observer
        every.append(event.kind)

    declared: Observer = OnlyTheEnd()
    observer: Observer = plain
    chat = GroupChat(agents=[Agent(agent_name=n, model_name="sim/eager") for n in "AB"],
                     max_loops=3, on_event=[observer, declared])
    chat.run("t")
    assert declared.kinds == ["run_finished"]  # type: ignore[attr-defined]
    assert "run_finished" in every and "bid_delta" not in every


# --- one cell runner ----------------------------------------------------------------------


@pytest.fixture
def cell_runs(monkeypatch) -> list[str]:
    """Every CellRun.run call, by cell key (the real recipe still runs)."""
    seen: list[str] = []
    original = _executor.CellRun.run

    async def spying(self: _executor.CellRun) -> Any:
        seen.append(self.job.cell)
        return await original(self)

    monkeypatch.setattr(_executor.CellRun, "run", spying)
    return seen


def test_the_local_executor_runs_each_cell_through_the_shared_recipe(store, cell_runs) -> None:
    sweep = parse_sweep({"name": "s", "base": {"max_loops": 3, "agents": SIMS},
                         "grid": {"threshold": [0.3, 0.6]}, "tasks": ["t"], "concurrency": 1})
    outcome = run_sweep(sweep, store)
    assert sorted(cell_runs) == sorted(c.key for c in sweep.cells())
    assert outcome.status == "finished" and outcome.cells_run == len(cell_runs)


async def collect(items: AsyncIterator[dict]) -> list[dict]:
    return [item async for item in items]


def test_the_ray_worker_runs_its_cell_through_the_same_recipe(monkeypatch, cell_runs) -> None:
    """The worker actor's cell, run here without a cluster: it builds and runs a CellRun."""
    monkeypatch.setattr(_ray_worker, "worker_label", lambda: ("here/node/pid 1", 1, "here"))
    spec = {"max_loops": 3, "agents": SIMS}
    job = CellJob(sweep_id="s", cell="c1", index=0, spec=spec, task="t")
    calls = _ray_worker.CellWorker().run_cell(job.model_dump(), False, False,
                                              _ray_worker.Secrets({}))
    items = asyncio.run(collect(calls))
    assert cell_runs == ["c1"]
    assert items[0]["kind"] == "hello" and items[-1]["kind"] == "result"
    assert items[-1]["result"]["status"] == "finished"


# --- one job table ------------------------------------------------------------------------


def test_a_runs_streamed_candidates_live_in_the_job_table_and_expire_with_the_job(store) -> None:
    registry = JobRegistry(ttl_s=0.0)
    agents = [Agent(agent_name=n, model_name="sim/eager") for n in "AB"]
    job = logic.start_run(store, registry, "me", agents, "t", {"max_loops": 2}, {})
    assert registry._job(job, True).settled.wait(600), "the run never ended"  # a hang only
    assert registry.snapshot(job).done
    live = registry._job(job, True).live  # the run's one fold, candidates and all
    assert isinstance(live, LiveRun) and registry.snapshot(job).record == live.state().record
    tables = [name for name, value in vars(logic).items() if isinstance(value, dict)
              and any(v is live for v in value.values())]
    assert tables == [], f"a second job table in run/logic: {tables}"
    registry.cleanup(now=time.time() + 1)  # the job expires: its candidates go with it
    with pytest.raises(KeyError):
        registry.snapshot(job)
    registry.shutdown()


# --- the Run form's typed model -----------------------------------------------------------


def test_the_run_form_reads_session_state_into_one_typed_model_with_one_line_errors() -> None:
    state = {"run_task": "Plan it.", "run_roster": ["B", "A"], "stream_bids": False,
             "run_param_name": "  Offsite ", "run_param_threshold": 0.4,
             "run_param_bid_timeout": 0.0, "run_param_bid_cache": True,
             "run_param_max_loops": 6, "unrelated": object()}
    form = RunForm.from_state(state)
    assert (form.task, form.roster, form.stream) == ("Plan it.", ["B", "A"], False)
    assert form.threshold == 0.4 and form.recency_penalty is None  # unset: engine default
    assert form.chat_kwargs() == {"name": "Offsite", "threshold": 0.4, "bid_timeout": None,
                                  "bid_cache": None, "max_loops": 6, "stream_bids": False}
    chat = logic.build_chat([Agent(agent_name=n) for n in "AB"], form, {})
    assert chat.threshold == 0.4 and chat.max_loops == 6 and chat.name == "Offsite"
    with pytest.raises(ConfigError, match=r"^run form: max_loops: ") as caught:
        RunForm.from_state({"run_param_max_loops": "many"})
    assert "\n" not in str(caught.value)
