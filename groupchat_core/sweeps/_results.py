"""Sweep results as DataFrames: one row per cell, aggregates with confidence intervals.

Why here and not in the dashboard: the Sweeps page, the CLI and notebooks ask the same
questions ("how does the lull turn move with the threshold?"), so the frames are pure data and
the page only charts them. Everything is read from the store, so results of a sweep still
running, stopped by a budget cap or resumed later read the same way.

Confidence intervals fit each metric (_natures.py, _intervals.py): Wilson for the lull rate,
a seeded studentized bootstrap for every other metric, cut to its feasible range (counts by the
group's max_loops, Gini and entropy by its agents); `interval_method` names the one used on every
row and `note` says when there is no interval ("no variation in 5 repeats") or when n is below
the repeats from which the interval covers (docs/statistics.md).

Model calls come three ways, counted once from the recorded bids (`call_counts`, which the
CLI's last line, `sweep show`, the Sweeps page and the exports all read): `calls_made` (what was
sent; `total_calls` is the same number), `calls_cached` (calls the bid cache answered,
`Bid.cached_calls`, so bid_then_speak's cached written call counts too) and `calls_needed`
(their sum: what the chat costs on a cold cache). Only `calls_needed` measures the parameters;
importance leaves the cache metrics out.
Parameter importance and two-cell comparisons are in _importance.py and _compare.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._errors import ConfigError
from .._statuses import RunStatus
from ..analysis._distractors import distractor_turns
from ..analysis._metrics import speaker_metrics_by_run
from ..providers._sim import cell_is_simulated
from . import _space
from ._natures import feasible_range, metric_interval, min_n
from ._plan import stored_spec
from ._spec import Cell, SweepSpec, any_simulated, cell_models

if TYPE_CHECKING:
    from ..store import RunStore

NUMERIC_PARAMS = ("threshold", "recency_penalty", "recency_window", "max_loops")
LABEL_PARAMS = ("model", "temperature", "strategy", "bid_prompt", "order", "roster",
                "agent_models", "sample", "history", "speaker_names", "show_bids", "show_tally")
PARAM_COLUMNS = [*NUMERIC_PARAMS, *LABEL_PARAMS]
METRICS = ("messages", "turns", "lull_turn", "lulled", "entropy_bits", "evenness", "gini",
           "longest_monologue", "calls_needed", "calls_made", "hit_rate", "total_cost_usd")
AGGREGATE_COLUMNS = ["metric", "n", "mean", "std", "sem", "ci_low", "ci_high", "range_low",
                     "range_high", "interval_method", "coverage_from_n", "note"]
# A sweep over tasks with answers (docs/outcomes.md) adds these: correct (accuracy, Wilson)
# and score (the judge's, or 1/0), aggregated like the rest.
OUTCOME_METRICS = ("correct", "score")
OUTCOME_COLUMNS = ["task_id", "answer", "correct", "score", "scorer"]
_PREFERENCE: dict[RunStatus, int] = {
    "finished": 0, "error": 1, "cancelled": 2, "interrupted": 3, "running": 4}


def _cell_row(spec: SweepSpec, cell: Cell) -> dict[str, Any]:
    row: dict[str, Any] = {"cell": cell.key, "index": cell.index, "task_index": cell.task_index,
                           "task": spec.tasks[cell.task_index], "repeat": cell.repeat,
                           "seed": spec.base.seed + cell.repeat}
    for name in NUMERIC_PARAMS:
        row[name] = cell.params.get(name, getattr(spec.base, name))
    for name in LABEL_PARAMS:
        value = cell.params.get(name)
        row[name] = None if value is None else _space.label(name, value)
    names = spec.cell_agents(cell)
    row["agents"] = len(names)
    models = cell_models(spec, cell)
    row["models"] = "; ".join(f"{n}={models[n]}" for n in names)
    row["simulated"] = cell_is_simulated([models[n] for n in names])
    row["sample_seed"] = spec.base.seed if spec.sample_seed is None else spec.sample_seed
    return row


def _chosen_runs(store: RunStore, sweep_id: str) -> pd.DataFrame:
    """Per cell, the run that speaks for it: finished first, then the latest."""
    runs: pd.DataFrame = store.list_runs(sweep_id=sweep_id)
    runs = runs[runs["cell"].notna()].copy()
    runs["_rank"] = runs["status"].map(_PREFERENCE).fillna(9)
    runs = runs.sort_values(["_rank", "started_at"], ascending=[True, False])
    return runs.drop_duplicates("cell").drop(columns="_rank")


def _duration(start: Any, end: Any) -> float | None:
    if not isinstance(start, str) or not isinstance(end, str):
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _metrics(store: RunStore, runs: pd.DataFrame, agents: dict[str, list[str]],
             distractors: Sequence[str] = ()) -> pd.DataFrame:
    """Speaker metrics per run from one read of the turns of every run; `agents` maps a cell
    key to its chat's agents (a roster's evenness is over its own agents, not the base's).
    With `distractors` (the base's), `distractor_turns`: their posted turns in the run."""
    turns = store.turns(list(runs["run_id"]))
    stops = dict(zip(runs["run_id"], runs["stop_reason"], strict=True))
    cells = dict(zip(runs["run_id"], runs["cell"], strict=True))
    rows = []
    named = {run_id: agents.get(cell, []) for run_id, cell in cells.items()}
    by_run = speaker_metrics_by_run(turns, named, stops)
    groups = dict(tuple(turns.groupby("run_id", sort=False))) if distractors else {}
    for run_id, m in by_run.items():
        names = named.get(run_id, [])
        rows.append({"run_id": run_id, "messages": m.messages_posted, "lull_turn": m.lull_turn,
                     "lulled": float(m.lull_turn is not None), "entropy_bits": m.entropy_bits,
                     "evenness": m.evenness, "gini": m.gini,
                     "longest_monologue": m.longest_monologue,
                     "penalty_changed_winner": m.penalty_changed_winner,
                     "mean_margin": m.mean_margin})
        if distractors:
            held = distractor_turns(groups[run_id], [n for n in distractors if n in names])
            rows[-1]["distractor_turns"] = sum(d.turns for d in held)
    return pd.DataFrame(rows, columns=["run_id", "messages", "lull_turn", "lulled",
                                       "entropy_bits", "evenness", "gini",
                                       "longest_monologue", "penalty_changed_winner",
                                       "mean_margin",
                                       *(["distractor_turns"] if distractors else [])])


def sweep_results(store: RunStore, sweep_id: str) -> pd.DataFrame:
    """One row per cell (in cell order): its parameters, task, repeat and seed, and its run:
    status ("pending" before it ran), stop reason, messages, turns, lull turn, speaker balance
    (entropy, evenness, Gini), bids, cache hits and hit rate, calls, tokens, cost, duration."""
    sweep_id, spec = stored_spec(store, sweep_id)
    every = list(spec.cells())
    cells = pd.DataFrame([_cell_row(spec, c) for c in every])
    runs = _chosen_runs(store, sweep_id)
    keep = ["cell", "run_id", "status", "stop_reason", "turns", "total_calls",
            "total_prompt_tokens", "total_completion_tokens", "total_cost_usd", "started_at",
            "ended_at", "error", *OUTCOME_COLUMNS]
    frame = cells.merge(runs[keep], on="cell", how="left")
    frame["status"] = frame["status"].fillna("pending")
    agents = {c.key: spec.cell_agents(c) for c in every}
    chosen = runs[runs["run_id"].notna()]
    distractors = spec.base.distractors
    frame = frame.merge(_metrics(store, chosen, agents, distractors), on="run_id", how="left")
    if distractors:  # issue 43.4: only sweeps that declare distractors get these columns
        frame["distractors"] = [", ".join(n for n in distractors if n in agents[c])
                                for c in frame["cell"]]
        frame["distractor_turns"] = frame["distractor_turns"].astype("Int64")
    stats = store.cache_stats(list(chosen["run_id"]))[["run_id", "bids", "cache_hits",
                                                         "calls", "cached_calls", "hit_rate"]]
    frame = frame.merge(stats, on="run_id", how="left")
    frame["duration_s"] = [_duration(s, e) for s, e in zip(frame["started_at"],
                                                          frame["ended_at"], strict=True)]
    for column in ("lull_turn", "messages", "turns", "bids", "cache_hits", "total_calls"):
        frame[column] = frame[column].astype("Int64")
    # Calls from the bids, as call_counts counts them (a run's row could disagree: one closed
    # without the engine's end); a cell with a run but no bid made no call.
    has_run = frame["run_id"].notna()
    made = frame.pop("calls").fillna(0).astype("Int64").where(has_run)
    cached = frame.pop("cached_calls").fillna(0).astype("Int64").where(has_run)  # a row: 2
    frame["total_calls"] = frame["calls_made"] = made
    frame["calls_cached"] = cached
    frame["calls_needed"] = made + cached
    frame["correct"] = [None if c is None or c != c else float(bool(c))
                        for c in frame["correct"]]  # a rate's 0/1 (NaN: no outcome)
    frame["correct"] = pd.to_numeric(frame["correct"], errors="coerce")
    return frame


def metrics_of(results: pd.DataFrame) -> tuple[str, ...]:
    """The metrics these results have: METRICS, plus OUTCOME_METRICS for scored tasks."""
    scored = "scorer" in results and results["scorer"].notna().any()
    return (*METRICS, *OUTCOME_METRICS) if scored else METRICS


def varying(results: pd.DataFrame) -> list[str]:
    """The parameter columns (and task) that take more than one value in these results. The
    tasks of a task set (scored tasks) are a sample of questions, not a parameter: accuracy
    is over them, so they are not grouped by (docs/outcomes.md)."""
    scored = "scorer" in results and results["scorer"].notna().any()
    candidates = [*PARAM_COLUMNS, *([] if scored else ["task_index"])]
    return [c for c in candidates if c in results and results[c].nunique(dropna=True) > 1]


def aggregate(results: pd.DataFrame, by: Sequence[str] | None = None,
              metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Mean, std, n and a 95 % interval per group and metric, over finished cells.

    Long format, one row per (group, metric): `by` columns, metric, n, mean, std, sem,
    ci_low, ci_high, range_low, range_high (the metric's feasible range in the group),
    interval_method (wilson, bootstrap-t, `bootstrap-t, cut to range`: see _natures.py),
    coverage_from_n and note (no interval and why, or a warning below coverage_from_n).
    `by` defaults to the parameters that vary in the sweep. A metric's n counts the cells
    where it is defined (e.g. lull_turn only for chats that lulled).
    """
    by = list(by) if by is not None else varying(results)
    metrics = metrics_of(results) if metrics is None else metrics
    done = results[results["status"] == "finished"]
    missing = [c for c in [*by, *metrics] if c not in results]
    if missing:
        raise ConfigError(f"unknown result columns {missing}; columns: {list(results.columns)}")
    rows: list[dict[str, Any]] = []
    limits = [c for c in ("max_loops", "agents") if c in done]
    # numbers once for the whole frame, not once per group (sweeps of thousands of groups)
    columns = [c for c in dict.fromkeys([*metrics, *limits]) if c not in by]
    numbers = pd.DataFrame({c: pd.to_numeric(done[c], errors="coerce").astype(float)
                            for c in columns}, index=done.index)
    keyed = pd.concat([done[by], numbers], axis=1) if by else numbers
    groups = keyed.groupby(by, sort=True, dropna=False) if by else [((), keyed)]
    for key, group in groups:
        labels = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        largest = {c: _largest(pd.to_numeric(group[c], errors="coerce")) if c in limits
                   else None for c in ("max_loops", "agents")}
        for metric in metrics:
            values = pd.to_numeric(group[metric], errors="coerce").dropna().astype(float) \
                if metric in by else group[metric].dropna()
            row = {**labels, "metric": metric, **_interval(metric, values, **largest)}
            row["note"] = _defined_note(metric, len(values), len(group), row["note"])
            rows.append(row)
    return pd.DataFrame(rows, columns=[*by, *AGGREGATE_COLUMNS])


def _defined_note(metric: str, defined: int, chats: int, note: str) -> str:
    """Say over which chats a metric defined only for some (lull_turn: the chats that lulled)
    was taken: 'no repeats' for 100 chats none of which lulled misled."""
    if defined == chats:
        return note
    if metric == "lull_turn":
        if defined == 0:
            return f"none of the {chats} chats lulled"
        said = f"over the {defined} of {chats} chats that lulled"
    else:
        if defined == 0:
            return f"not defined in any of the {chats} chats"
        said = f"over the {defined} of {chats} chats where it is defined"
    return f"{said}; {note}" if note else said


def _largest(values: pd.Series) -> float | None:
    finite = values.dropna()
    return float(finite.max()) if len(finite) else None


def _interval(metric: str, values: pd.Series, *, max_loops: float | None,
              agents: float | None) -> dict[str, Any]:
    n = len(values)
    interval = metric_interval(metric, list(values), max_loops=max_loops, agents=agents)
    low, high = feasible_range(metric, max_loops=max_loops, agents=agents)
    std = float(values.std(ddof=1)) if n >= 2 else math.nan
    return {"n": n, "mean": interval.estimate, "std": std,
            "sem": std / math.sqrt(n) if n >= 2 else math.nan,
            "ci_low": interval.low, "ci_high": interval.high,
            "range_low": math.nan if low is None else low,
            "range_high": math.nan if high is None else high,
            "interval_method": interval.method, "coverage_from_n": min_n(metric),
            "note": interval.note}


def heatmap_frame(aggregated: pd.DataFrame, metric: str, x: str = "threshold",
                  y: str = "recency_penalty", value: str = "mean") -> pd.DataFrame:
    """One metric as a y × x matrix (e.g. mean lull turn over threshold × penalty)."""
    part = aggregated[aggregated["metric"] == metric]
    if part.empty:
        raise ConfigError(f"no metric {metric!r} in the aggregate")
    others = [c for c in part.columns[:list(part.columns).index("metric")]
              if c not in (x, y) and part[c].nunique(dropna=False) > 1]
    if others:
        raise ConfigError(f"the aggregate also varies {others}: filter them to one value or "
                         "aggregate by x and y only")
    return part.pivot_table(index=y, columns=x, values=value, aggfunc="first")


@dataclass(frozen=True)
class CallCounts:
    """A sweep's (or some runs') model calls, counted once from the recorded bids."""

    made: int  # calls sent
    cached: int  # calls the bid cache answered (bid_then_speak's row may hold two)
    bids: int
    cache_hits: int  # bids the cache answered
    cost_usd: float  # of the priced calls made

    @property
    def needed(self) -> int:
        """Calls on a cold cache: made plus answered from the cache."""
        return self.made + self.cached

    def text(self) -> str:
        """The one wording every view shows: '6,500 model calls needed, 1,600 made (the
        bid cache answered 4,900)', or '1,600 model calls' when the cache answered none."""
        if not self.cached:
            return f"{self.made:,} model calls"
        return (f"{self.needed:,} model calls needed, {self.made:,} made (the bid cache "
                f"answered {self.cached:,})")


def call_counts(store: RunStore, sweep_id: str | None = None,
                run_ids: Sequence[str] | None = None) -> CallCounts:
    """Model calls made, cached and needed over a sweep's runs (or `run_ids`), from the bids:
    the one count behind the CLI's last line, `sweep show`, the page and the exports."""
    stats = store.cache_stats(run_ids, sweep_id=sweep_id)
    return CallCounts(made=int(stats["calls"].sum()), cached=int(stats["cached_calls"].sum()),
                      bids=int(stats["bids"].sum()), cache_hits=int(stats["cache_hits"].sum()),
                      cost_usd=float(stats["cost_usd"].sum()))


def sweep_summary(store: RunStore, sweep_id: str) -> dict[str, Any]:
    """The sweep's row plus totals: cells, runs, bids, cache hits and hit rate, calls made,
    cached and needed (call_counts), cost."""
    from ._plan import finished_cells

    row = store.get_sweep(sweep_id)
    sweep_id = row["sweep_id"]
    _, spec = stored_spec(store, sweep_id)
    counts = call_counts(store, sweep_id)
    bids, hits = counts.bids, counts.cache_hits
    keys = {c.key for c in spec.cells()}
    return {
        **{k: row[k] for k in ("sweep_id", "name", "status", "reason", "created_at",
                               "ended_at", "owner", "owner_name")},
        "cells_total": len(keys),
        "cells_done": len(keys & set(finished_cells(store, sweep_id))),
        "runs": int(len(store.list_runs(sweep_id=sweep_id))), "bids": bids,
        "cache_hits": hits, "hit_rate": hits / bids if bids else None,
        "calls": counts.made, "calls_cached": counts.cached, "calls_needed": counts.needed,
        "cost_usd": counts.cost_usd,
        "axes": list(spec.axes()),
        "simulated": any_simulated(spec),
    }
