"""What-if, with no model calls: re-select a recorded run's selections under other parameters.

Why: a sweep answers "what does the threshold do?" by running new chats, which costs calls. A
recorded run already holds every agent's bid on every turn, so for other threshold, penalty and
window values we can re-select each turn from those bids (with the engine's own
`select_speaker`, via `analysis.counterfactual`) for free. The answer is exact up to and
including the first turn whose speaker changes: after it, the agents would have been bidding on a
different conversation, which the record cannot tell. It also assumes an agent's bid does not
depend on the numbers in its prompt, which holds for the `sim/` models and is an approximation
for LLMs (their prompt states the threshold and penalty, docs/engine.md §4).

Each grid row says where the counterfactual first diverges and whether (and where) it would
have hit a lull before that; `whatif_pivot` turns a column into a threshold × penalty matrix for
a heatmap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._errors import ConfigError
from ._metrics import RecordedTurn, recorded_turns, reselect

if TYPE_CHECKING:
    from .._records import RunRecord
    from ..store import RunStore

WHATIF_COLUMNS = [
    "threshold", "recency_penalty", "recency_window", "outcome", "first_divergence",
    "exact_through", "lull_turn", "recorded_turns", "recorded_lull_turn", "diverged_to",
]
DEFAULT_THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(20))  # 0.0 .. 0.95
DEFAULT_PENALTIES = tuple(round(0.05 * i, 2) for i in range(13))  # 0.0 .. 0.6


def _row(turns: Sequence[RecordedTurn], threshold: float, penalty: float,
         window: int) -> dict[str, Any]:
    """One counterfactual, summarised.

    outcome: "same" (every recorded turn is re-selected as recorded), "lull" (a turn that had a
    speaker would have none: the chat stops there), "diverges" (another agent speaks first, or
    someone speaks where the recorded run lulled; unknown after that turn).
    """
    rows = reselect(turns, threshold, penalty, window)
    last = rows[-1] if rows else None
    diverged = last is not None and bool(last["diverged"])
    lull = last is not None and last["counterfactual_winner"] is None and \
        last["reason"] == "lull"
    outcome = "same" if not diverged else ("lull" if lull else "diverges")
    recorded_lull = next((t.turn for t in turns if t.actual_winner is None), None)
    return {
        "threshold": float(threshold), "recency_penalty": float(penalty),
        "recency_window": int(window), "outcome": outcome,
        "first_divergence": last["turn"] if diverged and last else None,
        "exact_through": last["turn"] if diverged and last else len(turns),
        "lull_turn": last["turn"] if lull and last else None,
        "recorded_turns": len(turns), "recorded_lull_turn": recorded_lull,
        "diverged_to": last["counterfactual_winner"] if diverged and last else None,
    }


def whatif_grid(bids: pd.DataFrame, thresholds: Iterable[float] = DEFAULT_THRESHOLDS,
                penalties: Iterable[float] = DEFAULT_PENALTIES,
                windows: Iterable[int] = (1,), *,
                turns_log: pd.DataFrame | None = None,
                strategy: str | None = None) -> pd.DataFrame:
    """One row per (threshold, penalty, window): outcome, first divergence, lull turn.

    `bids` is a run's bid log (RunRecord.bids_frame() or store.bids(run_id)). Turn numbers are
    the engine's (1-based); `first_divergence` and `lull_turn` are None where there is none.
    `turns_log` (the run's turns frame): a person as selector's picks (see `counterfactual`).
    `strategy` (the run's): under one that names its speakers (round_robin, random, selector,
    all_speak) every point is the recorded run, since the parameters never enter it.
    """
    turns = recorded_turns(bids, turns_log, strategy)
    rows = [_row(turns, t, p, w) for w in _values(windows, "windows", int)
            for p in _values(penalties, "penalties", float)
            for t in _values(thresholds, "thresholds", float)]
    frame = pd.DataFrame(rows, columns=WHATIF_COLUMNS)
    for column in ("first_divergence", "lull_turn", "recorded_lull_turn"):
        frame[column] = frame[column].astype("Int64")
    return frame


def whatif_record(record: RunRecord, thresholds: Iterable[float] | None = None,
                  penalties: Iterable[float] | None = None,
                  windows: Iterable[int] | None = None) -> pd.DataFrame:
    """whatif_grid for a RunRecord; the default axes include the run's own values."""
    config = record.config
    return whatif_grid(
        record.bids_frame(),
        _with(thresholds, DEFAULT_THRESHOLDS, config.get("threshold")),
        _with(penalties, DEFAULT_PENALTIES, config.get("recency_penalty")),
        list(windows) if windows is not None else [int(config.get("recency_window", 1))],
        turns_log=record.turns_frame(), strategy=config.get("strategy"),
    )


def whatif_run(store: RunStore, run_id: str, thresholds: Iterable[float] | None = None,
               penalties: Iterable[float] | None = None,
               windows: Iterable[int] | None = None) -> pd.DataFrame:
    """whatif_grid for a stored run (no model calls)."""
    return whatif_record(store.load_run(run_id), thresholds, penalties, windows)


def whatif_pivot(grid: pd.DataFrame, value: str = "exact_through",
                 window: int | None = None) -> pd.DataFrame:
    """A penalty (rows) × threshold (columns) matrix of one column, ready for a heatmap."""
    if value not in grid.columns:
        raise ConfigError(f"{value!r} is not a what-if column; use one of {WHATIF_COLUMNS}")
    windows = sorted(set(grid["recency_window"]))
    if window is None and len(windows) > 1:
        raise ConfigError(f"the grid has several recency windows {windows}: pass window=")
    part = grid if window is None else grid[grid["recency_window"] == window]
    return part.pivot(index="recency_penalty", columns="threshold", values=value)


def _with(values: Iterable[float] | None, default: Sequence[float],
          own: Any) -> list[float]:
    if values is not None:
        return list(values)
    return sorted({*default, *([float(own)] if own is not None else [])})


def _values(values: Iterable[Any], name: str, kind: type) -> list[Any]:
    out = list(dict.fromkeys(values))
    if not out:
        raise ConfigError(f"{name} must not be empty")
    for value in out:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{name} must be numbers, got {value!r}")
        if kind is int and (not float(value).is_integer() or value < 0):
            raise ConfigError(f"{name} must be integers >= 0, got {value!r}")
    return [kind(v) for v in out]
