"""The sweep runner: recorded cells, events, results, budget caps, cancel, executors, the bid
cache (also on PostgreSQL), the CLI, and resuming a SIGKILLed sweep.
Private imports (finished_cells, short_label, BidCache, cache_stats): no public name."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from groupchat_core import Agent, ConfigError, GroupChat, StoreError, background_loop
from groupchat_core.cli import main
from groupchat_core.engine._bidcache import BidCache, cache_stats
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
    heatmap_frame,
    parse_sweep,
    run_sweep,
    studentized_mean,
    sweep_results,
    sweep_summary,
)
from groupchat_core.sweeps._plan import finished_cells
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT
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
