"""Sweeps: parameter grids over threshold, recency and more, run as recorded chats.

    from groupchat_core.sweeps import load_sweep, plan_sweep, run_sweep, sweep_results

    spec = load_sweep("sweep.yaml")          # base chat + grid + tasks + repeats (+ caps)
    plan = plan_sweep(spec, store)           # cells to run and the pre-flight estimate
    print(plan.estimate.summary())
    outcome = run_sweep(spec, store)         # or arun_sweep(...) as a job on the engine loop
    frame = sweep_results(store, outcome.sweep_id)
    aggregate(frame)                         # mean, n, 95 % interval fit to each metric
    importance(frame)                        # which parameter moves each metric most
    compare_cells(frame, {"threshold": 0.3}, {"threshold": 0.6}, "lulled")  # effect, test
    export_meta(store, outcome.sweep_id)     # spec, seeds, settings, models, methods text
    frame_csv(frame)                         # as CSV, safe to open in a spreadsheet

Private modules: _spec (the file format and cells), _space (order, roster, models per agent,
random search), _estimate (calls, tokens, cost), _plan (new or resumed: what is done and what
is left), _executor (where a cell runs), _scheduler (concurrency, budget caps, events), _events
(what observers get), _results (DataFrames for tables and heatmaps), _intervals and _natures
(which interval fits which metric), _importance (which parameter matters), _compare (two cells:
effect size, permutation test, paired by seed), _multiple (Holm, Benjamini-Hochberg),
_outcomes (accuracy, cost per correct answer, equality against outcome), _distractors (the
floor time and accuracy cost of roster entries marked off-topic), _selection (did the floor go to
the judge's best candidate: winner-is-best rate, regret, bid calibration),
_export (self-describing exports, methods paragraph). The `sweep` subcommand lives in
groupchat_core/cli/_sweeps.py.
"""

from .._jsonable import plain as plain_json
from ..exports._tables import frame_csv
from ._compare import (
    Comparison,
    compare_cells,
    compare_metrics,
    compare_pairs,
    compare_values,
)
from ._distractors import DISTRACTOR_COLUMNS, distractor_report, has_distractors
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
from ._executor import CellJob, Executor, LocalExecutor
from ._export import METHODS_VERSION, export_meta, long_frame
from ._importance import IMPORTANCE_METRICS, factor_importance, importance
from ._intervals import (
    BOOTSTRAP_SEED,
    Interval,
    bca_mean,
    bootstrap_mean,
    studentized_mean,
    t_interval,
    wilson,
)
from ._multiple import benjamini_hochberg, holm
from ._natures import (
    CACHE_METRICS,
    NATURES,
    feasible_range,
    methods_text,
    metric_interval,
)
from ._outcomes import (
    Correlation,
    accuracy_table,
    equality_outcome,
    runs_outcomes,
)
from ._plan import SweepPlan, plan_sweep
from ._ray_executor import RayExecutor
from ._results import (
    CallCounts,
    aggregate,
    call_counts,
    heatmap_frame,
    sweep_results,
    sweep_summary,
    varying,
)
from ._scheduler import arun_sweep, run_sweep
from ._selection import (
    SELECTION_PROMPT,
    SelectionJudgement,
    SelectionSummary,
    ajudge_selection,
    calibration,
    judge_selection,
    selection_prompt,
    selection_summary,
    selection_turns,
    summary_lines,
)
from ._spec import (
    Cell,
    Grid,
    SweepSpec,
    load_sweep,
    load_sweep_text,
    parse_sweep,
)
from ._views import (
    bid_stability,
    differing,
    failures,
    group_bands,
    log_axis,
    run_matrix,
    top_k,
)

__all__ = [
    "BOOTSTRAP_SEED",
    "CACHE_METRICS",
    "IMPORTANCE_METRICS",
    "METHODS_VERSION",
    "NATURES",
    "BudgetStopped",
    "CallCounts",
    "Cell",
    "CellFinished",
    "CellJob",
    "CellStarted",
    "Comparison",
    "Correlation",
    "Estimate",
    "Executor",
    "Grid",
    "Interval",
    "LocalExecutor",
    "RayExecutor",
    "SweepEvent",
    "SweepFinished",
    "SweepOutcome",
    "SweepPlan",
    "SweepSpec",
    "SweepStarted",
    "SELECTION_PROMPT",
    "SelectionJudgement",
    "SelectionSummary",
    "ajudge_selection",
    "calibration",
    "judge_selection",
    "selection_prompt",
    "selection_summary",
    "selection_turns",
    "summary_lines",
    "accuracy_table",
    "DISTRACTOR_COLUMNS",
    "distractor_report",
    "has_distractors",
    "aggregate",
    "arun_sweep",
    "bca_mean",
    "benjamini_hochberg",
    "bid_stability",
    "bootstrap_mean",
    "call_counts",
    "compare_cells",
    "compare_metrics",
    "compare_pairs",
    "compare_values",
    "differing",
    "equality_outcome",
    "estimate",
    "export_meta",
    "factor_importance",
    "failures",
    "feasible_range",
    "frame_csv",
    "group_bands",
    "heatmap_frame",
    "importance",
    "holm",
    "load_sweep",
    "load_sweep_text",
    "log_axis",
    "long_frame",
    "methods_text",
    "metric_interval",
    "parse_sweep",
    "plain_json",
    "plan_sweep",
    "run_matrix",
    "run_sweep",
    "runs_outcomes",
    "studentized_mean",
    "sweep_results",
    "sweep_summary",
    "t_interval",
    "top_k",
    "varying",
    "wilson",
]
