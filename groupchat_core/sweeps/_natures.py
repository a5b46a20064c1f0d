"""What each sweep metric is: its interval, its effect size and its feasible range, in one place.

Why a table: intervals (_intervals.py), comparisons (_compare.py), the export's
`interval_method` column, the charts' axes and the methods paragraph all read the same facts, so
they cannot disagree.

- proportion: a 0/1 outcome per chat, averaged into a rate (lulled -> lull rate): Wilson interval,
  difference in proportions as the effect size. `score` is bounded, but a 0/1 score (rule
  scorers) is a proportion too and gets Wilson, as `correct` does: one interval per variable
  type.
- bounded: a per-chat score with hard bounds (evenness and hit rate in [0, 1], Gini in
  [0, (k-1)/k] for k agents, entropy in [0, log2 k]): studentized bootstrap, cut to the range.
- count: a non-negative count or amount: messages in [0, max_loops - 1] (the task is the first of
  max_loops messages), turns in [1, max_loops - 1], lull turn in [1, max_loops - 1] (a chat runs
  at most max_loops - 1 turns after the task), longest monologue in [0, max_loops - 1], calls
  and cost in [0, inf): studentized bootstrap, cut to the range; Cohen's
  d and Cliff's delta.

Feasible ranges depend on the cell (`max_loops`, agents): `feasible_range` takes the largest of a
group's cells, so the range holds for every chat in it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ._intervals import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    SD_FLOOR,
    STUDENTIZED,
    Interval,
    studentized_mean,
    wilson,
)

Nature = Literal["proportion", "bounded", "count"]
# where a bound comes from: a number, or the cell's max_loops / agents
Bound = Literal["max_loops", "max_loops-1", "log2_agents", "gini_agents"] | float | None

# From the coverage study (docs/statistics.md, bench/interval_coverage.py): below 5 repeats no
# method gives an informative interval of a bounded metric (at 3 every one spans about the whole
# feasible range), so none is given; at 5 to 9 repeats the floored bootstrap-t can under-cover
# (a metric with many chats at one value, such as evenness 0 of monologues, is the low end), so
# those rows warn; unbounded skewed data need about 30 (below, the row warns).
MIN_N_BOUNDED = 10
MIN_N_UNBOUNDED = 30
MIN_N_INTERVAL = 5  # fewer repeats: no interval of a non-rate metric, said in words
BINARY_AS_RATE = ("score",)  # bounded metrics that, when every value is 0 or 1, are rates


@dataclass(frozen=True)
class MetricNature:
    nature: Nature
    low: float | None  # static bounds (None: set by the cell, or unbounded on that side)
    high: float | None
    what: str  # one line for help texts
    high_from: Bound = None  # the cell-dependent upper bound, if any
    low_from: Bound = None

    @property
    def interval_method(self) -> str:
        return "wilson" if self.nature == "proportion" else STUDENTIZED

    @property
    def bounded_above(self) -> bool:
        return self.high is not None or self.high_from is not None


NATURES: dict[str, MetricNature] = {
    "lulled": MetricNature("proportion", 0.0, 1.0, "share of chats that ended in a lull"),
    "correct": MetricNature("proportion", 0.0, 1.0, "accuracy: share of scored chats right"),
    "score": MetricNature("bounded", 0.0, 1.0, "outcome score (1/0, or the judge's 0 to 1)"),
    "evenness": MetricNature("bounded", 0.0, 1.0, "speaker entropy / log2(agents), 0 to 1"),
    "gini": MetricNature("bounded", 0.0, 1.0, "Gini of turn shares, 0 (equal) to (k-1)/k",
                         "gini_agents"),
    "entropy_bits": MetricNature("bounded", 0.0, None,
                                 "speaker entropy in bits, 0 to log2(agents)", "log2_agents"),
    "hit_rate": MetricNature("bounded", 0.0, 1.0, "share of bids answered from the cache"),
    "messages": MetricNature("count", 0.0, None, "messages posted (at most max_loops - 1)",
                             "max_loops-1"),
    "turns": MetricNature("count", 1.0, None, "turns run (1 to max_loops - 1)", "max_loops-1"),
    "lull_turn": MetricNature("count", 1.0, None,
                              "turn of the first lull (lulled chats only; 1 to max_loops - 1)",
                              "max_loops-1"),
    "longest_monologue": MetricNature("count", 0.0, None, "longest run of one speaker",
                                      "max_loops-1"),
    "calls_needed": MetricNature("count", 0.0, None, "model calls the chat needs: calls made "
                                 "plus every call answered from the cache"),
    "calls_made": MetricNature("count", 0.0, None, "model calls actually made (the cache "
                               "answered the rest)"),
    "total_calls": MetricNature("count", 0.0, None, "model calls made (as calls_made)"),
    "total_cost_usd": MetricNature("count", 0.0, None, "cost in USD of the calls made"),
}
# Metrics that measure the bid cache (what an earlier cell left behind), not the parameters:
# importance leaves them out unless asked (issue 21: a fresh store made threshold "explain" calls).
CACHE_METRICS = ("calls_made", "total_calls", "hit_rate", "total_cost_usd")


def nature_of(metric: str) -> MetricNature:
    """A metric's nature; an unknown metric is treated as an unbounded mean."""
    return NATURES.get(metric, MetricNature("count", None, None, metric))


def _resolve(bound: Bound, static: float | None, max_loops: float | None,
             agents: float | None) -> float | None:
    if bound is None or isinstance(bound, float):
        return static if bound is None else bound
    if bound in ("max_loops", "max_loops-1"):
        if max_loops is None or math.isnan(max_loops):
            return static
        return float(max_loops) - (1.0 if bound == "max_loops-1" else 0.0)
    if agents is None or math.isnan(agents) or agents < 1:
        return static
    if bound == "log2_agents":
        return math.log2(agents)
    return (agents - 1) / agents  # gini_agents


def feasible_range(metric: str, *, max_loops: float | None = None,
                   agents: float | None = None) -> tuple[float | None, float | None]:
    """The values `metric` can take in a chat with at most `max_loops` messages and `agents`
    agents (None where unbounded or unknown)."""
    nature = nature_of(metric)
    return (_resolve(nature.low_from, nature.low, max_loops, agents),
            _resolve(nature.high_from, nature.high, max_loops, agents))


def min_n(metric: str) -> int:
    """Repeats from which the metric's interval reaches its coverage (the study's table)."""
    nature = nature_of(metric)
    if nature.nature == "proportion":
        return 1
    return MIN_N_BOUNDED if nature.bounded_above else MIN_N_UNBOUNDED


def _is_binary(values: Sequence[float]) -> bool:
    return len(values) > 0 and all(float(v) in (0.0, 1.0) for v in values)


def metric_interval(metric: str, values: Sequence[float], seed: int | None = None, *,
                    max_loops: float | None = None, agents: float | None = None) -> Interval:
    """The interval that fits `metric` (see the module docstring), over one group's values,
    inside its feasible range; none, said in words, where no informative one exists."""
    nature = nature_of(metric)
    if nature.nature == "proportion" or (metric in BINARY_AS_RATE and _is_binary(values)):
        ones = sum(1 for v in values if v)
        return wilson(ones, len(values))
    low, high = feasible_range(metric, max_loops=max_loops, agents=agents)
    interval = studentized_mean(values, low=low, high=high,
                                seed=BOOTSTRAP_SEED if seed is None else seed)
    n = len(values)
    if interval.note or math.isnan(interval.low):
        return interval
    if n < MIN_N_INTERVAL:
        return Interval(interval.estimate, math.nan, math.nan, STUDENTIZED,
                        f"{n} repeats are too few for an informative interval (below "
                        f"{MIN_N_INTERVAL} every method spans most of the feasible range); "
                        f"add repeats")
    whole = (low is not None and high is not None and interval.low <= low
             and interval.high >= high)
    if whole:
        return Interval(interval.estimate, math.nan, math.nan, STUDENTIZED,
                        f"{n} repeats cannot narrow this metric below its whole feasible range "
                        f"[{low:g}, {high:g}]: no interval; add repeats")
    if n < min_n(metric):
        kind = "bounded" if nature.bounded_above else "unbounded, skewed"
        interval = Interval(interval.estimate, interval.low, interval.high, interval.method,
                            f"below {min_n(metric)} repeats this interval may under-cover "
                            f"({kind} metrics: see the coverage study in the statistics guide)")
    return interval


def methods_text() -> str:
    """One paragraph for a chart's help: which interval each metric gets, and why."""
    groups: dict[str, list[str]] = {}
    for name, nature in NATURES.items():
        groups.setdefault(nature.interval_method, []).append(name)
    return (f"{CONFIDENCE:.0%} intervals per metric: Wilson score interval for rates ("
            + ", ".join(groups["wilson"]) + "), inside 0 to 1 and never zero-width; seeded "
            f"studentized bootstrap of the mean ({BOOTSTRAP_RESAMPLES:,} resamples, seed "
            f"{BOOTSTRAP_SEED}) for every other metric ("
            + ", ".join(groups[STUDENTIZED]) + "), cut to the metric's feasible range (counts "
            "by max_loops, Gini and entropy by the number of agents), each resample's standard "
            f"deviation floored at {SD_FLOOR:g} of the sample's so tied values do not stretch the "
            f"interval to the whole range; a 0/1 score gets Wilson, as accuracy does. Below "
            f"{MIN_N_INTERVAL} repeats no interval is given for a non-rate metric (none would be "
            "informative), nor where the interval would be the whole feasible range; unbounded "
            f"metrics (calls, cost) warn below {MIN_N_UNBOUNDED}, bounded ones below "
            f"{MIN_N_BOUNDED}. Coverage and width per metric "
            "and repeat count: the statistics guide. Repeats that all agree give no interval but "
            "'no variation in n repeats'; one finished chat gives none (except Wilson).")
