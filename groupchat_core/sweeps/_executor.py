"""Where a cell runs: the Executor seam, and the default in-process executor.

Why a seam: the runner only decides *which* cells run and when (concurrency, budget, resume);
*how* a cell's chat runs sits behind `Executor.submit(job, usage)`. The default runs it on the
current event loop (the engine's background loop), recorded into the run store; a later
executor can ship the same serialisable `CellJob` to workers on a cluster that write to a shared
store (PostgreSQL), without changing the sweep code.

Contract: `submit` returns an awaitable CellResult; cancelling that awaitable must stop the
cell (its run then reads `cancelled` in the store); `usage(calls, cost_usd)` must be called as
model calls complete (at the latest when the cell ends), since budget caps count through it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict

from .._errors import StoreError
from .._records import BidReceived, Event, Observer, RunRecord
from ..outcomes import Task
from ..store import status_for

if TYPE_CHECKING:
    from ..engine._bidcache import BidCache
    from ..engine._groupchat import GroupChat
    from ..store import RunStore, StoreRecorder


class UsageHook(Protocol):
    def __call__(self, calls: int, cost_usd: float) -> None: ...


Attributes = dict[str, str | int | float | bool]


class CellTracing(Protocol):
    """Traces a cell's chat (integrations.CellTracer): called once per cell with the chat and
    its `cell_attributes`. Why a seam: sweeps sit below integrations (no OTel import here), and
    the Ray worker gets the same object (it must pickle) to trace where the chat runs."""

    def __call__(self, chat: GroupChat, attributes: Attributes, /) -> object: ...


def cell_attributes(job: CellJob) -> Attributes:
    """What a traced cell's run span carries besides the run's own (docs/integrations.md)."""
    return {"groupchat.sweep.id": job.sweep_id, "groupchat.sweep.cell": job.cell}


class CellJob(BaseModel):
    """Everything needed to run one cell anywhere (plain data, no secrets: specs never hold
    keys; workers take provider keys from their own environment)."""

    model_config = ConfigDict(extra="forbid")

    sweep_id: str
    cell: str  # the cell key, stored on the run
    index: int
    spec: dict[str, Any]  # the cell's chat spec (ChatSpec.to_data())
    task: str
    deployments: dict[str, list[dict[str, Any]]] | None = None  # key variable names, no keys
    scored: dict[str, Any] | None = None  # the task with its answer (a task set's), if any

    def chat_task(self) -> str | Task:
        """What the cell's chat runs: the scored Task when the sweep's tasks carry answers."""
        return self.task if self.scored is None else Task.model_validate(self.scored)


class CellResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cell: str
    run_id: str
    status: str  # the run's status in the store: finished, cancelled or error
    stop_reason: str | None
    messages: int
    turns: int
    calls: int
    bids: int
    cache_hits: int
    cost_usd: float
    error: str | None = None
    worker: str | None = None  # which worker ran it (host/node/pid), for remote executors

    @classmethod
    def from_record(cls, cell: str, record: RunRecord, error: str | None = None) -> CellResult:
        return cls(cell=cell, run_id=record.run_id,
                   status="error" if error else status_for(record),
                   stop_reason=record.stop_reason, messages=max(len(record.messages) - 1, 0),
                   turns=len(record.turns), calls=record.total_calls, bids=len(record.bids),
                   cache_hits=record.cache_hits, cost_usd=record.total_cost_usd or 0.0,
                   error=error or record.error)


class Executor(Protocol):
    def submit(self, job: CellJob, usage: UsageHook) -> Awaitable[CellResult]: ...


class _UsageObserver:
    """Counts each bid's calls and cost as it arrives, on the engine's loop thread."""

    wants = frozenset({"bid"})
    thread_safe = True

    def __init__(self, usage: UsageHook) -> None:
        self.usage = usage

    def __call__(self, event: Event) -> None:
        if isinstance(event, BidReceived):
            self.usage(event.bid.calls, event.bid.cost_usd or 0.0)


class CellRun:
    """The one recipe for running a cell, shared by the local executor and the Ray worker.

    The cell's chat is built from its spec (its own chat: nothing is shared between cells),
    recorded into `store` as the cell's run (None: the caller records it, as the Ray driver
    does for SQLite), watched by `observers` and traced by `tracing` (with its sweep and cell).
    `run()` runs it on the running event loop and returns its CellResult; a run that did not
    end normally is flagged `cancelled` or `error` in the store first, and a run the store did
    not fully take is a StoreError."""

    def __init__(self, job: CellJob, *, store: RunStore | None,
                 bid_cache: BidCache | bool | None = None,
                 observers: Iterable[Observer] = (),
                 tracing: CellTracing | None = None) -> None:
        from ..engine._groupchat import GroupChat

        self.job = job
        self.chat: GroupChat = GroupChat.from_spec(job.spec, bid_cache=bid_cache,
                                                   deployments=job.deployments)
        self.recorder: StoreRecorder | None = None if store is None else store.attach(
            self.chat, sweep_id=job.sweep_id, cell=job.cell)
        for observer in observers:
            self.chat.add_observer(observer)
        if tracing is not None:
            tracing(self.chat, cell_attributes(job))

    async def run(self) -> CellResult:
        try:
            record = await self.chat.arun_record(self.job.chat_task())
        except BaseException as exc:
            self._abandon(exc)
            raise
        recorder = self.recorder
        if recorder is not None and recorder.failures:
            raise StoreError(f"run {record.run_id} was not fully recorded: "
                             + next(iter(recorder.failures.values())))
        return CellResult.from_record(self.job.cell, record)

    def _abandon(self, exc: BaseException) -> None:
        """Close the run the engine left open (it raised, or the cell was cancelled)."""
        if self.recorder is None or not self.recorder.run_ids:
            return
        cancelled = isinstance(exc, asyncio.CancelledError)
        self.recorder.abandon(f"{type(exc).__name__}: {exc}",
                              status="cancelled" if cancelled else "error")


class LocalExecutor:
    """Runs cells as chats on the running event loop, each recorded into `store` (and traced
    by `tracing`, when given)."""

    def __init__(self, store: RunStore, bid_cache: BidCache | bool | None = None, *,
                 tracing: CellTracing | None = None) -> None:
        self.store = store
        self.bid_cache = bid_cache
        self.tracing = tracing

    async def submit(self, job: CellJob, usage: UsageHook) -> CellResult:
        cell = CellRun(job, store=self.store, bid_cache=self.bid_cache,
                       observers=[_UsageObserver(usage)], tracing=self.tracing)
        return await cell.run()
