"""Recording a run as it happens: the engine observer that hands its writes to the store writer
thread (_writer_thread.py).

The observer only hands events over; the writes happen on the process's store writer thread, so
a chat waiting for its models never waits for the database (a slow disk, a busy lock held by
another process, a remote PostgreSQL). A chat producing turns faster than the writer's cadence
(COALESCE_S) lets the writer have the GIL when a write is due, for at most HAND_OVER_S, rather
than starve it (see _writer_thread.py). What the writer has not committed yet is kept in memory,
per run:

- a run's start (its row, its agents) waits for the task message, and the three go in **one**
  transaction: no reader ever sees a run without its task;
- each completed turn (its bids, its turn row, the posted message) is written whole, in one
  transaction, together with any later turns of the run that arrived while the writer was busy
  (one executemany per table instead of one transaction per turn), and with the run's end if
  that arrived too.

What is kept is plain rows, taken from the events when the recorder receives them (on the
engine's thread, before the engine goes on), each from the first event that carries it: a
posted message from its `message_posted`, a turn row from its `speaker_selected` or `lull`, the
bids from `turn_completed`. The engine hands its records to observers without copying them, and
nothing an observer, or the caller's thread, does to them afterwards reaches the store.

A crash loses the turns not yet committed (when the database keeps up: the turn in flight),
never part of one. A write that fails because the connection dropped is retried on a new
connection, with the turns still in memory, until the database has been unreachable for
`RunStore.reconnect_for` seconds (30 by default); then recording of the run stops there, loudly,
and the run is flagged `error` in the store as soon as the store can be reached. Any other
failure (a full disk, a constraint) stops the run's recording at once. A run is fully in the
store (or known to have failed) when `run()` returns: the recorder waits for its writes at the
run's end.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from .._errors import StoreError
from .._records import (
    Event,
    LullReached,
    Message,
    MessagePosted,
    RunFinished,
    RunStarted,
    SpeakerSelected,
    TurnCompleted,
    utc_now,
)
from .._statuses import RunStatus
from .._version import app_version, litellm_version
from ._connect import is_disconnect, safe_url
from ._process import this_writer
from ._schema import messages, runs, turns
from ._writer import (
    TurnRows,
    agent_specs,
    finish_values,
    insert_run,
    message_row,
    run_row,
    spec_data,
    status_for,
    totals_from_bids,
)
from ._writer_thread import COALESCE_S, writer_thread

if TYPE_CHECKING:
    from ._base import StoreBase

logger = logging.getLogger("groupchat_core")
RETRY_FIRST_S, RETRY_MAX_S = 0.05, 1.0  # backoff between reconnect attempts


HELD_CONNECTIONS = 4  # runs that keep their write connection between turns, process-wide
_held = 0
_held_lock = threading.Lock()

# Since when each database (by URL) has been unreachable: the retry budget is shared by every
# write to it, so once recording has given up, later writes fail at their first attempt instead
# of each waiting `reconnect_for` again. Touched only on the writer thread.
_down_since: dict[str, float] = {}


def _hold() -> bool:
    """Take one of the held-connection slots, if one is free."""
    global _held
    with _held_lock:
        if _held >= HELD_CONNECTIONS:
            return False
        _held += 1
        return True


def _unhold() -> None:
    global _held
    with _held_lock:
        _held -= 1


@dataclass
class _Batch:
    """What one transaction writes for one run: its start (with the task), turns, its end."""

    start: tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]] | None = None
    turns: list[TurnRows] = field(default_factory=list)
    finish: dict[str, Any] | None = None  # the run row's final values (finish_values)

    def what(self) -> str:
        """For messages: what the transaction records."""
        parts = ["the start of a run"] if self.start else []
        if self.turns:
            first, last = self.turns[0].number, self.turns[-1].number
            parts.append(f"turn {first}" if first == last else f"turns {first}-{last}")
        if self.finish is not None:
            parts.append("the end of a run")
        return "record " + " and ".join(parts)


@dataclass
class _RunLog:
    """One run's writes not yet in the store, and where its recording stands."""

    run_id: str
    start: tuple[dict[str, Any], list[dict[str, Any]]] | None  # run row and agents, unwritten
    task: dict[str, Any] | None = None  # the task's message row
    turns: list[TurnRows] = field(default_factory=list)
    finish: dict[str, Any] | None = None  # the run row's final values
    position: int = 1  # next message position (0 is the task), as turns are received
    message: dict[str, Any] | None = None  # the turn's posted message, taken when posted
    turn_row: tuple[int, Any] | None = None  # (turn, row), taken when the turn was decided
    in_store: bool = False  # the run row is committed; writer thread only

    def take(self) -> _Batch | None:
        """Everything that can be written now (a start only once its task is known)."""
        if self.start is not None and self.task is None:
            return None  # the engine posts the task right after RunStarted
        batch = _Batch(turns=self.turns, finish=self.finish)
        if self.start is not None and self.task is not None:
            batch.start = (*self.start, self.task)
            self.start = None
        self.turns, self.finish = [], None
        return batch if batch.start or batch.turns or batch.finish is not None else None


class StoreRecorder:
    """Engine observer writing each run to a RunStore as it happens.

    Get one from `store.recorder(chat)` (it reads the agents from the chat when a run starts:
    run events carry only their names). One recorder can serve many runs of the same chat.
    `failures` maps a run whose recording failed to the first error; recording of that run
    stops there (the store keeps a consistent prefix) and the run ends flagged as an error.
    """

    # Only these events are written; the engine then never relays the rest to this observer.
    wants = frozenset({"run_started", "message_posted", "speaker_selected", "lull",
                       "turn_completed", "run_finished"})
    # Handing an event over is quick and thread-safe: the engine calls it on its own thread
    # instead of relaying each event to the thread that runs the chat.
    thread_safe = True

    def __init__(self, store: StoreBase, source: Any, *, sweep_id: str | None = None,
                 cell: str | None = None, owner: str | None = None,
                 owner_name: str | None = None) -> None:
        self.store = store
        self._source = source
        self._sweep_id, self._cell = sweep_id, cell
        # Recorded on every run at its start: who it runs for, and the code that records it.
        self._provenance = {"owner": owner, "owner_name": owner_name,
                            "app_version": app_version(), "litellm_version": litellm_version()}
        self._thread = writer_thread()
        self._lock = threading.Lock()
        self._logs: dict[str, _RunLog] = {}  # open runs (and failed ones, until they end)
        self._scheduled = False
        self._unflagged: dict[str, dict[str, Any]] = {}  # failed runs' ends not flagged yet
        self._lost_starts: dict[str, tuple[dict[str, Any], list[dict[str, Any]],
                                           dict[str, Any]]] = {}
        self._connections: dict[str, Connection] = {}  # writer thread only
        self.failures: dict[str, str] = {}  # run_id -> the first write that failed
        self.run_ids: list[str] = []

    # --- on the engine's side: hand events over ---------------------------------------------

    def __call__(self, event: Event) -> None:
        """Take what the store needs from the event as plain rows, now (see the module's
        docstring); the writer thread writes them later."""
        if isinstance(event, TurnCompleted):
            self._add(event.run_id, lambda log: self._turn(log, event))
        elif isinstance(event, SpeakerSelected | LullReached):
            row = self.store.turn_writer.turn_row(event.run_id, event.turn)
            self._add(event.run_id, lambda log: setattr(log, "turn_row", (event.turn.turn, row)),
                      write=False)
        elif isinstance(event, MessagePosted):
            if event.turn == 0:
                row = message_row(event.run_id, 0, 0, event.message)
                # A run's start joins its first turns (one transaction, and in a busy chat
                # no write of its own while the engine runs: see _writer_thread.py).
                self._add(event.run_id, lambda log: setattr(log, "task", row),
                          not_before=COALESCE_S)
            else:
                self._add(event.run_id, lambda log: self._posted(log, event), write=False)
        elif isinstance(event, RunStarted):
            self._started(event)
        elif isinstance(event, RunFinished):
            values = finish_values(event.record, status_for(event.record))
            self._add(event.run_id, lambda log: setattr(log, "finish", values))
            self.flush()  # the run is fully recorded when run() returns

    def _posted(self, log: _RunLog, event: MessagePosted) -> None:
        log.message = message_row(log.run_id, log.position, event.turn, event.message)
        log.position += 1

    def _turn(self, log: _RunLog, event: TurnCompleted) -> None:
        """The turn's rows: the message and turn row as taken when first seen, the bids now."""
        number = event.turn.turn
        message, log.message = log.message, None
        if message is None and event.message is not None:  # not seen posted (never, today)
            message = message_row(log.run_id, log.position, number, event.message)
            log.position += 1
        turn_row = log.turn_row[1] if log.turn_row and log.turn_row[0] == number else None
        log.turn_row = None
        log.turns.append(self.store.turn_writer.rows(log.run_id, event.turn, event.bids,
                                                     message, turn_row))

    def _started(self, event: RunStarted) -> None:
        specs = agent_specs(self._source)  # read the agents now: they may change later
        row = run_row(event.run_id, event.task, spec_data(event.config, specs), utc_now())
        writer = this_writer()
        row.update(sweep_id=self._sweep_id, cell=self._cell, pid=writer.pid,
                   hostname=writer.hostname, proc_start=writer.proc_start, **self._provenance)
        with self._lock:
            self._logs[event.run_id] = _RunLog(event.run_id, (row, specs))
            self.run_ids.append(event.run_id)

    def _add(self, run_id: str, change: Callable[[_RunLog], None], write: bool = True,
             not_before: float = 0.0) -> None:
        with self._lock:
            log = self._logs.get(run_id)
            if log is None:
                return  # a run that started before this recorder was attached
            change(log)
            if not write or self._scheduled:
                return
            self._scheduled = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # fed from a plain thread: the writer coalesces on its own
            self._thread.submit(self._drain, coalesce=True)
            return
        # On the engine's loop: the write waits for a timer there (see _writer_thread.py).
        self._thread.defer(self._drain)
        loop.call_later(max(not_before, self._thread.due_in()), self._due)

    def _due(self) -> None:
        """On the engine's loop, when the deferred write is due: submit it, and if turns come
        faster than the writer's cadence, let the writer have the GIL until it is written
        (again every COALESCE_S while the writer is behind)."""
        self._thread.run_deferred(self._drain)
        with self._lock:
            busy = sum(len(log.turns) for log in self._logs.values()) > 1
        if busy and not self._thread.hand_over():
            asyncio.get_running_loop().call_later(COALESCE_S, self._due)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event received so far is written (or has failed)."""
        return self._thread.flush(timeout)

    # --- on the writer thread ----------------------------------------------------------------

    def _drain(self) -> None:
        """Write everything received so far: one transaction per run with something new."""
        with self._lock:
            self._scheduled = False
            work = [(log, batch) for log in self._logs.values()
                    if (batch := log.take()) is not None]
            for log, batch in work:
                if batch.finish is not None:
                    del self._logs[log.run_id]
        if self._unflagged:
            self._flag_unflagged()
        for log, batch in work:
            if log.run_id in self.failures:
                if batch.finish is not None:
                    self._flag_failed(log.run_id, batch.finish)
                continue  # keep a consistent prefix: nothing after a write that failed
            self._write_retrying(log, batch)
            if batch.finish is not None:
                self._release(log.run_id)
                if log.run_id in self.failures:
                    self._flag_failed(log.run_id, batch.finish)

    def _write_retrying(self, log: _RunLog, batch: _Batch) -> None:
        """Write a batch; on a dropped connection reconnect and retry, until the database has
        been unreachable for `reconnect_for` seconds."""
        url, delay, attempt = self.store.url, RETRY_FIRST_S, 0
        while True:
            self._lost = False
            try:
                self._write(log, batch, retrying=attempt > 0)
            except Exception as exc:
                lost = self._lost  # set by _transaction, which saw the connection
                self._release(log.run_id)
                if not lost:
                    self._fail(log.run_id, batch, exc)
                    return
                now = time.monotonic()
                since = _down_since.setdefault(url, now)
                left = since + self.store.reconnect_for - now
                if left <= 0:
                    self._fail(log.run_id, batch, exc, down_s=now - since)
                    if batch.start is not None:  # written, flagged, once the database is back
                        self._lost_starts[log.run_id] = batch.start
                    return
                time.sleep(min(delay, left))
                delay, attempt = min(delay * 2, RETRY_MAX_S), attempt + 1
            else:
                _down_since.pop(url, None)
                return

    def _write(self, log: _RunLog, batch: _Batch, *, retrying: bool) -> None:
        """One transaction: the run's start with its task, its new turns, its end."""
        run_id = log.run_id
        with self._transaction(run_id) as conn:
            if retrying and self._committed(conn, log, batch):
                pass  # the lost connection had committed it: the commit's reply was lost
            else:
                if batch.start is not None:
                    row, specs, task = batch.start
                    insert_run(conn, row, specs)
                    conn.execute(insert(messages), [task])
                if batch.turns:
                    self.store.turn_writer.write_turns(conn, run_id, batch.turns)
                if batch.finish is not None:
                    conn.execute(update(runs).where(runs.c.run_id == run_id)
                                 .values(**batch.finish))
        log.in_store = log.in_store or batch.start is not None

    @staticmethod
    def _committed(conn: Connection, log: _RunLog, batch: _Batch) -> bool:
        """Whether a batch whose commit was cut off is in the store after all."""
        if batch.turns:
            last = batch.turns[-1].number
            return conn.execute(select(turns.c.turn).where(
                turns.c.run_id == log.run_id, turns.c.turn == last)).first() is not None
        if batch.start is not None:
            return conn.execute(select(runs.c.run_id).where(
                runs.c.run_id == log.run_id)).first() is not None
        return False  # only the end: writing it again changes nothing

    def _fail(self, run_id: str, batch: _Batch, exc: BaseException,
              down_s: float | None = None) -> None:
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        message = f"could not {batch.what()} in {safe_url(self.store.url)}: " + (
            detail[0] if detail else type(exc).__name__)
        if down_s is not None:
            message += (f" (gave up after {down_s:.0f} s without a connection; the turns not "
                        "written were kept in memory until then)")
        self.failures[run_id] = message
        logger.error("%s; recording of run %s stops here", message, run_id)

    def _flag_failed(self, run_id: str, finish: dict[str, Any]) -> None:
        """Say on the run row that recording stopped, and why (now, or when the database is
        reachable again: at this recorder's next write or abandon(); if the process dies first,
        the next store opened on this host marks the run `interrupted`). A run whose start
        was given up is written then too (its row, agents and task), flagged."""
        note = f"recording failed, the store stops before this: {self.failures[run_id]}"
        values = {**finish, "status": "error", "error": note}
        start = self._lost_starts.get(run_id)
        try:
            with self.store.write("flag a run whose recording failed") as conn:
                if start is not None and conn.execute(select(runs.c.run_id).where(
                        runs.c.run_id == run_id)).first() is None:
                    row, specs, task = start
                    insert_run(conn, row, specs)
                    conn.execute(insert(messages), [task])
                conn.execute(update(runs).where(runs.c.run_id == run_id).values(**values))
        except StoreError:
            self._unflagged[run_id] = finish  # the database is still unreachable
        else:
            self._unflagged.pop(run_id, None)
            self._lost_starts.pop(run_id, None)

    def _flag_unflagged(self) -> None:
        for run_id, finish in list(self._unflagged.items()):
            self._flag_failed(run_id, finish)
            if run_id in self._unflagged:
                return  # still unreachable: try again later

    _lost = False  # the last transaction failed because the connection was lost

    @contextmanager
    def _transaction(self, run_id: str) -> Iterator[Connection]:
        """A write transaction on the run's own connection, held while the run lasts.

        Checking a pooled connection out per write costs more than a turn's inserts; holding
        one keeps recording overhead small. Between writes it holds no transaction or lock.
        At most HELD_CONNECTIONS runs (over every recorder) hold one: the pool has a bounded
        size, and a writer thread waiting for a connection that only it could give back
        would stall every run's recording (a sweep easily has 16 runs in flight). Other runs
        check a connection out per transaction (one at a time: writes are serialised here).
        A failure sets `_lost` when the connection was lost (or, on a server database, could
        not be made), and a lost connection is invalidated so the pool never hands it out.
        """
        conn = self._connections.get(run_id)
        transient = False
        if conn is None:
            try:
                conn = self.store.write_engine.connect()
            except Exception:
                self._lost = self.store.engine.dialect.name != "sqlite"  # cannot reach it
                raise
            transient = not _hold()
            if not transient:
                self._connections[run_id] = conn
        try:
            with conn.begin():
                yield conn
        except Exception as exc:
            self._lost = is_disconnect(exc, conn)
            if self._lost and not conn.invalidated:
                with suppress(SQLAlchemyError):
                    conn.invalidate()
            raise
        finally:
            if transient:
                with suppress(SQLAlchemyError):
                    conn.close()

    def _release(self, run_id: str) -> None:
        conn = self._connections.pop(run_id, None)
        if conn is not None:
            _unhold()
            with suppress(SQLAlchemyError):
                conn.close()

    def abandon(self, error: str, status: RunStatus = "error") -> None:
        """Close runs this recorder started but never saw finish (the engine raised, Ctrl-C)."""
        self.flush()
        with self._lock:
            open_logs = list(self._logs.values())
            self._logs.clear()
        for log in open_logs:
            self._release(log.run_id)
        if self._unflagged:
            self._flag_unflagged()
        open_logs = [log for log in open_logs if log.run_id not in self.failures]
        if not open_logs:
            return
        with self.store.write("record a failed run") as conn:
            for log in open_logs:
                if log.start is not None:  # never written: its task had not been posted yet
                    row, specs = log.start
                    task = log.task or message_row(log.run_id, 0, 0, Message(
                        role="User", content=row["task"], timestamp=row["started_at"]))
                    insert_run(conn, row, specs)
                    conn.execute(insert(messages), [task])
            conn.execute(update(runs).where(runs.c.run_id.in_([g.run_id for g in open_logs]),
                                            runs.c.status == "running")
                         .values(status=status, error=error, ended_at=utc_now(),
                                 **totals_from_bids()))
