"""One live status of a sweep, read from one place, for every place that shows it (no streamlit).

Why: the Sweeps page's caption and progress bar counted the job's cell events, its Results
header counted the store, and the sidebar counted chat jobs only, so they disagreed ("2 of 24
cells done", "0 / 24 cells finished", "0 running") and the caption moved only when a whole cell
ended. Now the caption, the bar, the Results header and the sidebar all call `sweep_status` and
show its `text()`.

The counts come from the store, where the recorder writes every turn as it completes: finished
cells, cells in flight and the turns they have completed so far, so the status moves per turn.
The job snapshot (this session's sweep job, when there is one) adds only what the store cannot
know: the sweep's id and size before its row exists ("starting"), and that Stop was pressed and
the cells are being cancelled ("stopping").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from groupchat_core import ConfigError, StoreError
from groupchat_core.store import RunStore
from groupchat_core.sweeps import CellFinished, SweepFinished, SweepStarted, parse_sweep

LIVE = frozenset({"starting", "running", "stopping"})
MISSING = "–"  # what a table shows for a value a running or pending cell does not have yet
# Reads within this many seconds share one store read: the live panel, the Results header and
# the sidebar redraw together (every half second) and then show the very same counts.
SHARED_READ_S = 0.3
_reads: dict[tuple[int, str], tuple[float, SweepStatus]] = {}
_reads_lock = threading.Lock()


@dataclass(frozen=True)
class SweepStatus:
    """Where a sweep stands; `text()` is the one line every view shows."""

    sweep_id: str | None
    name: str
    state: str  # starting, running, stopping, or the sweep's final status in the store
    cells_done: int = 0
    cells_total: int = 0
    cells_running: int = 0
    turns_running: int = 0  # turns completed so far by the cells in flight
    running_turns: Mapping[str, int] = field(default_factory=dict)  # cell key -> turns so far
    reason: str | None = None

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def fraction(self) -> float:
        return min(1.0, self.cells_done / self.cells_total) if self.cells_total else 0.0

    def cells_text(self) -> str:
        """'3 / 12 cells finished · 4 running (17 turns so far)'."""
        if self.state == "starting" and not self.cells_total:
            return "planning the cells"
        text = f"{self.cells_done} / {self.cells_total} cells finished"
        if self.cells_running:
            turns = "turn" if self.turns_running == 1 else "turns"
            text += f" · {self.cells_running} running ({self.turns_running} {turns} so far)"
        return text

    def text(self) -> str:
        """'sweep status: running · 3 / 12 cells finished · 4 running (17 turns so far)'."""
        return f"sweep status: {self.state} · {self.cells_text()}"


def _job_view(events: Any) -> tuple[str | None, str, int]:
    """The sweep id, name and cell count the job's events announced."""
    sweep_id, name, total = None, "", 0
    for event in events or ():
        if isinstance(event, SweepStarted):
            sweep_id, name, total = event.sweep_id, event.name, event.cells_total
        elif isinstance(event, CellFinished):
            total = event.cells_total
        elif isinstance(event, SweepFinished):
            total = event.outcome.cells_total
    return sweep_id, name, total


def _cells_total(row: Mapping[str, Any]) -> int:
    try:
        return parse_sweep(row["grid"], "stored sweep").cell_count()
    except (ConfigError, KeyError, TypeError, ValueError):
        return 0


def sweep_status(store: RunStore, sweep_id: str | None = None, job: Any = None) -> SweepStatus:
    """The status of sweep `sweep_id`, or of the sweep a job (a TaskSnapshot) runs.

    A StoreError (e.g. an unknown id) propagates; a job whose sweep row does not exist yet
    reads `starting` (or the job's own end: `error` with its message, `cancelled`).
    """
    job_id, job_name, job_total = _job_view(getattr(job, "events", ()))
    sweep_id = sweep_id or job_id
    job_status = getattr(job, "status", None)
    if sweep_id is None:
        if job is None:
            raise StoreError("sweep_status needs a sweep id or a sweep job")
        state = "starting" if job_status in (None, "queued", "running") else str(job_status)
        return SweepStatus(None, job_name, state, cells_total=job_total,
                           reason=getattr(job, "error", None))
    # A job that has ended (and cleaned up) has written its last word: a shared read taken a
    # moment before could still say `running`, and the views draw this once, not on a timer.
    status = _stored(store, sweep_id, job_name, job_total,
                     fresh=bool(getattr(job, "done", False)))
    if job is not None and status.state == "running":
        if job_status == "cancelled":
            return replace(status, state="stopping")  # Stop pressed; cells being cancelled
        if job_status == "queued":
            return replace(status, state="starting")
    return status


def forget_reads() -> None:
    """Drop the shared reads (tests that change the store underneath call this)."""
    with _reads_lock:
        _reads.clear()


def _stored(store: RunStore, sweep_id: str, name: str, total: int,
            fresh: bool = False) -> SweepStatus:
    """The store's side of the status, shared by reads within SHARED_READ_S (unless `fresh`)."""
    key, now = (id(store), sweep_id), time.monotonic()
    with _reads_lock:
        cached = None if fresh else _reads.get(key)
    if cached is not None and now - cached[0] < SHARED_READ_S:
        return cached[1]
    row = store.get_sweep(sweep_id)
    runs = store.list_runs(sweep_id=row["sweep_id"])
    runs = runs[runs["cell"].notna()]
    finished = set(runs.loc[runs["status"] == "finished", "cell"])
    running = runs[(runs["status"] == "running") & ~runs["cell"].isin(finished)]
    per_cell = {str(c): int(t) for c, t in running.groupby("cell")["turns"].max().items()}
    status = SweepStatus(
        sweep_id=row["sweep_id"], name=str(row.get("name") or name), state=str(row["status"]),
        cells_done=len(finished), cells_total=_cells_total(row) or total,
        cells_running=len(per_cell), turns_running=sum(per_cell.values()),
        running_turns=per_cell, reason=row.get("reason"))
    with _reads_lock:
        if len(_reads) > 256:
            _reads.clear()
        _reads[key] = (now, status)
        if sweep_id != status.sweep_id and status.sweep_id is not None:
            _reads[(id(store), status.sweep_id)] = (now, status)
    return status
