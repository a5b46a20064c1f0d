"""Sweeps: parameter grids over threshold, recency and more, run as recorded chats.

    from groupchat_core.sweeps import load_sweep, plan_sweep, run_sweep, sweep_results

    spec = load_sweep("sweep.yaml")          # base chat + grid + tasks + repeats (+ caps)
    plan = plan_sweep(spec, store)           # cells to run and the pre-flight estimate
    print(plan.estimate.summary())
    outcome = run_sweep(spec, store)         # or arun_sweep(...) as a job on the engine loop
    frame = sweep_results(store, outcome.sweep_id)
    aggregate(frame)                         # mean, std, n, 95 % CI per parameter combination
    frame_csv(frame)                         # as CSV, safe to open in a spreadsheet

Private modules: _spec (the file format and cells), _estimate (calls, tokens, cost), _plan (new
or resumed: what is done and what is left), _executor (where a cell runs), _scheduler
(concurrency, budget caps, events), _events (what observers get), _results (DataFrames for
tables and heatmaps), _cli (the `sweep` subcommand).
"""

from .._exports import frame_csv
from ._estimate import Estimate, estimate
from ._events import (
    BudgetStopped,
    CellFinished,
    CellStarted,
    SweepEvent,
    SweepFinished,
    SweepOutcome,
    SweepStarted,
)
from ._executor import CellJob, CellResult, Executor, LocalExecutor, UsageHook
from ._plan import SweepPlan, finished_cells, plan_sweep
from ._ray_executor import RayExecutor
from ._results import aggregate, heatmap_frame, sweep_results, sweep_summary, t95
from ._scheduler import SweepRunner, arun_sweep, run_sweep
from ._spec import (
    AXES,
    MAX_CELLS,
    SWEEP_SCHEMA_VERSION,
    Cell,
    Grid,
    SweepSpec,
    load_sweep,
    load_sweep_text,
    parse_sweep,
)

__all__ = [
    "AXES",
    "MAX_CELLS",
    "SWEEP_SCHEMA_VERSION",
    "BudgetStopped",
    "Cell",
    "CellFinished",
    "CellJob",
    "CellResult",
    "CellStarted",
    "Estimate",
    "Executor",
    "Grid",
    "LocalExecutor",
    "RayExecutor",
    "SweepEvent",
    "SweepFinished",
    "SweepOutcome",
    "SweepPlan",
    "SweepRunner",
    "SweepSpec",
    "SweepStarted",
    "UsageHook",
    "aggregate",
    "arun_sweep",
    "estimate",
    "finished_cells",
    "frame_csv",
    "heatmap_frame",
    "load_sweep",
    "load_sweep_text",
    "parse_sweep",
    "plan_sweep",
    "run_sweep",
    "sweep_results",
    "sweep_summary",
    "t95",
]
