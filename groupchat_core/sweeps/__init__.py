"""Sweeps: parameter grids over threshold, recency and more, run as recorded chats.

    from groupchat_core.sweeps import load_sweep, plan_sweep, run_sweep, sweep_results

    spec = load_sweep("sweep.yaml")          # base chat + grid + tasks + repeats (+ caps)
    plan = plan_sweep(spec, store)           # cells to run and the pre-flight estimate
    print(plan.estimate.summary())
    outcome = run_sweep(spec, store)         # or arun_sweep(...) as a job on the engine loop
    frame = sweep_results(store, outcome.sweep_id)
    aggregate(frame)                         # mean, std, n, 95 % CI per parameter combination

Modules: spec (the file format and cells), estimate (calls, tokens, cost), plan (new or
resumed: what is done and what is left), executor (where a cell runs), runner (concurrency,
budget caps, events), events (what observers get), results (DataFrames for tables and
heatmaps).
"""

from .estimate import Estimate, estimate
from .events import (
    BudgetStopped,
    CellFinished,
    CellStarted,
    SweepEvent,
    SweepFinished,
    SweepOutcome,
    SweepStarted,
)
from .executor import CellJob, CellResult, Executor, LocalExecutor, UsageHook
from .plan import SweepPlan, finished_cells, plan_sweep
from .results import aggregate, heatmap_frame, sweep_results, sweep_summary, t95
from .runner import SweepRunner, arun_sweep, run_sweep
from .spec import (
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
