"""Streamed bids: one stream=true request, its respond-call deltas read as they arrive.

Why: a turn lasts as long as its slowest bid; streaming lets observers watch every candidate
form. The final bid is read from the accumulated reply by the same parser as a non-streamed
one (_replies.parse_response), so streaming changes when a bid is seen, never what it is.
The partial JSON is read with jiter's partial mode (installed with openai), so the score shows
once its number is complete and the message grows token by token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import jiter

from .._bidding import MAX_MESSAGE_CHARS, MAX_TEXT_SCAN_CHARS, ParsedBid, parse_score
from .._records import BidPath
from .._secrets import held_secrets, kwargs_secrets
from ._bodies import REQUEST_DEADLINE
from ._call_errors import REFUSING_CODES, code_of, from_litellm
from ._delta_gate import DeltaGate
from ._direct import direct_route, direct_stream, estimated_usage
from ._providers import DeltaSink
from ._requests import deadline_exceeded, raise_if_bounded, set_request_deadline
from ._retries import is_context_window_error

STREAMED_PATHS: dict[str, BidPath] = {
    "tool_call": "tool_call:stream",
    "tool_call:required": "tool_call:required:stream",
    "tool_call:auto": "tool_call:auto:stream",
}
UNSTREAMED_PATHS: dict[str, BidPath] = {
    "tool_call": "tool_call:unstreamed",
    "tool_call:required": "tool_call:required:unstreamed",
    "tool_call:auto": "tool_call:auto:unstreamed",
    "text_fallback": "text_fallback:unstreamed",
}
_NUMBER_TAIL = frozenset("0123456789.eE+-")


class PartialBid:
    """The respond call's arguments as they grow, read leniently when asked (`refresh`).

    Fragments are only collected as they arrive; the partial JSON is parsed when the delta gate
    has room for an event (_delta_gate.py), so a flood of tiny deltas costs a few parses a
    second, not one per delta. Reading stops past MAX_TEXT_SCAN_CHARS (the final parse still
    reads everything within the body cap), so a runaway stream costs bounded parsing work."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.score: float | None = None
        self.message = ""
        self._dirty = False

    def feed(self, fragment: str) -> bool:
        """Add a fragment; True when it is worth reading again (`refresh`)."""
        self.parts.append(fragment)
        self.size += len(fragment)
        if not fragment or self.size > MAX_TEXT_SCAN_CHARS:
            return False
        self._dirty = True
        return True

    def refresh(self) -> bool:
        """Read the arguments so far; True when the visible score or message changed."""
        if not self._dirty:
            return False
        self._dirty = False
        text = "".join(self.parts)
        try:
            value = jiter.from_json(text.encode(), partial_mode="trailing-strings")
        except ValueError:
            return False
        if not isinstance(value, dict):
            return False
        score = _complete_score(value, text)
        message = value.get("message")
        message = message[:MAX_MESSAGE_CHARS] if isinstance(message, str) else self.message
        if (score, message) == (self.score, self.message):
            return False
        self.score, self.message = score, message
        return True


def _complete_score(value: dict[str, Any], text: str) -> float | None:
    """The score once nothing more can be appended to it: a later key follows it, or the text
    has moved past it (a comma or the closing brace); "0." then "7" is not 0 then 0.7."""
    if "score" not in value:
        return None
    if next(reversed(value)) == "score":
        tail = text.rstrip()[-1:]
        if tail not in (",", "}"):
            return None
    score, error = parse_score(value["score"])
    return None if error else score


@dataclass
class StreamedReply:
    """What a stream delivered, shaped like a chat completion for the shared reply parser."""

    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [name, arguments...]
    content: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Any = None
    cut: str | None = None  # why the stream ended early (after respond deltas), else None
    respond: int | None = None  # the index of the first respond call

    @property
    def has_respond(self) -> bool:
        return self.respond is not None

    def text(self) -> str:
        """What litellm counts as a streamed reply's output when it counts tokens itself: the
        content, then each tool call as JSON (its id, type, name and arguments)."""
        calls = [json.dumps({"id": f"call_{index}", "type": "function", "function": {
            "name": parts[0], "arguments": "".join(parts[1:])}})
            for index, parts in sorted(self.calls.items())]
        return "".join(self.content) + "".join(calls)

    def as_response(self) -> Any:
        """A completion-like object: choices[0].message.tool_calls / content, finish_reason."""
        tool_calls = [
            SimpleNamespace(function=SimpleNamespace(name=parts[0], arguments="".join(parts[1:])))
            for _, parts in sorted(self.calls.items())]
        message = SimpleNamespace(tool_calls=tool_calls or None,
                                  content="".join(self.content) or None)
        choice = SimpleNamespace(message=message, finish_reason=self.finish_reason)
        return SimpleNamespace(choices=[choice], usage=self.usage)


def _read_chunk(chunk: Any, reply: StreamedReply, partial: PartialBid) -> bool:
    """Fold one streamed chunk into the reply; True when the respond arguments grew."""
    usage = getattr(chunk, "usage", None)
    if usage is not None and getattr(usage, "total_tokens", None):
        reply.usage = usage
    choices = getattr(chunk, "choices", None) or []
    if not choices:
        return False
    choice = choices[0]
    if getattr(choice, "finish_reason", None):
        reply.finish_reason = choice.finish_reason
    delta = getattr(choice, "delta", None)
    if delta is None:
        return False
    if getattr(delta, "content", None):
        reply.content.append(delta.content)
    changed = False
    for call in getattr(delta, "tool_calls", None) or []:
        index = getattr(call, "index", 0) or 0
        function = getattr(call, "function", None)
        parts = reply.calls.setdefault(index, [""])
        name = getattr(function, "name", None)
        if name and name != parts[0]:  # sent once (OpenAI) or again with every delta (llama.cpp)
            parts[0] += name
        if reply.respond is None and parts[0] == "respond":
            reply.respond = index
        arguments = getattr(function, "arguments", None) or ""
        if arguments:
            parts.append(arguments)
        if index == reply.respond and arguments:
            changed = partial.feed(arguments) or changed
        elif index == reply.respond and len(parts) > 1 and not partial.parts:
            changed = partial.feed("".join(parts[1:])) or changed  # arguments before the name
    return changed


async def streamed_request(litellm: Any, kwargs: dict[str, Any], sink: DeltaSink) -> StreamedReply:
    """One stream=true request under a total deadline of Agent.timeout, first byte to last
    delta (a hostile server trickling deltas cannot hold a bid past it).

    Deltas reach `sink` through a DeltaGate (masked, coalesced, the loop yielded to). A failure
    before any respond delta is raised like a non-streamed one (retried, stepped down,
    reported); after respond deltas the stream counts as cut off: what arrived is the reply,
    and the parser reports it unreadable when its arguments are incomplete."""
    limit = kwargs.get("timeout")
    reply, partial = StreamedReply(), PartialBid()
    gate = DeltaGate(sink, held_secrets(extra=kwargs_secrets(kwargs)))
    streamed = {**kwargs, "stream": True, "stream_options": {"include_usage": True}}
    direct = direct_route(streamed)
    token = set_request_deadline(limit)
    try:
        async with asyncio.timeout(limit):
            stream: Any
            if direct:  # OpenAI-compatible: SSE read by us (_direct.py)
                stream = direct_stream(streamed)
            else:
                stream = await litellm.acompletion(**streamed)
            async with contextlib.aclosing(stream):
                async for chunk in stream:
                    if _read_chunk(chunk, reply, partial) and gate.due() and partial.refresh():
                        gate.send(partial.score, partial.message)
                    await gate.pause()
    except TimeoutError as exc:
        raise deadline_exceeded(kwargs) from exc
    except Exception as exc:
        raise_if_bounded(kwargs, exc)
        if not reply.has_respond:
            raise from_litellm(exc) from exc  # the litellm provider's edge: one error class
        reply.cut = f"{type(exc).__name__}"
        reply.finish_reason = None
    finally:
        REQUEST_DEADLINE.reset(token)
    if direct and reply.usage is None and reply.cut is None:
        reply.usage = estimated_usage(streamed, reply.text())
    if reply.has_respond:
        partial.refresh()
        gate.send(partial.score, partial.message, final=True)
    if reply.has_respond and reply.cut is None:
        reply.cut = _ended_early(reply)
    return reply


def _ended_early(reply: StreamedReply) -> str | None:
    """Why a stream that ended cleanly still ended early: no finish reason, or respond
    arguments that stop mid-JSON without the server's "tool_calls" finish (litellm reports
    "stop" when a server sends `[DONE]` mid-call). A finish of "tool_calls" or "length" is the
    server's word, read as the same reply unstreamed would be."""
    if reply.finish_reason is None:
        return "no finish_reason"
    if reply.finish_reason in ("tool_calls", "function_call", "length") or reply.respond is None:
        return None
    arguments = "".join(reply.calls[reply.respond][1:]).encode()
    try:
        jiter.from_json(arguments)
    except ValueError:
        try:
            jiter.from_json(arguments, partial_mode="trailing-strings")
        except ValueError:
            return None  # malformed, not incomplete
        return "it ended mid tool call"
    return None


def cut_note(parsed: ParsedBid, reply: StreamedReply) -> ParsedBid:
    """An unreadable bid from a cut-off stream says so (as a reply cut at max_tokens does)."""
    if parsed.readable or reply.cut is None:
        return parsed
    return ParsedBid(parsed.score, parsed.message,
                     f"{parsed.error} (the stream was cut off: {reply.cut})", False)


def stream_refused(exc: BaseException) -> bool:
    """A provider saying it cannot stream: a 400/422-class rejection whose text names streaming
    (not a context-window error, which has its own handling)."""
    if code_of(exc) not in REFUSING_CODES or is_context_window_error(exc):
        return False
    return "stream" in str(exc)[:16_000].lower()
