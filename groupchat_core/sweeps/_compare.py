"""Two cells of a sweep compared on one metric: an effect size and a permutation test.

Why these: repeats of a cell are few (often 3 to 10) and the metrics are not normal (rates are
0/1, balance metrics are bounded), so the test is a permutation test on the difference in means,
exact (every split of the pooled values) when there are at most EXACT_SPLITS splits, else
PERMUTATIONS seeded random ones (fewer, down to 999, for cells of thousands of chats).
Effect sizes: for a rate, the difference in proportions with Newcombe's hybrid score interval
(from the two Wilson intervals, so it stays in [-1, 1]); for the other metrics Cliff's delta
(share of pairs where B beats A minus the reverse; no assumption on the distribution) and, for
counts, Cohen's d (difference over the pooled standard deviation).

Paired when the cells share seeds (issue 21): two cells of one sweep run repeat r with the same
seed (base seed + r) on the same task, so when both cells hold exactly the same (task, seed) keys
the test is a sign-flip permutation test on the per-seed differences (exact over the 2^n flips up
to EXACT_SPLITS, else seeded random flips); with n pairs its smallest two-sided p is 2/2^n.
Effect sizes carry intervals: Cohen's d by the Hedges-Olkin normal approximation, Cliff's delta by
Feng and Cliff's asymmetric interval from Cliff's consistent variance (inside [-1, 1]); when the
two samples are fully separated (delta = ±1) or a side has fewer than 2 values there is no
interval and the note says so. `compare_metrics` compares two cells on several metrics and adjusts
the p-values across them (Holm and Benjamini-Hochberg, _multiple.py); `compare_pairs` compares
every pair of cells on one metric and adjusts across the pairs, so browsing cells (the Compare
tab) cannot find "a difference" in most null sweeps (issue 38: 78 % of null 8-cell sweeps had a
pair at raw p < 0.05). Cache metrics (calls made, hit rate, cost) are shown, never tested.

"Too few repeats" is defined, not guessed: with n_a and n_b values the smallest p-value an exact
permutation test can reach is 1/C(n_a+n_b, n_a) (2/C when n_a == n_b, since the mirrored split is
as extreme). When that is above ALPHA, or a side has fewer than 2 values, no outcome could be
significant: the comparison says so instead of reporting a p-value (3 vs 3 repeats: 2/20 = 0.1).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._errors import ConfigError
from ._intervals import CONFIDENCE, wilson, z_value
from ._multiple import benjamini_hochberg, holm
from ._natures import CACHE_METRICS, nature_of

ALPHA = 0.05
EXACT_SPLITS = 20_000
PERMUTATIONS = 9_999
MIN_PERMUTATIONS = 999  # for cells of over WORK / PERMUTATIONS chats: fewer shuffles
WORK = 20_000_000  # shuffled values per test, at most (but MIN_PERMUTATIONS)
SEED = 20260101
MAX_PAIRS = 45  # all pairs of up to 10 cells: 9,999 shuffles keep Holm's floor under ALPHA/10
NOT_TESTED = ("cache metric: shown, not tested (it measures what earlier cells left in the bid "
              "cache, not the parameters)")


@dataclass(frozen=True)
class Comparison:
    """B against A on one metric (differences are B - A)."""

    metric: str
    nature: str
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    difference: float
    difference_low: float | None  # Newcombe interval, rates only
    difference_high: float | None
    cliffs_delta: float | None
    cohens_d: float | None
    p_value: float | None  # None when repeats are too few to say anything
    test: str
    enough: bool
    note: str
    paired: bool = False
    cliffs_low: float | None = None
    cliffs_high: float | None = None
    cohens_low: float | None = None
    cohens_high: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def min_attainable_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value an exact permutation test on n_a vs n_b values can give."""
    if n_a < 1 or n_b < 1:
        return 1.0
    return min(1.0, (2 if n_a == n_b else 1) / math.comb(n_a + n_b, n_a))


def too_few(n_a: int, n_b: int, alpha: float = ALPHA) -> str | None:
    """Why n_a vs n_b values cannot support a conclusion at `alpha`, or None if they can."""
    if min(n_a, n_b) < 2:
        return (f"too few repeats to say anything: {n_a} vs {n_b} finished chats (each side "
                "needs at least 2)")
    smallest = min_attainable_p(n_a, n_b)
    if smallest > alpha:
        return (f"too few repeats to say anything: with {n_a} vs {n_b} chats no permutation "
                f"test can reach p < {alpha:g} (the smallest possible p is {smallest:.3g}); "
                "add repeats (4 vs 4 suffices)")
    return None


def cliffs_delta(a: Sequence[float], b: Sequence[float]) -> float | None:
    """P(B > A) - P(B < A) over all pairs; in [-1, 1]; None if a side is empty. Values equal
    up to rounding (1e-9 relative) tie: the same evenness summed in another order is a tie."""
    if not a or not b:
        return None
    x, y = np.sort(np.asarray(a, dtype=float)), np.asarray(b, dtype=float)
    tolerance = 1e-9 * max(1.0, float(np.abs(x).max()), float(np.abs(y).max()))
    # sorted A: per B value, how many A values lie clearly below / above it (n log n, so
    # cells of 50,000 chats each do not build a 2.5-billion-pair matrix)
    greater = int(np.searchsorted(x, y - tolerance, side="left").sum())
    less = int((len(x) - np.searchsorted(x, y + tolerance, side="right")).sum())
    return (greater - less) / (len(x) * len(y))


def cohens_d(a: Sequence[float], b: Sequence[float]) -> float | None:
    """(mean B - mean A) / pooled standard deviation; None if undefined (n < 2 or no spread)."""
    n_a, n_b = len(a), len(b)
    if n_a < 2 or n_b < 2:
        return None
    va, vb = float(np.var(a, ddof=1)), float(np.var(b, ddof=1))
    pooled = math.sqrt(((n_a - 1) * va + (n_b - 1) * vb) / (n_a + n_b - 2))
    if pooled == 0:
        return None
    return (float(np.mean(b)) - float(np.mean(a))) / pooled


def permutation_test(a: Sequence[float], b: Sequence[float], *, seed: int = SEED,
                     permutations: int = PERMUTATIONS) -> tuple[float, str]:
    """Two-sided p-value for the difference in means; exact when the splits are few."""
    pooled = np.asarray([*a, *b], dtype=float)
    n_a, total = len(a), len(a) + len(b)
    observed = abs(float(np.mean(b)) - float(np.mean(a)))
    tolerance = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    whole = float(pooled.sum())
    splits = math.comb(total, n_a)
    if splits <= EXACT_SPLITS:
        sums_a = np.fromiter((pooled[list(idx)].sum()
                              for idx in itertools.combinations(range(total), n_a)),
                             dtype=float, count=splits)
        diffs = np.abs((whole - sums_a) / (total - n_a) - sums_a / n_a)
        return float((diffs >= observed - tolerance).sum() / splits), \
            f"exact permutation test ({splits:,} splits)"
    permutations = max(MIN_PERMUTATIONS, min(permutations, WORK // total))
    rng = np.random.default_rng(seed)
    hits = 0
    per = max(1, 2_000_000 // total)  # chunks of 16 MB at most, however big the cells
    for start in range(0, permutations, per):
        rows = min(per, permutations - start)
        shuffled = rng.permuted(np.broadcast_to(pooled, (rows, total)), axis=1)
        sums_a = shuffled[:, :n_a].sum(axis=1)
        diffs = np.abs((whole - sums_a) / (total - n_a) - sums_a / n_a)
        hits += int((diffs >= observed - tolerance).sum())
    return (hits + 1) / (permutations + 1), \
        f"permutation test ({permutations:,} seeded random splits)"


def too_few_pairs(pairs: int, alpha: float = ALPHA) -> str | None:
    """Why n pairs cannot support a conclusion at `alpha` (sign-flip test), or None."""
    smallest = 1.0 if pairs < 1 else min(1.0, 2 / 2 ** pairs)
    if pairs < 2 or smallest > alpha:
        return (f"too few repeats to say anything: with {pairs} paired chats (shared seeds) no "
                f"sign-flip test can reach p < {alpha:g} (the smallest possible p is "
                f"{smallest:.3g}); add repeats (6 pairs suffice)")
    return None


def paired_test(a: Sequence[float], b: Sequence[float], *, seed: int = SEED,
                permutations: int = PERMUTATIONS) -> tuple[float, str]:
    """Two-sided sign-flip permutation p for the mean of the paired differences b - a."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(diffs)
    observed = abs(float(diffs.mean()))
    tolerance = 1e-12 * max(1.0, float(np.abs(diffs).max()))
    if 2 ** n <= EXACT_SPLITS:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        means = np.abs(signs @ diffs / n)
        return float((means >= observed - tolerance).sum() / len(signs)), \
            f"exact sign-flip test, paired by seed ({len(signs):,} flips)"
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(permutations, n))
    hits = int((np.abs(signs @ diffs / n) >= observed - tolerance).sum())
    return (hits + 1) / (permutations + 1), \
        f"sign-flip test, paired by seed ({permutations:,} seeded random flips)"


def cohens_d_interval(d: float | None, n_a: int, n_b: int,
                      confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """Hedges and Olkin's normal-approximation interval of Cohen's d."""
    if d is None or n_a < 2 or n_b < 2:
        return None, None
    se = math.sqrt((n_a + n_b) / (n_a * n_b) + d * d / (2 * (n_a + n_b)))
    z = z_value(confidence)
    return d - z * se, d + z * se


def cliffs_delta_interval(a: Sequence[float], b: Sequence[float],
                          confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """Feng and Cliff's (2004) asymmetric interval for Cliff's delta (B against A), from
    Cliff's (1993) consistent variance; None when undefined (a side < 2, delta = ±1)."""
    n_a, n_b = len(a), len(b)
    if n_a < 2 or n_b < 2:
        return None, None
    x, y = np.asarray(a, dtype=float)[:, None], np.asarray(b, dtype=float)[None, :]
    dom = np.sign(y - x)  # d_ij: +1 where B beats A
    d = float(dom.mean())
    if abs(d) >= 1.0:
        return None, None
    rows, cols = dom.mean(axis=1), dom.mean(axis=0)
    var = ((n_b ** 2) * float(((rows - d) ** 2).sum()) + (n_a ** 2) * float(((cols - d) ** 2)
           .sum()) - float(((dom - d) ** 2).sum())) / (n_a * n_b * (n_a - 1) * (n_b - 1))
    var = max(var, (1 - d * d) / (n_a * n_b - 1))  # Cliff's floor for the variance
    z = z_value(confidence)
    s = math.sqrt(var)
    root = z * s * math.sqrt((1 - d * d) ** 2 + z * z * var)
    denom = 1 - d * d + z * z * var
    low = (d - d ** 3 - root) / denom
    high = (d - d ** 3 + root) / denom
    return max(-1.0, low), min(1.0, high)


def _newcombe(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Newcombe's hybrid score interval for p_b - p_a (method 10), from Wilson intervals."""
    wa = wilson(sum(1 for v in a if v), len(a))
    wb = wilson(sum(1 for v in b if v), len(b))
    d = wb.estimate - wa.estimate
    low = d - math.sqrt((wb.estimate - wb.low) ** 2 + (wa.high - wa.estimate) ** 2)
    high = d + math.sqrt((wb.high - wb.estimate) ** 2 + (wa.estimate - wa.low) ** 2)
    return max(-1.0, low), min(1.0, high)


def compare_values(a: Sequence[float], b: Sequence[float], metric: str, *,
                   seed: int = SEED, paired: bool = False) -> Comparison:
    """Compare two samples of `metric` (B against A); `paired`: a[i] and b[i] share a seed."""
    a, b = [float(v) for v in a], [float(v) for v in b]
    if paired and len(a) != len(b):
        raise ConfigError(f"paired samples need as many values on each side, got {len(a)} "
                          f"and {len(b)}")
    nature = nature_of(metric).nature
    mean_a = float(np.mean(a)) if a else math.nan
    mean_b = float(np.mean(b)) if b else math.nan
    low = high = None
    if nature == "proportion" and a and b:
        low, high = _newcombe(a, b)
    reason = too_few_pairs(len(a)) if paired else too_few(len(a), len(b))
    if metric in CACHE_METRICS:
        reason = NOT_TESTED
    if reason:
        p_value, test = None, "none"
    elif paired:
        p_value, test = paired_test(a, b, seed=seed)
    else:
        p_value, test = permutation_test(a, b, seed=seed)
    if reason:
        note = reason
    else:
        assert p_value is not None
        verdict = "a difference" if p_value < ALPHA else "no clear difference"
        note = f"{verdict} at the 5% level (p = {p_value:.3g}, {test})"
    delta = None if nature == "proportion" else cliffs_delta(a, b)
    d = cohens_d(a, b) if nature == "count" else None
    delta_low, delta_high = (None, None) if delta is None else cliffs_delta_interval(a, b)
    if delta is not None and abs(delta) >= 1.0 and a and b:
        note += (f"; Cliff's delta {delta:+.0f}: the {len(a)} and {len(b)} values do not overlap, "
                 "so it has no interval")
    elif delta is not None and min(len(a), len(b)) < 2:
        note += "; effect sizes need 2+ values a side for an interval"
    d_low, d_high = cohens_d_interval(d, len(a), len(b))
    return Comparison(
        metric=metric, nature=nature, n_a=len(a), n_b=len(b), mean_a=mean_a, mean_b=mean_b,
        difference=mean_b - mean_a, difference_low=low, difference_high=high,
        cliffs_delta=delta, cohens_d=d, p_value=p_value, test=test, enough=reason is None,
        note=note, paired=paired, cliffs_low=delta_low, cliffs_high=delta_high,
        cohens_low=d_low, cohens_high=d_high)


def _cell_rows(results: pd.DataFrame, where: Mapping[str, Any], metric: str) -> pd.DataFrame:
    if metric not in results:
        raise ConfigError(f"unknown metric {metric!r}; metrics are the result columns such as "
                          "messages, lulled, evenness, calls_needed")
    unknown = [c for c in where if c not in results]
    if unknown:
        raise ConfigError(f"unknown result columns {unknown}; pick cells by parameter columns "
                          f"such as {[c for c in ('threshold', 'order') if c in results]}")
    rows = results[results["status"] == "finished"]
    for column, value in where.items():
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        rows = rows[rows[column].isna()] if missing else rows[rows[column] == value]
    values = pd.to_numeric(rows[metric], errors="coerce")
    return rows[values.notna()].assign(_value=values[values.notna()].astype(float))


def cell_values(results: pd.DataFrame, where: Mapping[str, Any], metric: str) -> list[float]:
    """The finished chats' values of `metric` in the cell picked by `where` (column: value)."""
    return [float(v) for v in _cell_rows(results, where, metric)["_value"]]


def _pairs(rows_a: pd.DataFrame, rows_b: pd.DataFrame) -> tuple[list[float], list[float]] | None:
    """The two cells' values matched by (task, seed), when both hold exactly the same keys."""
    keys = [c for c in ("task_index", "seed") if c in rows_a and c in rows_b]
    if "seed" not in keys or rows_a.empty:
        return None
    ka = rows_a.set_index(keys)["_value"]
    kb = rows_b.set_index(keys)["_value"]
    if not (ka.index.is_unique and kb.index.is_unique) or set(ka.index) != set(kb.index):
        return None
    kb = kb.loc[ka.index]
    return [float(v) for v in ka], [float(v) for v in kb]


def compare_cells(results: pd.DataFrame, a: Mapping[str, Any], b: Mapping[str, Any],
                  metric: str, *, seed: int = SEED, paired: bool | None = None) -> Comparison:
    """Compare cell B with cell A (each picked by parameter values, over its repeats and the
    tasks it spans) on `metric`, from `sweep_results`. Paired by seed when both cells hold the
    same (task, seed) keys (`paired=None`, the default); `paired=False` forces the unpaired
    test."""
    rows_a, rows_b = _cell_rows(results, a, metric), _cell_rows(results, b, metric)
    matched = _pairs(rows_a, rows_b) if paired is not False else None
    if paired and matched is None:
        raise ConfigError("the two cells do not share their seeds (the same task and repeat "
                          "on both sides): compare them unpaired")
    if matched is not None:
        return compare_values(*matched, metric, seed=seed, paired=True)
    return compare_values(list(rows_a["_value"]), list(rows_b["_value"]), metric, seed=seed)


def compare_metrics(results: pd.DataFrame, a: Mapping[str, Any], b: Mapping[str, Any],
                    metrics: Sequence[str], *, seed: int = SEED) -> pd.DataFrame:
    """Cell B against cell A on each metric, one row each, with the p-values adjusted across
    the metrics: `p_holm` (shown by the pages) and `p_bh`. Cache metrics are shown with no p
    and stay out of the family (issue 38: byte-identical cells gave calls_made p_holm 0.01)."""
    rows = [compare_cells(results, a, b, m, seed=seed).as_dict() for m in metrics]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["p_holm"] = holm(list(frame["p_value"]))
        frame["p_bh"] = benjamini_hochberg(list(frame["p_value"]))
    return frame


def _cells(results: pd.DataFrame, by: Sequence[str]) -> list[dict[str, Any]]:
    done = results[results["status"] == "finished"]
    unique = done[list(by)].astype(object).drop_duplicates()
    combos = sorted((tuple(r) for r in unique.itertuples(index=False)), key=str)
    return [dict(zip(by, c, strict=True)) for c in combos]


def compare_pairs(results: pd.DataFrame, by: Sequence[str], metric: str, *,
                  seed: int = SEED) -> pd.DataFrame:
    """Every pair of the cells that `by` tells apart, compared on `metric` (B against A, A the
    earlier cell), with `p_holm` and `p_bh` adjusted across all the pairs: the family a reader
    browses. More than MAX_PAIRS pairs raise: correct across fewer cells (fewer axes)."""
    cells = _cells(results, by)
    pairs = list(itertools.combinations(range(len(cells)), 2))
    if len(pairs) > MAX_PAIRS:
        raise ConfigError(f"{len(cells)} cells make {len(pairs)} pairs: comparing with a "
                          f"correction across them is limited to {MAX_PAIRS} pairs (10 cells); "
                          "tell the cells apart by fewer axes")
    rows = []
    for i, j in pairs:
        result = compare_cells(results, cells[i], cells[j], metric, seed=seed).as_dict()
        rows.append({"a": i, "b": j, **result})
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["p_holm"] = holm(list(frame["p_value"]))
        frame["p_bh"] = benjamini_hochberg(list(frame["p_value"]))
    return frame
