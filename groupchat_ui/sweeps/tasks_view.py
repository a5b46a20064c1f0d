"""The Sweeps form's tasks: typed plain tasks, or tasks with answers from a shipped task set
or an uploaded task-set file (checked in `task_sets`; a problem is one line under it)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from groupchat_core import ConfigError
from groupchat_ui.kit.safety import escape_markdown

from . import task_sets

SOURCE_KEY, LIMIT_KEY, FILE_KEY = "sw_task_source", "sw_task_limit", "sw_task_file"


def choose(sample: str) -> list[Any] | None:
    """The sweep's tasks: plain strings, or task objects with answers; None (with the error
    shown) when the chosen task set cannot be read."""
    source = st.radio("Tasks", list(task_sets.SOURCES), key=SOURCE_KEY, horizontal=True,
                      format_func=task_sets.SOURCES.__getitem__,
                      help="Tasks with answers score every run (right or wrong) and add the "
                           "Outcomes tab to the results; a task-set file holds one task per "
                           "line (.jsonl) or a list (.yaml/.json) with id, prompt, answer "
                           "and scorer.")
    if source == task_sets.TYPED:
        text = st.text_area("Tasks (one per line)", sample, key="sw_tasks", height=68)
        return text.splitlines()
    cols = st.columns([2, 1])
    upload = None
    if source == task_sets.UPLOADED:
        file = cols[0].file_uploader("Task-set file", type=[s[1:] for s in task_sets.SUFFIXES],
                                     key=FILE_KEY)
        upload = (file.name, file.getvalue()) if file is not None else None
    limit = cols[1].number_input("tasks used (the first n; 0: all)", 0, None, 5,
                                 key=LIMIT_KEY)
    try:
        tasks = task_sets.scored_tasks(str(source), int(limit) or None, upload)
    except ConfigError as exc:
        st.error(f"Fix the tasks: {escape_markdown(str(exc))}", icon=":material/error:")
        return None
    if tasks:
        st.caption(escape_markdown(task_sets.tasks_caption(tasks)))
    return tasks
