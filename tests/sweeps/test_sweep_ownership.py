"""One owner a sweep, each cell claimed once (issue 10 §4): a second `sweep --resume` is refused
naming the owner; forced races still run each cell once; a cancellation between a cell's run
ending and its claim's leaves no claim open. SQLite and PostgreSQL (`store`).
Private imports (`store._schema`, `CellResult`): to leave a claim open; an executor's result."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import update

from groupchat_core import background_loop
from groupchat_core.store import RunStore, SweepBusy
from groupchat_core.store._schema import sweep_cells, sweeps
from groupchat_core.sweeps import (
    CellJob,
    LocalExecutor,
    arun_sweep,
    load_sweep,
    parse_sweep,
    plan_sweep,
    run_sweep,
)
from groupchat_core.sweeps._executor import CellResult
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT
from tests.helpers.waits import eventually

pytestmark = pytest.mark.usefixtures("fresh_engines")

AGENTS = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("Ann", "Bo", "Cy")]


def write_spec(path: Path, latency: float, agents: list[dict] | None = None) -> Path:
    agents = agents or [{**a, "litellm_kwargs": {"sim_latency": latency}} for a in AGENTS]
    path.write_text(json.dumps({
        "name": "owned", "base": {"max_loops": 6, "agents": agents, "bid_timeout": 600},
        "grid": {"threshold": [0.3, 0.4, 0.5, 0.6]}, "tasks": ["Should we?"], "repeats": 3,
        "concurrency": 3, "bid_cache": False}))
    return path


def started_sweep(store: RunStore, tmp_path: Path, latency: float = 0.03,
                  max_calls: int = 40, agents: list[dict] | None = None) -> str:
    """A 12-cell sweep stopped by a budget cap after a few calls (resumable, owner gone)."""
    spec = load_sweep(write_spec(tmp_path / "sweep.json", latency, agents))
    outcome = run_sweep(spec, store, max_calls=max_calls)
    assert outcome.status == "stopped_budget" and outcome.cells_done < 12
    return outcome.sweep_id


def python(url: str, *args: str, text: bool = False) -> subprocess.Popen:
    """`python *args` in the repository, on the database at `url`."""
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, text=text,
                            env={**os.environ, "GROUPCHAT_DB": url},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def resume(url: str, sweep_id: str) -> subprocess.Popen[bytes]:
    return python(url, "-m", "groupchat_core", "sweep", "--resume", sweep_id, "--quiet")


def every_cell_once(store: RunStore, sweep_id: str) -> None:
    """Every cell of the stored spec finished exactly once, and its claim closed with that run
    (as tests/sweeps/test_sweep_ray.py's check_every_cell_once)."""
    keys = sorted(c.key for c in parse_sweep(store.get_sweep(sweep_id)["grid"]).cells())
    runs = store.list_runs(sweep_id=sweep_id)
    finished = runs[runs["status"] == "finished"]
    assert sorted(finished["cell"]) == keys, runs[["cell", "status"]]
    claims = store.cell_claims(sweep_id)
    assert sorted(claims["cell"]) == keys and set(claims["state"]) == {"finished"}
    assert dict(zip(claims["cell"], claims["run_id"], strict=True)) == dict(
        zip(finished["cell"], finished["run_id"], strict=True))


def wait_until_owned_by(store: RunStore, sweep_id: str, proc: subprocess.Popen[bytes]) -> None:
    def owned() -> bool:
        row = store.get_sweep(sweep_id)
        return bool(row["status"] == "running" and row["pid"] == proc.pid)

    eventually(owned, "the resume taking the sweep over", step=0.02,
               alive=lambda: None if proc.poll() is None else str(proc.communicate()))


def test_a_second_resume_of_a_running_sweep_is_refused_naming_its_owner(store, tmp_path):
    # The agents answer from a loopback server that holds every reply while `hold` is clear,
    # so the first resume is still running the sweep however long the second takes to start
    # (a sim sweep with ~10 s left finished first on a loaded machine).
    hold = threading.Event()
    hold.set()
    with FakeOpenAIServer() as server:
        def answer(body: dict) -> object:
            assert hold.wait(300), "the test never released the replies"
            return tool_call(0.9, "We should.")

        server.set_responder(None, answer)
        agents = [{"agent_name": n, "model_name": "openai/gpt-4o-mini",
                   "api_base": server.base_url} for n in ("Ann", "Bo", "Cy")]
        sweep_id = started_sweep(store, tmp_path, max_calls=9, agents=agents)
        hold.clear()
        first = resume(store.url, sweep_id)
        wait_until_owned_by(store, sweep_id, first)

        second = resume(store.url, sweep_id[:10])
        out, err = second.communicate(timeout=120)
        assert first.poll() is None  # the first one was still running the sweep
        assert second.returncode == 2 and out == b"", (out, err)
        line = err.decode()
        assert line.count("\n") == 1 and line.startswith(f"error: sweep {sweep_id[:12]} is "
                                                         "already running")
        owner = store.get_sweep(sweep_id)
        assert f"pid {first.pid} on host {socket.gethostname()}, since {owner['owned_at']}" in line
        assert f"kill {first.pid}" in line and "Stop on the dashboard's Sweeps page" in line

        hold.set()
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert f"sweep {sweep_id} finished: 12/12 cells done" in out.decode()
    every_cell_once(store, sweep_id)


def test_two_resumes_started_at_once_run_every_cell_once(store, tmp_path):
    sweep_id = started_sweep(store, tmp_path, latency=0.15, max_calls=9)
    procs = [resume(store.url, sweep_id) for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results  # exactly one took the sweep over
    (refused_err,) = [err.decode() for code, _, err in results if code == 2]
    (winner,) = [p for p, (code, _, _) in zip(procs, results, strict=True) if code == 0]
    assert refused_err.count("\n") == 1 and f"pid {winner.pid}" in refused_err
    every_cell_once(store, sweep_id)
    assert store.get_sweep(sweep_id)["status"] == "finished"


RACER = """
import sys, time
from groupchat_core.store import RunStore
store = RunStore(sys.argv[1])
start = float(sys.argv[3])
time.sleep(max(0.0, start - time.time()))
won = [c for c in sys.argv[4:] if store.claim_cell(sys.argv[2], c).claimed]
print(" ".join(won))
"""


def test_racing_claimers_in_threads_and_processes_claim_each_cell_once(store):
    sweep_id = store.create_sweep("race", {"threshold": [0.5]})
    store.finish_sweep(sweep_id, "stopped_budget")
    cells = [f'{{"cell":{i}}}' for i in range(40)]
    barrier = threading.Barrier(6)
    won: list[list[str]] = [[] for _ in range(6)]

    def claimer(slot: int) -> None:
        barrier.wait()
        won[slot] = [c for c in cells[:20] if store.claim_cell(sweep_id, c).claimed]

    threads = [threading.Thread(target=claimer, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [c for slot in won for c in slot]
    assert sorted(claimed) == sorted(cells[:20])  # every cell once, by exactly one thread

    start = time.time() + 2.0  # both processes claim the same 20 cells at the same moment
    procs = [python(store.url, "-c", RACER, store.url, sweep_id, str(start), *cells[20:],
                    text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    claimed = [c for out, _ in outs for c in out.split()]
    assert sorted(claimed) == sorted(cells[20:])
    claim = store.claim_cell(sweep_id, cells[0])
    assert not claim.claimed and claim.state == "running" and claim.pid == os.getpid()


FORCED = """
import sys, time
from pathlib import Path
from groupchat_core.store import RunStore
from groupchat_core.cli import main
# switch the owner check off: both processes run the sweep; only the cell claims protect it
RunStore.sweep_owner = lambda self, sweep_id, take_over=False: None
RunStore.reopen_sweep = lambda self, sweep_id, take_over=False: None
# a barrier at the first claim: neither claims a cell before both are about to, so they
# overlap. (Met after the imports only, one process could start seconds later, under load,
# and find every cell finished: fresh clone G2.)
barrier, claim = Path(sys.argv[2]), RunStore.claim_cell
def claim_when_both_are_here(self, sweep_id, cell):
    (barrier / sys.argv[3]).touch()
    while len(list(barrier.iterdir())) < 2:  # the other process exists: it arrives
        time.sleep(0.01)
    return claim(self, sweep_id, cell)
RunStore.claim_cell = claim_when_both_are_here
sys.exit(main(["sweep", "--resume", sys.argv[1]]))
"""


def test_two_processes_forced_to_run_one_sweep_still_run_each_cell_once(store, tmp_path):
    sweep_id = started_sweep(store, tmp_path, latency=0.02)
    before = store.list_runs(sweep_id=sweep_id)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [python(store.url, "-c", FORCED, sweep_id, str(barrier), str(i), text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    runs = store.list_runs(sweep_id=sweep_id)
    new = runs[~runs["run_id"].isin(before["run_id"])]
    every_cell_once(store, sweep_id)
    assert len(new) == 12 - int((before["status"] == "finished").sum())  # no cell ran twice
    assert set(new["status"]) == {"finished"}
    skipped = sum(err.count("skipped: not run here") for _, err in outs)
    assert skipped >= 1, outs  # both really ran the sweep and met each other's claims


# --- who may take a sweep over ----------------------------------------------------------------


def _set_owner(store: RunStore, sweep_id: str, **owner: object) -> None:
    with store.write("test") as conn:
        conn.execute(sweeps.update().where(sweeps.c.sweep_id == sweep_id).values(**owner))


def test_a_sweep_running_on_another_host_needs_an_explicit_take_over(store, tmp_path):
    sweep_id = started_sweep(store, tmp_path, latency=0.0)
    _set_owner(store, sweep_id, status="running", pid=4242, hostname="elsewhere",
               owned_at="2026-01-02T03:04:05+00:00")
    with pytest.raises(SweepBusy, match="running on another host \\(pid 4242 on host "
                                        "elsewhere, since 2026-01-02T03:04:05\\+00:00\\).*"
                                        "--take-over"):
        plan_sweep(None, store, resume=sweep_id)
    with pytest.raises(SweepBusy):
        store.reopen_sweep(sweep_id)
    outcome = run_sweep(store=store, plan=plan_sweep(None, store, resume=sweep_id,
                                                     take_over=True))
    assert outcome.status == "finished"
    every_cell_once(store, sweep_id)


def test_a_dead_owner_is_taken_over_and_its_running_claims_reopened(store, tmp_path):
    sweep_id = started_sweep(store, tmp_path, latency=0.0)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    _set_owner(store, sweep_id, status="running", pid=pid, hostname=socket.gethostname(),
               proc_start="1")
    todo = plan_sweep(None, store, resume=sweep_id).todo
    stale = store.claim_cell(sweep_id, todo[0].key)  # a claim the dead owner left running
    assert stale.claimed
    assert store.sweep_owner(sweep_id) is None
    outcome = run_sweep(store=store, resume=sweep_id)
    assert outcome.status == "finished" and outcome.cells_done == 12
    every_cell_once(store, sweep_id)


def test_this_process_cannot_resume_a_sweep_it_is_running(store, tmp_path):
    sweep_id = started_sweep(store, tmp_path, latency=0.0)
    store.reopen_sweep(sweep_id)  # this process runs it now
    with pytest.raises(SweepBusy, match="already running in this process"):
        plan_sweep(None, store, resume=sweep_id)
    store.release_sweep(sweep_id)  # that session ended without closing the sweep
    assert store.sweep_owner(sweep_id) is None
    assert run_sweep(store=store, resume=sweep_id).status == "finished"


def test_a_session_whose_sweep_was_taken_over_does_not_record_its_end(store):
    sweep_id = store.create_sweep("taken", {"threshold": [0.5]})
    _set_owner(store, sweep_id, pid=4242, hostname="elsewhere")  # taken over with --take-over
    assert store.finish_sweep(sweep_id, "finished") is False
    assert store.get_sweep(sweep_id)["status"] == "running"  # the new owner's row is kept
    _set_owner(store, sweep_id, pid=os.getpid(), hostname=socket.gethostname())
    assert store.finish_sweep(sweep_id, "cancelled", "by the user") is True
    assert store.get_sweep(sweep_id)["status"] == "cancelled"


# --- a cancellation between a run's end and its claim's (Ctrl-C, a budget cap) ---------------


def spec():
    return parse_sweep({"name": "claims", "base": {"max_loops": 6, "agents": AGENTS},
                        "grid": {"threshold": [0.3, 0.5, 0.7]}, "tasks": ["Should we?"],
                        "repeats": 1, "concurrency": 1, "bid_cache": False})


class CancelledAfterTheRun:
    """Runs cells locally; after cell 0's run is committed `finished`, the sweep is cancelled
    (Ctrl-C) before that result is handed back to the runner."""

    def __init__(self, store: RunStore) -> None:
        self.store, self.inner = store, LocalExecutor(store, bid_cache=False)
        self.sweep: asyncio.Future[object] | None = None
        self.finished_run: str | None = None

    async def submit(self, job: CellJob, usage) -> CellResult:
        result = await self.inner.submit(job, usage)
        if job.index == 0:
            runs = self.store.list_runs(sweep_id=job.sweep_id)
            assert list(runs["status"]) == ["finished"]  # the run's end is in the store
            self.finished_run = result.run_id
            assert self.sweep is not None
            self.sweep.cancel()
            await asyncio.Event().wait()  # the cancellation reaches the cell here
        return result


def test_a_claim_is_closed_with_its_finished_run_when_cancelled_in_between(store):
    sweep = spec()
    executor = CancelledAfterTheRun(store)

    async def ctrl_c_between_run_and_claim() -> None:
        executor.sweep = asyncio.ensure_future(arun_sweep(sweep, store, executor=executor))
        with pytest.raises(asyncio.CancelledError):
            await executor.sweep

    background_loop().submit(ctrl_c_between_run_and_claim()).result(timeout=60)
    sweep_id = store.list_sweeps()["sweep_id"].iloc[0]
    assert store.get_sweep(sweep_id)["status"] == "cancelled"
    claims = store.cell_claims(sweep_id)
    assert executor.finished_run is not None
    assert list(zip(claims["state"], claims["run_id"], strict=True)) == [
        ("finished", executor.finished_run)]

    resumed = run_sweep(None, store, resume=sweep_id)
    assert (resumed.status, resumed.cells_done, resumed.cells_run) == ("finished", 3, 2)
    every_cell_once(store, sweep_id)


@pytest.mark.parametrize("left", ["open", "running"])
def test_a_resume_closes_a_claim_left_beside_its_finished_run(store, left):
    """`open`: left by a version without the fix; `running`: its process was killed between the
    run's end and the claim's. A resume closes it with the run's id."""
    sweep = spec()
    outcome = run_sweep(sweep, store)
    claims = store.cell_claims(outcome.sweep_id)
    cell, run_id = claims.iloc[1]["cell"], claims.iloc[1]["run_id"]
    with store.write("leave a claim behind") as conn:
        conn.execute(update(sweep_cells).where(sweep_cells.c.cell == cell).values(
            state=left, run_id=None))
    assert store.finish_sweep(outcome.sweep_id, "cancelled", "cancelled by the user")

    resumed = run_sweep(None, store, resume=outcome.sweep_id)
    assert (resumed.status, resumed.cells_done, resumed.cells_run) == ("finished", 3, 0)
    every_cell_once(store, outcome.sweep_id)
    claims = store.cell_claims(outcome.sweep_id).set_index("cell")
    assert claims.loc[cell, "run_id"] == run_id
