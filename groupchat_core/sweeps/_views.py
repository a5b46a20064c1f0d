"""The numbers behind the Sweeps page's exploring views: top-k %, log axes, interval bands by
any parameters, the configurations that differ, a config x seed matrix with deltas to a
baseline, bid stability across seeds, and failed bids grouped by reason.

Why here: the page only draws; these are pure functions of the results frame
(`sweep_results`) and the bids frame (`RunStore.bids`), so the CLI, notebooks and tests ask the
same questions and get the same answers. Bands use `aggregate`, whose intervals stay inside each
metric's feasible range (_intervals.py, _natures.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._errors import ConfigError
from ._results import PARAM_COLUMNS, aggregate

# What tells cells apart besides their parameters: not a configuration, the seed's repeat.
SEED_COLUMNS = ("task_index", "task", "repeat", "seed")
CONFIG_COLUMNS = (*PARAM_COLUMNS, "models", "agents")
FAILURE_REASONS = ("unreadable", "provider error", "timeout")
_TIMEOUT_WORDS = ("timeout", "timed out")


def log_axis(values: Sequence[Any] | pd.Series) -> bool:
    """Whether a log axis fits these values: all finite and positive, at least 3 distinct, and
    spanning at least a factor of 10 (0.001, 0.01, 0.1: yes; 0.3, 0.5, 0.7: no)."""
    numbers = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce")
    if numbers.isna().any() or numbers.empty:
        return False
    finite = [float(v) for v in numbers if math.isfinite(float(v))]
    if len(finite) != len(numbers) or min(finite) <= 0 or len(set(finite)) < 3:
        return False
    return max(finite) / min(finite) >= 10


def top_k(results: pd.DataFrame, metric: str, percent: float, *,
          highest: bool = True) -> pd.DataFrame:
    """The finished cells whose `metric` is in the best `percent` % (at least one cell; ties at
    the cut are kept), best first. `highest=False`: the lowest values are best."""
    if not 0 < percent <= 100:
        raise ConfigError(f"top-k percent must be in (0, 100], got {percent}")
    if metric not in results:
        raise ConfigError(f"unknown metric {metric!r}; columns: {list(results.columns)}")
    done = results[results["status"] == "finished"].copy()
    done["_value"] = pd.to_numeric(done[metric], errors="coerce").astype(float)
    done = done[done["_value"].notna()]
    if done.empty:
        return done.drop(columns="_value")
    keep = max(1, math.ceil(len(done) * percent / 100))
    ordered = done.sort_values("_value", ascending=not highest, kind="stable")
    cut = ordered["_value"].iloc[keep - 1]
    chosen = ordered[ordered["_value"] >= cut] if highest else ordered[ordered["_value"] <= cut]
    out: pd.DataFrame = chosen.drop(columns="_value")
    return out


def config_label(row: pd.Series | dict[str, Any], columns: Sequence[str]) -> str:
    """A configuration's short name from its values ('threshold 0.4 · recency_penalty 0')."""
    return " · ".join(f"{c} {_value_text(row[c])}" for c in columns) or "all cells"


def _value_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{value:g}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def group_bands(results: pd.DataFrame, by: Sequence[str], metric: str) -> pd.DataFrame:
    """Seeds collapsed into interval bands: mean and 95 % interval of `metric` per value of
    `by[0]`, one band per combination of the other `by` columns (column `band`). The interval
    is `aggregate`'s (within the metric's feasible range; NaN with a note when the repeats do
    not vary)."""
    if not by:
        raise ConfigError("group by needs at least one parameter")
    table = aggregate(results, by=list(by), metrics=[metric])
    table = table[table["n"] > 0].copy()
    rest = list(by[1:])
    table["band"] = [config_label(r, rest) for _, r in table.iterrows()] if rest \
        else "all cells"
    return table.reset_index(drop=True)


def config_columns(results: pd.DataFrame) -> list[str]:
    """The configuration columns (parameters, models) present in the results."""
    return [c for c in CONFIG_COLUMNS if c in results]


def differing(results: pd.DataFrame, *, only_differs: bool = True) -> pd.DataFrame:
    """One row per distinct configuration (seeds and tasks collapsed, `cells` counts them),
    with only the columns whose values differ between configurations when `only_differs`."""
    columns = config_columns(results)
    if results.empty or not columns:
        return pd.DataFrame(columns=[*columns, "cells"])
    configs = results[columns].astype(object)
    configs = configs.where(configs.notna(), None)
    keys = ["\x1f".join(map(str, row)) for row in configs.itertuples(index=False, name=None)]
    sizes = Counter(keys)
    first = ~pd.Series(keys, index=configs.index).duplicated()
    table = configs.loc[first].reset_index(drop=True)
    table["cells"] = [sizes[k] for k, keep in zip(keys, first, strict=True) if keep]
    if only_differs:
        keep = [c for c in columns if table[c].astype(str).nunique() > 1]
        table = table[[*keep, "cells"]]
    return table


def run_matrix(results: pd.DataFrame, metric: str, baseline: str | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Configurations (columns) x seeds (rows: task and repeat) of `metric`, and each column's
    delta to the baseline column on the same seed (the first configuration by default).
    Returns (values, deltas, baseline label); only configurations that differ name columns."""
    if metric not in results:
        raise ConfigError(f"unknown metric {metric!r}; columns: {list(results.columns)}")
    done = results[results["status"] == "finished"].copy()
    columns = [c for c in config_columns(done) if done[c].astype(str).nunique() > 1]
    done["config"] = [config_label(r, columns) for _, r in done.iterrows()]
    seeds = [c for c in ("task_index", "repeat") if c in done]
    done["seed_row"] = [" · ".join(f"{c.replace('_index', '')} {r[c]}" for c in seeds)
                        for _, r in done.iterrows()] if seeds else "all"
    done["_value"] = pd.to_numeric(done[metric], errors="coerce").astype(float)
    values = done.pivot_table(index="seed_row", columns="config", values="_value",
                              aggfunc="mean", sort=False)
    if values.empty:
        return values, values, baseline or ""
    base = baseline if baseline is not None and baseline in values.columns \
        else str(values.columns[0])
    deltas = values.sub(values[base], axis=0)
    return values, deltas, base


def bid_stability(bids: pd.DataFrame, results: pd.DataFrame,
                  by: Sequence[str] | None = None) -> pd.DataFrame:
    """How much each agent's bid varies across seeds for the same setting: per setting (`by`,
    default the parameters that differ) and agent, each seed's mean score (over its turns),
    then across seeds: n seeds, mean, std (sample), min, max and range. Failed bids (no reply)
    are left out; unreadable ones count as the 0.0 they were scored."""
    done = results[(results["status"] == "finished") & results["run_id"].notna()]
    if by is None:
        by = [c for c in config_columns(done) if done[c].astype(str).nunique() > 1]
    columns = [*by, "agent", "seeds", "mean_bid", "std_bid", "min_bid", "max_bid", "range"]
    if bids.empty or done.empty:
        return pd.DataFrame(columns=columns)
    usable = bids[bids["outcome"] != "failed"] if "outcome" in bids else bids
    per_seed = (usable.groupby(["run_id", "agent"], sort=False)["score"].mean()
                .rename("seed_mean").reset_index())
    keyed = per_seed.merge(done[["run_id", *by]], on="run_id", how="inner")
    if keyed.empty:
        return pd.DataFrame(columns=columns)
    keys = [*by, "agent"]
    stats: pd.DataFrame = keyed.groupby(keys, sort=True, dropna=False)["seed_mean"].agg(
        seeds="count", mean_bid="mean", std_bid="std", min_bid="min",
        max_bid="max").reset_index()
    stats["range"] = stats["max_bid"] - stats["min_bid"]
    ordered: pd.DataFrame = stats[columns].sort_values(
        [*by, "std_bid"], ascending=[*[True] * len(by), False], na_position="last")
    return ordered.reset_index(drop=True)


def failure_reason(outcome: str, error: str | None) -> str | None:
    """A bid's failure reason from `Bid.outcome` (the field that says what became of it):
    'unreadable' (a reply with no readable score), 'timeout' or 'provider error' (the call gave
    no reply: a timeout when its error names one); None for a bid that was read."""
    if outcome == "unreadable":
        return "unreadable"
    if outcome != "failed":
        return None
    text = (error or "").lower()
    return "timeout" if any(w in text for w in _TIMEOUT_WORDS) else "provider error"


def failures(bids: pd.DataFrame, results: pd.DataFrame | None = None) -> pd.DataFrame:
    """Failed bids grouped by reason (FAILURE_REASONS order): how many bids, in how many runs,
    by which agents, and one error text as an example. With `results`, the runs are a sweep's
    cells and `cells` counts them."""
    columns = ["reason", "bids", "runs", "agents", "example"]
    if bids.empty:
        return pd.DataFrame(columns=columns)
    frame = bids.copy()
    frame["reason"] = [failure_reason(o, e) for o, e in zip(bids["outcome"], bids["error"],
                                                             strict=True)]
    frame = frame[frame["reason"].notna()]
    if results is not None and "run_id" in results:
        frame = frame[frame["run_id"].isin(set(results["run_id"].dropna()))]
    rows = []
    for reason in FAILURE_REASONS:
        part = frame[frame["reason"] == reason]
        if part.empty:
            continue
        errors = [e for e in part["error"] if isinstance(e, str) and e]
        rows.append({"reason": reason, "bids": len(part), "runs": part["run_id"].nunique(),
                     "agents": ", ".join(sorted(set(map(str, part["agent"])))),
                     "example": errors[0][:200] if errors else ""})
    return pd.DataFrame(rows, columns=columns)
