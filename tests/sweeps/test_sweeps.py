"""The sweep runner: recorded cells, events, results, budget caps, cancel, executors, the bid
cache (also on PostgreSQL), the CLI, and resuming a SIGKILLed sweep. Then sweep specs (format,
validation, cells; no people: docs/sweeps.md "People"), the estimate, search spaces (order,
roster, models, random search), rate limits as a floor on wall time.
Private imports (finished_cells, short_label, BidCache, cache_stats, MAX_CELLS, litellm_module,
RATE_LIMITS, `_cell_row`): no public name."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import (
    Agent,
    ConfigError,
    GroupChat,
    StoreError,
    background_loop,
    set_rate_limit,
)
from groupchat_core.cli import main
from groupchat_core.engine._bidcache import BidCache, cache_stats
from groupchat_core.providers._ratelimit import RATE_LIMITS
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    BudgetStopped,
    CellFinished,
    CellJob,
    CellStarted,
    LocalExecutor,
    SweepFinished,
    SweepStarted,
    aggregate,
    arun_sweep,
    estimate,
    heatmap_frame,
    load_sweep,
    load_sweep_text,
    parse_sweep,
    plan_sweep,
    run_sweep,
    studentized_mean,
    sweep_results,
    sweep_summary,
)
from groupchat_core.sweeps._plan import finished_cells
from groupchat_core.sweeps._spec import MAX_CELLS
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT
from tests.helpers.cli import run_cli
from tests.helpers.waits import eventually
from tests.sweeps import DEBATERS as AGENTS

SLOW = {"max_loops": 8, "agents": [{**a, "litellm_kwargs": {"sim_latency": 0.01}} for a in AGENTS]}
BOTH = pytest.mark.parametrize("backend", ["sqlite", "postgresql"])  # the store fixture's


def spec(grid=None, **changes):
    data = {"name": "test", "base": {"max_loops": 8, "agents": AGENTS},
            "grid": grid or {"threshold": [0.3, 0.5, 0.7], "recency_penalty": [0.1, 0.4]},
            "tasks": ["Should hospitals adopt AI diagnosis?"], "repeats": 2,
            "concurrency": 3}
    data.update(changes)
    return parse_sweep(data)


@pytest.fixture
def backend() -> str:  # tests/conftest.py's `store` on SQLite only, except where BOTH says
    return "sqlite"


def test_every_cell_is_one_recorded_run_linked_to_its_sweep_and_reported(store):
    sweep = spec()
    events = []
    outcome = run_sweep(sweep, store, on_event=events.append)

    keys = [c.key for c in sweep.cells()]
    runs = store.list_runs(sweep_id=outcome.sweep_id)
    assert sorted(runs["cell"]) == sorted(keys) and set(runs["status"]) == {"finished"}
    assert (outcome.status, outcome.cells_done, outcome.cells_run) == ("finished", 12, 12)
    row = store.get_sweep(outcome.sweep_id)
    assert (row["status"], row["reason"], row["name"]) == ("finished", None, "test")
    assert row["grid"] == sweep.to_data()  # the whole spec, so the sweep can be resumed

    assert isinstance(events[0], SweepStarted) and isinstance(events[-1], SweepFinished)
    assert events[0].estimate.cells == 12 and events[-1].outcome == outcome
    started = [e for e in events if isinstance(e, CellStarted)]
    finished = [e for e in events if isinstance(e, CellFinished)]
    assert sorted(e.cell for e in started) == sorted(keys) == sorted(e.cell for e in finished)
    assert [e.cells_done for e in finished] == list(range(1, 13))
    by_run = runs.set_index("run_id")
    for event in finished:
        assert by_run.loc[event.run_id, "cell"] == event.cell
        assert event.calls == by_run.loc[event.run_id, "total_calls"]
    assert outcome.calls == runs["total_calls"].sum()
    assert outcome.bids == sum(e.bids for e in finished) and outcome.cache_hits > 0


def test_cells_that_differ_only_in_threshold_share_their_common_prefix(store):
    grid = {"threshold": [0.3, 0.4, 0.5, 0.6, 0.7]}
    cached = run_sweep(spec(grid, repeats=3, base={"max_loops": 20, "agents": AGENTS}), store)
    naive = run_sweep(spec(grid, repeats=3, base={"max_loops": 20, "agents": AGENTS},
                           bid_cache=False), store)
    assert naive.cache_hits == 0 and naive.calls == naive.bids
    assert cached.bids == naive.bids
    assert cached.calls <= 0.4 * naive.calls  # the target for deterministic agents

    def transcripts(sweep_id):
        runs = store.list_runs(sweep_id=sweep_id)
        messages = store.messages(list(runs["run_id"]))
        cells = dict(zip(runs["run_id"], runs["cell"], strict=True))
        return {cells[r]: list(g["content"]) for r, g in messages.groupby("run_id")}

    assert transcripts(cached.sweep_id) == transcripts(naive.sweep_id)  # same chats, fewer calls
    summary = sweep_summary(store, cached.sweep_id)
    assert summary["hit_rate"] == pytest.approx(cached.cache_hits / cached.bids)
    assert summary["calls"] == cached.calls and summary["cells_done"] == 15


def test_results_one_row_per_cell_and_aggregates_with_bounded_intervals(store):
    outcome = run_sweep(spec(repeats=4), store)
    results = sweep_results(store, outcome.sweep_id)
    assert len(results) == 24 and list(results["index"]) == list(range(24))
    assert set(results["status"]) == {"finished"}
    assert (results["messages"] == results["turns"] - results["lulled"]).all()
    assert results["gini"].dropna().between(0, 1).all()  # undefined when nobody spoke
    assert results["hit_rate"].between(0, 1).all()

    agg = aggregate(results)
    assert set(agg["metric"]) >= {"messages", "lull_turn", "gini", "hit_rate"}
    group = results[(results["threshold"] == 0.5) & (results["recency_penalty"] == 0.4)]
    values = group["messages"].astype(float)
    row = agg[(agg["threshold"] == 0.5) & (agg["recency_penalty"] == 0.4)
              & (agg["metric"] == "messages")].iloc[0]
    assert (row["n"], row["mean"]) == (4, values.mean())
    expected = studentized_mean(list(values), low=0.0, high=row["range_high"])
    # (no interval, NaN, when the repeats all agree: "no variation in n repeats")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.low, expected.high),
                                                            nan_ok=True)
    assert row["range_high"] == results["max_loops"].max() - 1  # messages: the task is one

    matrix = heatmap_frame(agg, "messages")
    assert matrix.shape == (2, 3) and matrix.loc[0.4, 0.5] == row["mean"]
    by_threshold = aggregate(results, by=["threshold"], metrics=["messages"])
    assert list(by_threshold["n"]) == [8, 8, 8]
    with pytest.raises(ConfigError, match="also varies"):
        heatmap_frame(aggregate(results, by=["threshold", "recency_penalty", "repeat"]),
                      "messages")


def test_max_calls_stops_cleanly_and_a_resume_finishes_without_rerunning(store):
    sweep = spec(base=SLOW, bid_cache=False, concurrency=2, max_calls=70)
    events = []
    outcome = run_sweep(sweep, store, on_event=events.append)

    assert outcome.status == "stopped_budget" and "max_calls 70 reached" in outcome.reason
    row = store.get_sweep(outcome.sweep_id)
    assert (row["status"], row["reason"]) == ("stopped_budget", outcome.reason)
    stops = [e for e in events if isinstance(e, BudgetStopped)]
    assert len(stops) == 1 and stops[0].calls_total == outcome.calls_total >= 70
    after = events.index(stops[0])
    assert not any(isinstance(e, CellStarted) for e in events[after:])  # nothing new launched
    runs = store.list_runs(sweep_id=outcome.sweep_id)
    assert "cancelled" in set(runs["status"])  # the cells in flight were stopped, and say so
    assert outcome.calls_total < 70 + 2 * 3  # at most the other bids of the turns in flight
    stored = store.bids(list(runs["run_id"]))["calls"].sum()
    assert stored <= outcome.calls_total  # bids of a turn cut short are not stored
    done_before = finished_cells(store, outcome.sweep_id)
    assert 0 < len(done_before) < 12 and outcome.cells_done == len(done_before)

    resumed = run_sweep(sweep, store, resume=outcome.sweep_id, max_calls=10_000)
    assert resumed.status == "finished" and resumed.cells_done == 12
    assert resumed.cells_run == 12 - len(done_before)
    done_after = finished_cells(store, outcome.sweep_id)
    assert {k: done_after[k] for k in done_before} == done_before  # never re-run
    assert resumed.calls_total == stored + resumed.calls  # earlier sessions count, from the store

    capped_again = run_sweep(sweep, store, resume=outcome.sweep_id)  # spent already >= 70
    assert capped_again.status == "stopped_budget" and capped_again.calls == 0


def test_max_usd_counts_the_cost_of_priced_calls(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")  # keys come from the environment
    with FakeOpenAIServer() as server:
        agents = [{"agent_name": n.upper(), "model_name": "openai/gpt-4o-mini",
                   "api_base": server.base_url, "temperature": 0.7} for n in ("a", "b")]
        sweep = parse_sweep({"base": {"max_loops": 6, "agents": agents},
                             "grid": {"threshold": [0.1, 0.2, 0.3, 0.4]}, "tasks": ["t"],
                             "concurrency": 1, "max_usd": 0.0001})
        server.set_responder(None, lambda body: tool_call(0.9, "Yes."))
        store = RunStore()
        outcome = run_sweep(sweep, store)
    assert outcome.status == "stopped_budget" and "max_usd 0.0001 reached" in outcome.reason
    assert outcome.cost_usd_total >= 0.0001 and outcome.cells_done < 4
    stored = store.bids(list(store.list_runs(sweep_id=outcome.sweep_id)["run_id"]))
    assert 0 < stored["cost_usd"].sum() <= outcome.cost_usd  # a turn cut short is not stored


def test_a_cancelled_sweep_is_recorded_and_can_be_resumed(store):
    sweep = spec(bid_cache=False, concurrency=1, base=SLOW)
    second_cell_bids = asyncio.Event()
    local = LocalExecutor(store, bid_cache=False)

    class Watching:
        async def submit(self, job, usage):
            def counted(calls, cost):
                usage(calls, cost)
                if job.index == 1:
                    second_cell_bids.set()
            return await local.submit(job, counted)

    async def cancel_during_the_second_cell():
        task = asyncio.ensure_future(arun_sweep(sweep, store, executor=Watching()))
        await second_cell_bids.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    background_loop().submit(cancel_during_the_second_cell()).result(timeout=60)
    sweep_id = store.list_sweeps()["sweep_id"].iloc[0]
    row = store.get_sweep(sweep_id)
    assert (row["status"], row["reason"]) == ("cancelled", "cancelled by the user")
    assert sorted(store.list_runs(sweep_id=sweep_id)["status"]) == ["cancelled", "finished"]
    resumed = run_sweep(None, store, resume=sweep_id[:8])
    assert (resumed.status, resumed.cells_run) == ("finished", 11)


class RecordingExecutor:
    """A stand-in for a remote executor: jobs go through JSON, as they would over a wire."""

    def __init__(self, store, fail_on: int | None = None):
        self.inner = LocalExecutor(store, bid_cache=False)
        self.jobs: list[CellJob] = []
        self.fail_on = fail_on

    async def submit(self, job, usage):
        job = CellJob.model_validate_json(job.model_dump_json())
        self.jobs.append(job)
        if job.index == self.fail_on:
            raise StoreError("the worker lost its database")
        return await self.inner.submit(job, usage)


def test_the_runner_takes_any_executor(store):
    executor = RecordingExecutor(store)
    outcome = run_sweep(spec(), store, executor=executor)
    assert outcome.status == "finished" and len(executor.jobs) == 12
    assert outcome.calls == outcome.bids > 0  # usage reached the runner through the hook
    assert all(j.sweep_id == outcome.sweep_id and j.spec["agents"] for j in executor.jobs)


def test_a_failing_cell_stops_the_sweep_with_an_error_that_names_it(store):
    outcome = run_sweep(spec(concurrency=1), store, executor=RecordingExecutor(store, 2))
    assert outcome.status == "error" and "the worker lost its database" in outcome.reason
    assert outcome.cells_done == 2 and store.get_sweep(outcome.sweep_id)["status"] == "error"


def test_results_list_pending_cells_and_a_resume_needs_the_same_cells(store):
    outcome = run_sweep(spec(max_calls=1, concurrency=1), store)
    results = sweep_results(store, outcome.sweep_id)
    assert len(results) == 12 and (results["status"] == "pending").sum() >= 10
    assert results.loc[results["status"] == "pending", "run_id"].isna().all()
    assert aggregate(results).empty  # no finished cell yet: nothing to aggregate
    with pytest.raises(ConfigError, match="does not match"):
        run_sweep(spec(repeats=3), store, resume=outcome.sweep_id)
    with pytest.raises(StoreError, match="no sweep"):
        run_sweep(None, store, resume="nope")
    assert run_sweep(spec(max_calls=10_000, concurrency=8), store,
                     resume=outcome.sweep_id).status == "finished"


def test_llm_prompts_state_the_threshold_so_only_other_parameters_share(monkeypatch, store):
    """A bid prompt names the threshold; cells differing only in max_loops share requests."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")

    def deterministic(body):  # the same request always gets the same answer
        digest = hashlib.sha256(str(body["messages"]).encode()).digest()
        return tool_call(0.5 + digest[0] / 600, f"Point {digest[1]}.")

    with FakeOpenAIServer() as server:
        server.set_responder(None, deterministic)
        agents = [{"agent_name": n, "model_name": "openai/local-model", "temperature": 0,
                   "api_base": server.base_url} for n in ("Ann", "Bob", "Cy")]

        def sweep(grid):
            return run_sweep(parse_sweep({"base": {"max_loops": 6, "agents": agents},
                                          "grid": grid, "tasks": ["t"], "concurrency": 5}),
                             store)

        by_threshold = sweep({"threshold": [0.1, 0.2, 0.3]})
        by_length = sweep({"max_loops": [3, 4, 5, 6]})
    assert by_threshold.cache_hits == 0 and by_threshold.calls == by_threshold.bids
    assert by_length.calls == 3 * (6 - 1)  # the longest cell's bids, shared by the others
    assert by_length.bids == 3 * (2 + 3 + 4 + 5)


def test_a_raising_observer_cancels_a_sync_sweep_which_still_reports_its_end(store):
    sweep = spec(bid_cache=False, concurrency=1, base=SLOW)
    seen: list[str] = []

    def observer(event):
        seen.append(event.kind)
        if isinstance(event, CellFinished):
            raise KeyError("stop")

    with pytest.raises(KeyError):
        run_sweep(sweep, store, on_event=observer)
    assert seen[-1] == "sweep_finished" and seen.count("cell_finished") == 1
    row = store.get_sweep(store.list_sweeps()["sweep_id"].iloc[0])
    assert row["status"] == "cancelled"


PROMPT = "You are {agent_name}. Bid above {threshold}: "


def test_bid_prompt_labels_sharing_their_first_60_characters_stay_two_cells(store):
    stem = "A very long label describing the strict variant of the prompt, version "
    labels = [stem + "one", stem + "two"]  # identical for 72 characters
    sweep = spec({"bid_prompt": {labels[0]: PROMPT + "be strict.", labels[1]: PROMPT + "relax."}},
                 repeats=1, base={"max_loops": 3, "agents": AGENTS})
    cells = list(sweep.cells())
    keys = [c.params["bid_prompt"] for c in cells]
    assert len(cells) == 2 and len(set(keys)) == 2 and all(len(k) == 60 for k in keys)
    assert all(k.startswith(stem[:51]) and k[51] == "~" for k in keys)
    prompts = {sweep.chat_spec(c).bid_prompt for c in cells}
    assert prompts == {PROMPT + "be strict.", PROMPT + "relax."}  # neither template is lost

    outcome = run_sweep(sweep, store)
    runs = store.list_runs(sweep_id=outcome.sweep_id)
    assert outcome.cells_done == 2 and runs["cell"].nunique() == 2
    stored = {store.run_info(r)["spec"]["bid_prompt"] for r in runs["run_id"]}
    assert stored == prompts
    again = parse_sweep(store.get_sweep(outcome.sweep_id)["grid"])  # the stored labels stay
    assert [c.key for c in again.cells()] == [c.key for c in cells]


def test_a_grid_whose_labels_would_still_collide_is_rejected():
    long = "x" * 70
    from groupchat_core.sweeps._spec import short_label

    with pytest.raises(ConfigError, match="both become the cell label") as info:
        spec({"bid_prompt": {long: PROMPT, short_label(long): PROMPT + "other"}})
    assert "\n" not in str(info.value).strip()


# --- the bid cache on SQLite and PostgreSQL (ON CONFLICT DO NOTHING, booleans summed) ---


@BOTH
def test_a_sweep_with_its_bid_cache_runs_and_resumes(store):
    spec = parse_sweep({"base": {"max_loops": 10, "agents": AGENTS[:2]},
                        "grid": {"threshold": [0.3, 0.5, 0.7]}, "tasks": ["Plan it."],
                        "repeats": 2, "max_calls": 25})
    stopped = run_sweep(spec, store)
    assert stopped.status == "stopped_budget"
    done = finished_cells(store, stopped.sweep_id)
    outcome = run_sweep(spec, store, resume=stopped.sweep_id, max_calls=10_000)
    assert outcome.status == "finished" and outcome.cells_done == 6
    assert {k: finished_cells(store, stopped.sweep_id)[k] for k in done} == done

    results = sweep_results(store, stopped.sweep_id)
    assert set(results["status"]) == {"finished"} and results["cache_hits"].sum() > 0
    every_run = cache_stats(store, sweep_id=stopped.sweep_id)  # the cancelled runs too
    chosen = every_run[every_run["run_id"].isin(results["run_id"])]
    assert chosen["cache_hits"].sum() == results["cache_hits"].sum()
    assert len(every_run) > len(chosen)
    assert store.cache_count() > 0


@BOTH
def test_a_new_cache_reads_answers_back_and_duplicates_are_ignored(store):
    first = GroupChat(agents=[Agent(**a) for a in AGENTS[:2]], max_loops=5,
                      bid_cache=BidCache(store))
    first.run("Plan it.")
    first.bid_cache.flush()
    stored = store.cache_count()
    other = BidCache(store)
    second = GroupChat(agents=[Agent(**a) for a in AGENTS[:2]], max_loops=5, bid_cache=other)
    second.run("Plan it.")
    assert second.last_run.cache_hits == len(second.last_run.bids) == stored
    batch = {k: ("sim/balanced", v) for k, v in list(other._backing.memory.items())[:2]}
    store.cache_put(batch)  # already there: ignored, not an error
    assert store.cache_count() == stored


# --- the sweep CLI, and resuming a sweep whose process was SIGKILLed mid-way -------------------


def write_spec(path: Path, latency: float = 0.0) -> Path:
    agents = [{**a, "litellm_kwargs": {"sim_latency": latency}} for a in AGENTS]
    path.write_text(json.dumps({"name": "resume-me", "base": {"max_loops": 8, "agents": agents},
                                "grid": {"threshold": [0.3, 0.35, 0.4, 0.45]},
                                "tasks": ["Should we?"], "repeats": 4, "concurrency": 2,
                                "bid_cache": False}))
    return path


def sweep_process(db: Path, *args: str) -> subprocess.Popen[str]:
    """`groupchat-lab sweep *args` in a process of its own, on the database `db`."""
    return subprocess.Popen([sys.executable, "-m", "groupchat_core", "sweep", *args], cwd=ROOT,
                            env={**os.environ, "GROUPCHAT_DB": f"sqlite:///{db}"}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db, timeout=10) as conn:
        return conn.execute(sql).fetchall()


def test_a_sigkilled_sweep_resumes_without_running_a_finished_cell_twice(tmp_path):
    db = tmp_path / "sweeps.db"
    spec = write_spec(tmp_path / "sweep.json", latency=0.05)
    proc = sweep_process(db, str(spec))
    def mid_way() -> bool:  # kill with cells done and a cell mid-run
        if not db.exists():
            return False
        try:
            finished = query(db, "SELECT cell FROM runs WHERE status = 'finished'")
            running = query(db, "SELECT cell FROM runs WHERE status = 'running'")
        except sqlite3.OperationalError:  # the schema is being created
            return False
        return len(finished) >= 3 and bool(running)

    eventually(mid_way, "the sweep getting going", step=0.02,
               alive=lambda: None if proc.poll() is None else str(proc.communicate()))
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()

    (sweep_id, status), = query(db, "SELECT sweep_id, status FROM sweeps")
    before = dict(query(db, "SELECT cell, run_id FROM runs WHERE status = 'finished'"))
    in_flight = dict(query(db, "SELECT run_id, cell FROM runs WHERE status = 'running'"))
    assert status == "running" and 3 <= len(before) < 16 and in_flight  # killed mid-way

    store = RunStore(f"sqlite:///{db}")  # opening marks the dead process's runs and sweep
    assert store.get_sweep(sweep_id)["status"] == "interrupted"
    assert set(store.list_runs(status="interrupted")["run_id"]) == set(in_flight)

    resumed = sweep_process(db, str(spec), "--resume", sweep_id[:10])
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert f"sweep {sweep_id} finished: 16/16 cells done; this session " \
           f"{16 - len(before)} cells" in out
    assert "resumed" in err and f"{len(before)} already done" in err

    runs = store.list_runs(sweep_id=sweep_id)
    done = runs[runs["status"] == "finished"]
    assert len(done) == 16 and done["cell"].is_unique  # every cell exactly once
    after = dict(zip(done["cell"], done["run_id"], strict=True))
    assert {cell: after[cell] for cell in before} == before  # finished cells were not re-run
    for run_id, cell in in_flight.items():  # interrupted cells were re-run
        assert after[cell] != run_id
    assert set(runs["status"]) == {"finished", "interrupted"}
    assert store.get_sweep(sweep_id)["status"] == "finished"


def test_the_cli_reports_budget_stops_and_estimates(tmp_path, capsys):
    db = tmp_path / "cli.db"
    spec = write_spec(tmp_path / "s.json")
    os.environ["GROUPCHAT_DB"] = f"sqlite:///{db}"  # the autouse fixture restores it

    assert main(["sweep", str(spec), "--estimate"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("16 cells to run (0 already done): up to 336 model calls")
    assert RunStore().list_sweeps().empty  # an estimate runs nothing

    assert main(["sweep", str(spec), "--max-calls", "60"]) == 1
    out, err = capsys.readouterr()
    assert "stopped_budget" in out and "max_calls 60 reached" in out
    assert "budget cap: max_calls 60 reached" in err and "cells done" in err
    sweep_id = RunStore().list_sweeps()["sweep_id"].iloc[0]

    assert main(["sweep", "--resume", sweep_id, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert "finished: 16/16" in out and err == ""


@pytest.mark.parametrize(("args", "message"), [
    (["sweep"], "give a sweep spec file, or --resume SWEEP"),
    (["sweep", "nope.yaml"], "cannot read sweep file 'nope.yaml'"),
    (["sweep", "--resume", "zzz"], "no sweep 'zzz'"),
    (["sweep", "x.yaml", "--max-usd", "-1"], "--max-usd must be positive"),
    (["sweep", "x.yaml", "--take-over"], "--take-over only applies with --resume SWEEP"),
])
def test_cli_errors_are_one_line(args, message, capsys):
    assert main(args) == 2
    _, err = capsys.readouterr()
    assert err.startswith("error: ") and message in err and err.count("\n") == 1



# === sweep specs, the estimate, search spaces ====================================================

BASE = {"max_loops": 6, "seed": 10, "agents": [
    {"agent_name": "Optimist", "system_prompt": "You argue for the benefits.",
     "model_name": "sim/balanced"},
    {"agent_name": "Pessimist", "system_prompt": "You argue for the risks.",
     "model_name": "sim/eager"}]}


def spec_data(**changes) -> dict:
    data = {"schema_version": 1, "name": "t", "base": json.loads(json.dumps(BASE)),
            "grid": {"threshold": [0.4, 0.6], "recency_penalty": [0.1, 0.3, 0.5]},
            "tasks": ["Plan the offsite.", "Pick a database."], "repeats": 2}
    data.update(changes)
    return data


def test_a_yaml_spec_loads_and_expands_into_stable_cells(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(textwrap.dedent("""\
        schema_version: 1
        name: thresholds
        base:
          max_loops: 6
          seed: 10
          agents:
            - {agent_name: A, model_name: sim/balanced}
            - {agent_name: B, model_name: sim/eager}
        grid:
          threshold: [0.4, 0.6]
          recency_window: [0, 2]
        tasks: [Plan the offsite., Pick a database.]
        repeats: 3
        max_calls: 500
    """))
    spec = load_sweep(path)
    cells = list(spec.cells())
    assert spec.cell_count() == len(cells) == 2 * 2 * 2 * 3
    assert [c.index for c in cells] == list(range(24))
    assert len({c.key for c in cells}) == 24
    first = cells[0]
    assert json.loads(first.key) == {"threshold": 0.4, "recency_window": 0, "task": 0,
                                     "repeat": 0}
    assert [c.key for c in load_sweep(path).cells()] == [c.key for c in cells]  # stable

    chat = spec.chat_spec(cells[-1])
    assert (chat.threshold, chat.recency_window, chat.seed, chat.max_loops) == (0.6, 2, 12, 6)
    assert spec.tasks[cells[-1].task_index] == "Pick a database."
    assert spec.max_calls == 500 and spec.bid_cache is None and spec.concurrency == 4


def test_model_temperature_and_prompt_axes_apply_to_every_agent():
    spec = parse_sweep(spec_data(grid={
        "model": ["sim/reserved", "sim/contrarian"], "temperature": [0, 1.5],
        "bid_prompt": {"short": "You are {agent_name}. Bid above {threshold}.",
                       "plain": "{agent_name}: respond."}}, tasks=["t"], repeats=1))
    cells = list(spec.cells())
    assert len(cells) == 8
    cell = next(c for c in cells if c.params == {"model": "sim/contrarian", "temperature": 1.5,
                                                 "bid_prompt": "short"})
    chat = spec.chat_spec(cell)
    assert {a.model_name for a in chat.agents} == {"sim/contrarian"}
    assert {a.temperature for a in chat.agents} == {1.5}
    assert chat.bid_prompt.startswith("You are {agent_name}")
    assert '"bid_prompt":"short"' in cell.key


@pytest.mark.parametrize(("change", "message"), [
    ({"colour": "red"}, "colour: unknown key"),
    ({"grid": {"thresold": [0.5]}}, "grid.thresold: unknown key"),
    ({"grid": {"threshold": ["high"]}}, r"grid.threshold\[0\] must be a finite number"),
    ({"grid": {"threshold": []}}, "grid.threshold must be a non-empty list"),
    ({"grid": {"threshold": [0.5, 0.5]}}, "lists a value twice"),
    ({"grid": {"max_loops": [True]}}, r"grid.max_loops\[0\] must be an integer >= 1"),
    ({"grid": {"recency_window": [-1]}}, r"grid.recency_window\[0\] must be an integer >= 0"),
    ({"grid": {"temperature": [3]}}, r"must be a finite number >= 0 and <= 2"),
    ({"grid": {"model": ["sim/nobody"]}}, "unknown sim persona 'nobody'"),
    ({"grid": {"bid_prompt": {"x": "{secret}"}}}, "unknown placeholder"),
    ({"tasks": []}, "tasks must be a list of 1 to"),
    ({"tasks": ["ok", "  "]}, r"tasks\[1\] must be a non-empty string"),
    ({"repeats": 0}, "repeats must be an integer >= 1"),
    ({"concurrency": 1000}, "concurrency must be an integer >= 1 and <= 256"),
    ({"max_usd": -1}, "max_usd must be a positive amount"),
    ({"schema_version": 2}, "schema_version 2 is not supported"),
    ({"base": {**BASE, "agents": BASE["agents"][:1]}}, "at least 2 agents"),
    ({"base": {**BASE, "threshold": "x"}}, "invalid base: threshold"),
    ({"grid": {"threshold": [i / 1000 for i in range(1000)], "recency_penalty": [0.1, 0.2]},
      "repeats": 100}, f"over the {MAX_CELLS:,} limit"),  # refused before anything runs
])
def test_invalid_specs_are_one_clear_error(change, message):
    with pytest.raises(ConfigError, match=message):
        parse_sweep(spec_data(**change))


def test_untrusted_files_keep_secrets_and_aliases_out():
    keyed = json.loads(json.dumps(spec_data()))
    keyed["base"]["agents"][0]["api_key"] = "sk-leak-me-123"
    with pytest.raises(ConfigError) as caught:
        load_sweep_text(json.dumps(keyed))
    assert "sk-leak-me" not in str(caught.value) and "api_key" in str(caught.value)
    with pytest.raises(ConfigError, match="aliases are not allowed"):
        load_sweep_text("name: &a x\nbase: *a\ntasks: [t]\n")
    with pytest.raises(ConfigError, match="over the"):
        load_sweep_text("x" * 2_000_000)


def test_the_estimate_of_a_sim_sweep_is_exact_in_calls_and_free(tmp_path):
    spec = parse_sweep(spec_data())
    result = estimate(spec)
    cells = spec.cell_count()
    assert result.cells == cells == 24
    assert result.calls_upper == cells * 2 * (6 - 1)
    assert result.cost_usd_upper == 0.0 and result.unpriced_models == []
    # issue 11: sims send no prompt and generate no tokens (it used to promise 1,235,520)
    assert result.prompt_tokens_upper == 0 and result.completion_tokens_upper == 0
    assert "0 prompt + 0 completion tokens" in result.summary()
    assert result.calls_typical is None
    assert any("offline simulations, no cost" in a for a in result.assumptions)
    assert "up to 240 model calls" in result.summary()

    store = RunStore(f"sqlite:///{tmp_path}/e.db")
    run_sweep(parse_sweep(spec_data(repeats=1, tasks=["t"])), store)
    typical = plan_sweep(spec, store).estimate
    assert typical is not None and 0 < typical.calls_typical <= typical.calls_upper
    assert any("earlier finished runs of these agents (6)" in a for a in typical.assumptions)


def test_priced_models_are_costed_with_litellms_prices_and_unknown_ones_said_so():
    from groupchat_core.providers._litellm import litellm_module

    priced = spec_data(grid={"model": ["openai/gpt-4o-mini"]}, tasks=["t"], repeats=1)
    result = estimate(parse_sweep(priced))
    prompt, completion = litellm_module().cost_per_token(
        model="openai/gpt-4o-mini", prompt_tokens=result.prompt_tokens_upper,
        completion_tokens=result.completion_tokens_upper)
    assert result.cost_usd_upper == pytest.approx(prompt + completion) and prompt > 0
    assert any("litellm's cost map for openai/gpt-4o-mini" in a for a in result.assumptions)

    local = spec_data(grid={"model": ["openai/local-model"]}, tasks=["t"], repeats=1)
    unknown = estimate(parse_sweep(local))
    assert unknown.cost_usd_upper is None and unknown.unpriced_models == ["openai/local-model"]
    assert "cost up to unknown" in unknown.summary()
    assert any("max_usd cannot see it" in a for a in unknown.assumptions)


def test_sim_sweeps_never_import_litellm(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec_data(repeats=1, tasks=["t"])))
    code = textwrap.dedent(f"""
        import sys
        from groupchat_core.store import RunStore
        from groupchat_core.sweeps import load_sweep, plan_sweep, run_sweep
        store = RunStore("sqlite:///{tmp_path}/s.db")
        spec = load_sweep({str(path)!r})
        print(plan_sweep(spec, store).estimate.cost_usd_upper)
        print(run_sweep(spec, store).status)
        print("litellm" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True, cwd=ROOT).stdout.split()
    assert out == ["0.0", "finished", "False"]


# --- search spaces: order, roster, models per agent, random search ---------------------------

NAMES = ("Ann", "Bob", "Cy")


def agents(names=NAMES, model="sim/balanced"):
    return [{"agent_name": n, "model_name": model} for n in names]


def sweep(grid=None, **changes):
    data = {"name": "space", "base": {"max_loops": 5, "agents": agents()},
            "grid": grid if grid is not None else {}, "tasks": ["Plan the offsite."],
            "repeats": 1}
    data.update(changes)
    return parse_sweep(data)


def test_order_all_is_every_permutation_and_each_cell_runs_in_its_order():
    spec = sweep({"order": "all", "threshold": [0.3, 0.6]})
    cells = list(spec.cells())
    orders = {tuple(c.params["order"]) for c in cells}
    assert len(cells) == 12 and len(orders) == 6 and {tuple(o) for o in orders} == set(
        __import__("itertools").permutations(NAMES))
    for cell in cells:
        assert [a.agent_name for a in spec.chat_spec(cell).agents] == cell.params["order"]
    assert len({c.key for c in cells}) == 12


def test_ties_go_to_the_earlier_agent_of_the_cells_order(store):
    """Equal bids over real HTTP: the first of the cell's order speaks first."""
    with FakeOpenAIServer() as server:
        server.set_responder(None, lambda body: tool_call(0.9, "Same."))
        base = {"max_loops": 3, "recency_penalty": 0.0, "agents": [
            {"agent_name": n, "model_name": "openai/gpt-4o-mini", "api_base": server.base_url}
            for n in ("Ann", "Bob")]}
        spec = parse_sweep({"base": base, "grid": {"order": [["Ann", "Bob"], ["Bob", "Ann"]]},
                            "tasks": ["t"], "bid_cache": False})
        outcome = run_sweep(spec, store)
    frame = sweep_results(store, outcome.sweep_id)
    assert list(frame["status"]) == ["finished", "finished"]
    for _, row in frame.iterrows():
        turns = store.turns([row["run_id"]]).sort_values("turn")
        assert turns["winner"].iloc[0] == row["order"].split(" → ")[0]
        assert turns["reason"].iloc[0] == "tie_by_order"


def test_a_permutation_axis_too_large_is_refused_naming_the_fix_and_sampling_is_seeded():
    ten = [f"A{i}" for i in range(10)]
    with pytest.raises(ConfigError) as err:
        parse_sweep({"base": {"agents": agents(ten)}, "grid": {"order": "all"},
                     "tasks": ["t"]})
    text = str(err.value)
    assert "3,628,800" in text and "order: {sample: 100}" in text and "\n" not in text
    sampled = {"base": {"agents": agents(ten)}, "tasks": ["t"], "grid": {"order": {"sample": 50}}}
    first, again = parse_sweep(sampled), parse_sweep(sampled)
    other = parse_sweep({**sampled, "sample_seed": 9})
    keys = [c.key for c in first.cells()]
    assert keys == [c.key for c in again.cells()] and len(set(keys)) == 50
    assert keys != [c.key for c in other.cells()]
    assert all(sorted(c.params["order"]) == sorted(ten) for c in first.cells())
    with pytest.raises(ConfigError, match="only 6"):
        sweep({"order": {"sample": 7}})


def test_rosters_by_size_or_listed_and_their_bounds():
    spec = sweep({"roster": {"sizes": [2, 3]}})
    rosters = [c.params["roster"] for c in spec.cells()]
    assert rosters == [["Ann", "Bob"], ["Ann", "Cy"], ["Bob", "Cy"], ["Ann", "Bob", "Cy"]]
    cell = next(c for c in spec.cells() if c.params["roster"] == ["Ann", "Cy"])
    assert [a.agent_name for a in spec.chat_spec(cell).agents] == ["Ann", "Cy"]
    listed = sweep({"roster": [["Cy", "Ann"]], "order": [["Cy", "Bob", "Ann"]]})
    only = next(listed.cells())
    assert only.params["roster"] == ["Ann", "Cy"]  # base order: one roster, one value
    assert [a.agent_name for a in listed.chat_spec(only).agents] == ["Cy", "Ann"]  # the order's
    for grid, message in (({"roster": [["Ann"]]}, "a chat needs 2"),
                          ({"roster": [["Ann", "Zed"]]}, "'Zed', not an agent"),
                          ({"roster": {"sizes": [1]}}, "sizes from 2 to 3"),
                          ({"roster": [["Ann", "Bob"], ["Bob", "Ann"]]}, "same value twice")):
        with pytest.raises(ConfigError, match=message):
            sweep(grid)
    many = [f"A{i:02d}" for i in range(20)]
    with pytest.raises(ConfigError, match=r"sample: 100"):
        parse_sweep({"base": {"agents": agents(many)}, "grid": {"roster": {"sizes": [5]}},
                     "tasks": ["t"]})
    sampled = parse_sweep({"base": {"agents": agents(many[:12])}, "tasks": ["t"],
                           "grid": {"roster": {"sizes": [3], "sample": 10}}})
    assert len(list(sampled.cells())) == 10


def test_a_model_per_agent_and_its_conflict_with_model():
    spec = sweep({"agent_models": {"Ann": ["sim/balanced", "sim/eager"],
                                   "Cy": ["sim/reserved", "sim/expert"]}})
    cells = list(spec.cells())
    assert len(cells) == 4
    chat = spec.chat_spec(cells[-1])
    assert [a.model_name for a in chat.agents] == ["sim/eager", "sim/balanced", "sim/expert"]
    with pytest.raises(ConfigError, match="use one"):
        sweep({"model": ["sim/eager"], "agent_models": {"Ann": ["sim/eager"]}})
    with pytest.raises(ConfigError, match="unknown sim persona"):
        sweep({"agent_models": {"Ann": ["sim/no-such-persona"]}})


def test_random_search_is_seeded_within_its_ranges_and_combines_with_the_grid():
    draw = {"samples": 20, "threshold": {"low": 0.2, "high": 0.8},
            "recency_window": {"low": 1, "high": 4}, "model": {"choice": ["sim/balanced",
                                                                          "sim/eager"]}}
    def drawn(random=draw, **changes):
        return sweep({"recency_penalty": [0.0, 0.3]}, random=random, **changes)

    spec = drawn()
    cells = list(spec.cells())
    assert len(cells) == 40 and len({c.key for c in cells}) == 40
    assert all(0.2 <= c.params["threshold"] <= 0.8 for c in cells)
    assert all(isinstance(c.params["recency_window"], int) and 1 <= c.params["recency_window"]
               <= 4 for c in cells)
    assert {c.params["model"] for c in cells} == {"sim/balanced", "sim/eager"}
    keys = [c.key for c in cells]
    assert [c.key for c in drawn().cells()] == keys  # reproducible: a resume rebuilds them
    assert [c.key for c in drawn(sample_seed=3).cells()] != keys
    chat = spec.chat_spec(cells[3])
    assert chat.threshold == cells[3].params["threshold"]
    assert chat.agents[0].model_name == cells[3].params["model"]
    for bad, message in (({"samples": 0, "threshold": {"low": 0, "high": 1}}, "from 1 to"),
                         ({"samples": 3}, "no parameter"),
                         ({"samples": 3, "threshold": {"low": 0.9, "high": 0.1}}, "above high"),
                         ({"samples": 3, "threshold": {"low": 0, "high": 5}}, "from -1.0 to 2.0"),
                         ({"samples": 3, "seed": 1}, "cannot be drawn"),
                         ({"samples": 3, "recency_penalty": {"low": 0, "high": 1}},
                          "both a grid axis")):
        with pytest.raises(ConfigError, match=message):
            drawn(bad)


def test_the_estimate_covers_the_new_axes_and_counts_a_rosters_agents():
    spec = sweep({"roster": {"sizes": [2, 3]}, "order": "all"},
                 random={"samples": 2, "temperature": {"low": 0, "high": 1}}, repeats=2)
    result = estimate(spec)
    assert result.cells == 6 * 4 * 2 * 2
    turns = 5 - 1
    assert result.calls_upper == sum(turns * len(spec.cell_agents(c)) for c in spec.cells())
    assert result.calls_upper == 6 * 2 * 2 * turns * (2 + 2 + 2 + 3)
    assert result.prompt_tokens_upper == 0 and result.cost_usd_upper == 0.0  # sims
    assert "search space: 6 order × 4 roster × 2 random samples × 1 task(s) × 2 repeat(s) = " \
           "96 cells" in result.summary()


def test_cell_labels_stay_unique_and_one_to_one_for_awkward_names():
    odd = ["A → B", "C", "D + E"]
    spec = parse_sweep({"base": {"agents": agents(odd)}, "tasks": ["t"],
                        "grid": {"order": "all", "roster": {"sizes": [2, 3]}}})
    from groupchat_core.sweeps._results import _cell_row

    rows = [_cell_row(spec, c) for c in spec.cells()]
    assert len({(r["order"], r["roster"]) for r in rows}) == len(rows) == 6 * 4
    assert all(json.loads(r["order"]) for r in rows)  # a name holds the arrow: JSON labels


def test_a_capped_order_roster_random_sweep_stops_then_resumes_without_rerunning(store):
    spec = sweep({"order": {"sample": 3}, "roster": {"sizes": [2, 3]}},
                 random={"samples": 2, "threshold": {"low": 0.2, "high": 0.6}},
                 concurrency=1)
    total = spec.cell_count()
    first = run_sweep(spec, store, max_calls=20)
    assert first.status == "stopped_budget" and first.cells_done < total
    plan = plan_sweep(None, store, resume=first.sweep_id)
    assert len(plan.todo) == total - first.cells_done and plan.estimate is not None
    assert plan.estimate.cells == len(plan.todo)
    second = run_sweep(plan=plan, store=store)
    assert second.status == "finished" and second.cells_done == total
    runs = store.list_runs(sweep_id=first.sweep_id, status="finished")
    assert runs["cell"].is_unique and len(runs) == total
    frame = sweep_results(store, first.sweep_id)
    assert set(frame["status"]) == {"finished"}
    assert frame["roster"].notna().all() and frame["sample"].notna().all()
    assert set(frame["agents"]) == {2, 3}


@pytest.mark.usefixtures("fresh_engines")
def test_cli_estimate_shows_the_space_and_samples_override(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"base": {"agents": agents()}, "tasks": ["t"],
                                "grid": {"order": "all"},
                                "random": {"samples": 4, "threshold": {"low": 0.2,
                                                                       "high": 0.8}}}))
    code, out, err = run_cli(capsys, "sweep", str(path), "--estimate", "--samples", "7")
    assert code == 0, err
    assert "6 order × 7 random samples × 1 task(s) × 1 repeat(s) = 42 cells" in out
    path.write_text(json.dumps({"base": {"agents": agents([f"A{i}" for i in range(10)])},
                                "tasks": ["t"], "grid": {"order": "all"}}))
    code, _, err = run_cli(capsys, "sweep", str(path), "--estimate")
    # 10 agents have 10! = 3,628,800 orders: "all" is refused, sampling is offered
    assert code == 2 and "order: {sample: 100}" in err and err.count("\n") == 1


@pytest.mark.parametrize("name", ["sweep-order.yaml", "sweep-random.yaml"])
def test_the_example_sweep_specs_load_and_estimate(name):
    spec = load_sweep(ROOT / "examples" / name)
    result = estimate(spec)
    assert result.cells == spec.cell_count() > 0 and result.prompt_tokens_upper == 0
    assert "search space:" in result.summary()


# --- a sweep runs agents only: people are refused, saying why -----------------------------

PAIR = agents(("A", "B"))
WHY = "a sweep runs its cells unattended, so nobody would be in the room to bid"
SEATS = [
    ({"agents": PAIR, "people": [{"name": "Ann"}]}, "base.people: a sweep cannot seat people"),
    ({"agents": [*PAIR, {"agent_name": "Ann", "kind": "human"}]},
     "base.agents[2]: 'Ann' is a person (kind: human); a sweep cannot seat people"),
    ({"agents": PAIR, "human_selector": {"name": "Judge"}},
     "base.human_selector: a sweep cannot have a person pick the speaker"),
]


def people_sweep(base: dict[str, Any]) -> dict[str, Any]:
    return {"base": base, "tasks": ["Plan it."]}


@pytest.mark.parametrize(("base", "says"), SEATS)
def test_a_sweep_spec_cannot_carry_people_and_says_why_there_and_from_the_cli(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, base: dict[str, Any],
        says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_sweep(people_sweep(base))
    assert str(caught.value) == f"invalid sweep spec: {says}: {WHY}; run a chat with people " \
        "with GroupChat(...) or `groupchat-lab run --human NAME`"
    assert "unknown" not in str(caught.value)
    path = tmp_path / "people.yaml"
    path.write_text(json.dumps(people_sweep(base)))
    code, out, err = run_cli(capsys, "sweep", str(path), "--estimate")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: invalid people.yaml: {says}: {WHY}")
    assert "Traceback" not in err


def test_people_at_the_top_of_a_sweep_file_are_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**people_sweep({"agents": PAIR}), "people": [{"name": "Ann"}]}))
    with pytest.raises(ConfigError, match=f"^invalid s.json: people: .*{WHY}"):
        load_sweep(path)


def test_an_agent_kind_is_no_seat_for_a_person() -> None:
    """Only `kind: human` is a person; any other kind stays the generic unknown keyword."""
    with pytest.raises(ConfigError, match="unknown keyword 'kind'"):
        parse_sweep(people_sweep({"agents": [*PAIR, {"agent_name": "C", "kind": "agent"}]}))


def test_a_sweep_without_people_builds_its_cells_from_the_agents() -> None:
    spec = parse_sweep(people_sweep({"agents": PAIR}))
    assert [a.agent_name for a in spec.base.agents] == ["A", "B"]


# --- rate limits in the estimate (issue 42.2) -------------------------------------------------

LOCAL = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def no_limits() -> Iterator[None]:
    RATE_LIMITS.clear()
    yield
    RATE_LIMITS.clear()


def rated(deployments: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    """16 cells of two agents on one model, two turns each: 64 calls."""
    agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
               "api_base": LOCAL, "timeout": 10} for n in "AB"]
    data: dict[str, Any] = {"name": "x", "base": {"agents": agents, "max_loops": 3},
                            "grid": {"threshold": [0.1, 0.2, 0.3, 0.4]}, "tasks": ["Go"],
                            "repeats": 4, "concurrency": 16, **extra}
    if deployments is not None:
        data["deployments"] = {"openai/fake": deployments}
    return parse_sweep(data)


def test_deployments_rpm_make_the_wall_time_at_least_calls_over_rpm() -> None:
    free = estimate(rated([{"name": "a", "api_base": LOCAL}]))
    paced = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 12},
                           {"name": "b", "api_base": LOCAL, "rpm": 8}]))
    assert free.calls_upper == paced.calls_upper == 64
    assert free.wall_s_upper < 60  # two turns of 16 cells at once: seconds, not minutes
    assert paced.wall_s_upper >= 64 / 20 * 60  # 20 a minute together: 3.2 minutes at least
    assert any("at most 20 requests a minute" in a and "64 calls" in a
               for a in paced.assumptions)
    assert not any("rate limit" in a for a in free.assumptions)


def test_a_deployment_without_rpm_leaves_the_model_unpaced_and_a_process_wide_rpm_paces() -> None:
    mixed = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 1},
                           {"name": "b", "api_base": LOCAL}]))
    assert mixed.wall_s_upper < 60 and not any("rate limit" in a for a in mixed.assumptions)
    set_rate_limit("openai/fake", rpm=32)
    assert estimate(rated()).wall_s_upper >= 64 / 32 * 60


def test_a_queue_longer_than_the_bid_deadline_only_paces() -> None:
    # 16 cells x 2 agents = 32 bids at once on 20 a minute: up to 2 minutes' wait against the
    # 120 s bid deadline, which that wait does not use up: a floor, no warning
    tight = estimate(rated([{"name": "a", "api_base": LOCAL, "rpm": 20}]))
    assert any("counts against neither" in a for a in tight.assumptions)
    assert not any(a.startswith("warning") for a in tight.assumptions)
