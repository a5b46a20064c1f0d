"""Recompute the sweep statistics with scipy and statsmodels (issue 21). Measurement only.

    pip install scipy statsmodels     # not dependencies of the project; any recent version
    python -m bench.statistics_reference

Prints the largest difference between ours and the reference for: Holm and Benjamini-Hochberg
(statsmodels' multipletests, scipy's false_discovery_control), the exact paired sign-flip p
(scipy.stats.permutation_test, permutation_type="samples"), Wilson intervals (statsmodels'
proportion_confint) and BCa (scipy.stats.bootstrap; resampling noise only).
"""

from __future__ import annotations

import sys

import numpy as np

from bench import _harness as h
from groupchat_core.sweeps import bca_mean, benjamini_hochberg, compare_values, holm, wilson


def main() -> None:
    h.options(__doc__).parse_args()
    try:
        from scipy import stats
        from statsmodels.stats.multitest import multipletests
        from statsmodels.stats.proportion import proportion_confint
    except ImportError:
        sys.exit("needs scipy and statsmodels: pip install scipy statsmodels")
    rng = np.random.default_rng(3)
    worst_holm = worst_bh = 0.0
    for _ in range(500):
        p = rng.random(int(rng.integers(1, 15))) ** 2
        ours_holm, ours_bh = np.array(holm(list(p))), np.array(benjamini_hochberg(list(p)))
        worst_holm = max(worst_holm, float(np.abs(ours_holm - multipletests(p, method="holm")[1])
                                           .max()))
        worst_bh = max(worst_bh, float(np.abs(ours_bh - multipletests(p, method="fdr_bh")[1])
                                       .max()),
                       float(np.abs(ours_bh - stats.false_discovery_control(p)).max()))
    print(f"Holm vs multipletests: max |diff| {worst_holm:.2g}")
    print(f"Benjamini-Hochberg vs multipletests / false_discovery_control: {worst_bh:.2g}")
    worst_pair = 0.0
    for _ in range(50):
        a = rng.normal(5, 1, 8)
        b = a + rng.normal(0.5, 1, 8)
        ours = compare_values(list(a), list(b), "messages", paired=True).p_value
        ref = stats.permutation_test((a, b), lambda x, y: np.mean(y - x),
                                     permutation_type="samples", n_resamples=np.inf,
                                     alternative="two-sided").pvalue
        worst_pair = max(worst_pair, abs(float(ours or 0.0) - float(ref)))
    print(f"paired sign-flip p vs permutation_test(samples): max |diff| {worst_pair:.2g}")
    worst_wilson = max(abs(wilson(k, n).low - proportion_confint(k, n, method="wilson")[0])
                       + abs(wilson(k, n).high - proportion_confint(k, n, method="wilson")[1])
                       for n in range(1, 30) for k in range(n + 1))
    print(f"Wilson vs proportion_confint: max |diff| {worst_wilson:.2g}")
    x = rng.beta(2, 5, 30)
    ours_bca = bca_mean(list(x), resamples=20_000)
    ref_bca = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=20_000,
                              random_state=1).confidence_interval
    print(f"BCa on 30 Beta(2, 5) values: ours [{ours_bca.low:.4f}, {ours_bca.high:.4f}], "
          f"scipy [{ref_bca.low:.4f}, {ref_bca.high:.4f}]")


if __name__ == "__main__":
    main()
