"""Distractors in one run: how many posted turns went to roster entries marked off-topic.

Why: AutoGen's speaker-selection test once picked an off-topic agent 54 times (microsoft/autogen
PR #736); a chat's `distractors` setting names such entries, and this counts their floor time
from the recorded turns, as speaker_metrics counts posted messages (docs/outcomes.md,
"Distractors"). The per-strategy share with its Wilson interval and the accuracy cost are in
groupchat_core.sweeps (`distractor_report`), which reads these counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ._metrics import speakers


@dataclass(frozen=True)
class DistractorTurns:
    """One distractor's posted turns in one run, out of every posted turn."""

    name: str
    turns: int
    posted: int

    def text(self) -> str:
        """The Analysis page's line: "Distractor Chatter held the floor in 3 of 8 turns."."""
        noun = "turn" if self.posted == 1 else "turns"
        return f"Distractor {self.name} held the floor in {self.turns} of {self.posted} {noun}."


def run_distractors(config: Mapping[str, Any] | None) -> list[str]:
    """The distractors a recorded run's config names ([] for runs from before the setting)."""
    value = (config or {}).get("distractors") or []
    return [str(n) for n in value] if isinstance(value, list | tuple) else []


def distractor_turns(turns: pd.DataFrame, distractors: Iterable[str]) -> list[DistractorTurns]:
    """Per distractor (in the order given), its posted turns in a turns, bids or messages
    frame, out of all posted turns (the task excluded, as in speaker_metrics)."""
    order = speakers(turns)
    return [DistractorTurns(name, order.count(name), len(order)) for name in distractors]
