"""Planning a sweep, new or resumed: which cells are done, what was spent, what is left.

"Without running any cell twice" means: a cell whose run reached status `finished` in the store
(its chat stopped by max_loops or a lull, and the end was committed) is never run again. Every
other cell is run on resume: never started, `interrupted` (its process died; the store marks
runs left `running` by a dead process on open), `cancelled` (a budget cap or the user stopped
it mid-chat) or `error` (every bid failed, e.g. a provider outage). Their old runs stay in the
store, linked to the sweep and cell, as history; results use the finished one.

A sweep has one owner at a time: resuming one that another live process still runs is refused
here, before anything is estimated or printed (SweepBusy, naming the owner and how to stop it),
and again, atomically, when the runner takes it over (store.reopen_sweep).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._errors import ConfigError, StoreError
from ..store import SweepBusy
from ._estimate import Estimate, estimate
from ._spec import Cell, SweepSpec, parse_sweep

if TYPE_CHECKING:
    from ..store import RunStore


@dataclass
class SweepPlan:
    """What a (re)started sweep will do; `sweep_id` is None until a new sweep is created."""

    spec: SweepSpec
    sweep_id: str | None
    cells: list[Cell]
    todo: list[Cell]
    done: dict[str, str] = field(default_factory=dict)  # cell key -> finished run id
    spent_calls: int = 0  # over earlier sessions (budget caps count these)
    spent_usd: float = 0.0
    estimate: Estimate | None = None
    take_over: bool = False  # resume even if its owner runs on a host this one cannot check

    @property
    def resumed(self) -> bool:
        return self.sweep_id is not None


def stored_spec(store: RunStore, sweep_id: str) -> tuple[str, SweepSpec]:
    """The full id and spec of a stored sweep."""
    row = store.get_sweep(sweep_id)
    try:
        return row["sweep_id"], parse_sweep(row["grid"], f"sweep {row['sweep_id'][:12]}")
    except ConfigError as exc:
        raise StoreError(f"sweep {sweep_id!r} was not created from a sweep spec, so it cannot "
                         f"be resumed ({exc})") from None


def finished_cells(store: RunStore, sweep_id: str) -> dict[str, str]:
    """Cell key -> run id of its finished run (the latest, should there be several)."""
    runs = store.list_runs(sweep_id=sweep_id, status="finished")
    runs = runs[runs["cell"].notna()].sort_values("started_at")
    return dict(zip(runs["cell"], runs["run_id"], strict=True))


def plan_sweep(spec: SweepSpec | None, store: RunStore, *, resume: str | None = None,
               with_estimate: bool = True, take_over: bool = False) -> SweepPlan:
    """Plan a new sweep from `spec`, or the rest of sweep `resume` (spec optional: the stored
    one is used; if given, it must define the same cells, though caps and concurrency may
    differ). A sweep still run by a live process cannot be resumed (SweepBusy); `take_over`
    resumes one whose owner is on another host (that this host cannot check) anyway."""
    if resume is None:
        if spec is None:
            raise ConfigError("a sweep needs a spec, or a sweep id to resume")
        cells = list(spec.cells())
        plan = SweepPlan(spec, None, cells, cells)
    else:
        sweep_id, stored = stored_spec(store, resume)
        busy = store.sweep_owner(sweep_id, take_over=take_over)
        if busy is not None:
            raise SweepBusy(busy)
        if spec is not None and not spec.same_cells(stored):
            raise ConfigError(f"the spec does not match sweep {sweep_id[:12]}'s cells; resume "
                              "it with the same spec (only caps and concurrency may change)")
        spec = spec or stored
        cells = list(spec.cells())
        finished = finished_cells(store, sweep_id)
        done = {c.key: finished[c.key] for c in cells if c.key in finished}
        plan = SweepPlan(spec, sweep_id, cells, [c for c in cells if c.key not in done], done,
                         take_over=take_over)
        _spent(plan, store, sweep_id)
    if with_estimate:
        plan.estimate = estimate(spec, plan.todo, store=store, sweep_id=plan.sweep_id,
                                 cells_done=len(plan.done))
    return plan


def _spent(plan: SweepPlan, store: RunStore, sweep_id: str) -> None:
    stats = store.cache_stats(sweep_id=sweep_id)
    plan.spent_calls = int(stats["calls"].sum()) if not stats.empty else 0
    plan.spent_usd = float(stats["cost_usd"].sum()) if not stats.empty else 0.0
