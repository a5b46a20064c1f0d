"""The conversation as the bid prompt shows it, trimmed to a model's input budget.

Token counts are cached per model and line, so a long chat does not re-count its history for
every agent on every turn; in the common case (it all fits) a turn costs one join.
"""

from __future__ import annotations

from ._model_calls import count_tokens, input_budget

SAFETY_TOKENS = 128  # names, separators and the template's own words beyond our estimate


class Transcript:
    """`role: content` lines, oldest first; the first line is the user's task."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._counts: dict[str, list[int]] = {}
        self._totals: dict[str, int] = {}
        self._full: str | None = None

    def append(self, role: str, content: str) -> None:
        self.lines.append(f"{role}: {content}")
        self._full = None

    def _line_counts(self, model: str) -> tuple[list[int], int]:
        counts = self._counts.setdefault(model, [])
        total = self._totals.get(model, 0)
        for line in self.lines[len(counts) :]:
            counts.append(count_tokens(model, line))
            total += counts[-1]
        self._totals[model] = total
        return counts, total

    def full_text(self) -> str:
        if self._full is None:
            self._full = "\n".join(self.lines)
        return self._full

    def window(self, model: str, overhead_tokens: int,
               context_window: int | None = None) -> tuple[str, int]:
        """History text that fits the model's budget, and how many old messages were left out.

        The budget is the agent's declared `context_window` when set (local models are unknown
        to litellm), else litellm's model info. The task is always kept; whole oldest messages
        after it are dropped, never part of one.
        """
        budget = (context_window or input_budget(model)) - overhead_tokens - SAFETY_TOKENS
        counts, total = self._line_counts(model)
        if total <= budget or len(self.lines) <= 1:
            return self.full_text(), 0
        used = counts[0]
        keep_from = len(self.lines)
        while keep_from > 1 and used + counts[keep_from - 1] <= budget:
            keep_from -= 1
            used += counts[keep_from]
        kept = [self.lines[0], *self.lines[keep_from:]]
        return "\n".join(kept), keep_from - 1
