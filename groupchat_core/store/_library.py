"""Saved agents, presets (a whole room: config plus agents) and sweeps, as secret-free JSON.

Agents are stored as `Agent.to_spec()`, so an api_key can never reach the database.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, Table, delete, func, insert, select, update

from .._agent import Agent
from .._config import ChatSpec, explain, parse_spec
from .._errors import StoreError
from .._records import utc_now
from ._schema import agents, presets, runs, sweeps

SWEEP_STATUSES = ("running", "finished", "cancelled", "error", "interrupted", "stopped_budget")


def _upsert(conn: Connection, table: Table, name: str, spec: dict[str, Any]) -> None:
    """Portable upsert inside the caller's write transaction (no dialect-specific SQL)."""
    now, key = utc_now(), table.c.name
    changed = conn.execute(update(table).where(key == name).values(
        spec_json=json.dumps(spec), updated_at=now)).rowcount
    if not changed:
        conn.execute(insert(table).values(name=name, spec_json=json.dumps(spec),
                                          created_at=now, updated_at=now))


def _check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise StoreError(f"{kind} name must be 1-200 characters, got {name!r}")
    return name


class Library:
    """Mixin for RunStore: needs `write(what)` and `read(what)` connection contexts."""

    def write(self, what: str) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def read(self, what: str) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    # --- agents ---------------------------------------------------------------------------

    def save_agent(self, agent: Agent) -> None:
        """Save (or replace) an agent under its name; its api_key is never stored."""
        self.save_agents([agent])

    def save_agents(self, items: Sequence[Agent]) -> None:
        """Save several agents in one transaction: all of them or, on error, none."""
        with self.write("save agents") as conn:
            for agent in items:
                _upsert(conn, agents, _check_name("agent", agent.agent_name), agent.to_spec())

    def list_agents(self) -> list[Agent]:
        with self.read("list agents") as conn:
            rows = conn.execute(select(agents.c.name, agents.c.spec_json)
                                .order_by(agents.c.name)).all()
        return [_agent(name, raw) for name, raw in rows]

    def get_agent(self, name: str) -> Agent:
        with self.read("read an agent") as conn:
            raw = conn.execute(select(agents.c.spec_json).where(agents.c.name == name)).scalar()
        if raw is None:
            raise StoreError(f"no saved agent named {name!r}")
        return _agent(name, raw)

    def delete_agent(self, name: str) -> bool:
        with self.write("delete an agent") as conn:
            return bool(conn.execute(delete(agents).where(agents.c.name == name)).rowcount)

    # --- presets --------------------------------------------------------------------------

    def save_preset(self, name: str, room: ChatSpec | Sequence[Agent]) -> None:
        """Save a room (a ChatSpec, or just its agents with default settings) under a name."""
        spec = room if isinstance(room, ChatSpec) else ChatSpec(agents=list(room))
        with self.write("save a preset") as conn:
            _upsert(conn, presets, _check_name("preset", name), spec.to_data())

    def list_presets(self) -> list[str]:
        with self.read("list presets") as conn:
            return list(conn.execute(select(presets.c.name).order_by(presets.c.name)).scalars())

    def load_preset(self, name: str) -> ChatSpec:
        with self.read("read a preset") as conn:
            raw = conn.execute(select(presets.c.spec_json).where(presets.c.name == name)).scalar()
        if raw is None:
            raise StoreError(f"no preset named {name!r}")
        return parse_spec(json.loads(raw), f"preset {name!r}")

    def delete_preset(self, name: str) -> bool:
        with self.write("delete a preset") as conn:
            return bool(conn.execute(delete(presets).where(presets.c.name == name)).rowcount)

    # --- sweeps ---------------------------------------------------------------------------

    def create_sweep(self, name: str, grid: dict[str, Any]) -> str:
        """Register a sweep (its grid as JSON); runs join it via recorder(sweep_id=...)."""
        sweep_id = uuid.uuid4().hex
        with self.write("create a sweep") as conn:
            conn.execute(insert(sweeps).values(
                sweep_id=sweep_id, name=_check_name("sweep", name), grid_json=json.dumps(grid),
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

    def list_sweeps(self) -> Any:
        """Sweeps, newest first, with how many runs each has recorded."""
        import pandas as pd

        count = select(func.count()).where(runs.c.sweep_id == sweeps.c.sweep_id)
        query = select(sweeps, count.scalar_subquery().label("runs")).order_by(
            sweeps.c.created_at.desc())
        with self.read("list sweeps") as conn:
            result = conn.execute(query)
            return pd.DataFrame(result.all(), columns=list(result.keys()))


def _owner() -> dict[str, Any]:
    from ._process import this_writer

    me = this_writer()
    return {"pid": me.pid, "hostname": me.hostname, "proc_start": me.proc_start}


def _agent(name: str, raw: str) -> Agent:
    try:
        return Agent.model_validate(json.loads(raw))
    except ValidationError as exc:
        raise StoreError(f"saved agent {name!r} is invalid: {explain(exc, 'agent')}") from None
