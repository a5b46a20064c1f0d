"""Two cells of a sweep compared on one metric: an effect size and a permutation test.

Why these: repeats of a cell are few (often 3 to 10) and the metrics are not normal (rates are
0/1, balance metrics are bounded), so the test is a permutation test on the difference in means,
exact (every split of the pooled values) when there are at most EXACT_SPLITS splits, else
PERMUTATIONS seeded random ones (fewer, down to 999, for cells of thousands of chats).
Effect sizes: for a rate, the difference in proportions with Newcombe's hybrid score interval
(from the two Wilson intervals, so it stays in [-1, 1]); for the other metrics Cliff's delta
(share of pairs where B beats A minus the reverse; no assumption on the distribution) and, for
counts, Cohen's d (difference over the pooled standard deviation).

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
from ._intervals import wilson
from ._natures import nature_of

ALPHA = 0.05
EXACT_SPLITS = 20_000
PERMUTATIONS = 9_999
MIN_PERMUTATIONS = 999  # for cells of over WORK / PERMUTATIONS chats: fewer shuffles
WORK = 20_000_000  # shuffled values per test, at most (but MIN_PERMUTATIONS)
SEED = 20260101


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


def _newcombe(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Newcombe's hybrid score interval for p_b - p_a (method 10), from Wilson intervals."""
    wa = wilson(sum(1 for v in a if v), len(a))
    wb = wilson(sum(1 for v in b if v), len(b))
    d = wb.estimate - wa.estimate
    low = d - math.sqrt((wb.estimate - wb.low) ** 2 + (wa.high - wa.estimate) ** 2)
    high = d + math.sqrt((wb.high - wb.estimate) ** 2 + (wa.estimate - wa.low) ** 2)
    return max(-1.0, low), min(1.0, high)


def compare_values(a: Sequence[float], b: Sequence[float], metric: str, *,
                   seed: int = SEED) -> Comparison:
    """Compare two samples of `metric` (B against A)."""
    a, b = [float(v) for v in a], [float(v) for v in b]
    nature = nature_of(metric).nature
    mean_a = float(np.mean(a)) if a else math.nan
    mean_b = float(np.mean(b)) if b else math.nan
    low = high = None
    if nature == "proportion" and a and b:
        low, high = _newcombe(a, b)
    reason = too_few(len(a), len(b))
    p_value, test = (None, "none") if reason else permutation_test(a, b, seed=seed)
    if reason:
        note = reason
    else:
        assert p_value is not None
        verdict = "a difference" if p_value < ALPHA else "no clear difference"
        note = f"{verdict} at the 5% level (p = {p_value:.3g}, {test})"
    return Comparison(
        metric=metric, nature=nature, n_a=len(a), n_b=len(b), mean_a=mean_a, mean_b=mean_b,
        difference=mean_b - mean_a, difference_low=low, difference_high=high,
        cliffs_delta=None if nature == "proportion" else cliffs_delta(a, b),
        cohens_d=cohens_d(a, b) if nature == "count" else None,
        p_value=p_value, test=test, enough=reason is None, note=note)


def cell_values(results: pd.DataFrame, where: Mapping[str, Any], metric: str) -> list[float]:
    """The finished chats' values of `metric` in the cell picked by `where` (column: value)."""
    unknown = [c for c in [*where, metric] if c not in results]
    if unknown:
        raise ConfigError(f"unknown result columns {unknown}; pick cells by parameter columns "
                          f"such as {[c for c in ('threshold', 'order') if c in results]}")
    rows = results[results["status"] == "finished"]
    for column, value in where.items():
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        rows = rows[rows[column].isna()] if missing else rows[rows[column] == value]
    values = pd.to_numeric(rows[metric], errors="coerce").dropna()
    return [float(v) for v in values]


def compare_cells(results: pd.DataFrame, a: Mapping[str, Any], b: Mapping[str, Any],
                  metric: str, *, seed: int = SEED) -> Comparison:
    """Compare cell B with cell A (each picked by parameter values, over its repeats and the
    tasks it spans) on `metric`, from `sweep_results`."""
    return compare_values(cell_values(results, a, metric), cell_values(results, b, metric),
                          metric, seed=seed)
