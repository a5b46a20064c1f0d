"""The one job table: each session's chats and sweeps as jobs on the engine's loop (no streamlit).

Why: a chat must outlive the script run that started it (page switches, reruns), stay private to
the browser session that owns it, and stop within a fraction of a second (DESIGN.md, "Running
jobs from Streamlit"). So runs are jobs on `groupchat_core.background_loop()`, their state
lives in one lock-protected table, and pages render immutable snapshots copied under the lock.

Two kinds of job share the table, its lock, its owner rules, TERMINAL, cancel, time-to-live and
shutdown: a chat job (`start_chat`) folds engine events into a transcript, bids and turns for the
live view (`snapshot`); a generic job (`start_job`, e.g. a sweep) is any coroutine that reports
events through an `emit` callback (`task_snapshot`).

Events reach a chat job through the observers of its own run (`GroupChat.arun_record(task,
observers=...)`): the job's fold (`groupchat_core.LiveRun`, the streamed candidates included)
and the caller's watchers (the store's recorder). So the same chat can run several jobs at once
(or one after another) without any job seeing another's events.

Bounded: a finished chat keeps its whole live state (every event, the transcript, the record)
only while it is among the newest GROUPCHAT_KEEP_FINISHED_JOBS finished chats (default 20);
older ones shrink to a summary (`Job.compact`: id, status, label, times, counts, owner), and a
page asking for one reads the recorded run from the store (`from_record`). Running jobs are
never shrunk. Before, every finished chat stayed whole for the hour of its time-to-live: +221 MB
for 200 chats of 40 turns x 5 agents (`python -m bench.job_memory`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import getpass
import logging
import os
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from groupchat_core import (
    JOB_TERMINAL,
    BackgroundLoop,
    Bid,
    Event,
    GroupChat,
    JobStatus,
    LiveRun,
    LiveState,
    Message,
    Observer,
    RunRecord,
    Turn,
    background_loop,
)

from .access import is_admin
from .live_feed import LiveFeed

TERMINAL: frozenset[str] = JOB_TERMINAL  # the statuses, like every status, live in the core
DEFAULT_TTL_S = 3600.0
# How many finished chats keep their whole live state (events, transcript, record); older ones
# keep a summary. The one declaration of the setting (README, "Deploy", says how to set it).
KEEP_FINISHED_ENV = "GROUPCHAT_KEEP_FINISHED_JOBS"
DEFAULT_KEEP_FINISHED = 20
MAX_KEEP_FINISHED = 10_000
MAX_SUMMARIES = 2_000  # summaries kept beyond them (about 1 KB each); older ones are forgotten
LABEL_CHARS = 300  # of a summary's task and error
logger = logging.getLogger("groupchat_ui")
Emit = Callable[[Any], None]
CoroFactory = Callable[[Emit], Awaitable[Any]]

LOCAL_USER = "local"  # who every session acts for on a server without login


def keep_finished_setting(environ: Mapping[str, str] | None = None) -> int:
    """GROUPCHAT_KEEP_FINISHED_JOBS as a count; a bad value is one logged line and the default
    (the server still starts: a typo must not take the dashboard down)."""
    raw = (os.environ if environ is None else environ).get(KEEP_FINISHED_ENV, "").strip()
    if not raw:
        return DEFAULT_KEEP_FINISHED
    if raw.isdigit() and 1 <= int(raw) <= MAX_KEEP_FINISHED:
        return int(raw)
    logger.warning("%s must be a whole number from 1 to %s, got %r; using %d (set it to how "
                   "many finished chats keep their live state)", KEEP_FINISHED_ENV,
                   f"{MAX_KEEP_FINISHED:,}", raw[:40], DEFAULT_KEEP_FINISHED)
    return DEFAULT_KEEP_FINISHED


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


Candidates = Mapping[str, tuple[float | None, str, bool]]  # agent -> (score, so far, bid in)

_SETTLED = threading.Event()  # one set event for every summary, instead of one each (~1 KiB)
_SETTLED.set()


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
    models: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    live: LiveRun = field(default_factory=LiveRun)  # the run's one fold (groupchat_core)
    feed: LiveFeed = field(default_factory=LiveFeed)  # its live channel (kit/live_feed.py)
    record: RunRecord | None = None  # as the run returned it (the fold has it from its end)
    # a finished chat beyond the kept ones: only its summary is left (compact)
    summary: bool = False
    kept: LiveState = field(default_factory=LiveState)  # a summary's: run id, name, counts
    counts: tuple[int, int, int] = (0, 0, 0)  # events, messages, turns, when it was compacted

    @property
    def is_chat(self) -> bool:
        """A chat job (start_chat), whether or not it still holds its chat."""
        return self.kind == "chat"

    def compact(self) -> None:
        """Drop everything but the summary (under the registry's lock, once it has settled):
        the events, transcript, bids, record and the chat with its observers, all of which
        the store holds; the label and error cut to LABEL_CHARS."""
        if self.summary:
            return
        state = self.live.state()
        self.counts = (state.events, len(state.messages), len(state.turns))
        name = state.config.get("name")
        self.kept = LiveState(run_id=state.run_id, agents=state.agents, turn=state.turn,
                              config=MappingProxyType({"name": name} if name else {}))
        self.live, self.events, self.record, self.result, self.future = LiveRun(), [], None, \
            None, None
        self.chat, self.extra_observers = None, ()
        self.settled = _SETTLED  # compacted only once settled, so this changes nothing
        self.task = self.task[:LABEL_CHARS]
        self.error = self.error[:LABEL_CHARS] if self.error else self.error
        self.summary = True

    def emit(self, event: Any) -> None:
        """A generic job's event; runs on the loop thread, so it only appends under lock."""
        with self.lock:
            self.events.append(event)
            self.updated_at = time.time()

    def receive(self, event: Event) -> None:
        """Keep one chat event (the run's `live` fold is the next observer: what is kept here
        is never behind it); runs on the loop thread, so it only appends under lock."""
        with self.lock:
            self.events.append(event)
            self.updated_at = time.time()

    def expired(self, cutoff: float) -> bool:
        """Over and idle since `cutoff`. A chat is over once its status is final; a generic job
        once its coroutine has also cleaned up (a sweep records `cancelled` in the store)."""
        over = self.status in TERMINAL and (self.is_chat or self.settled.is_set())
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
    candidates: Candidates = field(default_factory=dict)  # streamed, this turn
    deltas: int = 0  # streamed deltas seen, over the whole run
    # only the summary is left (a finished chat beyond the kept ones): no messages, turns, bids
    # or record here; read the recorded run from the store (from_record)
    summary: bool = False
    message_count: int = 0  # also for a summary
    turn_count: int = 0

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
    state = job.kept if job.summary else job.live.state()
    events, messages, turns = job.counts if job.summary else (
        state.events, len(state.messages), len(state.turns))
    return JobSnapshot(
        id=job.id, owner=job.owner, task=job.task, status=job.status, run_id=state.run_id,
        agents=state.agents, config=state.config, messages=state.messages, turns=state.turns,
        bids_by_turn=state.bids_by_turn, current_turn=state.turn, current_bids=state.bids,
        event_count=events, record=state.record or job.record, error=job.error,
        created_at=job.created_at, updated_at=job.updated_at, models=job.models, user=job.user,
        user_name=job.user_name, candidates=state.candidates, deltas=state.deltas,
        summary=job.summary, message_count=messages, turn_count=turns,
    )


def from_record(snap: JobSnapshot, record: RunRecord) -> JobSnapshot:
    """A summary's snapshot filled in from the job's recorded run (store.load_run(snap.run_id)):
    what the live view draws for a finished chat whose live state was dropped."""
    by_turn: dict[int, list[Bid]] = {}
    for bid in record.bids:
        by_turn.setdefault(bid.turn, []).append(bid)
    last = record.turns[-1].turn if record.turns else 0
    return dataclasses.replace(
        snap, config=MappingProxyType(dict(record.config)), messages=tuple(record.messages),
        turns=tuple(record.turns), record=record, current_turn=last,
        bids_by_turn=MappingProxyType({t: tuple(b) for t, b in by_turn.items()}),
        current_bids=tuple(by_turn.get(last, ())), summary=False,
        message_count=len(record.messages), turn_count=len(record.turns))


def _task_snapshot(job: Job) -> TaskSnapshot:
    return TaskSnapshot(job.id, job.owner, job.kind, job.status, tuple(job.events), job.result,
                        job.error, job.created_at, job.settled.is_set(), job.user,
                        job.user_name)


class JobRegistry:
    """Process-wide, thread-safe table of jobs with a time-to-live for finished ones."""

    def __init__(self, runner: BackgroundLoop | None = None, ttl_s: float = DEFAULT_TTL_S,
                 keep_finished: int | None = None) -> None:
        """`keep_finished`: finished chats that keep their whole live state (None: the
        GROUPCHAT_KEEP_FINISHED_JOBS setting); older ones keep a summary."""
        self._runner = runner
        self._ttl_s = ttl_s
        self.keep_finished = max(1, keep_finished_setting() if keep_finished is None
                                 else keep_finished)
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}

    def start_chat(self, chat: GroupChat, task: str, owner: str,
                   extra_observers: Iterable[Observer] = (), *, user: str = LOCAL_USER,
                   user_name: str | None = None) -> str:
        """Submit `chat.arun_record(task)` to the background loop; returns the new job id.
        `extra_observers` watch this run only, beside the job's own fold (`LiveRun`, which
        also holds the streamed candidates); `owner`: the browser session; `user`: who it
        runs for (who may stop it)."""
        models = {a.agent_name: (a.model_name, a.api_base) for a in chat.agents}
        job = Job(id=uuid.uuid4().hex, owner=owner, kind="chat", lock=self._lock, chat=chat,
                  task=task, extra_observers=tuple(extra_observers),
                  models=MappingProxyType(models), user=user, user_name=user_name or user)
        return self._submit(job, lambda: self._run_chat(job))

    def start_job(self, coro_factory: CoroFactory, owner: str, kind: str = "sweep", *,
                  user: str = LOCAL_USER, user_name: str | None = None) -> str:
        """Run `coro_factory(emit)` on the background loop as a generic job; returns its id."""
        if kind == "chat":
            raise ValueError("kind 'chat' is start_chat's; name a generic job's kind (sweep)")
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
        # the run is recorded under the job's id: one id for it on every page (issue 21); its
        # events go to this job's fold and watchers only, whoever else runs the same chat
        record = await job.chat.arun_record(job.task, run_id=job.id,
                                            observers=(job.receive, job.live, job.feed,
                                                       *job.extra_observers))
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
            job.feed.close()  # the pages watching it settle, however it ended
            job.settled.set()
            with self._lock:
                self._shrink()

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
        job.feed.close()  # what watches it sees the Stop at once, not when the run unwinds
        if not job.started:
            job.settled.set()  # never ran, so nothing to clean up
            with self._lock:
                self._shrink()
        return True

    def _shrink(self) -> None:
        """Under the lock: finished chats beyond the newest `keep_finished` become summaries,
        and summaries beyond MAX_SUMMARIES are forgotten. Only settled jobs: a chat still
        unwinding after a Stop may post one more event, and a running job is never touched."""
        ended = sorted((j for j in self._jobs.values()
                        if j.is_chat and j.status in TERMINAL and j.settled.is_set()),
                       key=lambda j: j.updated_at, reverse=True)
        for job in ended[self.keep_finished:]:
            job.compact()
        for job in ended[self.keep_finished + MAX_SUMMARIES:]:
            del self._jobs[job.id]

    def _newest(self, jobs: Sequence[Job]) -> list[Job]:
        """`jobs` (in their order) bounded as a session's list is: every unfinished one and
        the newest `keep_finished` finished ones."""
        ended = sorted((j for j in jobs if j.status in TERMINAL), key=lambda j: j.updated_at,
                       reverse=True)[:self.keep_finished]
        keep = {id(j) for j in ended}
        return [j for j in jobs if j.status not in TERMINAL or id(j) in keep]

    def bounded(self, job_ids: Sequence[str], also: str | None = None) -> list[str]:
        """A session's list of job ids, bounded like `jobs_for`: ids the table still knows,
        every unfinished job and the newest `keep_finished` finished ones (and `also`, the job
        on screen), in the given order. Why: the list grew by one with every run."""
        with self._lock:
            known = [j for i in dict.fromkeys(job_ids) if (j := self._jobs.get(i)) is not None]
            kept = {j.id for j in self._newest(known)} | ({also} & {j.id for j in known})
        return [j.id for j in known if j.id in kept]

    def _job(self, job_id: str, chat: bool) -> Job:
        """A chat job (chat=True) or a generic one; KeyError for unknown or expired ids."""
        job = self._jobs.get(job_id)
        if job is None or job.is_chat != chat:
            raise KeyError(f"no job {job_id!r} (it may have expired after {self._ttl_s} s)")
        return job

    def snapshot(self, job_id: str) -> JobSnapshot:
        """A chat job's immutable copy for one render; KeyError for unknown (or expired) ids."""
        with self._lock:
            return _chat_snapshot(self._job(job_id, chat=True))

    def feed(self, job_id: str) -> LiveFeed:
        """A chat job's live channel (kit/live_feed.py); KeyError for unknown (or expired)
        ids. Whoever asks must have checked that the asker may watch it (kit/live_routes.py)."""
        with self._lock:
            return self._job(job_id, chat=True).feed

    def task_snapshot(self, job_id: str) -> TaskSnapshot:
        """A generic job's immutable snapshot; KeyError for unknown (or expired) ids."""
        with self._lock:
            return _task_snapshot(self._job(job_id, chat=False))

    def wait(self, job_id: str, timeout: float | None = None) -> bool:
        """Block until the job has settled (ended and cleaned up): True, or False on `timeout`.
        For scripts and tests that must not poll; KeyError for an unknown id."""
        with self._lock:
            settled = self._jobs[job_id].settled if job_id in self._jobs else None
        if settled is None:
            raise KeyError(job_id)
        return settled.wait(timeout)

    def events(self, job_id: str, since: int = 0) -> list[Event]:
        """A chat's events from index `since` on, for renderers that consume the stream (none
        once the job is a summary: its run is in the store)."""
        with self._lock:
            return list(self._job(job_id, chat=True).events[since:])

    def jobs_for(self, owner: str, user: str | None = None) -> list[JobSnapshot]:
        """One session's chat jobs, oldest first: sessions never see each other's jobs (with
        `user`, only those run for that user: a browser id copied from someone else's URL
        does not list their jobs). Bounded: every unfinished job and the newest
        `keep_finished` finished ones."""
        self.cleanup()
        with self._lock:
            mine = [j for j in self._owned(owner, user) if j.is_chat]
            return [_chat_snapshot(j) for j in self._newest(mine)]

    def tasks_for(self, owner: str, kind: str | None = None,
                  user: str | None = None) -> list[TaskSnapshot]:
        """One session's generic jobs (optionally of one kind and user), oldest first."""
        with self._lock:
            return [_task_snapshot(j) for j in self._owned(owner, user)
                    if not j.is_chat and kind in (None, j.kind)]

    def find_tasks(self, kind: str, match: Callable[[TaskSnapshot], bool]) -> list[TaskSnapshot]:
        """Generic jobs of `kind` in this process, of any owner, that `match`: to reattach a
        page to the job behind a stored id it was given (a sweep's `?sweep=`), as `?job=`
        does for chats. Oldest first."""
        with self._lock:
            snaps = [_task_snapshot(j) for j in sorted(self._jobs.values(),
                                                       key=lambda j: j.created_at)
                     if not j.is_chat and j.kind == kind]
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
