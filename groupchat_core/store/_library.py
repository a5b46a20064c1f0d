"""Saved agents and presets (a whole room: config plus agents), as secret-free JSON.

Agents are stored as `Agent.to_spec()`, so an api_key can never reach the database. Agents keep
a position (schema v4): the order people arrange them in is part of an experiment (selection
ties go to the earlier agent), so it lives in the store and survives a reload. Agents have an
owner (schema v8): who saved or imported it (the dashboard's signed-in user; None for the CLI
and scripts); replacing or renaming an agent keeps its owner. Who may edit what is the
caller's rule (the dashboard: groupchat_ui/kit/access.py), not the store's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from sqlalchemy import Connection, Table, case, delete, func, insert, select, update

from .._errors import StoreError
from .._records import utc_now
from ._base import StoreBase
from ._schema import agents, presets

if TYPE_CHECKING:  # loaded where agents are read: `list`/`show` never build these models
    from .._agent import Agent
    from .._config import ChatSpec


def _upsert(conn: Connection, table: Table, name: str, spec: dict[str, Any],
            **on_insert: Any) -> None:
    """Portable upsert inside the caller's write transaction (no dialect-specific SQL);
    `on_insert` are extra values for a new row only (an agent's position)."""
    now, key = utc_now(), table.c.name
    changed = conn.execute(update(table).where(key == name).values(
        spec_json=json.dumps(spec), updated_at=now)).rowcount
    if not changed:
        conn.execute(insert(table).values(name=name, spec_json=json.dumps(spec),
                                          created_at=now, updated_at=now, **on_insert))


def _next_position(conn: Connection) -> int:
    return int(conn.execute(select(func.max(agents.c.position))).scalar() or 0) + 1


_IN_ORDER = (case((agents.c.position.is_(None), 1), else_=0), agents.c.position, agents.c.name)


def check_name(kind: str, name: str) -> str:
    """A saved name (agent, preset, sweep) as the store accepts it, else a StoreError."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise StoreError(f"{kind} name must be 1-200 characters, got {name!r}")
    return name


OWNER_MAX = 320


def check_owner(value: str | None) -> str | None:
    """An owner identity or display name (runs, sweeps): None, or 1-320 printable characters
    (it comes from an identity provider's claims: shown in tables, so no control characters)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > OWNER_MAX or (
            not value.isprintable()):
        raise StoreError(f"an owner must be 1-{OWNER_MAX} printable characters, got "
                         f"{str(value)[:60]!r}")
    return value.strip()


class Library(StoreBase):
    """Mixin for RunStore: the `agents` and `presets` tables."""

    # --- agents ---------------------------------------------------------------------------

    def save_agent(self, agent: Agent, *, owner: str | None = None,
                   owner_name: str | None = None) -> None:
        """Save (or replace) an agent under its name; its api_key is never stored."""
        self.save_agents([agent], owner=owner, owner_name=owner_name)

    def save_agents(self, items: Sequence[Agent], *, owner: str | None = None,
                    owner_name: str | None = None) -> None:
        """Save several agents in one transaction: all of them or, on error, none. A new agent
        goes to the end of the saved order and belongs to `owner`; a replaced one keeps its
        place and its owner."""
        owner, owner_name = check_owner(owner), check_owner(owner_name)
        with self.write("save agents") as conn:
            for agent in items:
                _upsert(conn, agents, check_name("agent", agent.agent_name), agent.to_spec(),
                        position=_next_position(conn), owner=owner,
                        owner_name=owner_name or owner)

    def agent_owners(self) -> dict[str, tuple[str | None, str | None]]:
        """Every saved agent's (owner, owner_name); (None, None) for ownerless agents (saved
        before schema v8, or by a writer that named no owner)."""
        with self.read("read the agents' owners") as conn:
            rows = conn.execute(select(agents.c.name, agents.c.owner, agents.c.owner_name)).all()
        return {str(n): (o, on) for n, o, on in rows}

    def rename_agent(self, old: str, agent: Agent) -> None:
        """Replace agent `old` by `agent` under its (new) name, in its place in the order; a
        StoreError if `old` is gone or the new name is taken by another agent."""
        new = check_name("agent", agent.agent_name)
        with self.write("rename an agent") as conn:
            if new != old and conn.execute(
                    select(agents.c.name).where(agents.c.name == new)).first() is not None:
                raise StoreError(f"an agent named {new!r} already exists: pick another name")
            changed = conn.execute(update(agents).where(agents.c.name == old).values(
                name=new, spec_json=json.dumps(agent.to_spec()), updated_at=utc_now())).rowcount
            if not changed:
                raise StoreError(f"no saved agent named {old!r}")

    def set_agent_order(self, names: Sequence[str]) -> None:
        """Store the order of the saved agents: `names` first, any others after them in their
        current order (unknown names are ignored)."""
        with self.write("reorder agents") as conn:
            current = list(conn.execute(select(agents.c.name).order_by(*_IN_ORDER)).scalars())
            wanted = [n for n in dict.fromkeys(names) if n in current]
            for position, name in enumerate(wanted + [n for n in current if n not in wanted],
                                            start=1):
                conn.execute(update(agents).where(agents.c.name == name).values(
                    position=position))

    def list_agents(self) -> list[Agent]:
        """Saved agents in their stored order (agents saved before schema v4 last, by name)."""
        with self.read("list agents") as conn:
            rows = conn.execute(select(agents.c.name, agents.c.spec_json)
                                .order_by(*_IN_ORDER)).all()
        return [_agent(name, raw) for name, raw in rows]

    def saved_agents(self) -> tuple[list[Agent], list[str]]:
        """The saved agents that load, and one line for each that no longer does (an agent
        saved before a rule it breaks, e.g. an endpoint hidden in its litellm_kwargs: issue
        44): readers list the rest and show the lines, instead of failing on one bad row."""
        with self.read("list agents") as conn:
            rows = conn.execute(select(agents.c.name, agents.c.spec_json)
                                .order_by(*_IN_ORDER)).all()
        loaded: list[Agent] = []
        problems: list[str] = []
        for name, raw in rows:
            try:
                loaded.append(_agent(name, raw))
            except StoreError as exc:
                problems.append(f"{exc}; import it again without that setting (an agent "
                                "of the same name replaces it)")
        return loaded, problems

    def agents_version(self) -> tuple[tuple[str, int | None, str], ...]:
        """A cheap token that changes whenever the saved agents do (a save, rename, reorder or
        delete by any writer: this process, the CLI, another server), so readers can cache
        `list_agents` until it changes instead of for a guessed lifetime."""
        with self.read("check the saved agents") as conn:
            rows = conn.execute(select(agents.c.name, agents.c.position, agents.c.updated_at)
                                .order_by(agents.c.name)).all()
        return tuple((str(n), None if p is None else int(p), str(u)) for n, p, u in rows)

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
        from .._config import ChatSpec

        spec = room if isinstance(room, ChatSpec) else ChatSpec(agents=list(room))
        with self.write("save a preset") as conn:
            _upsert(conn, presets, check_name("preset", name), spec.to_data())

    def list_presets(self) -> list[str]:
        with self.read("list presets") as conn:
            return list(conn.execute(select(presets.c.name).order_by(presets.c.name)).scalars())

    def load_preset(self, name: str) -> ChatSpec:
        with self.read("read a preset") as conn:
            raw = conn.execute(select(presets.c.spec_json).where(presets.c.name == name)).scalar()
        if raw is None:
            raise StoreError(f"no preset named {name!r}")
        from .._config import parse_spec

        return parse_spec(json.loads(raw), f"preset {name!r}")


def _agent(name: str, raw: str) -> Agent:
    from .._agent import Agent
    from .._config import explain

    try:
        return Agent.model_validate(json.loads(raw))
    except ValidationError as exc:
        raise StoreError(f"saved agent {name!r} is invalid: {explain(exc, 'agent')}") from None
