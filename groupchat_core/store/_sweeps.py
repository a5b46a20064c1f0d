"""Sweep bookkeeping, all in one place: create, claim (to run or resume), finish, read and
list sweeps; claim cells; mark the sweeps of dead processes `interrupted`.

One owner at a time. A sweep row records its owner (pid, host, process start, since when).
`reopen_sweep` (a resume) takes it over only from a finished, stopped or dead owner, with a
compare-and-set update that names the owner it read, so of two processes resuming at once
exactly one wins; the other is refused with a `SweepBusy` naming the owner and how to stop it.
A `running` sweep owned from another host cannot be checked from here: it is refused too,
unless the caller takes it over explicitly (`take_over=True`, `--take-over`).

Claim-once cells. Before a cell's chat starts, its owner claims the cell: a row in
`sweep_cells` keyed (sweep_id, cell), inserted if absent (the key is unique, so of two racing
inserts one fails) or taken over from an `open` claim by a compare-and-set update. The claim
becomes `finished` (with the run) or `open` again (the run failed: a resume retries it). Even two
processes running the same sweep despite the owner check can therefore never run one cell twice.
Claims of a dead owner are reopened when the sweep is taken over.

The runs decide: a cancellation can land after a cell's run was committed `finished` but before
the runner learnt of it, so ending a claim and taking a sweep over close, in the same
transaction, any claim beside a finished run with that run (a resume skips such a cell).
"""

from __future__ import annotations

import json
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, and_, delete, exc, func, insert, or_, select, update

from .._errors import StoreError
from .._records import utc_now
from .._statuses import SWEEP_STATUSES as SWEEP_STATUSES  # declared once, there
from .._statuses import SweepStatus
from .._version import app_version, litellm_version
from ._base import StoreBase
from ._ids import MATCHES_READ, exact_first, like_prefix, resolve_id
from ._library import check_name, check_owner
from ._process import Writer, this_writer, writer_alive
from ._schema import runs, sweep_cells, sweeps
from ._writer import totals_from_bids

if TYPE_CHECKING:
    import pandas as pd

# `sweep stop`: the request is the `reason` of a running sweep; its owner polls for it between
# cells, wherever it runs (another process, another host, the dashboard), and ends cleanly.
STOP_REQUESTED = "stop requested"

# Sweeps this process is running right now (a second job in the same process, e.g. the
# dashboard, must not resume one: the pid alone cannot tell it from a stale row).
_active: set[str] = set()
_active_lock = threading.Lock()


class SweepBusy(StoreError):
    """The sweep is run by another live process (or one this host cannot check)."""


@dataclass(frozen=True)
class CellClaim:
    """The outcome of claiming a cell: `claimed`, or who holds it (state, owner, run)."""

    claimed: bool
    state: str
    run_id: str | None = None
    pid: int | None = None
    hostname: str | None = None

    def holder(self) -> str:
        if self.state == "finished":
            return f"finished by run {self.run_id}"
        return f"being run by pid {self.pid} on {self.hostname}"


def _owner_text(row: Any) -> str:
    since = f", since {row.owned_at or row.created_at}"
    return f"pid {row.pid} on host {row.hostname}{since}"


class SweepBook(StoreBase):
    """Mixin for RunStore: the `sweeps` table."""

    def create_sweep(self, name: str, grid: dict[str, Any], *, owner: str | None = None,
                     owner_name: str | None = None) -> str:
        """Register a sweep (its grid as JSON); runs join it via recorder(sweep_id=...).

        `owner`/`owner_name`: who started it (as on runs; its runs inherit it). Not to be
        confused with the process that runs it (pid, host), which a resume takes over."""
        sweep_id = uuid.uuid4().hex
        with self.write("create a sweep") as conn:
            conn.execute(insert(sweeps).values(
                sweep_id=sweep_id, name=check_name("sweep", name), grid_json=json.dumps(grid),
                status="running", created_at=utc_now(), owner=check_owner(owner),
                owner_name=check_owner(owner_name),
                app_version=app_version(), litellm_version=litellm_version(), **_owner()))
        with _active_lock:
            _active.add(sweep_id)
        return sweep_id

    def finish_sweep(self, sweep_id: str, status: SweepStatus = "finished",
                     reason: str | None = None) -> bool:
        """Record how a sweep ended; `reason` says why (e.g. which budget cap stopped it).

        Only its owner records that (or anyone, for a sweep from before owners were kept): a
        session whose sweep was taken over meanwhile (`--take-over`) leaves the new owner's
        row alone. False when nothing was written for that reason."""
        if status not in SWEEP_STATUSES:
            raise StoreError(f"sweep status must be one of {SWEEP_STATUSES}, got {status!r}")
        me = this_writer()
        mine = or_(sweeps.c.pid.is_(None),
                   and_(sweeps.c.pid == me.pid, sweeps.c.hostname == me.hostname))
        done = self.retrying("finish a sweep", lambda conn: conn.execute(
            update(sweeps).where(sweeps.c.sweep_id == sweep_id, mine).values(
                status=status, reason=reason, ended_at=utc_now())).rowcount)
        self.release_sweep(sweep_id)
        return bool(done)

    def release_sweep(self, sweep_id: str) -> None:
        """This process no longer runs the sweep (its session ended, however it ended)."""
        with _active_lock:
            _active.discard(sweep_id)

    def get_sweep(self, sweep_id: str) -> dict[str, Any]:
        """A sweep's row (by id or a unique id prefix), its grid JSON parsed as `grid`."""
        full = self.resolve_sweep(sweep_id)
        with self.read("read a sweep") as conn:
            row = conn.execute(select(sweeps).where(sweeps.c.sweep_id == full)).mappings().first()
        if row is None:  # deleted between the two reads
            raise StoreError(f"no sweep {sweep_id!r}")
        found = dict(row)
        found["grid"] = json.loads(found.pop("grid_json"))
        return found

    def resolve_sweep(self, prefix: str) -> str:
        """The full id of the one sweep `prefix` names (its id or a unique prefix; _ids.py):
        UnknownId (a StoreError) naming the closest sweeps otherwise, never another sweep."""
        query = select(sweeps.c.sweep_id).where(
            sweeps.c.sweep_id.like(like_prefix(prefix), escape="\\")).order_by(
            exact_first(sweeps.c.sweep_id, prefix)).limit(MATCHES_READ)
        with self.read("find a sweep") as conn:
            found = [str(i) for i in conn.execute(query).scalars()] if prefix else []
        return resolve_id("sweep", prefix, found, self._newest_sweep_ids)

    def _newest_sweep_ids(self) -> list[str]:
        with self.read("list sweeps") as conn:
            return [str(i) for i in conn.execute(
                select(sweeps.c.sweep_id).order_by(sweeps.c.created_at.desc())).scalars()]

    def sweep_owner_identity(self, sweep_id: str) -> tuple[str | None, str | None]:
        """Who started sweep `sweep_id` (owner, owner_name); (None, None) if unknown."""
        row = self.retrying("read a sweep's owner", lambda conn: conn.execute(
            select(sweeps.c.owner, sweeps.c.owner_name).where(
                sweeps.c.sweep_id == sweep_id)).first(), write=False)
        return (None, None) if row is None else (row.owner, row.owner_name)

    def sweep_owner(self, sweep_id: str, *, take_over: bool = False) -> str | None:
        """Why sweep `sweep_id` cannot be resumed now (a one-line message naming its live
        owner and how to stop it), or None when it is free to take over."""
        with self.read("read a sweep's owner") as conn:
            row = conn.execute(select(sweeps).where(sweeps.c.sweep_id == sweep_id)).first()
        if row is None:
            raise StoreError(f"no sweep {sweep_id!r}")
        return _busy(row, this_writer(), take_over)

    def reopen_sweep(self, sweep_id: str, *, take_over: bool = False) -> None:
        """Take sweep `sweep_id` over to resume it: mark it running, owned by this process.

        Refused (SweepBusy) while another live process runs it; atomic: the update only
        applies if the owner is still the one read, so two resumers cannot both win. Claims
        of cells left `running` by the previous owner (dead) are reopened."""
        me = this_writer()
        with self.write("reopen a sweep") as conn:
            row = conn.execute(select(sweeps).where(sweeps.c.sweep_id == sweep_id)).first()
            if row is None:
                raise StoreError(f"no sweep {sweep_id!r}")
            problem = _busy(row, me, take_over)
            if problem is not None:
                raise SweepBusy(problem)
            same = [sweeps.c.sweep_id == sweep_id, sweeps.c.status == row.status,
                    *(_is(sweeps.c[name], getattr(row, name))
                      for name in ("pid", "hostname", "proc_start", "owned_at"))]
            taken = conn.execute(update(sweeps).where(*same).values(
                status="running", reason=None, ended_at=None, **_owner())).rowcount
            if taken == 1:
                done = _finished_run(sweep_id, sweep_cells.c.cell)
                conn.execute(update(sweep_cells).where(  # its run finished: so does the claim
                    sweep_cells.c.sweep_id == sweep_id,
                    sweep_cells.c.state.in_(("running", "open")), done.is_not(None))
                    .values(state="finished", run_id=done, updated_at=utc_now()))
                conn.execute(update(sweep_cells).where(
                    sweep_cells.c.sweep_id == sweep_id, sweep_cells.c.state == "running")
                    .values(state="open", updated_at=utc_now()))
        if taken != 1:  # another process took it between our read and our update
            raise SweepBusy(self.sweep_owner(sweep_id) or
                            f"sweep {sweep_id[:12]} was taken over by another process "
                            "while this one was resuming it")
        with _active_lock:
            _active.add(sweep_id)

    def delete_sweep(self, sweep_id: str) -> int:
        """Delete a sweep with its runs (their logs cascade) and cell claims, in one
        transaction; how many runs went with it. A sweep's runs are its results: kept without
        it they would only clutter the run list (export them first to keep one). Refused
        (SweepBusy) while a live process runs it: stop it first."""
        me = this_writer()
        with self.write("delete a sweep") as conn:
            row = conn.execute(select(sweeps).where(sweeps.c.sweep_id == sweep_id)).first()
            if row is None:
                raise StoreError(f"no sweep {sweep_id!r}")
            problem = _busy(row, me, take_over=False)
            if problem is not None:
                raise SweepBusy(problem.replace("then resume it", "then delete it"))
            gone = int(conn.execute(delete(runs).where(runs.c.sweep_id == sweep_id)).rowcount)
            conn.execute(delete(sweep_cells).where(sweep_cells.c.sweep_id == sweep_id))
            conn.execute(delete(sweeps).where(sweeps.c.sweep_id == sweep_id))
        return gone

    def request_sweep_stop(self, sweep_id: str) -> bool:
        """Ask the owner of running sweep `sweep_id` to stop after the cells in flight; False
        when it is not running. A resume clears the request (reopen_sweep resets reason)."""
        with self.write("request a sweep stop") as conn:
            return bool(conn.execute(update(sweeps).where(
                sweeps.c.sweep_id == sweep_id, sweeps.c.status == "running").values(
                reason=STOP_REQUESTED)).rowcount)

    def sweep_stop_requested(self, sweep_id: str) -> bool:
        """Whether `sweep stop` asked this running sweep to stop (the owner polls this)."""
        reason = self.retrying("read a sweep stop request", lambda conn: conn.execute(
            select(sweeps.c.reason).where(sweeps.c.sweep_id == sweep_id,
                                          sweeps.c.status == "running")).scalar(), write=False)
        return bool(reason == STOP_REQUESTED)

    # --- cells ------------------------------------------------------------------------------

    def claim_cell(self, sweep_id: str, cell: str) -> CellClaim:
        """Claim a cell for this process before running it: True once, for one claimer only.

        Claimable: a cell never claimed (the insert wins; the (sweep_id, cell) key is unique),
        or one whose claim is `open` (its run failed) or `finished` by a run since deleted.
        A lost connection is retried (RunStore.retrying); each attempt carries the same claim
        stamp (`claimed_at`, unique in this process), so a retry after a commit whose reply
        was lost recognises its own claim instead of reading it as someone else's."""
        me, stamp = this_writer(), _claim_stamp()
        owner = {"pid": me.pid, "hostname": me.hostname, "proc_start": me.proc_start}
        key = (sweep_cells.c.sweep_id == sweep_id, sweep_cells.c.cell == cell)

        def claim(conn: Connection) -> CellClaim:
            mine = CellClaim(True, "running", None, me.pid, me.hostname)
            if _insert_claim(conn, {"sweep_id": sweep_id, "cell": cell, "state": "running",
                                    "run_id": None, "claimed_at": stamp, "updated_at": stamp,
                                    **owner}):
                return mine
            row = conn.execute(select(sweep_cells).where(*key)).one()
            if (row.state, row.claimed_at, row.pid, row.hostname, row.proc_start) == (
                    "running", stamp, me.pid, me.hostname, me.proc_start):
                return mine  # an earlier attempt of this very claim committed
            reclaimable = or_(sweep_cells.c.state == "open", and_(
                sweep_cells.c.state == "finished", sweep_cells.c.run_id.is_(None)))
            taken = conn.execute(update(sweep_cells).where(*key, reclaimable).values(
                state="running", run_id=None, claimed_at=stamp, updated_at=stamp,
                **owner)).rowcount
            if taken == 1:
                return mine
            return CellClaim(False, row.state, row.run_id, row.pid, row.hostname)

        return self.retrying("claim a sweep cell", claim)

    def finish_cell(self, sweep_id: str, cell: str, run_id: str | None = None) -> None:
        """End this process's claim on a cell: `finished` with its finished run, else `open`
        again (no run, or it did not finish), so a resume runs the cell again. Idempotent, so
        retried on a lost connection. Without `run_id`, a finished run of the cell still closes
        it (the caller was cancelled between the run's end and this call)."""
        me = this_writer()

        def finish(conn: Connection) -> None:
            done = run_id or conn.execute(select(_finished_run(sweep_id, cell))).scalar()
            conn.execute(update(sweep_cells).where(
                sweep_cells.c.sweep_id == sweep_id, sweep_cells.c.cell == cell,
                sweep_cells.c.state == "running", sweep_cells.c.pid == me.pid,
                sweep_cells.c.hostname == me.hostname).values(
                state="finished" if done else "open", run_id=done, updated_at=utc_now()))

        self.retrying("finish a sweep cell", finish)

    def flag_writer_runs(self, sweep_id: str, cell: str, *, pid: int, hostname: str,
                         status: str, reason: str) -> int:
        """Close the runs of a cell left `running` by a writer known to be gone (a Ray worker
        killed mid-cell, sweeps/_ray_executor.py): how many were flagged.

        A run another store on this host already marked `interrupted` (any store opening here,
        e.g. the next worker's, marks a dead writer's runs so) is flagged too: the driver knows
        why it ended, the startup check only that its process is gone."""
        with self.write("flag the runs of a dead worker") as conn:
            return int(conn.execute(update(runs).where(
                runs.c.sweep_id == sweep_id, runs.c.cell == cell,
                runs.c.status.in_(("running", "interrupted")),
                runs.c.pid == pid, runs.c.hostname == hostname).values(
                status=status, error=reason, ended_at=utc_now(),
                **totals_from_bids())).rowcount)

    def cell_claims(self, sweep_id: str) -> pd.DataFrame:
        """The sweep's cell claims (cell, state, run_id, owner), for tests and diagnosis."""
        import pandas as pd

        with self.read("read cell claims") as conn:
            result = conn.execute(select(sweep_cells).where(sweep_cells.c.sweep_id == sweep_id)
                                  .order_by(sweep_cells.c.claimed_at))
            return pd.DataFrame(result.all(), columns=list(result.keys()))

    def list_sweeps(self) -> pd.DataFrame:
        """Sweeps, newest first, with how many runs each has recorded."""
        import pandas as pd

        count = select(func.count()).where(runs.c.sweep_id == sweeps.c.sweep_id)
        query = select(sweeps, count.scalar_subquery().label("runs")).order_by(
            sweeps.c.created_at.desc())
        with self.read("list sweeps") as conn:
            result = conn.execute(query)
            return pd.DataFrame(result.all(), columns=list(result.keys()))

    def _mark_interrupted_sweeps(self, me: Writer) -> None:
        """Sweeps left `running` by a dead process on this host become `interrupted` (a sweep
        without a recorded writer predates schema v3: it is left alone)."""
        query = select(sweeps.c.sweep_id, sweeps.c.pid, sweeps.c.proc_start).where(
            sweeps.c.status == "running", sweeps.c.hostname == me.hostname)
        with self.read("look for interrupted sweeps") as conn:
            rows = conn.execute(query).all()
        dead = [r.sweep_id for r in rows
                if r.pid is not None and not writer_alive(r.pid, r.proc_start, me)]
        if dead:
            with self.write("mark interrupted sweeps") as conn:
                conn.execute(update(sweeps).where(sweeps.c.sweep_id.in_(dead),
                                                  sweeps.c.status == "running")
                             .values(status="interrupted", reason="its process ended"))


_stamp_lock = threading.Lock()
_last_stamp = ""


def _claim_stamp() -> str:
    """A claim time that no other claim of this process shares (the claim's identity)."""
    global _last_stamp
    with _stamp_lock:
        stamp = utc_now()
        if _last_stamp and stamp <= _last_stamp:  # the same microsecond, or the clock stepped
            stamp = (datetime.fromisoformat(_last_stamp) + timedelta(microseconds=1)).isoformat()
        _last_stamp = stamp
        return stamp


def _owner() -> dict[str, Any]:
    me = this_writer()
    return {"pid": me.pid, "hostname": me.hostname, "proc_start": me.proc_start,
            "owned_at": utc_now()}


def _finished_run(sweep_id: str, cell: Any) -> Any:
    """The cell's latest `finished` run id (a scalar subquery, correlated on a column)."""
    return (select(runs.c.run_id).where(runs.c.sweep_id == sweep_id, runs.c.cell == cell,
                                        runs.c.status == "finished")
            .order_by(runs.c.started_at.desc()).limit(1).scalar_subquery())


def _is(column: Any, value: Any) -> Any:
    return column.is_(None) if value is None else column == value


def _busy(row: Any, me: Writer, take_over: bool) -> str | None:
    """None when the sweep in `row` may be taken over by `me`, else why not (one line)."""
    if row.status != "running" or row.pid is None:  # ended, or from before owners were kept
        return None
    sweep = row.sweep_id[:12]
    where = "" if row.hostname == me.hostname else f" on {row.hostname}"
    stop = (f"stop it first (kill {row.pid}{where}, or Stop on the dashboard's Sweeps page), "
            "then resume it")
    if row.hostname != me.hostname:
        if take_over:
            return None
        return (f"sweep {sweep} is running on another host ({_owner_text(row)}), which this "
                f"machine cannot check: {stop}; if that process is gone, resume with "
                "--take-over")
    if row.pid == me.pid and (not row.proc_start or row.proc_start == me.proc_start):
        with _active_lock:
            running_here = row.sweep_id in _active
        if not running_here:
            return None  # an earlier session of this process ended without closing the sweep
        return (f"sweep {sweep} is already running in this process ({_owner_text(row)}): "
                "wait for it or stop it (Stop on the dashboard's Sweeps page)")
    if not writer_alive(row.pid, row.proc_start, me):
        return None
    return f"sweep {sweep} is already running ({_owner_text(row)}): {stop}"


def _insert_claim(conn: Connection, values: dict[str, Any]) -> bool:
    """Insert a claim row unless the cell has one; True when this insert made it."""
    dialect = conn.dialect.name
    if dialect in ("sqlite", "postgresql"):
        from sqlalchemy.dialects import postgresql, sqlite

        module: Any = sqlite if dialect == "sqlite" else postgresql
        statement = module.insert(sweep_cells).values(**values).on_conflict_do_nothing(
            index_elements=["sweep_id", "cell"]).returning(sweep_cells.c.cell)
        return conn.execute(statement).first() is not None  # a row back: this insert made it
    try:  # other databases: the unique key decides, inside a savepoint
        with conn.begin_nested():
            conn.execute(insert(sweep_cells).values(**values))
    except exc.IntegrityError:
        return False
    return True
