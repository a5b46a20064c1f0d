"""Analytic p-values (F and Student t tails) and Spearman's rank correlation; no scipy.

Why (issue 38): importance p-values came from 999 shuffles, so Holm over a table of m rows could
never go below m/1000. Importance now shuffles 200 times per tested row; where a sweep is too
large to shuffle that often, the F test's p (one-way ANOVA, the test of eta squared) and the t
approximation of Spearman's rho stand in (large n: their approximations hold), and they are
always reported beside the shuffled p as a cross-check (tests/sweeps/test_sweep_false_calls.py
compares the two on sweep-like data).

The tails come from the regularized incomplete beta function I_x(a, b), evaluated by its
continued fraction (Lentz's method, as in Numerical Recipes' betacf): P(F > f) for F(d1, d2) is
I_{d2/(d2+d1 f)}(d2/2, d1/2); the two-sided t tail is I_{df/(df+t^2)}(df/2, 1/2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz), converging for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                 + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def f_sf(f: float, d1: float, d2: float) -> float:
    """P(F > f) for F with (d1, d2) degrees of freedom."""
    if not f > 0.0:
        return 1.0
    if math.isinf(f):
        return 0.0
    return min(1.0, max(0.0, betainc(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))))


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's T with df degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return min(1.0, max(0.0, betainc(df / 2.0, 0.5, df / (df + t * t))))


def anova_p(between: float, total: float, n: int, k: int) -> float:
    """The one-way ANOVA F test's p for k groups of n values in all (SS between and total)."""
    within = total - between
    if n <= k or k < 2:
        return 1.0
    if within <= 1e-12 * total:
        return 0.0
    return f_sf((between / (k - 1)) / (within / (n - k)), k - 1, n - k)


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Spearman's rho (Pearson's r of the mid-ranks) and its two-sided p from the t
    approximation t = rho·sqrt((n-2)/(1-rho^2)), n-2 df. (nan, 1.0) when a side is constant."""
    rx = pd.Series(np.asarray(x, dtype=float)).rank().to_numpy()
    ry = pd.Series(np.asarray(y, dtype=float)).rank().to_numpy()
    n = len(rx)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    sxx, syy = float((dx * dx).sum()), float((dy * dy).sum())
    if n < 3 or sxx <= 0.0 or syy <= 0.0:
        return math.nan, 1.0
    rho = max(-1.0, min(1.0, float((dx * dy).sum()) / math.sqrt(sxx * syy)))
    if abs(rho) >= 1.0:
        return rho, 0.0
    return rho, t_two_sided(rho * math.sqrt((n - 2) / (1 - rho * rho)), n - 2)
