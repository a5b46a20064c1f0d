"""The Sweeps form's tasks with answers, without streamlit: a shipped task set or an uploaded
task-set file, checked the way a sweep file's `tasks:` is (groupchat_core.outcomes).

Why: a sweep with answers (accuracy per cell, the Outcomes tab) could only start from a sweep
file (`groupchat-lab sweep`); the form took plain tasks only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath
from typing import Any

from groupchat_core import ConfigError
from groupchat_core.outcomes import Task, du_math_tasks, parse_taskset

TYPED, DU_MATH, UPLOADED = "typed", "du-math", "file"
DU_MATH_SIZE = 100
SOURCES = {
    TYPED: "typed below (plain tasks, no answers)",
    DU_MATH: f"Du et al. arithmetic ({DU_MATH_SIZE} tasks with answers, majority vote)",
    UPLOADED: "a task-set file (.jsonl, .yaml or .json)",
}
SUFFIXES = (".jsonl", ".yaml", ".yml", ".json")
SHIPPED: dict[str, Callable[[int], list[Task]]] = {DU_MATH: du_math_tasks}


def scored_tasks(source: str, limit: int | None, upload: tuple[str, bytes] | None = None
                 ) -> list[dict[str, Any]] | None:
    """The tasks with answers a sweep spec takes (`tasks:` as task objects): the first `limit`
    of a shipped set or of an uploaded file; None for typed plain tasks. A problem is one
    ConfigError line naming the file and the fix."""
    if source == TYPED:
        return None
    if limit is not None and limit < 1:
        raise ConfigError(f"the number of tasks must be 1 or more, got {limit}")
    if source in SHIPPED:
        tasks = SHIPPED[source](min(limit or DU_MATH_SIZE, DU_MATH_SIZE))
    elif source == UPLOADED:
        tasks = _uploaded(upload)[:limit]
    else:
        raise ConfigError(f"unknown task source {source!r}; choose one of {list(SOURCES)}")
    return [t.model_dump(exclude_defaults=True) for t in tasks]


def _uploaded(upload: tuple[str, bytes] | None) -> list[Task]:
    if upload is None:
        raise ConfigError("choose a task-set file (.jsonl, .yaml or .json), or type the tasks")
    name, data = upload
    suffix = PurePath(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise ConfigError(f"task set {name!r} must be a .jsonl, .yaml, .yml or .json file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"task set {name} is not UTF-8 text") from None
    return parse_taskset(text, f"task set {name}", jsonl=suffix == ".jsonl")


def tasks_caption(tasks: list[dict[str, Any]]) -> str:
    """'5 tasks with answers (scorer numeric), e.g. "What is ..."' under the chooser."""
    scorers = sorted({str(t.get("scorer", "exact")) for t in tasks})
    first = str(tasks[0]["prompt"]) if tasks else ""
    shown = first if len(first) <= 80 else first[:79] + "…"
    n = len(tasks)
    return (f"{n} task{'s' if n != 1 else ''} with answers (scorer {', '.join(scorers)}), "
            f"first: {shown}")
