"""How a run and a time are named everywhere: the sidebar, the Analysis picker, the Runs table
and the Compare headers all call `run_label`; every table and label formats times here.

Why one pure module: every chat used to be named "dynamic-groupchat", so lists of runs were rows
of identical labels ("08:04 · Optimist, Pessimist, Realis"). A run is told apart by the name its
user gave it or else by its task, then its start time (local, to the minute) and a short id.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from groupchat_core import Agent, ChatConfig

DEFAULT_NAME: str = ChatConfig().name  # "dynamic-groupchat": says nothing about the run
LABEL_CHARS = 48


def _parse(value: Any) -> datetime | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, datetime):
        return value
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value)
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def local_time(value: Any, *, seconds: bool = True, date: bool = True) -> str:
    """An ISO string, datetime or epoch seconds as local time: "2026-12-01 08:04:13" ("" if none).

    Stored times are UTC with microseconds; people read their own clock, to the second."""
    moment = _parse(value)
    if moment is None:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone()  # the server's local zone
    fmt = ("%Y-%m-%d " if date else "") + ("%H:%M:%S" if seconds else "%H:%M")
    return moment.strftime(fmt)


def short(text: str, limit: int = LABEL_CHARS) -> str:
    """One line of at most `limit` characters (an ellipsis marks a cut)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 1].rstrip() + "…"


def run_title(name: str | None, task: str | None) -> str:
    """What the run is: the name its user gave it, else its task, else "untitled run"."""
    if name and name.strip() and name.strip() != DEFAULT_NAME:
        return short(name)
    if task and task.strip():
        return short(task)
    return short(name) if name and name.strip() else "untitled run"


def run_label(name: str | None, task: str | None, started_at: Any = None,
              run_id: str | None = None, *, date: bool = True) -> str:
    """"<name or task> · <local start, to the minute> · <id prefix>": one label for any run."""
    parts = [run_title(name, task)]
    when = local_time(started_at, seconds=False, date=date)
    if when:
        parts.append(when)
    if run_id:
        parts.append(str(run_id)[:8])
    return " · ".join(parts)


def row_label(row: Any) -> str:
    """`run_label` of a store row (a mapping with name, task, started_at, run_id)."""
    return run_label(row.get("name"), row.get("task"), row.get("started_at"), row.get("run_id"))


def unused_name(name: str, tag: str, taken: Iterable[str]) -> str:
    """`name (tag)`, or `name (tag 2)`, ...: a name not in `taken` (copies, imports, presets)."""
    used = set(taken)
    candidate, n = f"{name} ({tag})", 2
    while candidate in used:
        candidate, n = f"{name} ({tag} {n})", n + 1
    return candidate


def changed_agents(saved: Iterable[Agent], incoming: Iterable[Agent]) -> list[str]:
    """Names of saved agents that `incoming` would replace with something different: what an
    import or a preset asks about before it saves."""
    specs = {a.agent_name: a.to_spec() for a in saved}
    return [a.agent_name for a in incoming
            if a.agent_name in specs and specs[a.agent_name] != a.to_spec()]
