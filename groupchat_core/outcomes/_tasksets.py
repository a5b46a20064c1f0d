"""Task sets: files of scored tasks (YAML or JSONL), read by the project's safe-load rules.

Why files: an experiment's questions and answers are data to share, pin and version, never
code. A YAML file holds a list of tasks (or `tasks:` with one); a JSONL file one task object per
line (blank lines skipped). Each task has an `id`, unique in its set. Every problem is one
ConfigError line naming the file, the line or index, and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._config import explain
from .._errors import ConfigError
from .._safeload import check_plain, parse_text, read_limited
from ._task import Task

MAX_TASKSET_BYTES = 8 * 1024 * 1024
MAX_TASKS = 100_000


def task_from(data: Any, where: str) -> Task:
    """One task from plain data, or one ConfigError line naming `where`."""
    if isinstance(data, Task):
        return data
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be a mapping with id, prompt, answer and scorer, got "
                          f"{type(data).__name__}")
    try:
        return Task.model_validate(dict(data))
    except ValidationError as exc:
        raise explain(exc, where) from None


def tasks_from(items: Iterable[Any], source: str) -> list[Task]:
    """Validate a sequence of tasks; ids must be unique."""
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        task = task_from(item, f"{source} task {i + 1}")
        if task.id in seen:
            raise ConfigError(f"{source}: task id {task.id!r} appears twice (tasks {seen[task.id]}"
                              f" and {i + 1}); give each task its own id")
        seen[task.id] = i + 1
        tasks.append(task)
    if not tasks:
        raise ConfigError(f"{source} has no tasks; add at least one")
    if len(tasks) > MAX_TASKS:
        raise ConfigError(f"{source} has {len(tasks):,} tasks, over the {MAX_TASKS:,} limit")
    return tasks


def _jsonl(text: str, source: str) -> list[Any]:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            item = parse_text(line, where, MAX_TASKSET_BYTES)
        except ConfigError:
            raise
        except (ValueError, json.JSONDecodeError) as exc:  # pragma: no cover - parse_text wraps
            raise ConfigError(f"{where} is not valid JSON: {exc}") from None
        if not line.lstrip().startswith("{"):
            raise ConfigError(f"{where} is not a JSON object; each line of a .jsonl task set "
                              "holds one task as {\"id\": ..., \"prompt\": ..., ...}")
        items.append(item)
    return items


def parse_taskset(text: str | bytes, source: str, jsonl: bool) -> list[Task]:
    """Tasks from a task set's text (JSONL when `jsonl`, else YAML or JSON)."""
    if jsonl:
        raw = text.decode("utf-8", errors="strict") if isinstance(text, bytes) else text
        if len(raw.encode()) > MAX_TASKSET_BYTES:
            raise ConfigError(f"{source} is over the {MAX_TASKSET_BYTES:,}-byte limit of a "
                              "task set")
        return tasks_from(_jsonl(raw, source), source)
    data = parse_text(text, source, MAX_TASKSET_BYTES)
    check_plain(data, source)
    if isinstance(data, Mapping) and set(data) == {"tasks"}:
        data = data["tasks"]
    if not isinstance(data, list):
        raise ConfigError(f"{source} must be a list of tasks (or `tasks:` holding one), got "
                          f"{type(data).__name__}")
    return tasks_from(data, source)


def load_taskset(path: str | Path) -> list[Task]:
    """A task-set file: `.jsonl` one task per line; `.yaml`, `.yml` or `.json` a list."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".jsonl", ".yaml", ".yml", ".json"):
        raise ConfigError(f"task set {p.name!r} must be a .jsonl, .yaml, .yml or .json file")
    raw = read_limited(p, MAX_TASKSET_BYTES, "task set")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"task set {p.name} is not UTF-8 text") from None
    return parse_taskset(text, f"task set {p.name}", jsonl=suffix == ".jsonl")


def dump_jsonl(tasks: Sequence[Task]) -> str:
    """A task set as JSONL text (one task per line, only the fields that differ from the
    defaults), the format `load_taskset` reads back."""
    lines = [json.dumps(t.model_dump(exclude_defaults=True), ensure_ascii=False) for t in tasks]
    return "\n".join(lines) + "\n"
