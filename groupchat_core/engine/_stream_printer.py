"""The CLI's view of streamed bids (`run --stream`): a line per delta, newest text last."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from .._records import BidDelta

TAIL_CHARS = 100  # of the message so far shown per line


class DeltaPrinter:
    """Observer asking for bid deltas: `agent (score): …tail of the message so far`."""

    wants = frozenset({"bid_delta"})

    def __init__(self, say: Callable[[object, TextIO], Any], stream: TextIO) -> None:
        self.say, self.stream = say, stream

    def __call__(self, event: Any) -> None:
        if not isinstance(event, BidDelta):
            return
        score = "…" if event.score is None else f"{event.score:.2f}"
        text = event.message[-TAIL_CHARS:]
        cut = "…" if len(event.message) > TAIL_CHARS else ""
        self.say(f"  turn {event.turn} {event.agent} ({score}): {cut}{text}", self.stream)
