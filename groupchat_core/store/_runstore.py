"""RunStore: every run and its bid log, saved as it happens, read back as frames or records.

    store = RunStore()                     # GROUPCHAT_DB, else <repo>/data/groupchat.db
    store.attach(chat)                     # record every run of this chat
    chat.run("Plan the offsite.")
    store.list_runs(status="finished")     # pandas DataFrame
    store.bids(chat.last_run.run_id)       # the bid log, docs/engine.md §9 column names
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, Select, delete, func, literal, select, update

from .._config import ChatSpec, parse_spec
from .._errors import StoreError
from .._records import RunRecord
from . import _reader as reader
from ._cachetable import BidCacheTable
from ._connect import db_errors, default_url, get_engine, retry_lost, safe_url, write_engine
from ._library import Library, check_owner
from ._migrations import ensure_schema
from ._process import this_writer, writer_alive
from ._recorder import StoreRecorder
from ._schema import RUN_STATUSES, run_agents, runs, turns
from ._sqlite_check import missing_store
from ._sweeps import SweepBook
from ._writer import TurnWriter, insert_imported, run_row
from ._writer_thread import writer_thread

if TYPE_CHECKING:
    import pandas as pd

LIST_COLUMNS = (
    "run_id", "name", "status", "stop_reason", "task", "agents", "threshold", "recency_penalty",
    "recency_window", "max_loops", "total_calls", "total_prompt_tokens",
    "total_completion_tokens", "total_cost_usd", "started_at", "ended_at", "sweep_id", "cell",
    "tags", "notes", "error", "owner", "owner_name",
    "task_id", "answer", "correct", "score", "scorer",  # a scored task's outcome (v9)
)
RunIds = str | Sequence[str] | None
RECONNECT_FOR_S = 30.0
T = TypeVar("T")


class RunStore(Library, SweepBook, BidCacheTable):
    """A run store at one SQLAlchemy URL; cheap to create (engines are shared per URL).

    `reconnect_for`: how many seconds recording keeps reconnecting to a database that dropped
    its connection before it gives a run up (see docs/engine.md §11). `create=False`: a SQLite
    file that does not exist is refused (StoreError) rather than created with its folders (for
    read-only commands). An existing SQLite file that fails a quick integrity check is refused,
    unchanged (_sqlite_check.py).

    All SQL lives in this package: runs here, saved agents and presets in _library.py, sweeps
    in _sweeps.py, the bid cache's table in _cachetable.py (mixins, one public object).
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
                             .values(status="interrupted"))
        self._mark_interrupted_sweeps(me)
        return dead

    # --- reading --------------------------------------------------------------------------

    def list_runs(self, *, status: str | None = None, agent: str | None = None,
                  since: str | datetime | None = None, sweep_id: str | None = None,
                  tag: str | None = None, limit: int | None = None) -> pd.DataFrame:
        """Runs, newest first, as a DataFrame (plus a `turns` count and `models`, a tuple of
        the agents' model names in list order, which says whether a run was simulated:
        groupchat_core.providers._sim.run_is_simulated); all filters combine."""
        import pandas as pd

        rows = self.list_run_rows(status=status, agent=agent, since=since, sweep_id=sweep_id,
                                  tag=tag, limit=limit)
        # models as tuples, so the frame stays hashable (pandas, the dashboard's st.cache_data)
        return pd.DataFrame.from_records(rows, columns=[*LIST_COLUMNS, "turns", "models"])

    def list_run_rows(self, *, status: str | None = None, agent: str | None = None,
                      since: str | datetime | None = None, sweep_id: str | None = None,
                      tag: str | None = None, limit: int | None = None
                      ) -> list[dict[str, Any]]:
        """list_runs as plain dicts (same columns, same order), without pandas: the CLI's
        `list` starts in a fraction of the time (bench/cold_start.py)."""
        query = _filtered(status, agent, since, sweep_id, tag)
        if limit is not None:
            query = query.limit(max(int(limit), 0))
        with self.read("list runs") as conn:
            rows = conn.execute(query).all()
            models = reader.run_models(conn, [r[0] for r in rows])
        names = [*LIST_COLUMNS, "turns"]
        return [{**dict(zip(names, row, strict=True)),
                 "models": tuple(models.get(row[0], ()))} for row in rows]

    def run_ids(self) -> list[str]:
        with self.read("list runs") as conn:
            return list(conn.execute(select(runs.c.run_id)).scalars())

    def resolve(self, prefix: str) -> str:
        """The full id of the one run whose id starts with `prefix` (ids are long to type)."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = select(runs.c.run_id).where(
            runs.c.run_id.like(f"{escaped}%", escape="\\")).limit(2)
        with self.read("find a run") as conn:
            found = list(conn.execute(query).scalars()) if prefix else []
        if not found:
            raise StoreError(f"no run {prefix!r} in {safe_url(self.url)}")
        if len(found) > 1:
            raise StoreError(f"run id {prefix!r} is ambiguous: give more characters")
        return str(found[0])

    def run_info(self, run_id: str) -> dict[str, Any]:
        """The run's row: status, stop reason, timings, totals, spec (as a dict), tags, ..."""
        with self.read("read a run") as conn:
            row = reader.run_row(conn, run_id)
            if row is None:
                raise StoreError(f"no run {run_id!r} in {safe_url(self.url)}")
            info = dict(row)
            info["turns"] = conn.execute(select(func.count()).select_from(turns)
                                         .where(turns.c.run_id == run_id)).scalar()
        info["spec"] = reader.spec_of(info.pop("spec_json"))
        return info

    def spec(self, run_id: str) -> ChatSpec:
        """The run's chat spec, ready for GroupChat.from_spec (to re-run it)."""
        return parse_spec(self.run_info(run_id)["spec"], f"spec of run {run_id}")

    def load_run(self, run_id: str) -> RunRecord:
        """The run's RunRecord, exactly as the engine produced it (so far, if unfinished)."""
        with self.read("read a run") as conn:
            row = reader.run_row(conn, run_id)
            if row is None:
                raise StoreError(f"no run {run_id!r} in {safe_url(self.url)}")
            return reader.record_from(conn, row)

    def bids(self, run_ids: RunIds = None) -> pd.DataFrame:
        """Bid log of one run, several, or all (None), as a DataFrame."""
        return self._log("bids", run_ids)

    def turns(self, run_ids: RunIds = None) -> pd.DataFrame:
        """Turn rows (winner, margins, reasons) of one run, several, or all, as a DataFrame."""
        return self._log("turns", run_ids)

    def messages(self, run_ids: RunIds = None) -> pd.DataFrame:
        """Posted messages of one run, several, or all, as a DataFrame."""
        return self._log("messages", run_ids)

    def message_turns(self, run_id: str) -> list[int]:
        """The turn each message of the run was posted on (0 for the task), in posting order."""
        with self.read("read a run") as conn:
            return reader.message_turns(conn, run_id)

    def _log(self, kind: str, run_ids: RunIds) -> pd.DataFrame:
        ids = [run_ids] if isinstance(run_ids, str) else run_ids
        with self.read(f"read {kind}") as conn:
            return reader.log_frame(conn, kind, None if ids is None else list(ids))

    # --- importing ------------------------------------------------------------------------

    def import_run(self, run: Mapping[str, Any], spec: dict[str, Any], *,
                   message_rows: Sequence[Mapping[str, Any]],
                   bid_rows: Sequence[Mapping[str, Any]] = (),
                   turn_rows: Sequence[Mapping[str, Any]] = ()) -> None:
        """Add a whole run made elsewhere (a bundle) in one transaction: all of it or nothing.

        `run`: run_id, task, started_at and the other stored run columns (name, status,
        stop_reason, error, ended_at, totals, notes), with `tags` as a list. `spec`:
        ChatSpec.to_data(). Each message row carries the `turn` it was posted on; bid and turn
        rows are Bid and Turn fields. A run id already in the store is refused (StoreError).
        """
        run_id = run["run_id"]
        row = run_row(run_id, run["task"], spec, run["started_at"])
        row.update({k: v for k, v in run.items() if k not in _NOT_IMPORTED},
                   tags=",".join(run.get("tags") or ()))
        with self.write(f"import run {run_id}") as conn:
            if conn.execute(select(runs.c.run_id).where(runs.c.run_id == run_id)).first():
                raise StoreError(f"run {run_id} is already in the store; delete it first to "
                                 "import it again")
            insert_imported(conn, row, spec["agents"], [dict(m) for m in message_rows],
                            [dict(b) for b in bid_rows], [dict(t) for t in turn_rows])

    # --- editing --------------------------------------------------------------------------

    def delete_run(self, run_id: str) -> bool:
        """Delete a run and its log (foreign keys cascade); True if it existed."""
        with self.write("delete a run") as conn:
            return bool(conn.execute(delete(runs).where(runs.c.run_id == run_id)).rowcount)

    def set_owner(self, run_id: str, owner: str | None, owner_name: str | None = None) -> None:
        """Say who a run belongs to (e.g. whoever imported it: bundles carry no owner)."""
        self._update_run(run_id, "set the owner", owner=check_owner(owner),
                         owner_name=check_owner(owner_name))

    def set_notes(self, run_id: str, notes: str) -> None:
        self._update_run(run_id, "set notes", notes=notes)

    def set_tags(self, run_id: str, tags: Sequence[str]) -> None:
        """Replace a run's tags (short labels without commas)."""
        clean = [_check_tag(t) for t in tags]
        self._update_run(run_id, "set tags", tags=",".join(dict.fromkeys(clean)))

    def _update_run(self, run_id: str, what: str, **values: Any) -> None:
        with self.write(what) as conn:
            if not conn.execute(update(runs).where(runs.c.run_id == run_id)
                                .values(**values)).rowcount:
                raise StoreError(f"no run {run_id!r} in {safe_url(self.url)}")


# Never taken from an imported run's fields: who owns a run is the importer's to say
# (set_owner), not the file's (a bundle could otherwise make a run look like anyone's).
_NOT_IMPORTED = frozenset({"tags", "run_id", "task", "owner", "owner_name"})
def _check_tag(tag: str) -> str:
    tag = tag.strip() if isinstance(tag, str) else ""
    if not tag or "," in tag or len(tag) > 50:
        raise StoreError(f"a tag must be 1-50 characters without commas, got {tag!r}")
    return tag


def _since(value: str | datetime) -> str:
    """An ISO-8601 UTC bound comparable with stored times (naive values are taken as UTC)."""
    try:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    except ValueError:
        raise StoreError(f"since must be an ISO-8601 date or time, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _filtered(status: str | None, agent: str | None, since: str | datetime | None,
              sweep_id: str | None, tag: str | None) -> Select[Any]:
    count = select(func.count()).where(turns.c.run_id == runs.c.run_id).scalar_subquery()
    query = select(*(runs.c[c] for c in LIST_COLUMNS), count.label("turns")).order_by(
        runs.c.started_at.desc(), runs.c.run_id)
    if status is not None:
        if status not in RUN_STATUSES:
            raise StoreError(f"status must be one of {', '.join(RUN_STATUSES)}; got {status!r}")
        query = query.where(runs.c.status == status)
    if agent is not None:
        query = query.where(runs.c.run_id.in_(
            select(run_agents.c.run_id).where(run_agents.c.agent == agent)))
    if since is not None:
        query = query.where(runs.c.started_at >= _since(since))
    if sweep_id is not None:
        query = query.where(runs.c.sweep_id == sweep_id)
    if tag is not None:
        pattern = "%," + _check_tag(tag).replace("\\", "\\\\").replace("%", "\\%").replace(
            "_", "\\_") + ",%"
        query = query.where((literal(",") + runs.c.tags + literal(",")).like(pattern, escape="\\"))
    return query
