"""Outcome against cost and dynamics: accuracy per cell or strategy, cost per correct answer,
and turn-taking equality against outcome (Woolley et al. 2010, asked of LLM groups).

Why pure functions over the results frame (`sweep_results`): the Sweeps page, `sweep export
--table accuracy` and notebooks ask the same questions and must get the same numbers; the page
only draws them (docs/outcomes.md, "Outcome against dynamics").

- `accuracy_table`: per group, the scored finished chats, how many were right, accuracy with
  its Wilson interval (the one every rate gets, _intervals.py), and calls, tokens and cost,
  in total and per correct answer (total over the group / correct answers: what one right
  answer cost; none when no answer was right).
- `equality_outcome`: one point per scored finished chat (its Gini or evenness of turns, and
  whether it was right), and Pearson's r between them (with a 0/1 outcome, the point-biserial
  correlation). Issue 38: a sweep's chats are tasks x cells (1,200 chats = 100 tasks x 12
  cells), not independent, so the interval is a cluster bootstrap over tasks (tasks resampled
  with replacement, all their chats kept; percentile, seeded), not Fisher's z on n chats; r is
  per strategy (each strategy fixes turn-taking its own way, so a pooled r mixes strategies),
  never pooled across them; and below MIN_CHATS chats no r is given, below MIN_TASKS tasks no
  interval, each said in words. Fisher's z remains for chats given without tasks.
- `runs_outcomes`: stored scored runs (from the Run page, scripts, sweeps) as rows of the
  same shape, for the Analysis page's view across runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigError
from ._intervals import CONFIDENCE, wilson, z_value

if TYPE_CHECKING:
    from ..store import RunStore

EQUALITY_METRICS = ("gini", "evenness")
MIN_CHATS = 20  # fewer chats: no r (3 chats gave r = 0.9 "with an interval" before issue 38)
MIN_TASKS = 10  # fewer tasks (clusters): r without an interval
CLUSTER_RESAMPLES = 2000
CLUSTER_SEED = 20260101
TASK_COLUMNS = ("task_id", "task_index", "task")
OUTCOME_VALUES = ("correct", "score")
ACCURACY_COLUMNS = ["n", "correct", "accuracy", "ci_low", "ci_high", "interval_method",
                    "calls", "tokens", "cost_usd", "calls_per_correct", "tokens_per_correct",
                    "cost_per_correct", "simulated", "note"]


def scored_chats(results: pd.DataFrame) -> pd.DataFrame:
    """The finished cells whose run was scored (an outcome with a verdict)."""
    if "correct" not in results:
        return results.iloc[0:0]
    done = results[results["status"] == "finished"]
    return done[pd.to_numeric(done["correct"], errors="coerce").notna()]


def _total(group: pd.DataFrame, columns: Sequence[str]) -> float:
    present = [c for c in columns if c in group]
    if not present:
        return math.nan
    return float(sum(pd.to_numeric(group[c], errors="coerce").fillna(0).sum() for c in present))


def _per(total: float, correct: int) -> float:
    return total / correct if correct and not math.isnan(total) else math.nan


def _accuracy_row(group: pd.DataFrame) -> dict[str, Any]:
    n = len(group)
    right = int(pd.to_numeric(group["correct"], errors="coerce").sum())
    interval = wilson(right, n)
    calls = _total(group, ["calls_needed"])
    tokens = _total(group, ["total_prompt_tokens", "total_completion_tokens"])
    cost = _total(group, ["total_cost_usd"])
    simulated = bool(group["simulated"].fillna(False).astype(bool).any()) \
        if "simulated" in group else False
    notes = []
    if n == 0:
        notes.append("no scored chat finished")
    elif right == 0:
        notes.append("no correct answer: no cost per correct answer")
    if simulated:
        notes.append("simulated: sim/ agents answer with a declared accuracy")
    return {"n": n, "correct": right, "accuracy": interval.estimate, "ci_low": interval.low,
            "ci_high": interval.high, "interval_method": interval.method, "calls": calls,
            "tokens": tokens, "cost_usd": cost, "calls_per_correct": _per(calls, right),
            "tokens_per_correct": _per(tokens, right), "cost_per_correct": _per(cost, right),
            "simulated": simulated, "note": "; ".join(notes)}


def accuracy_table(results: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Accuracy (Wilson 95 %), calls, tokens and cost in total and per correct answer, one row
    per group of `by` (default: the parameters that vary, e.g. `strategy`), over the scored
    finished chats. Calls are `calls_needed` (what the chats cost on a cold bid cache)."""
    from ._results import varying

    by = list(varying(results) if by is None else by)
    missing = [c for c in by if c not in results]
    if missing:
        raise ConfigError(f"unknown result columns {missing}; columns: {list(results.columns)}")
    scored = scored_chats(results)
    if not by:
        return pd.DataFrame([_accuracy_row(scored)], columns=ACCURACY_COLUMNS)
    rows = []
    keys = results[by].astype(object).drop_duplicates()
    for key in sorted((tuple(r) for r in keys.itertuples(index=False)), key=str):
        mask = pd.Series(True, index=scored.index)
        for column, value in zip(by, key, strict=True):
            column_values = scored[column].astype(object)
            mask &= column_values.isna() if _missing(value) else column_values == value
        rows.append({**dict(zip(by, key, strict=True)), **_accuracy_row(scored[mask])})
    return pd.DataFrame(rows, columns=[*by, *ACCURACY_COLUMNS])


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@dataclass(frozen=True)
class Correlation:
    """Pearson's r of two per-chat values with its interval, or why there is none."""

    r: float
    low: float
    high: float
    n: int
    method: str
    note: str = ""

    def text(self, x: str, y: str) -> str:
        """One line for a chart's caption."""
        if math.isnan(self.r):
            return f"No correlation of {x} with {y}: {self.note}."
        interval = ("" if math.isnan(self.low) else
                    f", {CONFIDENCE:.0%} interval [{self.low:.2f}, {self.high:.2f}]")
        return (f"r = {self.r:.2f} between {x} and {y} over {self.n} chats{interval} "
                f"({self.method})" + (f"; {self.note}" if self.note else "") + ".")


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if sxx <= 1e-15 or syy <= 1e-15:
        return math.nan
    return max(-1.0, min(1.0, float(dx @ dy) / math.sqrt(sxx * syy)))


def _cluster_interval(x: np.ndarray, y: np.ndarray, clusters: Sequence[Any],
                      seed: int) -> tuple[float, float]:
    """Percentile interval of r over resampled clusters (tasks), all chats of a task kept."""
    codes, uniques = pd.factorize(pd.Series(list(clusters), dtype=object))
    members = [np.flatnonzero(codes == i) for i in range(len(uniques))]
    rng = np.random.default_rng(seed)
    rs = []
    for _ in range(CLUSTER_RESAMPLES):
        rows = np.concatenate([members[i] for i in rng.integers(0, len(members), len(members))])
        r = _pearson(x[rows], y[rows])
        if not math.isnan(r):
            rs.append(r)
    alpha = 1 - CONFIDENCE
    low, high = np.quantile(np.asarray(rs), [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def correlation(x: Sequence[float], y: Sequence[float], clusters: Sequence[Any] | None = None,
                *, min_chats: int = MIN_CHATS, seed: int = CLUSTER_SEED) -> Correlation:
    """Pearson's r; its interval by a cluster bootstrap over `clusters` (tasks) when given
    (MIN_TASKS+ of them), else Fisher's z (independent chats). No r below `min_chats` chats
    or when either side does not vary."""
    keep = [i for i, (a, b) in enumerate(zip(x, y, strict=True))
            if not (math.isnan(float(a)) or math.isnan(float(b)))]
    xs = np.asarray([float(x[i]) for i in keep])
    ys = np.asarray([float(y[i]) for i in keep])
    n = len(keep)
    method = "Pearson, Fisher z interval" if clusters is None else "Pearson"
    if n < max(3, min_chats):
        return Correlation(math.nan, math.nan, math.nan, n, method,
                           f"{n} chat(s) with both values; no r below {max(3, min_chats)}")
    r = _pearson(xs, ys)
    if math.isnan(r):
        which = "equality" if float(np.ptp(xs)) <= 1e-15 else "the outcome"
        return Correlation(math.nan, math.nan, math.nan, n, method,
                           f"{which} takes one value over all {n} chats")
    if clusters is not None:
        groups = [clusters[i] for i in keep]
        tasks = len(set(groups))
        if tasks < MIN_TASKS:
            return Correlation(r, math.nan, math.nan, n, method,
                               f"no interval: the {n} chats come from {tasks} task(s), and "
                               f"chats of one task are not independent; an interval needs "
                               f"{MIN_TASKS}+ tasks")
        low, high = _cluster_interval(xs, ys, groups, seed)
        return Correlation(r, low, high, n, f"Pearson, cluster bootstrap over {tasks} tasks "
                           f"({CLUSTER_RESAMPLES:,} resamples)")
    if n < 4 or abs(r) >= 1.0:
        return Correlation(r, math.nan, math.nan, n, method,
                           "no interval: needs 4+ chats and |r| < 1")
    z, half = math.atanh(r), z_value() / math.sqrt(n - 3)
    return Correlation(r, math.tanh(z - half), math.tanh(z + half), n, method)


def _task_column(points: pd.DataFrame) -> str | None:
    return next((c for c in TASK_COLUMNS if c in points and points[c].notna().all()), None)


def equality_by_strategy(points: pd.DataFrame, equality: str,
                         outcome: str) -> dict[str, Correlation]:
    """r per strategy over `equality_outcome`'s points, clustered by task."""
    task = _task_column(points)
    out: dict[str, Correlation] = {}
    for strategy, part in points.groupby("strategy", sort=True):
        out[str(strategy)] = correlation(list(part[equality]), list(part[outcome]),
                                         None if task is None else list(part[task]))
    return out


def equality_outcome(results: pd.DataFrame, equality: str = "gini",
                     outcome: str = "correct") -> tuple[pd.DataFrame, Correlation]:
    """Per scored finished chat its turn-taking equality and outcome (the chart's points), and
    their correlation, clustered by task. Gini 0: every agent spoke equally often; evenness 1:
    the same. Several strategies: no pooled r; the note gives r per strategy."""
    if equality not in EQUALITY_METRICS:
        raise ConfigError(f"equality must be one of {list(EQUALITY_METRICS)}, got {equality!r}")
    if outcome not in OUTCOME_VALUES:
        raise ConfigError(f"outcome must be one of {list(OUTCOME_VALUES)}, got {outcome!r}")
    scored = scored_chats(results)
    keep = [c for c in ("cell", "run_id", "strategy", *TASK_COLUMNS, "simulated")
            if c in scored]
    points = scored[keep].copy()
    points[equality] = pd.to_numeric(scored[equality], errors="coerce") \
        if equality in scored else math.nan
    points[outcome] = pd.to_numeric(scored[outcome], errors="coerce") \
        if outcome in scored else math.nan
    points = points.dropna(subset=[equality, outcome]).reset_index(drop=True)
    if "strategy" in points and points["strategy"].nunique(dropna=True) > 1:
        each = equality_by_strategy(points, equality, outcome)
        lines = "; ".join(f"{name}: {_short(c)}" for name, c in each.items())
        return points, Correlation(math.nan, math.nan, math.nan, len(points), "Pearson",
                                   f"not pooled across {len(each)} strategies (each sets "
                                   f"turn-taking its own way); per strategy: {lines}")
    task = _task_column(points)
    return points, correlation(list(points[equality]), list(points[outcome]),
                               None if task is None else list(points[task]))


def _short(c: Correlation) -> str:
    if math.isnan(c.r):
        return f"no r ({c.note})"
    interval = "" if math.isnan(c.low) else f" [{c.low:.2f}, {c.high:.2f}]"
    return f"r = {c.r:.2f}{interval} over {c.n} chats" + (f" ({c.note})" if c.note else "")


def runs_outcomes(store: RunStore, run_ids: Sequence[str] | None = None) -> pd.DataFrame:
    """Stored scored runs (all, or `run_ids`) as rows `accuracy_table` and `equality_outcome`
    read: status, correct (0/1), score, calls_needed (calls made plus cached calls), tokens,
    cost, simulated, Gini and evenness of turns (over the run's agents, silent ones too), and
    the run's name, so Analysis asks the sweeps' questions of runs from anywhere."""
    from ..analysis._metrics import agent_orders, speaker_metrics_by_run
    from ..providers._sim import run_is_simulated

    runs = store.list_runs()
    if run_ids is not None:
        runs = runs[runs["run_id"].isin(set(run_ids))]
    runs = runs[runs["scorer"].notna()].reset_index(drop=True)
    columns = ["run_id", "name", "status", "scorer", "correct", "score", "calls_needed",
               "total_prompt_tokens", "total_completion_tokens", "total_cost_usd",
               "simulated", "gini", "evenness"]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    ids = list(runs["run_id"])
    hits = store.cache_stats(ids).set_index("run_id")["cached_calls"].to_dict()
    turns = store.turns(ids)
    bids = store.bids(ids)
    metrics = speaker_metrics_by_run(turns, agent_orders(bids), {})
    gini = {str(run_id): m.gini for run_id, m in metrics.items()}
    evenness = {str(run_id): m.evenness for run_id, m in metrics.items()}
    out = runs.assign(
        correct=[math.nan if c is None or c != c else float(bool(c)) for c in runs["correct"]],
        calls_needed=[int(c or 0) + int(hits.get(i, 0)) for c, i in
                      zip(runs["total_calls"], ids, strict=True)],
        simulated=[run_is_simulated(m if isinstance(m, list | tuple) else [])
                   for m in runs["models"]],
        gini=[_number(gini.get(i)) for i in ids],
        evenness=[_number(evenness.get(i)) for i in ids])
    return out[columns]


def _number(value: float | None) -> float:
    return math.nan if value is None else float(value)
