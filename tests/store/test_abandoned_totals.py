"""A run closed without the engine's end keeps the totals its bids hold (issue 44, 4c).

A Ray sweep's cell cancelled by a budget cap is force-killed on its worker: the driver's
recorder has replayed the streamed turns but never sees RunFinished, and closes the run with
`abandon(status="cancelled")`. Before, that left the run row's total_calls at 0 while its bids
held the calls made. The same path without Ray: a sim chat cancelled mid-run whose events reach
a recorder that never gets the end.

Private imports (`store._process`, `store._schema`): test hooks with no public name (this
host's writer identity, and the runs table to make a run's writer a dead process).
"""

from __future__ import annotations

import asyncio

import pytest

from groupchat_core import Agent, Event, GroupChat, RunFinished, TurnCompleted
from groupchat_core.store import RunStore, StoreRecorder

pytestmark = pytest.mark.usefixtures("fresh_engines")


def sim_chat() -> GroupChat:
    agents = [Agent(agent_name=f"Sim{p.title()}", model_name=f"sim/{p}")
              for p in ("eager", "balanced", "contrarian")]
    return GroupChat(agents=agents, max_loops=12, seed=7, threshold=0.0, bid_cache=False)


async def run_cancelled_after(chat: GroupChat, turns: int, forward: list[Event]) -> None:
    """Run the chat; cancel it once `turns` turns are complete. Every event but the end goes
    to `forward`, as a Ray worker's stream reaches the driver before the task is killed."""
    done = asyncio.Event()

    def watch(event: Event) -> None:
        if not isinstance(event, RunFinished):
            forward.append(event)
        if isinstance(event, TurnCompleted) and event.turn.turn >= turns:
            done.set()

    chat.add_observer(watch)
    task = asyncio.ensure_future(chat.arun_record("Plan the budget."))
    await done.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def replayed(store: RunStore, chat: GroupChat, events: list[Event]) -> StoreRecorder:
    """A recorder of `store` that was handed `events` (those it wants), as a driver's is."""
    recorder = store.recorder(chat)
    for event in events:
        if event.kind in recorder.wants:
            recorder(event)
    return recorder


def test_a_run_cancelled_mid_run_and_abandoned_records_its_calls(sqlite_store: RunStore):
    chat = sim_chat()
    events: list[Event] = []
    asyncio.run(run_cancelled_after(chat, 3, events))
    recorder = replayed(sqlite_store, chat, events)  # the driver's, fed the streamed events
    recorder.abandon("cancelled: a budget cap or the user stopped the sweep", status="cancelled")

    run_id = events[0].run_id
    info = sqlite_store.run_info(run_id)
    bids = sqlite_store.bids(run_id)
    assert info["status"] == "cancelled"
    assert len(bids) >= 9 and int(bids["calls"].sum()) >= 9  # three turns of three agents
    assert info["total_calls"] == int(bids["calls"].sum())
    assert info["total_prompt_tokens"] == int(bids["prompt_tokens"].fillna(0).sum())
    assert info["total_completion_tokens"] == int(bids["completion_tokens"].fillna(0).sum())
    assert info["total_cost_usd"] == pytest.approx(float(bids["cost_usd"].fillna(0).sum()))


def test_an_abandoned_run_with_no_bids_totals_zero(sqlite_store: RunStore):
    chat = sim_chat()
    events: list[Event] = []
    asyncio.run(run_cancelled_after(chat, 1, events))
    recorder = replayed(sqlite_store, chat, events[:2])  # the start and the task: no turn
    recorder.abandon("cancelled", status="cancelled")
    info = sqlite_store.run_info(events[0].run_id)
    assert (info["status"], info["total_calls"], info["total_cost_usd"]) == ("cancelled", 0, 0)


def recorded_without_end(store: RunStore) -> str:
    """A run whose turns are in the store and whose writer died before its end."""
    chat = sim_chat()
    events: list[Event] = []
    asyncio.run(run_cancelled_after(chat, 2, events))
    assert replayed(store, chat, events).flush(timeout=30)
    return events[0].run_id


@pytest.mark.parametrize("closed_by", ["the startup check", "the Ray driver"])
def test_a_dead_writers_run_takes_its_totals_from_its_bids(sqlite_store: RunStore,
                                                           closed_by: str):
    import subprocess
    import sys

    from sqlalchemy import update

    from groupchat_core.store._process import this_writer
    from groupchat_core.store._schema import runs

    run_id = recorded_without_end(sqlite_store)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = this_writer().hostname
    sweep_id = sqlite_store.create_sweep("s", {"grid": {}})
    with sqlite_store.write("test: the run's writer is a dead process") as conn:
        conn.execute(update(runs).where(runs.c.run_id == run_id).values(
            pid=dead.pid, proc_start="1", hostname=host, sweep_id=sweep_id, cell="c1"))
    if closed_by == "the startup check":
        assert run_id in RunStore().interrupted
        status = "interrupted"
    else:
        assert sqlite_store.flag_writer_runs(sweep_id, "c1", pid=dead.pid, hostname=host,
                                             status="error", reason="its worker died") == 1
        status = "error"
    info, bids = sqlite_store.run_info(run_id), sqlite_store.bids(run_id)
    assert info["status"] == status and int(bids["calls"].sum()) >= 6
    assert info["total_calls"] == int(bids["calls"].sum())
