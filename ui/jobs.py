"""Generic background jobs (a sweep, say) on the engine loop; no streamlit here.

Why separate from chat jobs: a chat job folds engine events into a transcript, while a generic
job is any coroutine that reports events through an `emit` callback. Both live in JobRegistry
(job_registry.py) under the same owner rules: a session sees only its own jobs, and snapshots are
immutable copies taken under a lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from groupchat_core import BackgroundLoop, background_loop

Emit = Callable[[Any], None]
CoroFactory = Callable[[Emit], Awaitable[Any]]
TERMINAL = frozenset({"finished", "cancelled", "error"})


@dataclass(eq=False)
class TaskJob:
    """Mutable state of one generic job; touched only under the table's lock."""

    id: str
    owner: str
    kind: str
    status: str = "queued"
    events: list[Any] = field(default_factory=list)
    result: Any = None
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    future: concurrent.futures.Future[Any] | None = None
    started: bool = False
    settled: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class TaskSnapshot:
    """An immutable copy of a generic job for rendering."""

    id: str
    owner: str
    kind: str
    status: str
    events: tuple[Any, ...]
    result: Any
    error: str | None
    created_at: float
    settled: bool

    @property
    def done(self) -> bool:
        """Ended, and its coroutine has finished its own clean-up (e.g. recorded `cancelled`)."""
        return self.status in TERMINAL and self.settled


class TaskTable:
    """Thread-safe table of generic jobs (held by JobRegistry)."""

    def __init__(self, runner: BackgroundLoop | None = None) -> None:
        self._runner = runner
        self._lock = threading.Lock()
        self._jobs: dict[str, TaskJob] = {}

    def start(self, factory: CoroFactory, owner: str, kind: str) -> str:
        """Submit `factory(emit)` to the background loop; returns the new job id."""
        job = TaskJob(id=uuid.uuid4().hex, owner=owner, kind=kind)
        with self._lock:
            self._jobs[job.id] = job
        job.future = (self._runner or background_loop()).submit(self._drive(job, factory))
        return job.id

    def _emit(self, job: TaskJob, event: Any) -> None:
        with self._lock:
            job.events.append(event)
            job.updated_at = time.time()

    async def _drive(self, job: TaskJob, factory: CoroFactory) -> None:
        job.started = True
        self._set(job, "running")
        try:
            result = await factory(lambda event: self._emit(job, event))
        except asyncio.CancelledError:
            self._set(job, "cancelled")
            raise
        except Exception as exc:
            self._set(job, "error", f"{type(exc).__name__}: {exc}")
        else:
            with self._lock:
                job.result = result
            self._set(job, "finished")
        finally:
            job.settled.set()

    def _set(self, job: TaskJob, status: str, error: str | None = None) -> None:
        with self._lock:
            if job.status in TERMINAL:
                return
            job.status, job.updated_at, job.error = status, time.time(), error or job.error

    def cancel(self, job_id: str) -> bool:
        """Ask a job to stop; it reads `cancelled` at once and `done` once it has cleaned up."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.status in TERMINAL or job.future is None:
                return False
            future = job.future
        if not future.cancel():
            return False
        self._set(job, "cancelled")
        if not job.started:
            job.settled.set()  # never ran, so nothing to clean up
        return True

    def has(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._jobs

    def snapshot(self, job_id: str) -> TaskSnapshot:
        """KeyError for unknown (or expired) ids."""
        with self._lock:
            j = self._jobs[job_id]
            return TaskSnapshot(j.id, j.owner, j.kind, j.status, tuple(j.events), j.result,
                                j.error, j.created_at, j.settled.is_set())

    def for_owner(self, owner: str, kind: str | None = None) -> list[TaskSnapshot]:
        """One owner's jobs (optionally of one kind), oldest first."""
        with self._lock:
            ids = [j.id for j in sorted(self._jobs.values(), key=lambda j: j.created_at)
                   if j.owner == owner and kind in (None, j.kind)]
        return [self.snapshot(i) for i in ids]

    def cleanup(self, cutoff: float) -> int:
        """Forget settled jobs last updated before `cutoff`."""
        with self._lock:
            stale = [i for i, j in self._jobs.items() if j.settled.is_set()
                     and j.updated_at < cutoff]
            for job_id in stale:
                del self._jobs[job_id]
        return len(stale)

    def shutdown(self, timeout: float, clear: bool) -> int:
        """Cancel every job and wait briefly for them to settle; returns how many."""
        with self._lock:
            jobs = list(self._jobs.values())
        cancelled = sum(self.cancel(job.id) for job in jobs)
        deadline = time.monotonic() + timeout
        for job in jobs:
            if job.started:
                job.settled.wait(max(0.0, deadline - time.monotonic()))
        if clear:
            with self._lock:
                self._jobs.clear()
        return cancelled
