"""Recording a run as it happens: the engine observer and the thread that does its writes.

Each completed turn (its bids, its turn row and the posted message) is one transaction, started
as soon as the engine reports the turn. The writes happen on the process's store writer thread,
in the order the events came, so the engine's loop never waits for the database (a slow disk, a busy
lock held by another process, a remote PostgreSQL), and SQLite's work, which releases the GIL,
overlaps the next turn. A run is fully in the store when `run()` returns: the recorder waits for
its writes at the run's end. A crash loses at most the turn in flight (and, if the database had
fallen behind, turns still queued), never half a turn.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, insert, update

from .._errors import StoreError
from .._records import Event, MessagePosted, RunFinished, RunStarted, TurnCompleted, utc_now
from ._connect import db_errors
from ._process import this_writer
from ._schema import messages, runs
from ._writer import (
    agent_specs,
    finish_values,
    insert_run,
    message_row,
    run_row,
    spec_data,
    status_for,
)

if TYPE_CHECKING:
    from ._runstore import RunStore

logger = logging.getLogger("groupchat_core")
FLUSH_AT_EXIT_S = 10.0


class WriterThread:
    """A daemon thread running submitted writes one after another, in order."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...]]] = (
            queue.SimpleQueue())
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        self._queue.put((fn, args))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything submitted so far is done; False on timeout."""
        if threading.current_thread() is self._thread:
            return True
        done = threading.Event()
        self.submit(done.set)
        return done.wait(timeout)

    def _main(self) -> None:
        while True:
            fn, args = self._queue.get()
            try:
                fn(*args)
            except Exception:  # a bug in a write must not kill the thread for every later run
                logger.exception("run store writer: %r failed", fn)


_thread: WriterThread | None = None
_thread_lock = threading.Lock()


def writer_thread() -> WriterThread:
    """The process's one store writer thread, started on first use (writes are short; one
    thread keeps every database's writes in order and costs nothing while idle)."""
    global _thread
    with _thread_lock:
        if _thread is None:
            _thread = WriterThread("groupchat-store-writer")
            atexit.register(flush_all)
        return _thread


def flush_all(timeout: float = FLUSH_AT_EXIT_S) -> None:
    """Finish queued writes (at interpreter exit, so a script's last turns are not lost)."""
    if _thread is not None:
        _thread.flush(timeout)


HELD_CONNECTIONS = 4  # runs that keep their write connection between turns, process-wide
_held = 0
_held_lock = threading.Lock()


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


class StoreRecorder:
    """Engine observer writing each run to a RunStore as it happens.

    Get one from `store.recorder(chat)` (it reads the agents from the chat when a run starts:
    run events carry only their names). One recorder can serve many runs of the same chat.
    `failures` maps a run whose recording failed to the first error; recording of that run
    stops there (the store keeps a consistent prefix) and the run ends flagged as an error.
    """

    def __init__(self, store: RunStore, source: Any, *, sweep_id: str | None = None,
                 cell: str | None = None) -> None:
        self.store = store
        self._source = source
        self._sweep_id, self._cell = sweep_id, cell
        self._thread = writer_thread()
        # Touched only on the writer thread (or after flush()):
        self._positions: dict[str, int] = {}  # run_id -> next message position
        self._connections: dict[str, Connection] = {}
        self.failures: dict[str, str] = {}  # run_id -> the first write that failed
        self.run_ids: list[str] = []

    # Only these events are written; the engine then never relays the rest to this observer.
    wants = frozenset({"run_started", "message_posted", "turn_completed", "run_finished"})

    def __call__(self, event: Event) -> None:
        handler = self._handler(event)
        if handler is None:
            return
        if isinstance(event, RunStarted):  # read the agents now: they may change later
            self._thread.submit(self._apply, handler, event, agent_specs(self._source))
        else:
            self._thread.submit(self._apply, handler, event)
        if isinstance(event, RunFinished):
            self._thread.flush()  # the run is fully recorded when run() returns

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every event received so far is written (or has failed)."""
        return self._thread.flush(timeout)

    def _handler(self, event: Event) -> Callable[..., None] | None:
        if isinstance(event, TurnCompleted):
            return self._turn
        if isinstance(event, RunStarted):
            return self._started
        if isinstance(event, MessagePosted) and event.turn == 0:
            return self._task
        if isinstance(event, RunFinished):
            return self._finished
        return None

    def _apply(self, handler: Callable[..., None], event: Any, *args: Any) -> None:
        """On the writer thread: one event's writes, or skip them after a failure."""
        run_id = event.run_id
        if run_id in self.failures:
            if isinstance(event, RunFinished):
                self._flag_failed(event)
            return  # keep a consistent prefix: no turn after one that could not be written
        try:
            handler(event, *args)
        except StoreError as exc:
            self.failures[run_id] = str(exc)
            logger.error("%s; recording of run %s stops here", exc, run_id)
            if isinstance(event, RunFinished):
                self._release(run_id)

    def _flag_failed(self, event: RunFinished) -> None:
        """Best effort: say on the run row that recording stopped, and why."""
        note = f"recording failed, the store stops before this: {self.failures[event.run_id]}"
        values = {**finish_values(event.record, "error"), "error": note}
        try:
            with self._transaction(event.run_id, "flag a run whose recording failed") as conn:
                conn.execute(update(runs).where(runs.c.run_id == event.run_id).values(**values))
        except StoreError:
            pass  # the database is still unreachable; the first error was already reported
        finally:
            self._release(event.run_id)

    def _started(self, event: RunStarted, specs: list[dict[str, Any]]) -> None:
        row = run_row(event.run_id, event.task, spec_data(event.config, specs), utc_now())
        writer = this_writer()
        row.update(sweep_id=self._sweep_id, cell=self._cell, pid=writer.pid,
                   hostname=writer.hostname, proc_start=writer.proc_start)
        with self._transaction(event.run_id, "record the start of a run") as conn:
            insert_run(conn, row, specs)
        self._positions[event.run_id] = 0
        self.run_ids.append(event.run_id)

    def _task(self, event: MessagePosted) -> None:
        row = message_row(event.run_id, 0, 0, event.message)
        with self._transaction(event.run_id, "record the task") as conn:
            conn.execute(insert(messages), [row])
        self._positions[event.run_id] = 1

    def _turn(self, event: TurnCompleted) -> None:
        run_id = event.run_id
        position = self._positions.get(run_id, 1)
        row = None if event.message is None else message_row(
            run_id, position, event.turn.turn, event.message)
        with self._transaction(run_id, f"record turn {event.turn.turn}") as conn:
            self.store.turn_writer.write(conn, run_id, event.turn, event.bids, row)
        self._positions[run_id] = position + (row is not None)

    def _finished(self, event: RunFinished) -> None:
        values = finish_values(event.record, status_for(event.record))
        try:
            with self._transaction(event.run_id, "record the end of a run") as conn:
                conn.execute(update(runs).where(runs.c.run_id == event.run_id).values(**values))
        finally:
            self._release(event.run_id)
            self._positions.pop(event.run_id, None)

    @contextmanager
    def _transaction(self, run_id: str, what: str) -> Iterator[Connection]:
        """A write transaction on the run's own connection, held while the run lasts.

        Checking a pooled connection out per turn costs more than the turn's inserts; holding
        one keeps recording overhead small. Between turns it holds no transaction or lock.
        At most HELD_CONNECTIONS runs (over every recorder) hold one: the pool has a bounded
        size, and a writer thread waiting for a connection that only it could give back
        would stall every run's recording (a sweep easily has 16 runs in flight). Other runs
        check a connection out per transaction (one at a time: writes are serialised here).
        """
        conn = self._connections.get(run_id)
        transient = False
        try:
            if conn is None:
                conn = self.store.write_connection()
                transient = not _hold()
                if not transient:
                    self._connections[run_id] = conn
            with db_errors(what, self.store.url, self.store.driver_error), conn.begin():
                yield conn
        except BaseException:
            self._release(run_id)
            raise
        finally:
            if transient and conn is not None:
                conn.close()

    def _release(self, run_id: str) -> None:
        conn = self._connections.pop(run_id, None)
        if conn is not None:
            _unhold()
            conn.close()

    def abandon(self, error: str, status: str = "error") -> None:
        """Close runs this recorder started but never saw finish (the engine raised, Ctrl-C)."""
        self.flush()
        open_runs = [r for r in self._positions if r not in self.failures]
        for run_id in list(self._positions):
            self._release(run_id)
        self._positions.clear()
        if not open_runs:
            return
        with self.store.write("record a failed run") as conn:
            conn.execute(update(runs).where(runs.c.run_id.in_(open_runs),
                                            runs.c.status == "running")
                         .values(status=status, error=error, ended_at=utc_now()))
