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
- p_holm, p_bh: the permutation p adjusted across every row of the table (Holm: family-wise
  error; Benjamini-Hochberg: false discovery rate; _multiple.py). The page shows Holm.
A grid axis keeps every level (a 6-level threshold grid is 6 groups). Only a numeric parameter
whose values are too spread to form groups (fewer than 2 values hold MIN_PER_LEVEL chats, as in
random search, where every draw is new) is cut into MAX_LEVELS quantile bins. The random-sample
index is not a parameter. The cache metrics (calls made, hit rate, cost) are left out by
default: they measure what earlier cells left in the bid cache, not the parameters.

Too few to say anything (defined and tested): levels with fewer than MIN_PER_LEVEL finished
chats are left out (the note says how many); at least 2 levels must remain. Otherwise the row
says exactly that and carries no figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._errors import ConfigError
from ._multiple import benjamini_hochberg, holm
from ._natures import CACHE_METRICS
from ._results import METRICS, varying

MAX_LEVELS = 5
MIN_PER_LEVEL = 2
PERMUTATIONS = 999
MIN_PERMUTATIONS = 199  # over WORK / PERMUTATIONS chats, fewer shuffles (p to 0.005)
WORK = 20_000_000  # shuffled values per parameter and metric, at most (but MIN_PERMUTATIONS)
SEED = 20260101
COLUMNS = ["metric", "parameter", "levels", "n", "eta_squared", "omega_squared", "p_value",
           "p_holm", "p_bh", "enough", "note"]
IMPORTANCE_METRICS = tuple(m for m in METRICS if m not in CACHE_METRICS)
NOT_FACTORS = ("sample",)


def _levels(column: pd.Series) -> tuple[np.ndarray, int, str]:
    """Integer codes per row, the number of levels, and a note on binning. Only values too
    spread to form groups (random search) are binned; grid levels are kept as they are."""
    numeric = pd.to_numeric(column, errors="coerce")
    codes, uniques = pd.factorize(column.astype(str), sort=True)
    counts = np.bincount(codes, minlength=len(uniques)) if len(codes) else np.zeros(0)
    spread = int((counts >= MIN_PER_LEVEL).sum()) < 2
    if numeric.notna().all() and len(uniques) > MAX_LEVELS and spread:
        bins = pd.qcut(numeric, MAX_LEVELS, duplicates="drop")
        codes, uniques = pd.factorize(bins, sort=True)
        return codes, len(uniques), f"values too spread to group: {len(uniques)} quantile bins"
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
    counts = np.bincount(codes, minlength=k) if len(y) else np.zeros(0, dtype=int)
    usable = counts >= MIN_PER_LEVEL
    out: dict[str, object] = {"levels": k, "n": len(y), "eta_squared": None,
                              "omega_squared": None, "p_value": None, "enough": False}
    if int(usable.sum()) < 2:
        out["note"] = (f"too few to say anything: needs 2+ levels with {MIN_PER_LEVEL}+ "
                       f"finished chats each; {int(usable.sum())} of {k} level(s) have that "
                       f"({len(y)} chats)")
        return out
    if not usable.all():
        dropped = int((~usable).sum())
        keep = usable[codes]
        y = y[keep]
        remap = np.cumsum(usable) - 1
        codes = remap[codes[keep]]
        k = int(usable.sum())
        note = "; ".join(filter(None, [note, f"left out {dropped} level(s) with fewer than "
                                             f"{MIN_PER_LEVEL} chats"]))
    n = len(y)
    out.update(levels=k, n=n)
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        out.update(enough=True, eta_squared=0.0, omega_squared=0.0, p_value=1.0,
                   note=f"no variation in {n} chats: nothing to explain")
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
               metrics: Sequence[str] = IMPORTANCE_METRICS, *, seed: int = SEED,
               permutations: int = PERMUTATIONS) -> pd.DataFrame:
    """One row per (metric, parameter), most important first within each metric (by omega
    squared). `parameters` defaults to those that vary in the sweep (task included); `metrics`
    to every metric but the cache's (CACHE_METRICS). p_holm and p_bh adjust across all rows."""
    params = [p for p in (parameters if parameters is not None else varying(results))
              if p not in NOT_FACTORS]
    unknown = [c for c in [*metrics, *params] if c not in results]
    if unknown:
        raise ConfigError(f"unknown result columns {unknown}: metrics are "
                          f"{', '.join(METRICS)}; parameters are the swept ones")
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
    frame["p_holm"] = holm(list(frame["p_value"]))
    frame["p_bh"] = benjamini_hochberg(list(frame["p_value"]))
    frame["_metric"] = frame["metric"].map({m: i for i, m in enumerate(metrics)})
    frame["_rank"] = pd.to_numeric(frame["omega_squared"], errors="coerce").fillna(-np.inf)
    frame = frame.sort_values(["_metric", "_rank"], ascending=[True, False], kind="stable")
    return frame.drop(columns=["_metric", "_rank"]).reset_index(drop=True)
