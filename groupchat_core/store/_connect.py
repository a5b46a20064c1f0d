"""Where the store lives and how to connect: one SQLAlchemy Engine per URL, per process.

The default is a SQLite file in the data home (groupchat_core/_home.py: `GROUPCHAT_HOME`, the
repo's git-ignored `data/` from a clone, else the platform's user data directory);
`GROUPCHAT_DB` takes any SQLAlchemy URL (e.g. `postgresql+psycopg://user:pass@host/db` for a team
sharing one dashboard).
Only the SQLite pragmas below are SQLite-specific; every query is portable Core.

Server databases (PostgreSQL, ...) can drop a connection at any time (a restart, a failover,
`pg_terminate_backend`, an idle timeout on the way): their pools test each connection before
handing it out (`pool_pre_ping`), connecting gives up after CONNECT_TIMEOUT_S, and
`is_disconnect` tells the recorder which failures are worth a reconnect and a retry, and
`retry_lost` retries a short idempotent transaction (claiming a sweep cell, ...) on a new
connection. The driver's own notes about a connection it lost mid-pipeline ("error ignored
terminating <psycopg.Pipeline [BAD]>") are demoted to debug: the error itself is raised, handled
and reported by the store, and those lines would otherwise reach the terminal.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    InterfaceError,
    NoSuchModuleError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.pool import StaticPool

from .._errors import StoreError
from .._home import DB_VAR, data_location
from ._sqlite_check import check_sqlite_file

ENV_VAR = DB_VAR
BUSY_TIMEOUT_MS = 10_000
CONNECT_TIMEOUT_S = 10  # a server that does not answer at all: fail, then retry, not hang
# libpq settings (unless the URL sets them): a server or network that goes silent mid-query is
# noticed (TCP keepalives, and unacknowledged data for 30 s), instead of a write hanging forever.
LIBPQ_TIMEOUTS = {"connect_timeout": CONNECT_TIMEOUT_S, "keepalives": 1, "keepalives_idle": 10,
                  "keepalives_interval": 5, "keepalives_count": 3, "tcp_user_timeout": 30_000}
_WRITE = "groupchat_write"  # execution option: this transaction will write (BEGIN IMMEDIATE)
RETRY_FIRST_S, RETRY_MAX_S = 0.05, 1.0  # backoff between attempts of a retried transaction
T = TypeVar("T")

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def default_url() -> str:
    """`GROUPCHAT_DB` if set, else the SQLite file `<data home>/groupchat.db` (_home.py)."""
    return data_location().url


def safe_url(url: str | URL) -> str:
    """The URL with any password masked, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def get_engine(url: str) -> Engine:
    """The process-wide Engine for this URL, created on first use (with the SQLite folder,
    after a quick check of an existing SQLite file: _sqlite_check.py)."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = _create(url)
        return engine


def dispose_engines() -> None:
    """Close every pooled connection (tests and long-lived processes switching databases)."""
    with _lock:
        engines = list(_engines.values())
        _engines.clear()
    for engine in engines:
        engine.dispose()


def _create(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(
            f"{ENV_VAR} is not a valid SQLAlchemy URL: {url!r} (e.g. sqlite:///data/groupchat.db "
            "or postgresql+psycopg://user:pass@host/db)") from None
    kwargs: dict[str, Any] = {}
    backend, _, driver = parsed.drivername.partition("+")
    psycopg3 = backend == "postgresql" and driver in ("", "psycopg")
    if parsed.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}
        if parsed.database in (None, "", ":memory:"):
            kwargs["poolclass"] = StaticPool  # one shared in-memory database, not one per conn
        else:
            if not parsed.database.startswith("file:"):
                check_sqlite_file(Path(parsed.database).expanduser())  # before any write
            _make_folder(parsed.database)
    else:
        kwargs["pool_pre_ping"] = True  # a pooled connection the server dropped is replaced
        if backend == "postgresql" and driver in ("", "psycopg", "psycopg2"):
            kwargs["connect_args"] = {k: v for k, v in LIBPQ_TIMEOUTS.items()
                                      if k not in parsed.query}
            quiet_driver_notes()
    try:
        engine = create_engine(parsed, **kwargs)
    except NoSuchModuleError:
        raise StoreError(f"no SQLAlchemy dialect for {safe_url(parsed)!r}") from None
    except ImportError as exc:
        raise StoreError(
            f"the database driver for {safe_url(parsed)!r} is not installed ({exc.name}); "
            "for PostgreSQL: pip install 'psycopg[binary]'") from None
    if engine.dialect.name == "sqlite":
        _sqlite_setup(engine)
    elif psycopg3:
        event.listen(engine, "handle_error", _lost_mid_pipeline)
    return engine


def _stuck_in_pipeline(dbapi_connection: Any) -> bool:
    """A psycopg connection whose server went away during a pipelined executemany can be left
    in pipeline mode and "busy" rather than marked broken: every later command on it fails
    ("cannot exit pipeline mode while busy"), so it is as lost as a closed one."""
    pgconn = getattr(dbapi_connection, "pgconn", None)
    try:
        return pgconn is not None and (pgconn.status != 0 or pgconn.pipeline_status != 0)
    except Exception:  # the connection object itself is gone
        return True


def _lost_mid_pipeline(context: Any) -> None:
    """SQLAlchemy's hook for DBAPI errors: such a connection is a disconnect, so it is
    invalidated (never reset or pooled again: no "Exception during reset" traceback) and
    the caller's error says the connection was lost (worth a retry)."""
    if context.is_disconnect or context.connection is None:
        return
    try:
        dbapi_connection = context.connection.connection.dbapi_connection
    except SQLAlchemyError:
        return
    if _stuck_in_pipeline(dbapi_connection):
        context.is_disconnect = True


def _make_folder(database: str) -> None:
    if database.startswith("file:"):
        return  # a URI filename: the caller manages it
    folder = Path(database).expanduser().parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the database folder {str(folder)!r}: "
                         f"{exc.strerror}") from None


def _sqlite_setup(engine: Engine) -> None:
    """Pragmas on every connection, and explicit BEGINs so transactions (and DDL) are real.

    Python's sqlite3 only opens a transaction before INSERT/UPDATE/DELETE; we take control of
    BEGIN (SQLAlchemy's documented recipe) and use BEGIN IMMEDIATE for writes, so a writer
    waits for the lock under busy_timeout instead of failing on a stale read snapshot.
    """

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
            if engine.url.database not in (None, "", ":memory:"):
                _switch_to_wal(cursor)
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(_WRITE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _switch_to_wal(cursor: Any, attempts: int = 100) -> None:
    """Switching a new file to WAL needs an exclusive lock and SQLite does not wait for it under
    busy_timeout: when several processes open a fresh store at once, retry for a few seconds."""
    for attempt in range(attempts):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:  # sqlite3.OperationalError: database is locked
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def is_disconnect(exc: BaseException, conn: Connection | None) -> bool:
    """Whether `exc` means the connection to the database was lost (so a new connection may
    succeed where this one failed), for errors raised through SQLAlchemy or by the driver
    directly (the recorder's raw cursor). A full disk or a constraint violation is not."""
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        exc = exc.orig  # type: ignore[assignment]
    if conn is None or conn.closed:
        return False
    if conn.invalidated:
        return True
    try:
        dbapi_connection = conn.connection.dbapi_connection
    except SQLAlchemyError:
        return True  # the connection cannot even be reached any more
    dialect = conn.dialect
    if not isinstance(exc, dialect.loaded_dbapi.Error):
        return False
    return bool(dialect.is_disconnect(exc, dbapi_connection, None)) or (
        dialect.driver == "psycopg" and _stuck_in_pipeline(dbapi_connection))


def retry_lost(begin: Callable[[], AbstractContextManager[Connection]],
               work: Callable[[Connection], T], *, server: bool, for_s: float) -> T:
    """`work(conn)` in a transaction from `begin()`; if the connection to a server database is
    lost (terminated, reset, refused while it restarts), again on a new one, with a backoff,
    until `for_s` seconds have passed. `work` must be idempotent: a commit whose reply was lost
    may have been applied, so the retry has to recognise its own earlier success (see
    claim_cell). SQLite has no connection to lose: its errors are raised at once."""
    deadline = time.monotonic() + for_s
    delay = RETRY_FIRST_S
    while True:
        try:
            with begin() as conn:
                return work(conn)
        except DBAPIError as exc:
            lost = (exc.connection_invalidated or isinstance(exc, OperationalError | InterfaceError)
                    or _left_mid_statement(exc))
            if not server or not lost or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_S)


def _left_mid_statement(exc: DBAPIError) -> bool:
    """A pooled connection that a cut left inside a statement: psycopg refuses to reset it
    ("can't change 'autocommit' now: connection in transaction status ACTIVE"). It is as good
    as lost; a new connection serves the retry."""
    return "connection in transaction status ACTIVE" in str(exc.orig)


class _DemoteToDebug(logging.Filter):
    """psycopg's "error ignored terminating/exiting <psycopg.Pipeline [BAD]>: ..." warnings:
    logged while the connection's real error is already on its way up to the store, which
    retries or reports it in one line. Kept, at debug level, for whoever logs the driver."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and str(record.msg).startswith("error ignored"):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


_DEMOTE = _DemoteToDebug()


def quiet_driver_notes() -> None:
    """Install the filter on psycopg's logger once (idempotent)."""
    driver_logger = logging.getLogger("psycopg")
    if _DEMOTE not in driver_logger.filters:
        driver_logger.addFilter(_DEMOTE)


def write_engine(engine: Engine) -> Engine:
    """The engine for transactions that write: on SQLite they start with BEGIN IMMEDIATE."""
    return engine.execution_options(**{_WRITE: True})


@contextmanager
def db_errors(what: str, url: str, driver_error: type[BaseException] | None = None
              ) -> Iterator[None]:
    """Turn database errors into one readable StoreError naming what failed, and where.

    `driver_error` is the DBAPI's base exception, for code that talks to the driver directly.
    """
    caught: tuple[type[BaseException], ...] = (SQLAlchemyError,) + (
        (driver_error,) if driver_error is not None else ())
    try:
        yield
    except caught as exc:
        detail = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        raise StoreError(f"could not {what} in {safe_url(url)}: {detail}") from None
