"""People in the room (issue 22): how often a person choosing the speaker agrees with the
bidding rule. Reads the turn log (records or the store's turns frame); calls nothing."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._records import Turn

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Agreement:
    """Over the turns a person picked: how many, how many matched the rule's pick, the rate
    (None when nobody picked, not 0: no evidence is not disagreement)."""

    picks: int
    agreed: int

    @property
    def rate(self) -> float | None:
        return None if self.picks == 0 else self.agreed / self.picks


def _field(row: Any, name: str) -> Any:
    value = row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def selector_agreement(turns: Iterable[Turn] | pd.DataFrame) -> Agreement:
    """The agreement rate of human as selector: a turn counts when a person picked
    (`human_pick` set); it agrees when the pick is the bidding rule's (`rule_winner`).
    `turns`: Turn records, dicts, or a turns DataFrame (RunRecord.turns_frame(), the store's)."""
    rows: Iterable[Any]
    if hasattr(turns, "to_dict") and hasattr(turns, "columns"):
        rows = turns.to_dict("records")  # a DataFrame
    else:
        rows = turns
    picks = agreed = 0
    for row in rows:
        pick = _field(row, "human_pick")
        if pick is None:
            continue
        picks += 1
        agreed += pick == _field(row, "rule_winner")
    return Agreement(picks, agreed)
