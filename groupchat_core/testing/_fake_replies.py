"""What the fake OpenAI server answers: scripted replies, recorded requests, provider quirks.

Pure data and JSON building (no sockets), so fake_server.py keeps only the HTTP plumbing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
MODELS_PATHS = frozenset({"/v1/models", "/models"})
_REDACTED_HEADERS = frozenset({"authorization", "api-key", "x-api-key"})
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
}


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request; build it with tool_call(), text() or error()."""

    kind: Literal["tool_call", "text", "error"]
    content: str | None = None  # assistant text, or the error message for kind "error"
    tool_name: str = "respond"
    arguments: str = ""
    status: int = 200
    err_type: str | None = None
    retry_after: float | None = None
    retry_after_ms: float | None = None
    latency: float = 0.0
    # Streaming (a request with stream=true): how the arguments (or text) are split into deltas,
    # the pause before each delta, whether the stream is cut off after the last scripted
    # fragment, and whether multibyte characters are split across separate network writes.
    fragments: tuple[str, ...] | None = None
    chunk_delay: float = 0.0
    cut: bool = False
    split_utf8: bool = False
    # Called (on the server's thread) before each network write of a stream with its index, so
    # a test can hold the stream at a point of its choosing (e.g. until it has looked).
    pace: Callable[[int], None] | None = None


Responder = Callable[[dict[str, Any]], Reply]


def tool_call(
    score: Any,
    message: Any,
    *,
    name: str = "respond",
    arguments_raw: str | None = None,
    latency: float = 0.0,
    fragments: list[str] | None = None,
    chunk_delay: float = 0.0,
    cut: bool = False,
    split_utf8: bool = False,
    pace: Callable[[int], None] | None = None,
) -> Reply:
    """A single function call; arguments_raw lets tests send malformed arguments verbatim.

    For a streamed request the arguments go out as tool-call deltas: `fragments` scripts the
    split (their join is the arguments), else about eight characters a delta; `chunk_delay`
    paces them; `cut` drops the connection after the fragments (no finish, no [DONE]);
    `split_utf8` writes each multibyte character's bytes in two network writes; `pace(i)` is
    called before write i of the stream (a test holds the stream there until it returns)."""
    if fragments is not None:
        arguments_raw = "".join(fragments)
    if arguments_raw is None:
        arguments_raw = json.dumps({"score": score, "message": message}, ensure_ascii=False)
    return Reply("tool_call", tool_name=name, arguments=arguments_raw, latency=latency,
                 fragments=tuple(fragments) if fragments is not None else None,
                 chunk_delay=chunk_delay, cut=cut, split_utf8=split_utf8, pace=pace)


def text(content: str, *, latency: float = 0.0, chunk_delay: float = 0.0) -> Reply:
    """Plain assistant content, as a model that ignores tools would answer (streamed: a delta
    per word)."""
    return Reply("text", content=content, latency=latency, chunk_delay=chunk_delay)


def error(
    status: int,
    message: str = "FakeOpenAIServer scripted error",
    *,
    err_type: str | None = None,
    latency: float = 0.0,
    retry_after: float | None = None,
    retry_after_ms: float | None = None,
) -> Reply:
    """An HTTP error in OpenAI's error format, to drive client error handling; `retry_after`
    (seconds) and `retry_after_ms` add the `Retry-After` / `retry-after-ms` headers."""
    fallback = "server_error" if status >= 500 else "invalid_request_error"
    err_type = err_type or _ERROR_TYPES.get(status, fallback)
    return Reply(
        "error", message, status=status, err_type=err_type, retry_after=retry_after,
        retry_after_ms=retry_after_ms, latency=latency,
    )


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received; header names are lower-cased, repr hides credentials."""

    path: str
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    status: int
    received_at: float  # time.monotonic() on arrival

    def __repr__(self) -> str:
        shown = {k: "<redacted>" if k in _REDACTED_HEADERS else v for k, v in self.headers.items()}
        return (
            f"RecordedRequest(path={self.path!r}, model={self.model!r}, body={self.body!r}, "
            f"headers={shown!r}, status={self.status}, received_at={self.received_at!r})"
        )


@dataclass(frozen=True)
class ModelConfig:
    """Provider quirks for one model name (each makes matching requests fail with 400)."""

    reject_forced_tool_choice: bool = False
    reject_tools: bool = False
    reject_required_tool_choice: bool = False
    context_window: int | None = None  # reject prompts longer than this many tokens
    reject_stream: bool = False  # stream=true gets a 400
    stream_text_only: bool = False  # streamed replies carry content deltas, never tool calls
    no_stream_usage: bool = False  # streams ignore stream_options.include_usage (llama.cpp)


@dataclass
class _Response:
    status: int
    payload: dict[str, Any]
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    events: list[bytes] | None = None  # a server-sent-events body, one element per write
    chunk_delay: float = 0.0
    cut: bool = False
    model: str = ""
    pace: Callable[[int], None] | None = None


def _error(status: int, message: str, err_type: str, delay: float = 0.0) -> _Response:
    payload = {"error": {"message": message, "type": err_type, "param": None, "code": err_type}}
    return _Response(status, payload, delay)


def _count_words(content: Any) -> int:
    """Deterministic token stand-in: whitespace words in string or text-part content."""
    if isinstance(content, str):
        return len(content.split())
    if isinstance(content, list):
        return sum(_count_words(p.get("text")) for p in content if isinstance(p, dict))
    return 0


def _parse_object(raw: bytes) -> dict[str, Any] | None:
    """The request body as a JSON object, or None if it is not one."""
    try:
        parsed = json.loads(raw or b"{}")
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _rejection(body: dict[str, Any], config: ModelConfig) -> str | None:
    """The 400 message a picky provider would send for this request, if any."""
    choice = body.get("tool_choice")
    if config.reject_stream and body.get("stream"):
        return "stream=true is not supported by this model"
    if config.reject_tools and body.get("tools"):
        return "tools are not supported by this model"
    if config.reject_forced_tool_choice and isinstance(choice, dict):
        return "tool_choice of type 'function' is not supported by this model"
    if config.reject_required_tool_choice and choice == "required":
        return "tool_choice 'required' is not supported by this model"
    return None


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's token count of a request, as a context window sees it: about four characters
    a token over every message's content and the tools schema (as JSON), plus four tokens of
    framing per message. Deterministic and independent of any tokenizer."""
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    chars = sum(len(_text(m.get("content"))) for m in messages if isinstance(m, dict))
    tools = body.get("tools")
    if tools:
        chars += len(json.dumps(tools, ensure_ascii=False))
    return -(-chars // 4) + 4 * len(messages)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _context_rejection(body: dict[str, Any], config: ModelConfig) -> _Response | None:
    """llama-cpp-python's (OpenAI-style) 400 for a prompt longer than the context window."""
    window = config.context_window
    if window is None:
        return None
    used = prompt_tokens(body)
    if used <= window:
        return None
    completion = body.get("max_tokens")
    completion = completion if isinstance(completion, int) else 0
    message = (f"This model's maximum context length is {window} tokens. However, you "
               f"requested {used + completion} tokens ({used} in the messages, {completion} in "
               "the completion). Please reduce the length of the messages or completion.")
    payload = {"error": {"message": message, "type": "invalid_request_error",
                         "param": "messages", "code": "context_length_exceeded"}}
    return _Response(400, payload)


def _completion(body: dict[str, Any], reply: Reply, n: int) -> dict[str, Any]:
    """A chat.completion object the openai SDK parses, with word-count usage."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    finish_reason, completion_tokens = "stop", _count_words(reply.content)
    if reply.kind == "tool_call":
        function = {"name": reply.tool_name, "arguments": reply.arguments}
        message["tool_calls"] = [{"id": f"call_{n}", "type": "function", "function": function}]
        finish_reason, completion_tokens = "tool_calls", _count_words(reply.arguments)
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    prompt_tokens = sum(_count_words(m.get("content")) for m in messages if isinstance(m, dict))
    choice = {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
    return {
        "id": f"chatcmpl-fake-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


STREAM_FRAGMENT_CHARS = 8  # default split of streamed arguments


def _split_utf8(data: bytes) -> list[bytes]:
    """The bytes cut inside every multibyte character (each part sent as its own write)."""
    parts, start = [], 0
    for i in range(1, len(data)):
        if data[i] & 0xC0 == 0x80 and data[i - 1] & 0xC0 == 0xC0:  # after a lead byte
            parts.append(data[start:i])
            start = i
    parts.append(data[start:])
    return parts


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def stream_events(body: dict[str, Any], reply: Reply, n: int,
                  config: ModelConfig) -> list[bytes]:
    """The SSE writes of a streamed reply: a chat.completion.chunk per delta, the finish, usage
    when asked for (stream_options.include_usage), then [DONE]; a cut stream stops early."""
    head = {"id": f"chatcmpl-fake-{n}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": body.get("model", "")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[dict[str, Any]] = []
    as_text = reply.kind == "text" or config.stream_text_only
    if as_text:
        words = (reply.content if reply.kind == "text" else reply.arguments) or ""
        pieces = [w + " " for w in words.split(" ")] if words else []
        if pieces:
            pieces[-1] = pieces[-1][:-1]
        events.append(chunk({"role": "assistant", "content": ""}))
        events += [chunk({"content": p}) for p in pieces]
        finish, completion = "stop", _count_words(words)
    else:
        args = reply.arguments
        fragments = list(reply.fragments) if reply.fragments is not None else [
            args[i:i + STREAM_FRAGMENT_CHARS] for i in range(0, len(args), STREAM_FRAGMENT_CHARS)]
        call = {"index": 0, "id": f"call_{n}", "type": "function",
                "function": {"name": reply.tool_name, "arguments": ""}}
        events.append(chunk({"role": "assistant", "content": None, "tool_calls": [call]}))
        events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]})
                   for f in fragments]
        finish, completion = "tool_calls", _count_words(args)
    out = [_sse(e) for e in events]
    if reply.cut:
        return _writes(out, reply.split_utf8)
    out.append(_sse(chunk({}, finish)))
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") and not config.no_stream_usage:
        messages = body.get("messages")
        messages = messages if isinstance(messages, list) else []
        prompt = sum(_count_words(m.get("content")) for m in messages if isinstance(m, dict))
        usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                 "total_tokens": prompt + completion}
        out.append(_sse({**head, "choices": [], "usage": usage}))
    out.append(b"data: [DONE]\n\n")
    return _writes(out, reply.split_utf8)


def _writes(events: list[bytes], split_utf8: bool) -> list[bytes]:
    if not split_utf8:
        return events
    return [part for event in events for part in _split_utf8(event)]
