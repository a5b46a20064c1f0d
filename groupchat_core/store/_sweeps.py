"""Sweep bookkeeping, all in one place: create, reopen (claim for a resume), finish, read and
list sweeps, and mark the sweeps of dead processes `interrupted`.

A sweep row records its writer (pid, host, process start) like a run does, so a sweep whose
process died reads `interrupted` the next time a store is opened on that host.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, insert, select, update

from .._errors import StoreError
from .._records import utc_now
from ._base import StoreBase
from ._library import check_name
from ._process import Writer, this_writer, writer_alive
from ._schema import runs, sweeps

if TYPE_CHECKING:
    import pandas as pd

SWEEP_STATUSES = ("running", "finished", "cancelled", "error", "interrupted", "stopped_budget")


class SweepBook(StoreBase):
    """Mixin for RunStore: the `sweeps` table."""

    def create_sweep(self, name: str, grid: dict[str, Any]) -> str:
        """Register a sweep (its grid as JSON); runs join it via recorder(sweep_id=...)."""
        sweep_id = uuid.uuid4().hex
        with self.write("create a sweep") as conn:
            conn.execute(insert(sweeps).values(
                sweep_id=sweep_id, name=check_name("sweep", name), grid_json=json.dumps(grid),
                status="running", created_at=utc_now(), **_owner()))
        return sweep_id

    def finish_sweep(self, sweep_id: str, status: str = "finished",
                     reason: str | None = None) -> None:
        """Record how a sweep ended; `reason` says why (e.g. which budget cap stopped it)."""
        if status not in SWEEP_STATUSES:
            raise StoreError(f"sweep status must be one of {SWEEP_STATUSES}, got {status!r}")
        with self.write("finish a sweep") as conn:
            conn.execute(update(sweeps).where(sweeps.c.sweep_id == sweep_id).values(
                status=status, reason=reason, ended_at=utc_now()))

    def get_sweep(self, sweep_id: str) -> dict[str, Any]:
        """A sweep's row (by id or a unique id prefix), its grid JSON parsed as `grid`."""
        escaped = sweep_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = select(sweeps).where(sweeps.c.sweep_id.like(f"{escaped}%", escape="\\")).limit(2)
        with self.read("read a sweep") as conn:
            found = [dict(r) for r in conn.execute(query).mappings()] if sweep_id else []
        exact = [r for r in found if r["sweep_id"] == sweep_id]
        if not found or (len(found) > 1 and not exact):
            raise StoreError(f"no sweep {sweep_id!r}" if not found else
                             f"sweep id {sweep_id!r} is ambiguous: give more characters")
        row = (exact or found)[0]
        row["grid"] = json.loads(row.pop("grid_json"))
        return row

    def reopen_sweep(self, sweep_id: str) -> None:
        """Mark a sweep running again, owned by this process (to resume it)."""
        with self.write("reopen a sweep") as conn:
            conn.execute(update(sweeps).where(sweeps.c.sweep_id == sweep_id).values(
                status="running", reason=None, ended_at=None, **_owner()))

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


def _owner() -> dict[str, Any]:
    me = this_writer()
    return {"pid": me.pid, "hostname": me.hostname, "proc_start": me.proc_start}
