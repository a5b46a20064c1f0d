"""Scoring a run as it ends: the one entry the engine calls, whatever the scorer."""

from __future__ import annotations

from collections.abc import Sequence

from .._records import Outcome, RunRecord
from ._judge import judge_outcome
from ._score import rule_outcome
from ._task import Task


async def score_run(record: RunRecord, task: Task, agents: Sequence[str]) -> Outcome:
    """The run's outcome: the judge for `judge` tasks, else the task's rule scorer. A run
    cancelled or stopped by an error is scored on what it posted, like any other."""
    if task.scorer == "judge":
        return await judge_outcome(record, task)
    return rule_outcome(record, task, agents)
