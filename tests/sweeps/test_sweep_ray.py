"""Sweeps on a real local Ray cluster (a head, two worker nodes): SQLite and PostgreSQL, a worker
killed mid-cell, global budget caps, keys never in the store or logs, the CLI, a deployment's rpm
held across workers.
Private imports (`store._schema`): no public name."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from groupchat_core import background_loop
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.sweeps import (
    CellFinished,
    RayExecutor,
    arun_sweep,
    parse_sweep,
    run_sweep,
)
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers.waits import eventually
from tests.sweeps import DEBATERS

MB = 2**20


def slow(latency):
    return [{**a, "litellm_kwargs": {"sim_latency": latency}} for a in DEBATERS]


AGENTS = slow(0.04)


def spec(**changes):
    data = {"name": "ray", "base": {"max_loops": 8, "agents": AGENTS},
            "grid": {"threshold": [0.3, 0.5, 0.7]}, "tasks": ["Should hospitals adopt AI?"],
            "repeats": 2, "concurrency": 2, "bid_cache": False}
    data.update(changes)
    return parse_sweep(data)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head (no CPUs: it schedules nothing) and two worker nodes of one CPU each."""
    import ray
    from ray.cluster_utils import Cluster

    small = {"object_store_memory": 100 * MB}
    made = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, **small})
    nodes = [made.add_node(num_cpus=1, **small) for _ in range(2)]
    made.wait_for_nodes()
    ray.init(address=made.address, include_dashboard=False, log_to_driver=False,
             runtime_env={"py_modules": [__import__("groupchat_core")]})
    try:
        yield made, nodes
    finally:
        ray.shutdown()
        made.shutdown()


def killer(store, kill_index: int):
    """A watch that SIGKILLs the worker process running cell `kill_index` at its third turn,
    once its run is in the store (a partial run to clean up), and remembers the pid."""
    seen: dict[str, object] = {"killed": None}

    def watch(job, item):
        if item["kind"] == "hello":
            seen[f"pid:{job.cell}"] = item["pid"]
        elif item["kind"] == "turn" and job.index == kill_index and seen["killed"] is None:
            turns = int(seen.get(f"turns:{job.cell}", 0)) + 1
            seen[f"turns:{job.cell}"] = turns
            if turns >= 3:
                eventually(lambda: in_store(store, item["run_id"]),  # the writer commits it
                           "the cell's run in the store", step=0.01)
                seen["killed"] = seen[f"pid:{job.cell}"]
                os.kill(int(seen[f"pid:{job.cell}"]), signal.SIGKILL)
    return watch, seen


def in_store(store, run_id):
    try:
        return store.run_info(run_id) is not None
    except Exception:  # not written yet
        return False


def writer_pids(store, sweep_id):
    from sqlalchemy import select

    from groupchat_core.store._schema import runs

    with store.read("test") as conn:
        return {r.pid for r in conn.execute(select(runs.c.pid).where(
            runs.c.sweep_id == sweep_id))}


def check_every_cell_once(store, sweep, outcome):
    runs = store.list_runs(sweep_id=outcome.sweep_id)
    finished = runs[runs["status"] == "finished"]
    keys = sorted(c.key for c in sweep.cells())
    assert sorted(finished["cell"]) == keys  # every cell finished, none twice
    claims = store.cell_claims(outcome.sweep_id)
    assert sorted(claims["cell"]) == keys and set(claims["state"]) == {"finished"}
    assert set(claims["run_id"]) == set(finished["run_id"])
    return runs


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_sweep_on_ray_survives_a_killed_worker(cluster, backend, request):
    store = (request.getfixturevalue("sqlite_store") if backend == "sqlite"
             else RunStore(request.getfixturevalue("pg_url")))
    sweep = spec(base={"max_loops": 8, "agents": slow(0.2)},  # the kill lands mid-cell
                 grid={"threshold": [0.3, 0.5]})
    watch, seen = killer(store, kill_index=1)
    events = []
    with RayExecutor(store, watch=watch) as executor:
        assert executor.workers_record is (backend == "postgresql")
        outcome = run_sweep(sweep, store, executor=executor, on_event=events.append)

    assert (outcome.status, outcome.cells_done) == ("finished", 4)
    assert seen["killed"] is not None
    runs = check_every_cell_once(store, sweep, outcome)
    lost = runs[runs["status"] != "finished"]  # the killed attempt: kept, flagged, not counted
    assert len(lost) == 1 and lost.iloc[0]["status"] == "error"
    assert "Ray worker" in lost.iloc[0]["error"] and "died" in lost.iloc[0]["error"]
    killed_cell = lost.iloc[0]["cell"]
    # whoever recorded: the rows are whole runs (every finished run has its turns and bids)
    bids = store.bids(list(runs["run_id"]))
    finished = runs[runs["status"] == "finished"]
    assert (finished.set_index("run_id")["total_calls"]
            == bids.groupby("run_id")["calls"].sum().reindex(finished["run_id"])).all()
    done = [e for e in events if isinstance(e, CellFinished)]
    workers = Counter(e.worker.split("/")[1] for e in done)  # by node
    _, nodes = cluster  # which worker node ran which cell is Ray's choice; never the head
    assert set(workers) <= {n.node_id[:8] for n in nodes} and sum(workers.values()) == 4
    assert all(str(seen["killed"]) not in e.worker for e in done if e.cell == killed_cell)
    pids = writer_pids(store, outcome.sweep_id)
    if backend == "postgresql":
        assert os.getpid() not in pids  # the workers wrote their runs themselves
    else:
        assert pids == {os.getpid()}  # SQLite: only the driver writes the file
    store.engine.dispose()


def test_a_budget_cap_is_global_across_workers_and_a_resume_finishes(cluster, sqlite_store):
    store = sqlite_store
    sweep = spec(repeats=3, max_calls=60)  # 9 cells of about 24 calls each
    with RayExecutor(store) as executor:
        stopped = run_sweep(sweep, store, executor=executor)
        assert stopped.status == "stopped_budget" and "max_calls 60" in stopped.reason
        bids = store.bids(list(store.list_runs(sweep_id=stopped.sweep_id)["run_id"]))
        # global, not per worker: over both workers together at most one turn of the two
        # cells in flight (3 bids each) beyond the cap
        assert 60 <= bids["calls"].sum() <= 60 + 2 * 2 * 3
        assert stopped.calls_total == bids["calls"].sum()
        resumed = run_sweep(None, store, resume=stopped.sweep_id, executor=executor,
                            max_calls=10_000)
    assert resumed.status == "finished" and resumed.cells_done == 9
    assert resumed.cells_run == 9 - stopped.cells_done  # no finished cell ran again
    check_every_cell_once(store, sweep, resumed)


def test_a_cell_cancelled_by_the_budget_cap_records_the_calls_its_bids_hold(cluster,
                                                                            sqlite_store):
    """Issue 44: such a cell was recorded with total_calls 0 while its bids held calls."""
    store = sqlite_store
    sweep = spec(base={"max_loops": 8, "agents": slow(0.05)}, repeats=3, max_calls=30)
    with RayExecutor(store) as executor:
        stopped = run_sweep(sweep, store, executor=executor)
    assert stopped.status == "stopped_budget"
    runs = store.list_runs(sweep_id=stopped.sweep_id)
    cancelled = runs[runs["status"] == "cancelled"]
    sums = [int(store.bids(run_id)["calls"].sum()) for run_id in cancelled["run_id"]]
    assert sum(sums) > 0, "no cell was cancelled mid-run"
    assert [int(t) for t in cancelled["total_calls"]] == sums


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_ctrl_c_after_a_cells_run_finished_on_a_worker_leaves_no_open_claim(cluster, backend,
                                                                             request):
    """The sweep is cancelled as cell 0's result item arrives: its run is finished in the
    store (by the driver on SQLite, the worker on PostgreSQL), the runner never sees it. Its
    claim must still close with that run."""
    store = (request.getfixturevalue("sqlite_store") if backend == "sqlite"
             else RunStore(request.getfixturevalue("pg_url")))
    sweep = spec(repeats=1, concurrency=1)
    events, sweep_task = [], {}

    def cancel_at_the_result(job, item):
        if item["kind"] == "result" and job.index == 0:
            sweep_task["task"].cancel()  # Ctrl-C, between the run's end and the claim's

    async def ctrl_c(executor):
        sweep_task["task"] = asyncio.ensure_future(
            arun_sweep(sweep, store, executor=executor, on_event=events.append))
        with pytest.raises(asyncio.CancelledError):
            await sweep_task["task"]

    with RayExecutor(store, watch=cancel_at_the_result) as executor:
        background_loop().submit(ctrl_c(executor)).result(timeout=120)
        first = [e for e in events if isinstance(e, CellFinished)]
        assert [e.status for e in first] == ["cancelled"]  # the runner never saw the result
        sweep_id = first[0].sweep_id
        runs = store.list_runs(sweep_id=sweep_id)
        assert list(runs["status"]) == ["finished"]
        claims = store.cell_claims(sweep_id)
        assert list(zip(claims["state"], claims["run_id"], strict=True)) == [
            ("finished", runs.iloc[0]["run_id"])]
        resumed = run_sweep(None, store, resume=sweep_id, executor=executor)
    assert (resumed.status, resumed.cells_done, resumed.cells_run) == ("finished", 3, 2)
    check_every_cell_once(store, sweep, resumed)
    store.engine.dispose()


def test_keys_reach_workers_as_a_task_argument_never_the_store_or_ray_logs(cluster, sqlite_store,
                                                                   monkeypatch, tmp_path):
    secret = "sk-ray-test-5f1c0ffee"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("GROUPCHAT_TRUSTED_API_BASES", server.base_url)  # the key may go
        server.set_responder(None, lambda body: tool_call(0.6, "A point."))
        agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
                   "api_base": server.base_url} for n in ("A", "B")]
        sweep = spec(base={"max_loops": 2, "agents": agents}, grid={"threshold": [0.5]},
                     repeats=2)
        with RayExecutor(store := sqlite_store) as executor:
            outcome = run_sweep(sweep, store, executor=executor)
        auth = {r.headers.get("authorization") or r.headers.get("Authorization")
                for r in server.requests}
    assert outcome.status == "finished"
    assert auth == {f"Bearer {secret}"}  # the workers had the driver's key
    store.flush()
    dispose_engines()
    assert secret.encode() not in Path(store.url.removeprefix("sqlite:///")).read_bytes()
    import ray

    session = Path(ray._private.worker._global_node.get_session_dir_path())
    leaked = [p for p in session.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert leaked == []  # nor in the cluster's logs


def test_the_cli_runs_a_sweep_on_ray_and_refuses_a_stray_address(cluster, tmp_path, capsys):
    import json

    from groupchat_core.cli import main

    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(spec(grid={"threshold": [0.4, 0.6]}, repeats=1).to_data()))
    made, _ = cluster
    code = main(["sweep", str(path), "--executor", "ray", "--ray-address", made.address,
                 "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and "finished: 2/2 cells done" in out
    store = RunStore()
    assert set(store.list_runs()["status"]) == {"finished"}
    dispose_engines()
    assert main(["sweep", str(path), "--ray-address", made.address]) == 2
    assert "--ray-address only applies with --executor ray" in capsys.readouterr().err


def test_an_address_where_no_cluster_answers_is_one_line_at_once(tmp_path, capsys):
    import socket

    from groupchat_core.cli import main

    with socket.socket() as free:  # a port nobody listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    path = tmp_path / "sweep.json"
    path.write_text(__import__("json").dumps(spec(repeats=1).to_data()))
    assert main(["sweep", str(path), "--executor", "ray", "--ray-address",
                 f"127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in err and "Traceback" not in err
    assert main(["sweep", str(path), "--executor", "ray", "--ray-address", "nonsense"]) == 2
    assert "is not host:port" in capsys.readouterr().err


def test_half_a_cpu_per_cell_puts_two_cells_on_one_actors_cpu(cluster, sqlite_store):
    """The spec's fraction is what each cell reserves: an actor of one CPU runs two cells at
    once, and actors are added only when every one is full (the overlap's speed is a timing,
    not asserted: bench/sweep_http_ray.py)."""
    sweep = spec(base={"max_loops": 3, "agents": slow(0.05)}, grid={"threshold": [0.3, 0.7]},
                 concurrency=4, cpus_per_cell=0.5)
    executor = RayExecutor(sqlite_store, address="auto", cpus_per_cell=sweep.cpus_per_cell or 1)
    executor.start()
    asked: list[dict] = []
    remote = executor._remote

    class Spy:
        def options(self, **options):
            asked.append(options)
            return remote.options(**options)

    executor._remote = Spy()
    pids: set[int] = set()
    executor.watch = lambda job, item: pids.add(item["pid"]) if item["kind"] == "hello" else None
    outcome = run_sweep(sweep, sqlite_store, executor=executor)
    assert outcome.status == "finished" and outcome.cells_done == 4
    assert executor.slots == 2 and len(asked) == 2  # four cells in flight: two actors
    assert all(o["num_cpus"] == 1.0 for o in asked) and len(pids) == 2
    executor.close()  # its actors go, and with them the CPUs they hold


def paced_sweep(server, rpm, workers, **changes):
    """Cells of two agents on one deployment taking `rpm` a window, four cells an actor."""
    count = itertools.count()  # a new message every time: a chat never stops early
    server.set_responder(None, lambda body: tool_call(0.6, f"Point {next(count)}."))
    agents = [{"agent_name": n, "system_prompt": "Speak.", "model_name": "openai/fake",
               "api_base": "http://127.0.0.1:9/v1", "num_retries": 0} for n in ("Ann", "Bob")]
    return spec(base={"agents": agents, "max_loops": 3, "recency_penalty": 0.0},
                grid={"threshold": [0.1, 0.2]}, repeats=2 * workers,
                concurrency=4 * workers, cpus_per_cell=0.25,
                deployments={"openai/fake": [{"name": "only", "api_base": server.base_url,
                                              "rpm": rpm}]}, **changes)


def most_in_a_window(times, window):
    """The most of `times` that any half-open span [t, t + window) holds."""
    ordered = sorted(times)
    return max(sum(1 for u in ordered[i:] if u < t + window) for i, t in enumerate(ordered))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_deployments_rpm_holds_across_every_worker_of_the_sweep(cluster, sqlite_store,
                                                                  monkeypatch, workers):
    """Issue 42.2: each worker process paced on its own, so N workers sent N times the rpm.
    Every worker asks the sweep's one limiter actor: the server never sees more than the rpm
    in any window, and every bid still answers (the waits fail none)."""
    from groupchat_core.providers import _deployments

    monkeypatch.setattr(_deployments, "RPM_WINDOW_S", 1.0)  # the driver's: the limiter's
    rpm = 4
    with FakeOpenAIServer() as server:
        sweep = paced_sweep(server, rpm, workers)
        pids: set[int] = set()
        with RayExecutor(sqlite_store, cpus_per_cell=0.25, watch=lambda job, item: pids.add(
                item["pid"]) if item["kind"] == "hello" else None) as executor:
            outcome = run_sweep(sweep, sqlite_store, executor=executor)
        arrivals = [r.received_at for r in server.requests]
    assert (outcome.status, outcome.cells_done) == ("finished", 4 * workers), outcome.reason
    assert len(pids) == workers  # that many worker processes sent requests
    runs = check_every_cell_once(sqlite_store, sweep, outcome)
    bids = sqlite_store.bids(list(runs["run_id"]))
    assert len(bids) == len(arrivals) >= 3 * workers * rpm
    assert bids["error"].isna().all()  # every bid answered: the waits failed none
    # one pace for the sweep: never more than the rpm in any 1 s window, by the server's clock
    assert most_in_a_window(arrivals, 1.0) == rpm
    assert max(arrivals) - min(arrivals) >= (len(arrivals) // rpm - 1) * 1.0


def test_the_sweep_limiter_gives_back_what_a_cancelled_wait_or_a_dead_worker_took():
    """A worker cancelled while it waits sends `abandon`, which may reach the limiter before
    its `acquire`, during the wait, or after the grant; a worker that dies is `forget`-ten by
    the driver: each way the permit count stays whole (the class itself, no cluster: Ray only
    carries its calls)."""
    from groupchat_core.sweeps._ray_limits import SweepLimits, lease_owner

    async def scenario():
        limits = SweepLimits(window_s=0.05)
        await limits.abandon("early")  # before its acquire arrives: that acquire takes nothing
        assert await limits.acquire("k", 1, "early") is False
        assert await limits.acquire("k", 1, "a") is True  # the one permit
        waiting = asyncio.ensure_future(limits.acquire("k", 1, "b"))
        await asyncio.sleep(0.01)
        await limits.abandon("b")  # cancelled mid-wait
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await limits.release("a")
        assert await limits.acquire("k", 1, "c") is True  # back a window after "a" ended
        await limits.abandon("c")  # granted, then abandoned: given back as a request that ended
        assert await limits.acquire("k", 1, "h/1/d") is True
        # a dead worker (host h, pid 1): its wait ends, its permit comes back; others stay
        dead_wait = asyncio.ensure_future(limits.acquire("k", 1, "h/1/e"))
        other = asyncio.ensure_future(limits.acquire("k", 1, "h/12/f"))
        await asyncio.sleep(0.01)
        await limits.forget(lease_owner("h", 1))
        with pytest.raises(asyncio.CancelledError):
            await dead_wait
        assert await other is True
        by_ray = asyncio.ensure_future(limits.acquire("k", 1, "g"))  # Ray cancels it first
        await asyncio.sleep(0.01)
        by_ray.cancel()
        with pytest.raises(asyncio.CancelledError):
            await by_ray
        await limits.abandon("g")  # then its abandon arrives: nothing left to do or keep
        assert limits._gone == limits._abandoned == set()
        return await limits.stats()

    assert asyncio.run(scenario()) == {"window_s": 0.05, "granted": 4, "held": 1, "waiting": 0,
                                       "cancelled": 3}


def test_cells_cancelled_while_they_wait_for_the_sweeps_rpm_give_their_permits_back(
        cluster, sqlite_store, monkeypatch):
    """The sweep is stopped while bids of both workers queue at the limiter: their waits end
    there and their permits come back (none held or waiting once the sweep stopped)."""
    import ray

    from groupchat_core.providers import _deployments

    monkeypatch.setattr(_deployments, "RPM_WINDOW_S", 1.0)

    async def stop_while_bids_wait(executor, sweep):
        sweep_task = asyncio.ensure_future(arun_sweep(sweep, sqlite_store, executor=executor))
        while not sweep_task.done():
            limits = next(iter(executor._limits.values()), None)
            if limits is not None and (await limits.handle.stats.remote())["waiting"] >= 4:
                break
            await asyncio.sleep(0.05)
        sweep_task.cancel()  # Ctrl-C
        with pytest.raises(asyncio.CancelledError):
            await sweep_task
        return limits.handle

    with FakeOpenAIServer() as server:
        with RayExecutor(sqlite_store, cpus_per_cell=0.25) as executor:
            limiter = background_loop().submit(stop_while_bids_wait(
                executor, paced_sweep(server, 2, workers=2))).result(timeout=300)
            stats = {}

            def settled():
                stats.update(ray.get(limiter.stats.remote()))
                return stats["held"] == stats["waiting"] == 0

            eventually(settled, "every permit back at the limiter", step=0.05)
    assert stats["cancelled"] >= 1  # the workers' cancelled waits reached the limiter
    assert stats["granted"] >= len(server.requests)
