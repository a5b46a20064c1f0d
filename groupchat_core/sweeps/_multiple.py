"""Multiple-comparison adjustment: Holm (family-wise error) and Benjamini-Hochberg (false
discovery rate), written out so sweeps need no statsmodels.

Why both: eight importance tests on pure noise give some p < 0.05 in about a third of sweeps
(issue 21); Holm controls the chance of any false call, BH the share of false calls among the
calls made (more power, weaker promise). Tables carry both; the pages show Holm. Missing p-values
(too few to test) are left out of the family and stay missing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

SHOWN = "holm"


def _present(p_values: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    values = np.array([math.nan if p is None else float(p) for p in p_values], dtype=float)
    return values, np.flatnonzero(~np.isnan(values))


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni step-down adjusted p-values (as statsmodels' multipletests 'holm')."""
    values, keep = _present(p_values)
    out: list[float | None] = [None] * len(values)
    m = len(keep)
    order = keep[np.argsort(values[keep], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(values[index])))
        out[int(index)] = running
    return out


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg step-up adjusted p-values (as multipletests 'fdr_bh')."""
    values, keep = _present(p_values)
    out: list[float | None] = [None] * len(values)
    m = len(keep)
    order = keep[np.argsort(values[keep], kind="stable")]
    running = 1.0
    for rank in range(m - 1, -1, -1):
        index = int(order[rank])
        running = min(running, float(values[index]) * m / (rank + 1))
        out[index] = min(1.0, running)
    return out
