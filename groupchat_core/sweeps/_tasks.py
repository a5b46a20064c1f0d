"""A sweep's `tasks:` as tasks with answers: a task-set file, or a list of task objects.

    tasks: du_math_100.jsonl                     # every task of the file
    tasks: {file: du_math_100.jsonl, limit: 5}   # its first five
    tasks: [{id: q1, prompt: ..., answer: "42", scorer: numeric}, ...]

A relative file is looked for next to the sweep file. Plain strings stay plain tasks (no
outcome). docs/outcomes.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from ..outcomes import Task, load_taskset, tasks_from


def _file_tasks(entry: Any, base_dir: str | Path | None) -> list[Task]:
    if isinstance(entry, str):
        name, limit = entry, None
    else:
        unknown = set(entry) - {"file", "limit"}
        if unknown or "file" not in entry:
            raise ConfigError("tasks as a mapping takes `file` (a task set) and an optional "
                              f"`limit`; got {sorted(entry)}")
        name, limit = entry["file"], entry.get("limit")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 1):
            raise ConfigError(f"tasks.limit must be a positive integer, got {limit!r}")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("tasks.file must name a task-set file (.jsonl, .yaml or .json)")
    path = Path(name)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    tasks = load_taskset(path)
    return tasks if limit is None else tasks[:limit]


def scored_tasks(value: Any, base_dir: str | Path | None, max_tasks: int) -> list[Task] | None:
    """The sweep's tasks with answers, or None when `value` is a list of plain strings."""
    if isinstance(value, str) and Path(value).suffix.lower() in (".jsonl", ".yaml", ".yml",
                                                                 ".json"):
        tasks = _file_tasks(value, base_dir)
    elif isinstance(value, Mapping):
        tasks = _file_tasks(value, base_dir)
    elif isinstance(value, list) and any(isinstance(t, Mapping) for t in value):
        if not all(isinstance(t, Mapping) for t in value):
            raise ConfigError("tasks mixes plain strings and task objects; give every task "
                              "an id, prompt and answer, or none")
        tasks = tasks_from(value, "tasks")
    else:
        return None
    if len(tasks) > max_tasks:
        raise ConfigError(f"the task set has {len(tasks):,} tasks, over the sweep's "
                          f"{max_tasks:,}; use tasks: {{file: ..., limit: N}}")
    return tasks
