"""Reading a litellm reply: the bid it carries, its path, usage and cost; failed-call records."""

from __future__ import annotations

from typing import Any

from .._bidding import ParsedBid, parse_text_reply, parse_tool_calls
from .._errors import ModelCallError
from .._records import BidPath
from ._endpoints import error_kind
from ._litellm import litellm_module
from ._tool_modes import PATHS, TEXT_MODES

MAX_ERROR_CHARS = 2_000  # stored error text (bid.error); a provider body is not a log file


def parse_response(response: Any, mode: str) -> tuple[ParsedBid, BidPath]:
    """Read the bid from a reply. A respond call counts in every mode: a server asked for JSON
    text may still answer with the call (the path then says `tool_call:json`)."""
    choice = response.choices[0]
    message = choice.message
    calls = [(c.function.name, c.function.arguments) for c in (message.tool_calls or [])]
    parsed = parse_tool_calls(calls)
    if parsed is not None:
        path: BidPath = "tool_call:json" if mode in TEXT_MODES else PATHS[mode]
    else:
        parsed = parse_text_reply(message.content)
        path = PATHS[mode] if mode in TEXT_MODES else "text_fallback"
    if not parsed.readable and getattr(choice, "finish_reason", None) == "length":
        parsed = ParsedBid(parsed.score, parsed.message,
                           f"{parsed.error} (the reply was cut off at max_tokens)", False)
    return parsed, path


def usage_and_cost(response: Any) -> tuple[int | None, int | None, float | None]:
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    hidden = getattr(response, "_hidden_params", None) or {}
    cost = hidden.get("response_cost")
    if cost is None and "response_cost" not in hidden:  # litellm already tried: no price known
        try:
            cost = litellm_module().completion_cost(completion_response=response)
        except Exception:
            cost = None
    return prompt, completion, (float(cost) if cost is not None else None)


def cap_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Text cut to `limit` characters with a note of how much was cut (for stored errors)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} characters cut)"


class ModelCallFailed(ModelCallError):
    """A bid call that failed for good: the ModelCallError of its last request (status, code,
    retry_after, cause) with `attempts` the HTTP calls the whole bid took (`calls`, the same
    count), its text the bid's error ("RateLimitError: ...")."""

    cause: BaseException  # always set: the failure that ended the bid

    def __init__(self, cause: BaseException, calls: int) -> None:
        last = cause if isinstance(cause, ModelCallError) else None
        super().__init__(f"{error_kind(cause)}: {cause}", attempts=calls, cause=cause,
                         status=None if last is None else last.status,
                         code=None if last is None else last.code,
                         retry_after=None if last is None else last.retry_after)

    @property
    def calls(self) -> int:
        return self.attempts

    @calls.setter
    def calls(self, value: int) -> None:
        self.attempts = value
