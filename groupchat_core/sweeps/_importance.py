"""Parameter importance: which swept parameter moves each outcome most.

Method (a one-way variance decomposition per parameter, over finished chats):
- eta squared = SS_between / SS_total: the share of the metric's variance explained by the
  parameter's levels (0 nothing, 1 everything). In a balanced full grid the parameters' eta
  squared add up to at most 1 (main effects; the rest is interactions and noise).
- omega squared = (SS_between - (k-1)·MS_within) / (SS_total + MS_within): eta squared corrected
  for the number of levels k (a parameter with many levels, such as 720 orders, explains some
  variance by chance alone); it ranks the parameters and can be slightly negative (nothing).
- p: a seeded permutation test of eta squared (values shuffled across levels; 999 shuffles, fewer
  down to 199 over 20,000 chats), so a parameter whose effect is indistinguishable from noise is
  marked as such.
Numeric parameters with more than MAX_LEVELS distinct values (random search) are cut into
MAX_LEVELS quantile bins first. The random-sample index is not a parameter.

Too few to say anything (defined and tested): a parameter needs at least 2 levels with at least
MIN_PER_LEVEL finished chats each, and more chats than levels; otherwise the row says so and
carries no figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._results import METRICS, varying

MAX_LEVELS = 5
MIN_PER_LEVEL = 2
PERMUTATIONS = 999
MIN_PERMUTATIONS = 199  # over WORK / PERMUTATIONS chats, fewer shuffles (p to 0.005)
WORK = 20_000_000  # shuffled values per parameter and metric, at most (but MIN_PERMUTATIONS)
SEED = 20260101
COLUMNS = ["metric", "parameter", "levels", "n", "eta_squared", "omega_squared", "p_value",
           "enough", "note"]
NOT_FACTORS = ("sample",)


def _levels(column: pd.Series) -> tuple[np.ndarray, int, str]:
    """Integer codes per row, the number of levels, and a note on binning."""
    numeric = pd.to_numeric(column, errors="coerce")
    if numeric.notna().all() and column.nunique() > MAX_LEVELS:
        bins = pd.qcut(numeric, MAX_LEVELS, duplicates="drop")
        codes, uniques = pd.factorize(bins, sort=True)
        return codes, len(uniques), f"binned into {len(uniques)} quantile bins"
    codes, uniques = pd.factorize(column.astype(str), sort=True)
    return codes, len(uniques), ""


def _ss_between(values: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """SS_between for each row of `values` (rows: permutations), vectorised with bincount."""
    rows, n = values.shape
    counts = np.bincount(codes, minlength=k).astype(float)
    offset = (codes[None, :] + k * np.arange(rows)[:, None]).ravel()
    sums = np.bincount(offset, weights=values.ravel(), minlength=rows * k).reshape(rows, k)
    grand = values.sum(axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / counts, 0.0)
    between: np.ndarray = ((means - grand[:, None]) ** 2 * counts[None, :]).sum(axis=1)
    return between


def _chunks(permutations: int, n: int, cells: int = 2_000_000) -> list[int]:
    """Permutations in chunks of at most `cells` values (16 MB of floats) each."""
    per = max(1, cells // max(1, n))
    return [min(per, permutations - i) for i in range(0, permutations, per)]


def factor_importance(values: Sequence[float], levels: pd.Series, *, seed: int = SEED,
                      permutations: int = PERMUTATIONS) -> dict[str, object]:
    """Eta squared, omega squared and a permutation p-value of one parameter on one metric."""
    y = np.asarray(values, dtype=float)
    codes, k, note = _levels(levels.reset_index(drop=True))
    n = len(y)
    counts = np.bincount(codes, minlength=k) if n else np.zeros(0, dtype=int)
    out: dict[str, object] = {"levels": k, "n": n, "eta_squared": None, "omega_squared": None,
                              "p_value": None, "enough": False}
    if k < 2 or n <= k or int(counts.min()) < MIN_PER_LEVEL:
        out["note"] = (f"too few to say anything: {n} finished chats over {k} level(s); "
                       f"needs 2+ levels with {MIN_PER_LEVEL}+ chats each")
        return out
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        out.update(enough=True, eta_squared=0.0, omega_squared=0.0, p_value=1.0,
                   note="the metric did not vary")
        return out
    between = float(_ss_between(y[None, :], codes, k)[0])
    within_ms = (total - between) / (n - k)
    permutations = max(MIN_PERMUTATIONS, min(permutations, WORK // n))
    rng = np.random.default_rng(seed)
    hits = 0
    for rows in _chunks(permutations, n):  # bounded memory for sweeps of 100,000 cells
        shuffled = rng.permuted(np.broadcast_to(y, (rows, n)), axis=1)
        hits += int((_ss_between(shuffled, codes, k) >= between - 1e-12 * total).sum())
    p_value = (hits + 1) / (permutations + 1)
    out.update(enough=True, eta_squared=between / total,
               omega_squared=(between - (k - 1) * within_ms) / (total + within_ms),
               p_value=p_value, note=note)
    return out


def importance(results: pd.DataFrame, parameters: Sequence[str] | None = None,
               metrics: Sequence[str] = METRICS, *, seed: int = SEED,
               permutations: int = PERMUTATIONS) -> pd.DataFrame:
    """One row per (metric, parameter), most important first within each metric (by omega
    squared). `parameters` defaults to those that vary in the sweep (task included)."""
    params = [p for p in (parameters if parameters is not None else varying(results))
              if p not in NOT_FACTORS]
    done = results[results["status"] == "finished"] if "status" in results else results
    rows = []
    for metric in metrics:
        values = pd.to_numeric(done[metric], errors="coerce")
        keep = values.notna()
        for param in params:
            stats = factor_importance(values[keep].astype(float).tolist(),
                                      done.loc[keep, param], seed=seed,
                                      permutations=permutations)
            rows.append({"metric": metric, "parameter": param, **stats})
    frame = pd.DataFrame(rows, columns=COLUMNS)
    if frame.empty:
        return frame
    frame["_metric"] = frame["metric"].map({m: i for i, m in enumerate(metrics)})
    frame["_rank"] = pd.to_numeric(frame["omega_squared"], errors="coerce").fillna(-np.inf)
    frame = frame.sort_values(["_metric", "_rank"], ascending=[True, False], kind="stable")
    return frame.drop(columns=["_metric", "_rank"]).reset_index(drop=True)
