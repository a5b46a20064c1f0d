"""The worker side of Ray sweeps: the `CellWorker` actor that runs cells as coroutines on its
own event loop and streams each cell's turns back to the driver (sweeps/_ray_executor.py has
the driver's side and the design).

Why apart: the driver decides (claims, retries, budget, recording on SQLite); the worker only
runs what it is given. What one process needs, the other never imports.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .._records import BidReceived, Event, RunFinished, RunStarted, TurnCompleted
from ._executor import CellJob, CellRun, CellTracing
from ._ray_limits import ClusterLimits, ClusterPacing

if TYPE_CHECKING:
    from ..store import RunStore

DB_ENV = "GROUPCHAT_DB"  # the store's URL, among a recording worker's secrets


class Secrets:
    """Keys for one task, passed as a task argument: small arguments travel inline in the task
    (in memory, over Ray's RPC), never in Ray's logs, unlike runtime_env env_vars (which Ray's
    runtime-env agent writes to its log files). Its repr never shows them."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def __repr__(self) -> str:
        return f"Secrets({sorted(self.values)})"


# --- on the worker ----------------------------------------------------------------------------


class _Collector:
    """Engine observer on the worker: hands events to the cell's streaming call."""

    thread_safe = True

    def __init__(self, events: asyncio.Queue[Any], record: bool) -> None:
        self.events = events
        self.loop = asyncio.get_running_loop()
        self.wants = frozenset({"bid", "turn_completed", "run_finished", "run_started"}
                               | ({"message_posted"} if record else set()))

    def __call__(self, event: Event) -> None:
        self.loop.call_soon_threadsafe(self.events.put_nowait, event)


_END = object()


def worker_label() -> tuple[str, int, str]:
    """(label, pid, host) of this Ray worker: its node's id prefix, host and pid."""
    import socket

    import ray

    pid, host = os.getpid(), socket.gethostname()  # as the store records a run's writer
    node = ray.get_runtime_context().get_node_id()[:8]
    return f"{host}/{node}/pid {pid}", pid, host


class CellWorker:
    """A long-lived async Ray actor running sweep cells as coroutines on its own event loop.

    Why one import for many cells: the engine and litellm load once per actor, not per cell.
    A store for workers that record (PostgreSQL) is opened once too."""

    def __init__(self) -> None:
        from ..engine._groupchat import GroupChat  # noqa: F401  # the engine, litellm: once

        self._stores: dict[str, RunStore] = {}
        self._limits: str | None = None  # the sweep limiter this process paces through

    def _pace_through(self, limits: ClusterLimits | None) -> None:
        """Pace this process's deployments' rpm through the sweep's limiter (the Pacing seam
        of providers/_deployments.py, chosen once per process, again only for a new sweep)."""
        from ..providers._deployments import install_pacing

        name = None if limits is None else limits.name
        if name != self._limits:  # a sweep without one paces locally (nothing to share)
            install_pacing(None if limits is None else ClusterPacing(limits))
            self._limits = name

    def _store(self, url: str) -> RunStore:
        from ..store import RunStore

        if url not in self._stores:
            self._stores[url] = RunStore(url)
        return self._stores[url]

    async def run_cell(self, job_data: dict[str, Any], workers_record: bool,
                       bid_cache: bool | None, secrets: Secrets,
                       tracing: CellTracing | None = None, limits: ClusterLimits | None = None
                       ) -> AsyncIterator[dict[str, Any]]:
        """One cell: runs its chat, streaming what the driver needs turn by turn.

        Items: {"kind": "hello"} first (who runs it), then one {"kind": "turn"} per completed
        turn (its bids' calls and cost; with a driver-recorded store, the engine events to
        record), then {"kind": "result"}."""
        job = CellJob.model_validate(job_data)
        os.environ.update(secrets.values)  # litellm reads keys from the environment
        self._pace_through(limits)
        label, pid, host = worker_label()
        yield {"kind": "hello", "worker": label, "pid": pid, "host": host}

        store: RunStore | None = None
        cache: Any = False
        if workers_record:
            from ..engine._bidcache import BidCache

            store = self._store(secrets.values[DB_ENV])
            if bid_cache is not False:
                cache = BidCache(store, cache_all=bid_cache is True)
        events: asyncio.Queue[Any] = asyncio.Queue()
        cell = CellRun(job, store=store, bid_cache=cache,
                       observers=[_Collector(events, record=store is None)], tracing=tracing)
        task = asyncio.ensure_future(cell.run())
        task.add_done_callback(lambda _: events.put_nowait(_END))
        try:
            async for item in _turn_items(events, send_events=store is None):
                yield item
            result = await task  # the partial run of a cell that raised is flagged (CellRun)
        finally:
            if not task.done():  # the call was cancelled: so is its chat
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if cache is not False:
            cache.flush()
        yield {"kind": "result", "result": result.model_dump()}


async def _turn_items(events: asyncio.Queue[Any], send_events: bool
                      ) -> AsyncIterator[dict[str, Any]]:
    """A cell's events as the driver's items: one per completed turn (and start and end), with
    the events themselves when the driver records the run (`send_events`)."""
    pending: list[Event] = []
    calls, cost, run_id = 0, 0.0, None
    while (event := await events.get()) is not _END:
        if isinstance(event, BidReceived):
            calls += event.bid.calls
            cost += event.bid.cost_usd or 0.0
            continue
        if isinstance(event, RunStarted):
            run_id = event.run_id
        if send_events:
            pending.append(event)
        if isinstance(event, (TurnCompleted, RunStarted, RunFinished)):
            yield {"kind": "turn", "run_id": run_id, "calls": calls, "cost": cost,
                   "events": pending}
            pending, calls, cost = [], 0, 0.0
    if pending or calls:
        yield {"kind": "turn", "run_id": run_id, "calls": calls, "cost": cost,
               "events": pending}
