"""What each sweep metric is, and so which interval and effect size fit it.

Why a table: intervals (_intervals.py), comparisons (_compare.py), the export's
`interval_method` column and the charts' help all read the same facts, so they cannot disagree.

- proportion: a 0/1 outcome per chat, averaged into a rate (lulled -> lull rate): Wilson interval,
  difference in proportions as the effect size.
- bounded: a per-chat value with hard bounds (evenness and hit rate in [0, 1], Gini in [0, 1),
  entropy in [0, log2(agents)]): percentile bootstrap of the mean, Cliff's delta.
- count: a non-negative count or amount (messages, turns, lull turn, calls, cost): Student t, cut
  at 0, Cohen's d and Cliff's delta.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ._intervals import Interval, bootstrap_mean, t_interval, wilson

Nature = Literal["proportion", "bounded", "count"]


@dataclass(frozen=True)
class MetricNature:
    nature: Nature
    low: float | None  # the metric's bounds (None: unbounded on that side)
    high: float | None
    what: str  # one line for help texts

    @property
    def interval_method(self) -> str:
        return {"proportion": "wilson", "bounded": "bootstrap", "count": "t"}[self.nature]


NATURES: dict[str, MetricNature] = {
    "lulled": MetricNature("proportion", 0.0, 1.0, "share of chats that ended in a lull"),
    "correct": MetricNature("proportion", 0.0, 1.0, "accuracy: share of scored chats right"),
    "score": MetricNature("bounded", 0.0, 1.0, "outcome score (1/0, or the judge's 0 to 1)"),
    "evenness": MetricNature("bounded", 0.0, 1.0, "speaker entropy / log2(agents), 0 to 1"),
    "gini": MetricNature("bounded", 0.0, 1.0, "Gini of turn shares, 0 (equal) to (n-1)/n"),
    "entropy_bits": MetricNature("bounded", 0.0, None,
                                 "speaker entropy in bits, 0 to log2(agents)"),
    "hit_rate": MetricNature("bounded", 0.0, 1.0, "share of bids answered from the cache"),
    "messages": MetricNature("count", 0.0, None, "messages posted"),
    "turns": MetricNature("count", 0.0, None, "turns run"),
    "lull_turn": MetricNature("count", 0.0, None, "turn of the first lull (lulled chats only)"),
    "longest_monologue": MetricNature("count", 0.0, None, "longest run of one speaker"),
    "total_calls": MetricNature("count", 0.0, None, "model calls"),
    "total_cost_usd": MetricNature("count", 0.0, None, "cost in USD"),
}


def nature_of(metric: str) -> MetricNature:
    """A metric's nature; an unknown metric is treated as an unbounded mean (t, no cut)."""
    return NATURES.get(metric, MetricNature("count", None, None, metric))


def metric_interval(metric: str, values: Sequence[float], seed: int | None = None) -> Interval:
    """The interval that fits `metric` (see the module docstring), over one group's values."""
    nature = nature_of(metric)
    if nature.nature == "proportion":
        ones = sum(1 for v in values if v)
        return wilson(ones, len(values))
    if nature.nature == "bounded":
        return bootstrap_mean(values) if seed is None else bootstrap_mean(values, seed=seed)
    return t_interval(values, floor=nature.low, ceiling=nature.high)


def methods_text() -> str:
    """One paragraph for a chart's help: which interval each metric gets, and why."""
    groups: dict[str, list[str]] = {}
    for name, nature in NATURES.items():
        groups.setdefault(nature.interval_method, []).append(name)
    return ("95% intervals per metric: Wilson score interval for rates ("
            + ", ".join(groups["wilson"]) + "), inside 0 to 1 and never zero-width; seeded "
            "percentile bootstrap of the mean (2,000 resamples) for bounded metrics ("
            + ", ".join(groups["bootstrap"]) + "), never outside the values' range; Student t "
            "for counts and amounts (" + ", ".join(groups["t"]) + "), cut at 0. One finished "
            "chat gives no interval (except Wilson).")
