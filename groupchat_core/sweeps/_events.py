"""Typed progress events of a sweep (a discriminated union on `kind`, like the engine's).

Observers (the CLI's progress bar, the dashboard's job buffer) receive these as the sweep goes:
it started (with the pre-flight estimate), each cell started and finished, a budget cap stopped
it, it finished (with the outcome that `run_sweep` also returns).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._records import utc_now
from .._statuses import SweepStatus as SweepStatus  # declared once, there
from ._estimate import Estimate


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sweep_id: str
    at: str = Field(default_factory=utc_now)


class SweepOutcome(BaseModel):
    """How a sweep (this session of it, for the per-session counters) ended."""

    model_config = ConfigDict(extra="forbid")

    sweep_id: str
    name: str
    status: SweepStatus
    reason: str | None = None
    cells_total: int
    cells_done: int  # cells with a finished run, over every session of the sweep
    cells_run: int = 0  # cells this session ran to the end
    calls: int = 0  # model calls made this session
    bids: int = 0
    cache_hits: int = 0
    cost_usd: float = 0.0  # priced calls only
    calls_total: int = 0  # over every session (what max_calls counts)
    cost_usd_total: float = 0.0  # over every session (what max_usd counts)
    elapsed_s: float = 0.0
    simulated: bool = False  # some agent of some cell is an offline sim/ model

    @property
    def hit_rate(self) -> float | None:
        return self.cache_hits / self.bids if self.bids else None

    def _repr_html_(self) -> str:
        """A compact summary for Jupyter (names escaped); `sweep_results(store, sweep_id)`
        gives the cells as a frame."""
        from .._display import SIM_MARK, summary_html

        rate = "" if self.hit_rate is None else f", {self.hit_rate:.0%} of bids cached"
        rows = [("status", self.status + (f" ({self.reason})" if self.reason else "")),
                ("cells", f"{self.cells_done}/{self.cells_total} done; this session "
                          f"{self.cells_run}"),
                ("totals", f"{self.calls} model calls{rate}, ${self.cost_usd:.4f} priced cost "
                           f"this session; {self.calls_total} calls in all"),
                ("time", f"{self.elapsed_s:.1f} s"), ("sweep", self.sweep_id)]
        return summary_html(f"GroupChat sweep {self.name}", rows,
                            SIM_MARK if self.simulated else None)


class SweepStarted(_Event):
    kind: Literal["sweep_started"] = "sweep_started"
    name: str
    cells_total: int
    cells_done: int
    resumed: bool
    estimate: Estimate


class CellStarted(_Event):
    kind: Literal["cell_started"] = "cell_started"
    cell: str
    index: int


class CellFinished(_Event):
    """A cell's chat ended; `status` is the run's (finished, cancelled, error)."""

    kind: Literal["cell_finished"] = "cell_finished"
    cell: str
    index: int
    run_id: str | None
    status: str
    stop_reason: str | None = None
    messages: int = 0  # agent messages posted (the task not counted)
    turns: int = 0
    calls: int = 0
    bids: int = 0
    cache_hits: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    worker: str | None = None  # which worker ran it (Ray executor: host/node/pid)
    cells_done: int
    cells_total: int


class BudgetStopped(_Event):
    kind: Literal["budget_stopped"] = "budget_stopped"
    reason: str
    calls_total: int
    cost_usd_total: float


class SweepFinished(_Event):
    kind: Literal["sweep_finished"] = "sweep_finished"
    outcome: SweepOutcome


SweepEvent = Annotated[
    SweepStarted | CellStarted | CellFinished | BudgetStopped | SweepFinished,
    Field(discriminator="kind"),
]
