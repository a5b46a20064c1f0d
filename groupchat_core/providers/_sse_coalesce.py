"""Coalescing a flood of tiny SSE deltas at the bytes, before litellm parses them.

Why: litellm builds several pydantic objects per streamed chunk, about a millisecond of CPU
each here, so 20,000 one-character deltas cost 20-35 s of the shared loop and the bid timed out.
Consecutive OpenAI-style chunks that only extend the same text (the message content, or the
arguments of the same tool call) are merged into one chunk carrying the joined text; anything
else (a role, a name, a finish reason, usage, [DONE], another shape) passes through unchanged
and in order. Only events already received together are merged, so no delta waits for more
bytes: a stream at model speed is unchanged, a flood is parsed in a few hundred chunks.

A stream also carries at most STREAM_TEXT_CAP characters of text (a chunk of any other shape
counts at its full size): litellm counts the tokens of everything a stream delivered when the
server reports no usage, on the loop, a second and a half for 8 MB.
"""

from __future__ import annotations

import json
from typing import Any

STREAM_TEXT_CAP = 400_000  # characters a stream may carry (a chunk of another shape: its bytes)
_TEXT_KEYS = frozenset({"content", "reasoning_content", "reasoning"})
_EVENT_END = b"\n\n"
_PREFIX = b"data: "

Key = tuple[Any, ...]


def _extension(event: bytes) -> tuple[Key, str, dict[str, Any]] | None:
    """(what it extends, its text, the parsed chunk) for a chunk that only adds text."""
    if not event.startswith(_PREFIX) or event.count(b"\n") != 2:
        return None
    try:
        chunk = json.loads(event[len(_PREFIX):])
    except ValueError:
        return None
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if not isinstance(choices, list) or len(choices) != 1 or chunk.get("usage"):
        return None
    choice = choices[0]
    if not isinstance(choice, dict) or choice.get("finish_reason") or set(choice) - {
            "index", "delta", "finish_reason", "logprobs"} or choice.get("logprobs"):
        return None
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return None
    head = (chunk.get("id"), choice.get("index"))
    if len(delta) == 1 and set(delta) <= _TEXT_KEYS:
        name, text = next(iter(delta.items()))
        return ((*head, name), text, chunk) if isinstance(text, str) else None
    calls = delta.get("tool_calls")
    if set(delta) != {"tool_calls"} or not isinstance(calls, list) or len(calls) != 1:
        return None
    call = calls[0]
    function = call.get("function") if isinstance(call, dict) else None
    if (not isinstance(function, dict) or set(call) - {"index", "function"}
            or set(function) != {"arguments"} or not isinstance(function["arguments"], str)):
        return None
    return (*head, "tool", call.get("index")), function["arguments"], chunk


def _merged(chunk: dict[str, Any], text: str) -> bytes:
    delta = chunk["choices"][0]["delta"]
    if "tool_calls" not in delta:
        delta[next(iter(delta))] = text
    else:
        delta["tool_calls"][0]["function"]["arguments"] = text
    return _PREFIX + json.dumps(chunk, separators=(",", ":")).encode() + _EVENT_END


class SSECoalescer:
    """Feed it the raw body as it arrives; it returns the bytes to hand on, merged."""

    def __init__(self, too_large: type[Exception]) -> None:
        self._rest = b""
        self._bypass = False
        self._text = 0
        self._too_large = too_large

    def feed(self, data: bytes) -> bytes:
        """The complete events of what arrived so far (merged); a partial event waits. A body
        with CR line ends is handed on untouched."""
        if self._bypass or b"\r" in data:
            self._bypass = True
            rest, self._rest = self._rest, b""
            return rest + data
        buffer = self._rest + data
        cut = buffer.rfind(_EVENT_END)
        if cut < 0:
            self._rest = buffer
            return b""
        self._rest = buffer[cut + len(_EVENT_END):]
        return self._merge(buffer[:cut + len(_EVENT_END)])

    def flush(self) -> bytes:
        """What is left when the body ends (an unterminated event, unchanged)."""
        rest, self._rest = self._rest, b""
        return rest

    def _count(self, size: int) -> None:
        self._text += size
        if self._text > STREAM_TEXT_CAP:
            raise self._too_large(
                f"streamed reply larger than {STREAM_TEXT_CAP:,} characters; not read further "
                "(a bid reply is a few kilobytes)")

    def _merge(self, block: bytes) -> bytes:
        out: list[bytes] = []
        key: Key | None = None
        texts: list[str] = []
        first: dict[str, Any] | None = None
        for raw in block.split(_EVENT_END)[:-1]:
            event = raw + _EVENT_END
            found = _extension(event)
            self._count(len(found[1]) if found is not None else
                        len(event) if event.startswith(_PREFIX) else 0)
            if found is not None and found[0] == key:
                texts.append(found[1])
                continue
            if first is not None:
                out.append(_merged(first, "".join(texts)))
                key, texts, first = None, [], None
            if found is None:
                out.append(event)
            else:
                key, texts, first = found[0], [found[1]], found[2]
        if first is not None:
            out.append(_merged(first, "".join(texts)))
        return b"".join(out)
