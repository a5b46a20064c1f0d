"""Every status a run, a sweep or a dashboard job can be in, declared once (issue 25 §2).

The store's columns, the bundle format, the sweep events, the CLI's `--status` choices and the
dashboard's job table all read these; the strings are the stored values, so they never change
spelling. Each set is a `Literal` (mypy checks every comparison against it) and the same values
as a tuple for runtime checks and pickers.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

RunStatus = Literal["running", "finished", "cancelled", "error", "interrupted"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = get_args(RunStatus)
# Ended on its own or by request: not running, and not cut off by a dead process.
RUN_ENDED: Final[frozenset[RunStatus]] = frozenset({"finished", "cancelled", "error"})

SweepStatus = Literal["running", "finished", "cancelled", "error", "interrupted",
                      "stopped_budget"]
SWEEP_STATUSES: Final[tuple[SweepStatus, ...]] = get_args(SweepStatus)
# A sweep that stopped before its last cell: `sweep resume` (or the dashboard) may go on.
SWEEP_RESUMABLE: Final[frozenset[SweepStatus]] = frozenset(
    {"cancelled", "interrupted", "stopped_budget", "error"})

# A job on the dashboard's background runner (a run or a sweep in this server process).
JobStatus = Literal["queued", "running", "finished", "cancelled", "error"]
JOB_STATUSES: Final[tuple[JobStatus, ...]] = get_args(JobStatus)
JOB_TERMINAL: Final[frozenset[JobStatus]] = frozenset({"finished", "cancelled", "error"})

__all__ = ["JOB_STATUSES", "JOB_TERMINAL", "RUN_ENDED", "RUN_STATUSES", "SWEEP_RESUMABLE",
           "SWEEP_STATUSES", "JobStatus", "RunStatus", "SweepStatus"]
