"""Every setting's documented range, declared once (docs/engine.md §2, issue 25 §2).

The engine's validators refuse a value outside its range; the dashboard's inputs, help texts
and checks, the sweep grids and the CLI read the same table, so no copy can drift (the
dashboard once clamped `threshold` to three different ranges). Defaults stay where they are
declared: ChatConfig and Agent's fields (`chat_default` reads them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

MAX_LOOPS: Final = 10_000
MAX_RECENCY_WINDOW: Final = 10_000
MAX_BATCH_CONCURRENCY: Final = 1_000
MAX_SEED: Final = 2**53  # |seed|: exact as a JSON number anywhere
MAX_TIMEOUT_S: Final = 86_400.0  # idle_timeout, bid_timeout and Agent.timeout: at most a day
# Scores are clamped into [0, 1] (docs/engine.md §5). A threshold or penalty in [-1, 2] covers
# every room worth running (a negative penalty favours recent speakers); 5 or -3 is a typo.
SCORE_SETTING_LOW: Final = -1.0
SCORE_SETTING_HIGH: Final = 2.0


@dataclass(frozen=True)
class Bound:
    """The closed range [low, high] of one setting; `above_low` makes the low end open."""

    low: float
    high: float
    integer: bool = False
    above_low: bool = False  # a timeout of 0 is refused: it must be above `low`

    def holds(self, value: float) -> bool:
        """True when `value` is finite and inside the range."""
        if not math.isfinite(value) or value > self.high:
            return False
        return value > self.low if self.above_low else value >= self.low

    def text(self) -> str:
        """The range in words, as messages and help texts name it: 'from -1 to 2'."""
        low = f"above {_number(self.low)}" if self.above_low else f"from {_number(self.low)}"
        return f"{low} to {_number(self.high)}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


MAX_HUMAN_WINDOW_S: Final = 3_600.0  # a person's bid or post window: at most an hour
MAX_SELECTOR_TOP_K: Final = 16

CHAT_BOUNDS: Final[Mapping[str, Bound]] = MappingProxyType({
    "max_loops": Bound(1, MAX_LOOPS, integer=True),
    "threshold": Bound(SCORE_SETTING_LOW, SCORE_SETTING_HIGH),
    "recency_penalty": Bound(SCORE_SETTING_LOW, SCORE_SETTING_HIGH),
    "recency_window": Bound(0, MAX_RECENCY_WINDOW, integer=True),
    "batch_concurrency": Bound(1, MAX_BATCH_CONCURRENCY, integer=True),
    "seed": Bound(-MAX_SEED, MAX_SEED, integer=True),
    "idle_timeout": Bound(0, MAX_TIMEOUT_S),
    "bid_timeout": Bound(0, MAX_TIMEOUT_S, above_low=True),
    # people in the room (issue 22): a person's bid and post windows, the selector's top-k
    "human_window": Bound(0, MAX_HUMAN_WINDOW_S, above_low=True),
    "human_post_window": Bound(0, MAX_HUMAN_WINDOW_S, above_low=True),
    "selector_top_k": Bound(1, MAX_SELECTOR_TOP_K, integer=True),
})

# What a bidder sees (docs/engine.md "What agents see"): each setting's choices, the first is
# the default (today's request, byte for byte). Read by ChatConfig, sweep grids, the CLI's
# flags and the dashboard's forms.
CHAT_CHOICES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "history": ("flattened", "typed"),
    "speaker_names": ("shown", "anonymised"),
    "show_bids": ("hidden", "shown"),
    "show_tally": ("hidden", "shown"),
})


def not_a_choice(name: str, value: object) -> str:
    """The one-line refusal of a value outside CHAT_CHOICES[name]."""
    return f"{name} must be one of: {', '.join(CHAT_CHOICES[name])}; got {value!r}"


MAX_RETRIES: Final = 100
MAX_AGENT_LOOPS: Final = 10_000
MAX_AGENT_TOKENS: Final = 100_000_000  # max_tokens and context_window

AGENT_BOUNDS: Final[Mapping[str, Bound]] = MappingProxyType({
    "temperature": Bound(0.0, 2.0),
    "max_tokens": Bound(0, MAX_AGENT_TOKENS, integer=True),
    "num_retries": Bound(0, MAX_RETRIES, integer=True),
    "timeout": Bound(0, MAX_TIMEOUT_S, above_low=True),
    "context_window": Bound(1, MAX_AGENT_TOKENS, integer=True),
})

MAX_SWEEP_AXIS: Final = 1_000  # values per sweep axis (orders, rosters, models, random samples)
MAX_CALLS_CAP: Final = 1_000_000_000  # a sweep's max_calls: a budget cap, bounded at the edge

SWEEP_BOUNDS: Final[Mapping[str, Bound]] = MappingProxyType({
    "repeats": Bound(1, 10_000, integer=True),
    "concurrency": Bound(1, 256, integer=True),
    "max_calls": Bound(1, MAX_CALLS_CAP, integer=True),
    "samples": Bound(1, MAX_SWEEP_AXIS, integer=True),  # random draws, sampled orders
})

# Settings of the whole process (the dashboard's Settings page, GROUPCHAT_MAX_INFLIGHT).
PROCESS_BOUNDS: Final[Mapping[str, Bound]] = MappingProxyType({
    "max_inflight_calls": Bound(1, 1_024, integer=True),
})


def out_of_bounds(name: str, value: float, bound: Bound) -> str:
    """The one-line refusal every entry point gives: names the setting, its range and the value."""
    return f"{name} must be a number {bound.text()}, got {value!r}"


# Ways to choose who speaks each turn (docs/engine.md §16); `bidding` is the seed's rule.
# `vote` is the vote-only baseline: all_speak's first round and no more. Declared here, beside
# the other choices, so the CLI's parser and the settings schema need no pydantic model.
STRATEGIES: tuple[str, ...] = (
    "bidding", "round_robin", "random", "selector", "bid_then_speak", "all_speak", "vote")

# Every shape a finished conversation can be returned in (docs/engine.md §8); declared here,
# beside the other choices, so the CLI's parser needs no pydantic model.
OUTPUT_TYPES: tuple[str, ...] = (
    "list",
    "dict",
    "dictionary",
    "str",
    "string",
    "all",
    "final",
    "last",
    "json",
    "yaml",
    "xml",
    "dict-all-except-first",
    "str-all-except-first",
    "dict-final",
    "list-final",
    "basemodel",
)
