"""RunStore: every run and its bid log, saved as it happens, read back as frames or records.

    store = RunStore()                     # GROUPCHAT_DB, else <repo>/data/groupchat.db
    store.attach(chat)                     # record every run of this chat
    chat.run("Plan the offsite.")
    store.list_runs(status="finished")     # pandas DataFrame
    store.bids(chat.last_run.run_id)       # the bid log, docs/engine.md §9 column names
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, select, update

from .._errors import StoreError
from ._cachetable import BidCacheTable
from ._connect import db_errors, default_url, get_engine, retry_lost, safe_url, write_engine
from ._library import Library, check_owner
from ._migrations import ensure_schema
from ._process import this_writer, writer_alive
from ._recorder import StoreRecorder
from ._runbook import RunBook
from ._schema import runs
from ._sqlite_check import missing_store
from ._sweeps import SweepBook
from ._writer import TurnWriter, totals_from_bids
from ._writer_thread import writer_thread

if TYPE_CHECKING:
    pass

RECONNECT_FOR_S = 30.0
T = TypeVar("T")


class RunStore(RunBook, Library, SweepBook, BidCacheTable):
    """A run store at one SQLAlchemy URL; cheap to create (engines are shared per URL).

    `reconnect_for`: how many seconds recording keeps reconnecting to a database that dropped
    its connection before it gives a run up (see docs/engine.md §11). `create=False`: a SQLite
    file that does not exist is refused (StoreError) rather than created with its folders (for
    read-only commands). An existing SQLite file that fails a quick integrity check is refused,
    unchanged (_sqlite_check.py).

    All SQL lives in this package: connections and recording here, reading and editing runs
    in _runbook.py, saved agents and presets in _library.py, sweeps in _sweeps.py, the bid
    cache's table in _cachetable.py (mixins by concern, one public object).
    """

    def __init__(self, url: str | None = None, *,
                 reconnect_for: float = RECONNECT_FOR_S, create: bool = True) -> None:
        self.url = url or default_url()
        if not create and (missing := missing_store(self.url)) is not None:
            raise StoreError(missing)  # read-only use: never a new file or folder
        self.engine = get_engine(self.url)
        self.write_engine = write_engine(self.engine)
        # How long recording keeps reconnecting to a database it lost before it gives up a
        # run (the run's unwritten turns are kept in memory meanwhile); see _recorder.py.
        if isinstance(reconnect_for, bool) or not isinstance(reconnect_for, int | float) or (
                not 0 <= reconnect_for <= 86_400):
            raise StoreError(f"reconnect_for must be a number of seconds from 0 to 86400, got "
                             f"{reconnect_for!r}")
        self.reconnect_for = float(reconnect_for)
        self.turn_writer = TurnWriter(self.engine.dialect)
        self.driver_error: type[BaseException] = self.engine.dialect.loaded_dbapi.Error
        with db_errors("open the store", self.url):
            ensure_schema(self.engine)
        self.interrupted: list[str] = self.mark_interrupted()

    def __repr__(self) -> str:
        return f"RunStore({safe_url(self.url)!r})"

    @contextmanager
    def write(self, what: str) -> Iterator[Connection]:
        """One write transaction; any database error becomes a StoreError naming `what`."""
        with db_errors(what, self.url), self.write_engine.begin() as conn:
            yield conn

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every run event received so far is written; False on timeout."""
        return writer_thread().flush(timeout)

    def queue_write(self, fn: Callable[[], None]) -> None:
        """Run `fn()` on the store's writer thread, after every write queued so far (the bid
        cache stores its answers this way, off the event loop)."""
        writer_thread().submit(fn)

    def write_connection(self) -> Connection:
        """A connection whose transactions write (BEGIN IMMEDIATE on SQLite); close it after."""
        with db_errors("connect", self.url):
            return self.write_engine.connect()

    @contextmanager
    def read(self, what: str) -> Iterator[Connection]:
        with db_errors(what, self.url), self.engine.connect() as conn:
            yield conn

    def retrying(self, what: str, work: Callable[[Connection], T], *, write: bool = True,
                 for_s: float | None = None) -> T:
        """`work(conn)` in one transaction, retried on a new connection while a server
        database is unreachable (for `for_s` seconds, default `reconnect_for`); `work` must be
        idempotent. Any other database error, or giving up, is one StoreError naming `what`."""
        engine = self.write_engine if write else self.engine
        with db_errors(what, self.url):
            return retry_lost(engine.begin, work, server=engine.dialect.name != "sqlite",
                              for_s=self.reconnect_for if for_s is None else for_s)

    # --- recording ------------------------------------------------------------------------

    def recorder(self, chat: Any, *, sweep_id: str | None = None, cell: str | None = None,
                 owner: str | None = None, owner_name: str | None = None) -> StoreRecorder:
        """An observer recording the runs of `chat` (a GroupChat, or anything with .agents).

        `owner` (an identity, e.g. the signed-in user's email) and `owner_name` (for display)
        are recorded on each run: the dashboard lets only the owner delete it. The engine
        knows nothing of users; the caller says who it runs for. A sweep's runs belong to the
        sweep's owner unless another is named."""
        if owner is None and sweep_id is not None:
            owner, owner_name = self.sweep_owner_identity(sweep_id)
        return StoreRecorder(self, chat, sweep_id=sweep_id, cell=cell,
                             owner=check_owner(owner), owner_name=check_owner(owner_name))

    def attach(self, chat: Any, *, sweep_id: str | None = None, cell: str | None = None,
               owner: str | None = None, owner_name: str | None = None) -> StoreRecorder:
        """Record every run of this GroupChat from now on; returns the recorder."""
        recorder = self.recorder(chat, sweep_id=sweep_id, cell=cell, owner=owner,
                                 owner_name=owner_name)
        chat.add_observer(recorder)
        return recorder

    def mark_interrupted(self) -> list[str]:
        """Runs left `running` by a dead process on this host become `interrupted`."""
        me = this_writer()
        query = select(runs.c.run_id, runs.c.pid, runs.c.proc_start).where(
            runs.c.status == "running", runs.c.hostname == me.hostname)
        with self.read("look for interrupted runs") as conn:
            rows = conn.execute(query).all()
        dead = [r.run_id for r in rows
                if r.pid is None or not writer_alive(r.pid, r.proc_start, me)]
        if dead:
            with self.write("mark interrupted runs") as conn:
                conn.execute(update(runs).where(runs.c.run_id.in_(dead),
                                                runs.c.status == "running")
                             .values(status="interrupted", **totals_from_bids()))
        self._mark_interrupted_sweeps(me)
        return dead
