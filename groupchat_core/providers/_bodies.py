"""The one bounded HTTP layer: every byte litellm reads, on every route, is capped and timed.

Why: litellm builds its exception text from the whole error body and runs its secret-redaction
regexes over it on the calling thread, holding the GIL; a 10 MB error body froze the shared loop
for 30-86 s, whatever `bid_timeout` said (an asyncio timeout cannot fire while the loop is
blocked). So bodies are bounded before litellm sees them, where the bytes are read, by an httpx
transport wrapper installed once into litellm (`install`): every async client litellm builds
gets its transport from `AsyncHTTPHandler.create_async_transport` (the OpenAI SDK routes:
`openai/`, `lm_studio/`, ...; litellm's own handler: `hosted_vllm/`, `anthropic/`, `ollama/`,
...; its module-level client), so no route is left out and none is chosen by provider name.

- an error body (status >= 400) is cut at ERROR_BODY_CAP bytes, its status (hence litellm's
  error class) kept; a reply over REPLY_BODY_CAP (a stream: STREAM_BODY_CAP) fails unread;
- the whole request, send to last byte, ends at the deadline the engine set for it
  (REQUEST_DEADLINE, Agent.timeout from the start of the request; else the request's own read
  timeout): a server trickling a byte at a time, or going silent, is stopped at the read;
- bodies are asked for uncompressed, so the caps count the bytes that will be parsed;
- a body is handed on SLICE bytes at a time and the loop is yielded to every YIELD_EVERY
  seconds of reading, so a stream of buffered events never monopolises the shared loop;
- a server-sent event stream has its runs of tiny text deltas merged (_sse_coalesce.py), so a
  flood costs litellm a few hundred chunks to parse, not 20,000.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from ._sse_coalesce import SSECoalescer

ERROR_BODY_CAP = 8_000  # bytes of an HTTP error body read; the rest is cut unread (litellm
# runs its redaction regex over the text a dozen times, ~3 ms per pass per 16 KB, on the loop)
REPLY_BODY_CAP = 2_000_000  # bytes of a whole reply; more fails the request unread
# bytes of a streamed reply: SSE repeats ~100-250 bytes of framing per delta, so a 20,000-
# character bid sent one character per delta needs about 4 MB
STREAM_BODY_CAP = 8_000_000
_STREAM_TYPES = ("text/event-stream", "application/x-ndjson")

# The loop time by which the current request must have read its last byte (set by
# _requests.one_request and _streaming.streamed_request for their own task). Why a context
# variable, when the bid's deadline is an argument (BidRequest.deadline): litellm sits between
# the request and this transport, and no argument of ours crosses it. It lives for one request.
REQUEST_DEADLINE: ContextVar[float | None] = ContextVar("groupchat_request_deadline",
                                                        default=None)


class ResponseTooLarge(Exception):
    """A reply body larger than any bid can need; the rest was not read."""


SLICE = 8_192  # bytes handed on at a time: litellm parses what it is given without awaiting
YIELD_EVERY = 0.005  # seconds a body may be read and parsed before the loop is yielded to
_last_yield: ContextVar[float] = ContextVar("groupchat_last_yield", default=0.0)


async def _share_loop() -> None:
    """Yield to the loop when this task has read for YIELD_EVERY seconds without awaiting a
    socket: litellm parses a buffered stream (thousands of small SSE events) in one go."""
    now = asyncio.get_running_loop().time()
    if now - _last_yield.get() >= YIELD_EVERY:
        await asyncio.sleep(0)
        _last_yield.set(asyncio.get_running_loop().time())


def _deadline(request: Any) -> float | None:
    """The loop time this request must end by: the engine's, else its own read timeout."""
    deadline = REQUEST_DEADLINE.get()
    if deadline is not None:
        return deadline
    read = (request.extensions.get("timeout") or {}).get("read")
    return asyncio.get_running_loop().time() + float(read) if read else None


async def _read_until(deadline: float | None, step: Any) -> Any:
    """Await one read, but not past the deadline."""
    if deadline is None:
        return await step
    try:
        async with asyncio.timeout_at(deadline):
            return await step
    except TimeoutError:
        raise deadline_error()("the request's whole deadline passed while its body was still "
                               "arriving") from None


@functools.cache
def deadline_error() -> type[Exception]:
    """The request's whole deadline passed while its bytes were still arriving: an httpx read
    timeout, so every litellm route reports it as its Timeout."""
    import httpx

    class RequestDeadline(httpx.ReadTimeout):
        pass

    return RequestDeadline


@functools.cache
def _classes() -> tuple[type, type]:
    """Build the stream and transport classes on first use (httpx comes with litellm, lazily)."""
    import httpx

    class BoundedStream(httpx.AsyncByteStream):
        """A response body that stops at `cap` bytes (cut with a note, or fail) and at the
        request's deadline."""

        def __init__(self, inner: Any, cap: int, cut: bool, deadline: float | None,
                     events: bool) -> None:
            self._inner, self._cap, self._cut, self._deadline = inner, cap, cut, deadline
            self._events = SSECoalescer(ResponseTooLarge) if events else None

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            chunks = self._inner.__aiter__()
            while True:
                try:
                    chunk = await _read_until(self._deadline, chunks.__anext__())
                except StopAsyncIteration:
                    break
                if seen + len(chunk) > self._cap:
                    if not self._cut:
                        raise ResponseTooLarge(
                            f"reply body larger than {self._cap:,} bytes; not read (a bid "
                            "reply is a few kilobytes)")
                    yield chunk[: self._cap - seen]
                    yield f"… (error body cut at {self._cap:,} bytes)".encode()
                    return
                seen += len(chunk)
                if self._events is not None:
                    chunk = self._events.feed(chunk)
                for start in range(0, len(chunk), SLICE):
                    await _share_loop()
                    yield chunk[start:start + SLICE]
            if self._events is not None:
                rest = self._events.flush()
                if rest:
                    yield rest

        async def aclose(self) -> None:
            await self._inner.aclose()

    class BoundedTransport(httpx.AsyncBaseTransport):
        """Any httpx transport, its response bodies bounded in size and time."""

        def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
            self.inner = inner

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            request.headers["Accept-Encoding"] = "identity"
            deadline = _deadline(request)
            response: httpx.Response = await _read_until(
                deadline, self.inner.handle_async_request(request))
            error = response.status_code >= 400
            kind = response.headers.get("content-type", "")
            streamed = kind.startswith(_STREAM_TYPES)
            cap = ERROR_BODY_CAP if error else STREAM_BODY_CAP if streamed else REPLY_BODY_CAP
            events = not error and kind.startswith("text/event-stream")
            response.stream = BoundedStream(response.stream, cap, error, deadline, events)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    return BoundedStream, BoundedTransport


def bounded(transport: Any) -> Any:
    """`transport` wrapped once (None: httpx's default transport)."""
    import httpx

    wrapper = _classes()[1]
    if isinstance(transport, wrapper):
        return transport
    return wrapper(transport if transport is not None else httpx.AsyncHTTPTransport())


def install(handler: Any) -> None:
    """Make every async transport litellm's AsyncHTTPHandler creates a bounded one
    (idempotent; litellm's own clients and the OpenAI SDK clients it builds all ask it)."""
    original = handler.create_async_transport
    if getattr(original, "_groupchat_bounded", False):
        return

    def create_async_transport(*args: Any, **kwargs: Any) -> Any:
        transport = original(*args, **kwargs)
        if transport is None:  # httpx's default, built with litellm's TLS settings
            import httpx

            ssl_context, verify = kwargs.get("ssl_context"), kwargs.get("ssl_verify")
            transport = httpx.AsyncHTTPTransport(
                verify=ssl_context or (True if verify is None else verify))
        return bounded(transport)

    create_async_transport._groupchat_bounded = True  # type: ignore[attr-defined]
    original_mounts = handler.create_httpx_proxy_mounts

    def create_httpx_proxy_mounts(transport: Any, *args: Any, **kwargs: Any) -> Any:
        inner = getattr(transport, "inner", transport)
        mounts = original_mounts(inner, *args, **kwargs)
        return None if mounts is None else {k: bounded(v) for k, v in mounts.items()}

    for name, fn in (("create_async_transport", create_async_transport),
                     ("create_httpx_proxy_mounts", create_httpx_proxy_mounts)):
        setattr(handler, name, staticmethod(fn))
        setattr(handler, "_" + name, staticmethod(fn))


def in_chain(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` among exc, its causes and contexts."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
