"""Confidence intervals that respect what a metric can be; no scipy.

Why not one t-interval for everything: a t-interval is symmetric and unbounded, so a lull rate of
3/10 got a negative lower bound, 5/5 got [1, 1] (as if certain), and evenness went past 1. Each
sweep metric has a nature (`MetricNature`, in _natures.py) and an interval to match:

- `wilson`: proportions (the lull rate: lulled chats out of n). Wilson score interval, always
  inside [0, 1] and never of zero width for 0 < n (0/5 gives [0, 0.434], 5/5 [0.566, 1]).
  `clopper_pearson` (exact, wider) is here too, from the binomial tail by bisection.
- `bootstrap`: bounded means (evenness, Gini, entropy, cache hit rate). Percentile bootstrap of the
  mean, seeded (the same data and seed give the same interval): every resampled mean is a mean of
  observed values, so the interval lies within their range and so within the metric's bounds.
- `t`: means of counts and amounts (messages, turns, lull turn, calls, cost): Student t,
  mean ± t(0.975, n−1)·s/√n, its lower end cut at the metric's floor (0) when it reaches past it
  (method then reads `t, cut at 0`).

n < 2 gives no interval (NaN) for `t` and `bootstrap`; Wilson gives one from n = 1.

What sweeps use since issue 21 (`studentized_mean`): the percentile bootstrap under-covers at the
repeat counts sweeps have (0.82 at n = 5 on Beta(2, 5) data, bench/interval_coverage.py), and a
t-interval leaves a count's feasible range. The studentized bootstrap (bootstrap-t) resamples the
t statistic itself, so its interval widens with the skew and the small n, and is then cut to the
metric's feasible range (docs/statistics.md has the coverage table). Since issue 38 a
resample's sd is floored at SD_FLOOR of the sample's: without it, tied values gave resamples
without spread, t* = ±inf, and intervals as wide as the whole feasible range. Values that are
all equal give no interval at all: the note says "no variation in n repeats" and what can
honestly be said (at most `1 - (alpha/2)^(1/n)` of chats could differ, the exact bound for 0
of n), never a zero-width interval that reads as certainty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260101
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
_T95_WIDE = ((120, 1.980), (60, 2.000), (40, 2.021), (30, 2.042))


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided interval and the method that made it."""

    estimate: float
    low: float
    high: float
    method: str
    note: str = ""  # why there is no interval, or what it cannot promise


def z_value(confidence: float = CONFIDENCE) -> float:
    """The two-sided normal critical value (1.959964 for 95 %)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def t95(df: int) -> float:
    """Two-sided 95 % Student-t critical value for `df` degrees of freedom (df >= 1): exact to 3
    decimals for df <= 30, then the next lower tabulated df (errs wide), 1.96 past 1000."""
    if df < 1:
        raise ValueError(f"t95 needs df >= 1, got {df}")
    if df <= len(_T95):
        return _T95[df - 1]
    return next((t for limit, t in _T95_WIDE if df >= limit), 1.96) if df <= 1000 else 1.96


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval for a binomial proportion; inside [0, 1] by construction."""
    _check_counts(successes, n)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, "wilson")
    z = z_value(confidence)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high, "wilson")


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed in log space (no overflow for large n)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp
             + (n - i) * lq for i in range(k + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def _bisect(f: Callable[[float], float], target: float, decreasing: bool) -> float:
    """The p in [0, 1] where f(p) == target, for a monotone f (60 halvings: 1e-18)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        value = f(mid)
        if (value > target) == decreasing:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def clopper_pearson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """The exact (Clopper-Pearson) interval: the p whose binomial tails hold alpha/2 each."""
    _check_counts(successes, n)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, "clopper-pearson")
    alpha = 1 - confidence
    k = successes
    # lower: P(X >= k | p) = alpha/2, i.e. 1 - cdf(k-1) = alpha/2; cdf(k-1) falls as p grows
    low = 0.0 if k == 0 else _bisect(lambda p: _binom_cdf(k - 1, n, p), 1 - alpha / 2, True)
    high = 1.0 if k == n else _bisect(lambda p: _binom_cdf(k, n, p), alpha / 2, True)
    return Interval(k / n, low, high, "clopper-pearson")


def _check_counts(successes: int, n: int) -> None:
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")


def t_interval(values: Sequence[float], floor: float | None = None,
               ceiling: float | None = None) -> Interval:
    """Student-t interval of the mean; an end past `floor`/`ceiling` is cut there (said so in
    the method)."""
    data = [float(v) for v in values]
    n = len(data)
    mean = math.fsum(data) / n if n else math.nan
    if n < 2:
        return Interval(mean, math.nan, math.nan, "t")
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in data) / (n - 1))
    half = t95(n - 1) * sd / math.sqrt(n)
    low, high, method = mean - half, mean + half, "t"
    if floor is not None and low < floor:
        low, method = floor, f"t, cut at {floor:g}"
    if ceiling is not None and high > ceiling:
        high, method = ceiling, (f"{method} and {ceiling:g}" if method != "t"
                                 else f"t, cut at {ceiling:g}")
    return Interval(mean, low, high, method)


def bootstrap_mean(values: Sequence[float], *, seed: int = BOOTSTRAP_SEED,
                   resamples: int = BOOTSTRAP_RESAMPLES,
                   confidence: float = CONFIDENCE) -> Interval:
    """Percentile bootstrap interval of the mean, seeded: reproducible, and never outside the
    range of the values (so never outside the metric's bounds)."""
    data = np.asarray([float(v) for v in values], dtype=float)
    n = len(data)
    mean = float(data.mean()) if n else math.nan
    if n < 2:
        return Interval(mean, math.nan, math.nan, "bootstrap")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    alpha = 1 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    # floating-point sums can stray an ulp past the data: clamp to the observed range
    low = min(max(float(low), float(data.min())), mean)
    high = max(min(float(high), float(data.max())), mean)
    return Interval(mean, low, high, "bootstrap")


STUDENTIZED = "bootstrap-t"
# a resample's sd is floored at this share of the sample's (studentized_mean, chosen by the
# coverage study: 0.1 left intervals 3x the t width on tied data, 0.4 under-covered skewed data)
SD_FLOOR = 0.25


def no_variation_note(value: float, n: int, confidence: float = CONFIDENCE) -> str:
    """What n equal values honestly say: the value, and the exact (Clopper-Pearson) bound on the
    share of chats that could give another value."""
    bound = 1 - ((1 - confidence) / 2) ** (1 / n)
    return (f"no variation in {n} repeats (all {value:g}); up to {bound:.0%} of chats could "
            f"differ ({confidence:.0%}, exact bound for 0 of {n})")


def studentized_mean(values: Sequence[float], *, low: float | None = None,
                     high: float | None = None, seed: int = BOOTSTRAP_SEED,
                     resamples: int = BOOTSTRAP_RESAMPLES,
                     confidence: float = CONFIDENCE) -> Interval:
    """Studentized bootstrap (bootstrap-t) interval of the mean with a variance floor, seeded,
    cut to [low, high].

    Each resample gives t* = (mean* - mean) / (max(sd*, SD_FLOOR·sd) / sqrt(n)); the interval
    is mean - t*_hi·se to mean - t*_lo·se. Why the floor: with tied values (messages of
    [10, 10, 11, 11, 11, 11, 11, 11]) many resamples have no spread, their t* was ±inf and the
    interval became the whole feasible range ([0, 11]). Flooring a resample's sd at a quarter
    of the sample's keeps t* finite; the coverage study (bench/interval_coverage.py) chose
    the quarter as the floor that keeps coverage while the width falls back near the t
    interval's (docs/statistics.md).
    """
    data = np.asarray([float(v) for v in values], dtype=float)
    n = len(data)
    mean = float(data.mean()) if n else math.nan
    if n < 2:
        note = "no repeats" if n == 0 else "one repeat: no interval"
        return Interval(mean, math.nan, math.nan, STUDENTIZED, note)
    if float(data.max()) - float(data.min()) <= 1e-12 * max(1.0, abs(mean)):
        return Interval(mean, math.nan, math.nan, STUDENTIZED,
                        no_variation_note(mean, n, confidence))
    sd = float(data.std(ddof=1))
    se = sd / math.sqrt(n)
    rng = np.random.default_rng(seed)
    samples = data[rng.integers(0, n, size=(resamples, n))]
    means = samples.mean(axis=1)
    spread = np.maximum(samples.std(axis=1, ddof=1), SD_FLOOR * sd)
    ordered = np.sort((means - mean) / (spread / math.sqrt(n)))
    alpha = 1 - confidence
    t_low = ordered[max(0, int(math.floor(alpha / 2 * (resamples + 1))) - 1)]
    t_high = ordered[min(resamples - 1, int(math.ceil((1 - alpha / 2) * (resamples + 1))) - 1)]
    lower = mean - float(t_high) * se
    upper = mean - float(t_low) * se
    method = STUDENTIZED
    if low is not None and not lower >= low:
        lower, method = low, f"{STUDENTIZED}, cut to range"
    if high is not None and not upper <= high:
        upper, method = high, f"{STUDENTIZED}, cut to range"
    return Interval(mean, min(lower, mean), max(upper, mean), method)


def bca_mean(values: Sequence[float], *, seed: int = BOOTSTRAP_SEED,
             resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = CONFIDENCE) -> Interval:
    """BCa (bias-corrected and accelerated) bootstrap of the mean, seeded; kept for the
    coverage study (bench/interval_coverage.py), which shows it under-covers at small n."""
    data = np.asarray([float(v) for v in values], dtype=float)
    n = len(data)
    mean = float(data.mean()) if n else math.nan
    if n < 2 or float(data.max()) == float(data.min()):
        return Interval(mean, math.nan, math.nan, "bca")
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    share = float((means < mean).mean() + 0.5 * (means == mean).mean())
    share = min(max(share, 1 / (resamples + 1)), resamples / (resamples + 1))
    normal = NormalDist()
    z0 = normal.inv_cdf(share)
    jack = (data.sum() - data) / (n - 1)
    dev = jack.mean() - jack
    denom = float((dev ** 2).sum())
    accel = float((dev ** 3).sum()) / (6 * denom ** 1.5) if denom > 0 else 0.0
    alpha = 1 - confidence
    qs = [normal.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
          for z in (normal.inv_cdf(alpha / 2), normal.inv_cdf(1 - alpha / 2))]
    lower, upper = np.quantile(means, qs)
    return Interval(mean, min(float(lower), mean), max(float(upper), mean), "bca")
