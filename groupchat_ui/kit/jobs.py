"""The one job table: each session's chats and sweeps as jobs on the engine's loop (no streamlit).

Why: a chat must outlive the script run that started it (page switches, reruns), stay private to
the browser session that owns it, and stop within a fraction of a second (DESIGN.md, "Running
jobs from Streamlit"). So runs are jobs on `groupchat_core.background_loop()`, their state
lives in one lock-protected table, and pages render immutable snapshots copied under the lock.

Two kinds of job share the table, its lock, its owner rules, TERMINAL, cancel, time-to-live and
shutdown: a chat job (`start_chat`) folds engine events into a transcript, bids and turns for the
live view (`snapshot`); a generic job (`start_job`, e.g. a sweep) is any coroutine that reports
events through an `emit` callback (`task_snapshot`).

Events reach a chat job through one router observer per GroupChat that looks up the job in a
context variable set by the job's own task: the same chat can run several jobs at once (or one
after another) without any job seeing another's events.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import getpass
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from groupchat_core import (
    JOB_TERMINAL,
    BackgroundLoop,
    Bid,
    BidReceived,
    Event,
    GroupChat,
    JobStatus,
    Message,
    MessagePosted,
    Observer,
    RunFinished,
    RunRecord,
    RunStarted,
    Turn,
    TurnCompleted,
    TurnStarted,
    background_loop,
)

from .access import is_admin

TERMINAL: frozenset[str] = JOB_TERMINAL  # the statuses, like every status, live in the core
DEFAULT_TTL_S = 3600.0
Emit = Callable[[Any], None]
CoroFactory = Callable[[Emit], Awaitable[Any]]

LOCAL_USER = "local"  # who every session acts for on a server without login


def os_user() -> str | None:
    """Who this server process runs as: the owner the CLI records by default (--owner)."""
    try:
        return getpass.getuser() or None
    except Exception:  # no user name in the environment or the password database
        return None


def may_manage(owner: str | None, user: str) -> bool:
    """Whether `user` may stop, resume or delete something (a job, a run, a sweep) owned by
    `owner`. A signed-in user: only their own; an admin (GROUPCHAT_ADMINS, access.py):
    anything, including what has no owner recorded (older runs, scripts). Without login every
    session is LOCAL_USER, one person's dashboard: theirs, nobody's, and the CLI's runs of the
    OS user the server runs as. Everyone else can watch."""
    if is_admin(user):
        return True
    if user == LOCAL_USER:
        return owner is None or owner == LOCAL_USER or owner == os_user()
    return owner is not None and owner == user


def not_yours(owner_name: str | None, what: str) -> str:
    """The one-line reason shown next to a disabled Stop, Resume or Delete."""
    if owner_name is None:
        return (f"Nobody is recorded as having started this {what} (the command line, a "
                "script or an older version made it): only an admin can change or delete it; "
                "you can watch.")
    return (f"Only {owner_name}, who started this {what}, can stop or delete it; you can "
            "watch.")


Candidates = dict[str, tuple[float | None, str, bool]]  # agent -> (score, message so far, in)


class LiveCandidates(Protocol):
    """A chat job's streamed candidates (the Run page's FormingBids): an engine observer of
    the job's chat, read by the live view through `snapshot()` from any thread."""

    def __call__(self, event: Event, /) -> None: ...

    def snapshot(self) -> tuple[int, Candidates]: ...


_current_job: contextvars.ContextVar[Job | None] = contextvars.ContextVar(
    "groupchat_current_job", default=None)
_routed: weakref.WeakSet[GroupChat] = weakref.WeakSet()  # chats that carry the router observer
_routed_lock = threading.Lock()


@dataclass(eq=False)
class Job:
    """Mutable state of one job; only the registry touches it, always under its lock."""

    id: str
    owner: str  # the browser session that started it (whose sidebar lists it)
    kind: str  # "chat", or a generic job's kind ("sweep")
    lock: threading.Lock
    user: str = LOCAL_USER  # who it runs for: only this user may stop it (may_manage)
    user_name: str = LOCAL_USER  # for labels
    status: JobStatus = "queued"
    events: list[Any] = field(default_factory=list)
    result: Any = None
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    future: concurrent.futures.Future[None] | None = None
    started: bool = False
    settled: threading.Event = field(default_factory=threading.Event)
    # chat jobs only: the chat, and what its events have shown so far
    chat: GroupChat | None = None
    task: str = ""
    extra_observers: tuple[Observer, ...] = ()
    forming: LiveCandidates | None = None  # streamed candidates, kept as long as the job
    models: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    run_id: str | None = None
    agents: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    current_turn: int = 0
    current_bids: list[Bid] = field(default_factory=list)
    bids_by_turn: dict[int, list[Bid]] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    record: RunRecord | None = None

    def emit(self, event: Any) -> None:
        """A generic job's event; runs on the loop thread, so it only appends under lock."""
        with self.lock:
            self.events.append(event)
            self.updated_at = time.time()

    def receive(self, event: Event) -> None:
        """Fold one chat event into the job; runs on the loop thread, so it only appends."""
        with self.lock:
            self.events.append(event)
            self.updated_at = time.time()
            if isinstance(event, RunStarted):
                self.run_id, self.agents = event.run_id, tuple(event.agents)
                self.config = MappingProxyType(dict(event.config))
            elif isinstance(event, TurnStarted):
                self.current_turn, self.current_bids = event.turn, []
            elif isinstance(event, BidReceived):
                self.current_bids.append(event.bid)
                self.bids_by_turn.setdefault(event.bid.turn, []).append(event.bid)
            elif isinstance(event, TurnCompleted):
                final = [b.model_copy() for b in event.bids]  # with winner flags set
                self.current_bids = list(final)
                self.bids_by_turn[event.turn.turn] = final
                self.turns.append(event.turn.model_copy())
            elif isinstance(event, MessagePosted):
                self.messages.append(event.message.model_copy())
            elif isinstance(event, RunFinished):
                self.record = event.record

    def expired(self, cutoff: float) -> bool:
        """Over and idle since `cutoff`. A chat is over once its status is final; a generic job
        once its coroutine has also cleaned up (a sweep records `cancelled` in the store)."""
        over = self.status in TERMINAL and (self.chat is not None or self.settled.is_set())
        return over and self.updated_at < cutoff


@dataclass(frozen=True)
class JobSnapshot:
    """An immutable copy of a chat job for rendering (the models inside are shared: read-only)."""

    id: str
    owner: str
    task: str
    status: JobStatus
    run_id: str | None
    agents: tuple[str, ...]
    config: Mapping[str, Any]  # the run's ChatConfig as a dict (threshold, ...), once started
    messages: tuple[Message, ...]
    turns: tuple[Turn, ...]
    bids_by_turn: Mapping[int, tuple[Bid, ...]]
    current_turn: int
    current_bids: tuple[Bid, ...]
    event_count: int  # events[:event_count] are reflected here; use as `since` for events()
    record: RunRecord | None
    error: str | None
    created_at: float
    updated_at: float
    models: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)  # (model, base)
    user: str = "local"  # who it runs for (may_manage)
    user_name: str = "local"
    forming: LiveCandidates | None = None  # a streamed chat's candidates (thread-safe, live)

    @property
    def done(self) -> bool:
        """Ended: a Stop reads `cancelled` at once, before the chat has unwound."""
        return self.status in TERMINAL

    @property
    def last_event_index(self) -> int:
        """Index of the newest event reflected here, -1 before the first event."""
        return self.event_count - 1


@dataclass(frozen=True)
class TaskSnapshot:
    """An immutable copy of a generic job for rendering."""

    id: str
    owner: str
    kind: str
    status: JobStatus
    events: tuple[Any, ...]
    result: Any
    error: str | None
    created_at: float
    settled: bool
    user: str = "local"  # who it runs for (may_manage)
    user_name: str = "local"

    @property
    def done(self) -> bool:
        """Ended, and its coroutine has finished its own clean-up (e.g. recorded `cancelled`)."""
        return self.status in TERMINAL and self.settled


def _chat_snapshot(job: Job) -> JobSnapshot:
    by_turn = {turn: tuple(bids) for turn, bids in job.bids_by_turn.items()}
    return JobSnapshot(
        id=job.id, owner=job.owner, task=job.task, status=job.status, run_id=job.run_id,
        agents=job.agents, config=job.config, messages=tuple(job.messages), turns=tuple(job.turns),
        bids_by_turn=MappingProxyType(by_turn), current_turn=job.current_turn,
        current_bids=tuple(job.current_bids), event_count=len(job.events), record=job.record,
        error=job.error, created_at=job.created_at, updated_at=job.updated_at,
        models=job.models, user=job.user, user_name=job.user_name, forming=job.forming,
    )


def _task_snapshot(job: Job) -> TaskSnapshot:
    return TaskSnapshot(job.id, job.owner, job.kind, job.status, tuple(job.events), job.result,
                        job.error, job.created_at, job.settled.is_set(), job.user,
                        job.user_name)


def _install_router(chat: GroupChat) -> None:
    """Add the router to a chat once, whichever registry runs it, so no event arrives twice."""
    with _routed_lock:
        if chat not in _routed:
            chat.add_observer(_route)
            _routed.add(chat)


def _route(event: Event) -> None:
    """The one observer installed on a chat: forwards to the job whose task emitted the event."""
    job = _current_job.get()
    if job is None:
        return  # a run of this chat outside the registry (e.g. chat.run() elsewhere)
    job.receive(event)
    for observer in job.extra_observers:
        observer(event)  # an exception here fails the run, and the job shows it as an error


class JobRegistry:
    """Process-wide, thread-safe table of jobs with a time-to-live for finished ones."""

    def __init__(self, runner: BackgroundLoop | None = None, ttl_s: float = DEFAULT_TTL_S) -> None:
        self._runner = runner
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}

    def start_chat(self, chat: GroupChat, task: str, owner: str,
                   extra_observers: Iterable[Observer] = (), *, user: str = LOCAL_USER,
                   user_name: str | None = None, forming: LiveCandidates | None = None) -> str:
        """Submit `chat.arun_record(task)` to the background loop; returns the new job id.
        `owner`: the browser session; `user`: who it runs for (who may stop it); `forming`:
        the chat's streamed candidates (an observer the caller added to the chat), kept with
        the job and on its snapshots, so they expire with it."""
        models = {a.agent_name: (a.model_name, a.api_base) for a in chat.agents}
        job = Job(id=uuid.uuid4().hex, owner=owner, kind="chat", lock=self._lock, chat=chat,
                  task=task, extra_observers=tuple(extra_observers), forming=forming,
                  models=MappingProxyType(models), user=user, user_name=user_name or user)
        _install_router(chat)
        return self._submit(job, lambda: self._run_chat(job))

    def start_job(self, coro_factory: CoroFactory, owner: str, kind: str = "sweep", *,
                  user: str = LOCAL_USER, user_name: str | None = None) -> str:
        """Run `coro_factory(emit)` on the background loop as a generic job; returns its id."""
        job = Job(id=uuid.uuid4().hex, owner=owner, kind=kind, lock=self._lock, user=user,
                  user_name=user_name or user)
        return self._submit(job, lambda: coro_factory(job.emit))

    def _submit(self, job: Job, work: Callable[[], Awaitable[Any]]) -> str:
        self.cleanup()
        with self._lock:
            self._jobs[job.id] = job
        job.future = (self._runner or background_loop()).submit(self._drive(job, work))
        return job.id

    async def _run_chat(self, job: Job) -> RunRecord:
        assert job.chat is not None
        _current_job.set(job)  # this task's context only; child bid tasks inherit it
        # the run is recorded under the job's id: one id for it on every page (issue 21)
        record = await job.chat.arun_record(job.task, run_id=job.id)
        with self._lock:
            job.record = job.record or record
        return record

    async def _drive(self, job: Job, work: Callable[[], Awaitable[Any]]) -> None:
        """The job's task on the loop: run its work and record how it ended."""
        job.started = True
        self._set(job, "running")
        try:
            result = await work()
        except asyncio.CancelledError:
            self._set(job, "cancelled")
            raise
        except BaseException as exc:  # UnexpectedModelCall and friends are BaseExceptions
            self._set(job, "error", f"{type(exc).__name__}: {exc}")
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
        else:
            with self._lock:
                job.result = result
            self._set(job, "finished")
        finally:
            job.settled.set()

    def _set(self, job: Job, status: JobStatus, error: str | None = None) -> None:
        with self._lock:
            if job.status in TERMINAL:
                return  # cancel() already recorded the outcome the user asked for
            job.status, job.updated_at = status, time.time()
            job.error = error or job.error

    def cancel(self, job_id: str, *, user: str | None = None) -> bool:
        """Stop a job now; its status reads `cancelled` as soon as this returns True.

        `user`: who asks (the dashboard always says); a job is stopped only for its own user
        (may_manage), so a shared link lets others watch a run, never stop it. None: the
        process itself (shutdown, tests)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.status in TERMINAL or job.future is None:
                return False
            if user is not None and not may_manage(job.user, user):
                return False
            future = job.future
        if not future.cancel():
            return False
        self._set(job, "cancelled")
        if not job.started:
            job.settled.set()  # never ran, so nothing to clean up
        return True

    def _job(self, job_id: str, chat: bool) -> Job:
        """A chat job (chat=True) or a generic one; KeyError for unknown or expired ids."""
        job = self._jobs.get(job_id)
        if job is None or (job.chat is not None) != chat:
            raise KeyError(f"no job {job_id!r} (it may have expired after {self._ttl_s} s)")
        return job

    def snapshot(self, job_id: str) -> JobSnapshot:
        """A chat job's immutable copy for one render; KeyError for unknown (or expired) ids."""
        with self._lock:
            return _chat_snapshot(self._job(job_id, chat=True))

    def task_snapshot(self, job_id: str) -> TaskSnapshot:
        """A generic job's immutable snapshot; KeyError for unknown (or expired) ids."""
        with self._lock:
            return _task_snapshot(self._job(job_id, chat=False))

    def events(self, job_id: str, since: int = 0) -> list[Event]:
        """A chat's events from index `since` on, for renderers that consume the stream."""
        with self._lock:
            return list(self._job(job_id, chat=True).events[since:])

    def jobs_for(self, owner: str, user: str | None = None) -> list[JobSnapshot]:
        """One session's chat jobs, oldest first: sessions never see each other's jobs (with
        `user`, only those run for that user: a browser id copied from someone else's URL
        does not list their jobs)."""
        self.cleanup()
        with self._lock:
            return [_chat_snapshot(j) for j in self._owned(owner, user) if j.chat is not None]

    def tasks_for(self, owner: str, kind: str | None = None,
                  user: str | None = None) -> list[TaskSnapshot]:
        """One session's generic jobs (optionally of one kind and user), oldest first."""
        with self._lock:
            return [_task_snapshot(j) for j in self._owned(owner, user)
                    if j.chat is None and kind in (None, j.kind)]

    def find_tasks(self, kind: str, match: Callable[[TaskSnapshot], bool]) -> list[TaskSnapshot]:
        """Generic jobs of `kind` in this process, of any owner, that `match`: to reattach a
        page to the job behind a stored id it was given (a sweep's `?sweep=`), as `?job=`
        does for chats. Oldest first."""
        with self._lock:
            snaps = [_task_snapshot(j) for j in sorted(self._jobs.values(),
                                                       key=lambda j: j.created_at)
                     if j.chat is None and j.kind == kind]
        return [s for s in snaps if match(s)]

    def _owned(self, owner: str, user: str | None = None) -> list[Job]:
        return sorted((j for j in self._jobs.values()
                       if j.owner == owner and user in (None, j.user)),
                      key=lambda j: j.created_at)

    def cleanup(self, now: float | None = None) -> int:
        """Forget finished jobs idle for longer than the time-to-live; returns how many."""
        cutoff = (time.time() if now is None else now) - self._ttl_s
        with self._lock:
            stale = [i for i, j in self._jobs.items() if j.expired(cutoff)]
            for job_id in stale:
                del self._jobs[job_id]
        return len(stale)

    def shutdown(self, timeout: float = 5.0, clear: bool = True) -> int:
        """Cancel every job (tests, server stop), wait briefly for them to settle; count them."""
        with self._lock:
            jobs = list(self._jobs.values())
        cancelled = sum(self.cancel(job.id) for job in jobs)
        deadline = time.monotonic() + timeout
        for job in jobs:
            if job.started:  # a job cancelled before it started never runs, so never settles
                job.settled.wait(max(0.0, deadline - time.monotonic()))
        if clear:
            with self._lock:
                self._jobs.clear()
        return cancelled


_registry_lock = threading.Lock()
_registry: JobRegistry | None = None


def registry() -> JobRegistry:
    """The process-wide registry (pages hold it through st.cache_resource)."""
    global _registry
    with _registry_lock:
        if _registry is None:
            _registry = JobRegistry()
        return _registry
