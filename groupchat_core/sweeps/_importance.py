"""Parameter importance: which swept parameter moves each outcome most.

Method, per (metric, parameter), over finished chats:
- A grid axis (its values kept as groups: a 6-level threshold grid is 6 groups): a one-way
  variance decomposition. eta squared = SS_between / SS_total, the share of the metric's
  variance its levels explain; omega squared = (SS_between - (k-1)·MS_within) / (SS_total +
  MS_within), corrected for the number of levels k (it ranks the rows; slightly negative:
  nothing); p from the one-way ANOVA F test (`test`: "ANOVA F").
- A continuous axis (random search draws every value anew, so each value is one sample's
  repeats, and every drawn axis grouped by its values would be grouped by the same samples and
  get the same eta squared, issue 38): Spearman's rank correlation rho with its t-approximation
  p (`test`: "Spearman rank correlation"); `rho` carries it, and eta and omega squared carry
  rho^2 (the share of the rank variance a monotone trend explains) so the rows rank together.
- p (issue 38): 999 shuffles floored p at 0.001, so Holm over m rows could not go below
  m/1000 and a 54-row table could reject nothing. Now the permutation test (of eta squared,
  or of rho) gets FAMILY_SHUFFLES x m shuffles for a family of m tested rows (at least
  MIN_PERMUTATIONS), so Holm's floor m/(B+1) stays under alpha/10 (0.005). Where n x B would
  exceed WORK shuffled values (sweeps of thousands of chats), the analytic p (F test; t
  approximation for rho; _pvalues.py) is used instead, where its large-sample approximation
  holds; `test` says which, and `p_analytic` is always given as a cross-check (on tied,
  skewed counts the F p can fall below 0.05 where the shuffled one does not, hence the
  shuffles; tests/sweeps/test_sweep_false_calls.py).
- p_holm, p_bh: p adjusted across every tested row of the table (Holm: family-wise error;
  Benjamini-Hochberg: false discovery rate; _multiple.py). The page shows Holm.
The random-sample index is not a parameter. The cache metrics (calls made, hit rate, cost)
measure what earlier cells left in the bid cache, not the parameters: left out by default, and
when asked for they are shown but not tested (no p, outside the Holm family).

Too few to say anything (defined and tested): levels with fewer than MIN_PER_LEVEL finished
chats are left out (the note says how many); at least 2 levels must remain. Otherwise the row
says exactly that and carries no figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from .._errors import ConfigError
from ._multiple import benjamini_hochberg, holm
from ._natures import CACHE_METRICS
from ._pvalues import anova_p, spearman
from ._results import METRICS, varying

MAX_LEVELS = 5
MIN_PER_LEVEL = 2
PERMUTATIONS = 9_999  # a single test's shuffles (factor_importance alone)
MIN_PERMUTATIONS = 999
FAMILY_SHUFFLES = 200  # shuffles per tested row of the family: Holm's floor < 0.05 / 10
WORK = 50_000_000  # shuffled values per parameter and metric, at most; past it, analytic p
SEED = 20260101
ANOVA = "ANOVA F"
SPEARMAN = "Spearman rank correlation"
COLUMNS = ["metric", "parameter", "levels", "n", "eta_squared", "omega_squared", "p_value",
           "p_holm", "p_bh", "enough", "note", "test", "rho", "p_analytic"]
IMPORTANCE_METRICS = tuple(m for m in METRICS if m not in CACHE_METRICS)
NOT_FACTORS = ("sample",)


def is_continuous(column: pd.Series, random_search: bool = False) -> bool:
    """A numeric axis drawn anew per sample (random search), or too spread to form groups
    (fewer than 2 values hold MIN_PER_LEVEL chats): tested by rank correlation, not groups."""
    numeric = pd.to_numeric(column, errors="coerce")
    if not numeric.notna().all() or numeric.nunique() <= MAX_LEVELS:
        return False
    counts = numeric.value_counts()
    return random_search or int((counts >= MIN_PER_LEVEL).sum()) < 2


def _codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes per row (grid levels kept as they are) and the number of levels."""
    codes, uniques = pd.factorize(column.astype(str), sort=True)
    return codes, len(uniques)


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


def _permutation_p(y: np.ndarray, statistic: float,
                   shuffled_stat: Callable[[np.ndarray], np.ndarray], seed: int,
                   permutations: int) -> float:
    """A seeded permutation p of `statistic` (larger statistics are more extreme)."""
    n = len(y)
    rng = np.random.default_rng(seed)
    hits = 0
    for rows in _chunks(permutations, n):  # bounded memory for sweeps of 100,000 cells
        shuffled = rng.permuted(np.broadcast_to(y, (rows, n)), axis=1)
        hits += int((shuffled_stat(shuffled) >= statistic - 1e-12 * max(1.0, statistic)).sum())
    return (hits + 1) / (permutations + 1)


def _continuous(y: np.ndarray, x: np.ndarray, out: dict[str, object], *, seed: int,
                permutations: int) -> dict[str, object]:
    """Spearman's rho of the metric on a continuous axis, its p, and rho^2 as the effect."""
    rho, p_value = spearman(x.tolist(), y.tolist())
    out.update(levels=int(pd.Series(x).nunique()), n=len(y), test=SPEARMAN)
    if len(y) < 4:
        out["note"] = f"too few to say anything: {len(y)} chats (a rank correlation needs 4+)"
        return out
    if math.isnan(rho):
        out.update(enough=True, eta_squared=0.0, omega_squared=0.0, rho=None, p_value=1.0,
                   note=f"no variation in {len(y)} chats: nothing to explain")
        return out
    out.update(enough=True, eta_squared=rho * rho, omega_squared=rho * rho, rho=rho,
               p_value=p_value, p_analytic=p_value,
               note="continuous axis: rank correlation (rho^2 as eta^2)",
               test=f"{SPEARMAN}, t approximation")
    if _shuffle(permutations, len(y)):
        rx = pd.Series(x).rank().to_numpy()
        ry = pd.Series(y).rank().to_numpy()
        dx = rx - rx.mean()
        out.update(test=f"{SPEARMAN}, permutation p ({permutations:,} shuffles)",
                   p_value=_permutation_p(
                       ry, abs(float(dx @ (ry - ry.mean()))),
                       lambda rows: np.abs((rows - rows.mean(axis=1, keepdims=True)) @ dx),
                       seed, permutations))
    return out


def _shuffle(permutations: int, n: int) -> bool:
    """Whether the permutation p is affordable (else the analytic p stands)."""
    return permutations > 0 and permutations * n <= WORK


def factor_importance(values: Sequence[float], levels: pd.Series, *, seed: int = SEED,
                      permutations: int = PERMUTATIONS,
                      continuous: bool | None = None) -> dict[str, object]:
    """Eta squared, omega squared and a permutation p of one parameter on one metric (a
    continuous axis: Spearman's rho; see the module docstring), with the analytic p beside it
    (p_analytic); past WORK shuffled values the analytic p is the p."""
    y = np.asarray(values, dtype=float)
    column = levels.reset_index(drop=True)
    out: dict[str, object] = {"levels": 0, "n": len(y), "eta_squared": None,
                              "omega_squared": None, "p_value": None, "enough": False,
                              "note": "", "test": ANOVA, "rho": None, "p_analytic": None}
    if continuous if continuous is not None else is_continuous(column):
        x = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
        return _continuous(y, x, out, seed=seed, permutations=permutations)
    codes, k = _codes(column)
    counts = np.bincount(codes, minlength=k) if len(y) else np.zeros(0, dtype=int)
    usable = counts >= MIN_PER_LEVEL
    out["levels"] = k
    if int(usable.sum()) < 2:
        out["note"] = (f"too few to say anything: needs 2+ levels with {MIN_PER_LEVEL}+ "
                       f"finished chats each; {int(usable.sum())} of {k} level(s) have that "
                       f"({len(y)} chats)")
        return out
    note = ""
    if not usable.all():
        dropped = int((~usable).sum())
        keep = usable[codes]
        y = y[keep]
        codes = (np.cumsum(usable) - 1)[codes[keep]]
        k = int(usable.sum())
        note = f"left out {dropped} level(s) with fewer than {MIN_PER_LEVEL} chats"
    n = len(y)
    out.update(levels=k, n=n)
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        out.update(enough=True, eta_squared=0.0, omega_squared=0.0, p_value=1.0,
                   note=f"no variation in {n} chats: nothing to explain")
        return out
    between = float(_ss_between(y[None, :], codes, k)[0])
    within_ms = (total - between) / (n - k) if n > k else math.nan
    analytic = anova_p(between, total, n, k)
    out.update(enough=True, eta_squared=between / total,
               omega_squared=(between - (k - 1) * within_ms) / (total + within_ms),
               p_value=analytic, p_analytic=analytic, note=note, test=f"{ANOVA}, analytic p")
    if _shuffle(permutations, n):
        out.update(test=f"{ANOVA}, permutation p ({permutations:,} shuffles)",
                   p_value=_permutation_p(y, between,
                                          lambda rows: _ss_between(rows, codes, k), seed,
                                          permutations))
    return out


def importance(results: pd.DataFrame, parameters: Sequence[str] | None = None,
               metrics: Sequence[str] = IMPORTANCE_METRICS, *, seed: int = SEED,
               permutations: int | None = None) -> pd.DataFrame:
    """One row per (metric, parameter), most important first within each metric (by omega
    squared). `parameters` defaults to those that vary in the sweep (task included); `metrics`
    to every metric but the cache's (CACHE_METRICS; asked for, they get no p). p_holm and p_bh
    adjust across all tested rows. `permutations` defaults to FAMILY_SHUFFLES per tested row
    (at least MIN_PERMUTATIONS), so Holm can reject however many rows the table has."""
    params = [p for p in (parameters if parameters is not None else varying(results))
              if p not in NOT_FACTORS]
    unknown = [c for c in [*metrics, *params] if c not in results]
    if unknown:
        raise ConfigError(f"unknown result columns {unknown}: metrics are "
                          f"{', '.join(METRICS)}; parameters are the swept ones")
    done = results[results["status"] == "finished"] if "status" in results else results
    random_search = "sample" in done and done["sample"].nunique(dropna=True) > 1
    continuous = {p: is_continuous(done[p], random_search) for p in params}
    tested = sum(1 for m in metrics if m not in CACHE_METRICS) * len(params)
    if permutations is None:
        permutations = max(MIN_PERMUTATIONS, FAMILY_SHUFFLES * tested)
    rows = []
    for metric in metrics:
        values = pd.to_numeric(done[metric], errors="coerce")
        keep = values.notna()
        for param in params:
            stats = factor_importance(values[keep].astype(float).tolist(),
                                      done.loc[keep, param], seed=seed,
                                      permutations=permutations, continuous=continuous[param])
            if metric in CACHE_METRICS and stats["p_value"] is not None:
                stats.update(p_value=None, p_analytic=None, note="; ".join(filter(None, [
                    str(stats["note"]), "cache metric: shown, not tested (it measures what "
                    "earlier cells left in the bid cache)"])))
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
