"""The conversation as the bid prompt shows it, trimmed to what the model's context can take.

Token counts are cached per model and line, so a long chat does not re-count its history for
every agent on every turn; in the common case (it all fits) a turn costs one join.

What the history may use (PromptBudget): the context window (the agent's declared
`context_window`, else litellm's input limit for the model, 8,192 when unknown), minus the room
kept for the reply (`max_tokens`, at most half the window), minus everything else sent with it:
the system prompt, the tools schema as JSON, the rest of the bid prompt, the chat framing of the
messages, and a safety margin for what our count cannot see (chat templates, tokenizer drift).
When a server still says the context is exceeded, the budget shrinks (`shrink`) for the rest of
the run: to the window the error names, else to half the history that was sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..providers._tokens import count_tokens, input_budget

if TYPE_CHECKING:
    from .._agent import Agent

SAFETY_TOKENS = 128  # chat templates, tool wrappers and tokenizer drift beyond our count
FRAMING_TOKENS = 12  # role markers of the system and user messages, and the reply's priming


def omitted_note(omitted: int) -> str:
    """The prompt's `{omitted_note}`: how many old messages the history block leaves out."""
    return "" if not omitted else (
        f" ({omitted} earlier message{'s' if omitted != 1 else ''} left out)")


def completion_reserve(max_tokens: int, window: int) -> int:
    """Tokens kept free for the reply: max_tokens, but never more than half the window (a
    max_tokens above the window would otherwise leave no room for any prompt)."""
    return max(0, min(max_tokens, window // 2))


def declared_window(agent: Agent) -> int | None:
    """The context window the agent declares (`Agent.context_window`), if any and valid."""
    value = getattr(agent, "context_window", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


@dataclass
class PromptBudget:
    """What one agent's bid prompts may use; mutable because a rejection teaches us more."""

    model: str | None  # what tokens are counted as (None: estimated, see _tokens.py)
    window: int  # context window in tokens
    max_tokens: int  # what the agent asks the reply to be capped at
    fixed: int  # tokens sent every time: system prompt, tools JSON, framing
    cap: int | None = None  # most history tokens to send, set by a rejection naming no window
    sent: int = 0  # history tokens in the latest prompt built (what a rejection refused)

    @classmethod
    def for_agent(cls, agent: Agent, *, estimate: bool = False) -> PromptBudget:
        """`estimate`: the agent's model is not litellm's (a provider the chat was given), so
        its tokens are estimated and its window is the default unless declared."""
        model = None if estimate else agent.model_name
        tools = agent.tools_list_dictionary
        fixed = FRAMING_TOKENS + count_tokens(model, agent.system_prompt)
        if tools:
            fixed += count_tokens(model, json.dumps(tools, ensure_ascii=False))
        window = declared_window(agent) or input_budget(model)
        return cls(model, window, agent.max_tokens, fixed)

    @property
    def reserve(self) -> int:
        return completion_reserve(self.max_tokens, self.window)

    def history_budget(self, prompt_tokens: int) -> int:
        """Tokens the conversation block may take, given the tokens of the rest of the bid
        prompt (the template filled with everything but the conversation)."""
        room = self.window - self.reserve - self.fixed - prompt_tokens - SAFETY_TOKENS
        return room if self.cap is None else min(room, self.cap)

    def shrink(self, stated_window: int | None) -> None:
        """After a context-window rejection: believe the window the server named when it is
        smaller than ours, else send at most half the history that was refused."""
        if stated_window is not None and 0 < stated_window < self.window:
            self.window = stated_window
        else:
            self.cap = self.sent // 2 if self.cap is None else min(self.cap, self.sent // 2)


class Window(NamedTuple):
    """The history block for one prompt."""

    text: str
    omitted: int  # old messages left out
    tokens: int  # its token count (lines plus one per newline)


class Transcript:
    """`role: content` lines, oldest first; the first line is the user's task."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._counts: dict[str | None, list[int]] = {}
        self._totals: dict[str | None, int] = {}
        self._full: str | None = None

    def append(self, role: str, content: str) -> None:
        self.lines.append(f"{role}: {content}")
        self._full = None

    def _line_counts(self, model: str | None) -> tuple[list[int], int]:
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

    def window(self, model: str | None, budget: int) -> Window:
        """History text within `budget` tokens, and how many old messages were left out.

        The task is always kept; whole oldest messages after it are dropped, never part of one.
        Lines are joined by newlines, which the per-line counts leave out: each costs a token
        at most, so it is counted as one.
        """
        counts, total = self._line_counts(model)
        full = total + len(self.lines) - 1
        if full <= budget or len(self.lines) <= 1:
            return Window(self.full_text(), 0, full)
        used = counts[0]
        keep_from = len(self.lines)
        while keep_from > 1 and used + counts[keep_from - 1] + 1 <= budget:
            keep_from -= 1
            used += counts[keep_from] + 1
        kept = [self.lines[0], *self.lines[keep_from:]]
        return Window("\n".join(kept), keep_from - 1, used)


# --- what a bidder sees (docs/engine.md "What agents see") --------------------------------

# `{conversation}` in a typed prompt: the history went as turns before the instruction.
TYPED_CONVERSATION = "(the messages before this one)"


def aliases(names: Sequence[str]) -> dict[str, str]:
    """speaker_names anonymised: "Participant 1..N" by roster order, stable for the chat (the
    records keep the real names; only what a bidder reads is relabelled)."""
    return {name: f"Participant {i}" for i, name in enumerate(names, 1)}


def typed_turns(history: Sequence[tuple[str, str]], agent_name: str,
                omitted: int) -> list[dict[str, Any]]:
    """history typed (swarms 16.0.3, swarms issue #2039): the task as the first user turn,
    the bidder's own posts as assistant turns, everyone else's as user turns "Name: text";
    the `omitted` oldest messages after the task are left out, as the flattened block does.
    A stable prefix across turns is what lets a server cache the prompt."""
    if not history:
        return []
    turns: list[dict[str, Any]] = [{"role": "user", "content": history[0][1]}]
    for role, content in history[1 + omitted:]:
        if role == agent_name:
            turns.append({"role": "assistant", "content": content})
        else:
            turns.append({"role": "user", "content": f"{role}: {content}"})
    return turns
