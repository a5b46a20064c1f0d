"""A cancellation between a cell's run ending and its claim ending leaves no claim behind.

Ctrl-C (or a budget cap) can land after a cell's run is committed `finished` but before the
runner gets its result; a resume skips that cell, so nothing else would close its claim: the
store closes it with the finished run, at once and on resume. Injected exactly there; on SQLite
and PostgreSQL (`store`). Private imports (`store._schema`, `CellResult`): to recreate a claim
an older version (or a killed process) left open, and what an executor hands back.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update

from groupchat_core import background_loop
from groupchat_core.store import RunStore
from groupchat_core.store._schema import sweep_cells
from groupchat_core.sweeps import (
    CellJob,
    LocalExecutor,
    arun_sweep,
    parse_sweep,
    run_sweep,
)
from groupchat_core.sweeps._executor import CellResult

pytestmark = pytest.mark.usefixtures("fresh_engines")

AGENTS = [{"agent_name": n, "model_name": "sim/balanced"} for n in ("Ann", "Bo", "Cy")]


def spec():
    return parse_sweep({"name": "claims", "base": {"max_loops": 6, "agents": AGENTS},
                        "grid": {"threshold": [0.3, 0.5, 0.7]}, "tasks": ["Should we?"],
                        "repeats": 1, "concurrency": 1, "bid_cache": False})


def every_cell_once(store: RunStore, sweep_id: str, keys: list[str]) -> None:
    """As tests/sweeps/test_sweep_ray.py's check_every_cell_once: runs and claims agree."""
    runs = store.list_runs(sweep_id=sweep_id)
    finished = runs[runs["status"] == "finished"]
    assert sorted(finished["cell"]) == sorted(keys)
    claims = store.cell_claims(sweep_id)
    assert sorted(claims["cell"]) == sorted(keys) and set(claims["state"]) == {"finished"}
    assert dict(zip(claims["cell"], claims["run_id"], strict=True)) == dict(
        zip(finished["cell"], finished["run_id"], strict=True))


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
    every_cell_once(store, sweep_id, [c.key for c in sweep.cells()])


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
    every_cell_once(store, outcome.sweep_id, [c.key for c in sweep.cells()])
    claims = store.cell_claims(outcome.sweep_id).set_index("cell")
    assert claims.loc[cell, "run_id"] == run_id
