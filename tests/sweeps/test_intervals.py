"""Interval methods (sweeps/_intervals.py, _natures.py) against independently computed values.

Private imports (clopper_pearson, metric_interval, t95): units tested as such, which no public
module exports."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from groupchat_core.sweeps import (
    NATURES,
    bootstrap_mean,
    methods_text,
    metric_interval,
    t_interval,
    wilson,
)
from groupchat_core.sweeps._intervals import clopper_pearson, t95

Z = 1.959963984540054  # the 0.975 normal quantile, as printed in every table


def textbook_wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927) as in Agresti & Coull (1998), eq. 2, written out independently."""
    p = k / n
    centre = p + Z * Z / (2 * n)
    spread = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre - spread) / (1 + Z * Z / n), (centre + spread) / (1 + Z * Z / n)


@pytest.mark.parametrize(("k", "n"), [(0, 5), (5, 5), (3, 10), (1, 1), (17, 40)])
def test_wilson_matches_the_textbook_formula(k, n):
    interval = wilson(k, n)
    low, high = textbook_wilson(k, n)
    assert interval.method == "wilson" and interval.estimate == pytest.approx(k / n)
    assert interval.low == pytest.approx(max(0.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)


def test_wilson_known_values_never_zero_width_never_outside_0_1():
    assert (round(wilson(0, 5).low, 4), round(wilson(0, 5).high, 4)) == (0.0, 0.4345)
    assert (round(wilson(5, 5).low, 4), round(wilson(5, 5).high, 4)) == (0.5655, 1.0)
    assert (round(wilson(3, 10).low, 4), round(wilson(3, 10).high, 4)) == (0.1078, 0.6032)
    for n in range(1, 40):
        for k in range(n + 1):
            i = wilson(k, n)
            assert 0.0 <= i.low < i.high <= 1.0 and i.low <= i.estimate <= i.high
    with pytest.raises(ValueError, match="successes <= n"):  # bad counts are refused
        wilson(6, 5)


def test_clopper_pearson_known_values_and_its_defining_tail_identity():
    # closed forms at the ends: (alpha/2)^(1/n)
    assert clopper_pearson(0, 5).high == pytest.approx(1 - 0.025 ** (1 / 5), abs=1e-9)
    assert clopper_pearson(5, 5).low == pytest.approx(0.025 ** (1 / 5), abs=1e-9)
    three = clopper_pearson(3, 10)  # published: 0.0667, 0.6525
    assert (round(three.low, 4), round(three.high, 4)) == (0.0667, 0.6525)

    def tail_at_least(k, n, p):
        return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))

    i = clopper_pearson(7, 23)
    assert tail_at_least(7, 23, i.low) == pytest.approx(0.025, abs=1e-9)
    assert 1 - tail_at_least(8, 23, i.high) == pytest.approx(0.025, abs=1e-9)
    assert i.low < wilson(7, 23).low and i.high > wilson(7, 23).high  # exact is wider


def test_t_interval_is_the_student_interval_and_is_cut_at_the_floor():
    values = [4.0, 6.0, 5.0, 7.0]
    i = t_interval(values)
    sd = float(np.std(values, ddof=1))
    assert i.method == "t"
    assert (i.low, i.high) == pytest.approx((5.5 - 3.182 * sd / 2, 5.5 + 3.182 * sd / 2))
    cut = t_interval([0.0, 0.0, 3.0], floor=0.0)
    assert cut.low == 0.0 and cut.method == "t, cut at 0" and cut.high > 1.0
    assert math.isnan(t_interval([2.0]).low)
    assert (t95(1), t95(30), t95(45), t95(5000)) == (12.706, 2.042, 2.021, 1.96)


def test_bootstrap_is_reproducible_bounded_and_covers_about_95_percent():
    data = [0.2, 0.9, 0.95, 1.0, 0.99]
    first, again = bootstrap_mean(data), bootstrap_mean(data)
    assert first == again and first.method == "bootstrap"
    assert bootstrap_mean(data, seed=1) != first
    assert min(data) <= first.low <= first.estimate <= first.high <= max(data)
    # coverage: the mean of Beta(2, 5) is 2/7; 300 samples of 25
    rng, true, hits = np.random.default_rng(7), 2 / 7, 0
    for i in range(300):
        sample = rng.beta(2, 5, size=25)
        interval = bootstrap_mean(sample.tolist(), seed=i, resamples=1000)
        hits += interval.low <= true <= interval.high
    assert 0.88 <= hits / 300 <= 0.99


def test_each_metric_gets_its_method_and_stays_within_its_bounds():
    assert metric_interval("lulled", [1.0] * 5).method == "wilson"
    assert metric_interval("lulled", [1.0] * 5).low > 0.5  # 5/5 is not [1, 1]
    rate = metric_interval("lulled", [1, 0, 0, 0, 0, 0, 1, 0, 1, 0])
    assert rate.low > 0 and rate.high < 1  # 0.3 has no negative bound
    rng = random.Random(3)
    for _ in range(50):  # issue 38: below 5 repeats no interval, and the note says so
        near_one = [min(1.0, 0.9 + rng.random() / 10) for _ in range(rng.randint(2, 8))]
        for metric in ("evenness", "gini", "hit_rate"):
            i = metric_interval(metric, near_one)
            assert i.method.startswith("bootstrap-t")
            if len(near_one) < 5:
                assert math.isnan(i.low) and "too few for an informative interval" in i.note
            else:
                assert 0.0 <= i.low <= i.high <= 1.0
    counts = metric_interval("messages", [0, 0, 1, 5, 0], max_loops=10)
    assert counts.method == "bootstrap-t, cut to range" and counts.low == 0.0
    assert counts.high < 9.0  # at most max_loops - 1 messages, and not the whole range
    whole = metric_interval("messages", [0, 0, 1, 9, 0], max_loops=10)  # values span 0 to 9
    assert math.isnan(whole.low) and "whole feasible range [0, 9]" in whole.note
    assert {n.interval_method for n in NATURES.values()} == {"wilson", "bootstrap-t"}
    assert "Wilson" in methods_text() and "lulled" in methods_text()
