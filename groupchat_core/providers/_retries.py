"""Retries with backoff: which failures are transient, how long to wait (the server's
Retry-After, else jittered exponential backoff), the bid's deadline, and context-window errors."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._deployments import pace_routed
from ._limit_waits import queued, queued_seconds
from ._limiter import CALL_LIMITER
from ._litellm import litellm_module
from ._ratelimit import RATE_LIMITS
from ._requests import one_request
from ._tokens import count_tokens

RETRY_BASE_DELAY = 0.5  # seconds; doubled per attempt, capped below
RETRY_MAX_DELAY = 8.0
MAX_RETRY_AFTER = 30.0  # seconds: the longest a server's Retry-After is honoured


def is_retryable(exc: Exception) -> bool:
    litellm = litellm_module()
    text = str(exc).lower()
    if "api_key" in text or "credentials" in text or "api key" in text:
        return False  # a missing or bad key is reported as a server error; retrying cannot help
    if _LLAMA_CPP_OVERFLOW in text:
        return False  # the same prompt overflows the same window again (see below)
    return isinstance(
        exc,
        litellm.RateLimitError
        | litellm.InternalServerError
        | litellm.ServiceUnavailableError
        | litellm.APIConnectionError
        | litellm.BadGatewayError,
    )


def _retry_delay(attempt: int) -> float:
    delay: float = min(RETRY_MAX_DELAY, RETRY_BASE_DELAY * 2.0**attempt)
    return delay * (0.5 + random.random() / 2)


def _header_sources(exc: BaseException) -> list[Any]:
    """Where litellm keeps a failed response's headers (1.106: `litellm_response_headers`; its
    RateLimitError rebuilds `response` without them, so that is only a fallback)."""
    response = getattr(exc, "response", None)
    sources = [getattr(exc, "litellm_response_headers", None), getattr(exc, "headers", None),
               getattr(response, "headers", None)]
    return [s for s in sources if s]


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a failed response asked for (`retry-after-ms`, else `Retry-After` in seconds or
    as an HTTP date), or None when it named none."""
    for headers in _header_sources(exc):
        try:
            millis = headers.get("retry-after-ms")
            if millis is not None:
                return max(0.0, float(millis) / 1000.0)
            raw = headers.get("retry-after")
        except (AttributeError, TypeError, ValueError):
            continue
        if raw is None:
            continue
        try:
            return max(0.0, float(raw))
        except ValueError:
            parsed = email.utils.parsedate_tz(str(raw))
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def _time_left(deadline: float | None) -> float | None:
    """Seconds until the bid's deadline (a loop time, BidRequest.deadline), None without one."""
    return None if deadline is None else deadline - asyncio.get_running_loop().time()


def _request_tokens(kwargs: dict[str, Any]) -> int:
    """What a request may use, for a tokens-per-minute limit: prompt estimate plus max_tokens."""
    model = str(kwargs.get("model", ""))
    text = "\n".join(str(m.get("content") or "") for m in kwargs.get("messages") or [])
    tools = kwargs.get("tools")
    prompt = count_tokens(model, text) + (count_tokens(model, json.dumps(tools)) if tools else 0)
    return prompt + int(kwargs.get("max_tokens") or 0)


def _used_tokens(response: Any) -> int | None:
    usage = getattr(response, "usage", None)
    total = getattr(usage, "total_tokens", None)
    return total if isinstance(total, int) else None


@dataclass
class Attempts:
    calls: int = 0
    retries_left: int = 0
    errors: list[str] = field(default_factory=list)


Send = Callable[[Any, dict[str, Any]], Awaitable[Any]]


async def call_with_retries(kwargs: dict[str, Any], attempts: Attempts,
                            send: Send = one_request, *, deadline: float | None = None) -> Any:
    """One request, retried on transient errors: after the server's Retry-After when it sends
    one (at most MAX_RETRY_AFTER, and never past the bid's deadline: the error is raised at
    once instead; `deadline` is the bid's, a loop time), else after a jittered exponential
    backoff. Per-model rate limits (_ratelimit.py), a routed model's deployments' rpm and the
    in-flight cap are waited for before each attempt; those waits stop the bid's deadline
    (_limit_waits.py). `send` makes the request (one_request, or a streamed one: _streaming.py)."""
    litellm = litellm_module()
    model = str(kwargs.get("model", ""))
    while True:
        tokens = _request_tokens(kwargs) if RATE_LIMITS.wants_tokens(model) else 0
        async with queued():
            reserved = await RATE_LIMITS.acquire(model, tokens)
        attempts.calls += 1
        try:
            # The deployments' rpm first, then an in-flight slot: a request paced for its rpm
            # holds no slot another model's request could use while it waits.
            async with pace_routed(kwargs):
                async with queued():
                    await CALL_LIMITER.acquire()
                try:
                    response = await send(litellm, kwargs)
                finally:
                    CALL_LIMITER.release()
        except Exception as exc:
            RATE_LIMITS.settle(model, reserved, 0)  # a refused request used no tokens
            retryable = is_retryable(exc)
            asked = retry_after_seconds(exc) if retryable else None
            if asked is not None:  # every bid on this model waits, not only this one
                RATE_LIMITS.pause(model, min(asked, MAX_RETRY_AFTER))
            if not retryable or attempts.retries_left <= 0:
                raise
            delay = _retry_delay(attempts.calls - 1) if asked is None else min(
                asked, MAX_RETRY_AFTER)
            left = _time_left(None if deadline is None else deadline + queued_seconds())
            if left is not None and delay >= left:
                raise  # the retry could not finish in time: report the real cause now
            attempts.retries_left -= 1
            await asyncio.sleep(delay)
            continue
        RATE_LIMITS.settle(model, reserved, _used_tokens(response) if reserved else None)
        return response


_CONTEXT_PHRASES = (
    "maximum context length", "context length exceeded", "context_length_exceeded",
    "context window", "exceeds the available context size", "maximum context limit",
    "longer than the model's context length",
)
_STATED_WINDOW = re.compile(
    r"maximum context length is (\d+)|context window of (\d+)|context size \((\d+)", re.I)


# llama-cpp-python's server (0.3.x) answers HTTP 500 with this numpy error when the prompt plus
# the reply outgrow its n_ctx, instead of a context-length 400 (seen with SmolLM2 at n_ctx 520-600).
_LLAMA_CPP_OVERFLOW = "could not broadcast input array from shape"


def is_context_window_error(exc: BaseException) -> bool:
    """A request refused because the prompt (plus the reply's room) exceeds the context window:
    litellm's ContextWindowExceededError, a 400 whose text says so, or llama-cpp-python's 500."""
    litellm = litellm_module()
    if isinstance(exc, litellm.ContextWindowExceededError):
        return True
    if _LLAMA_CPP_OVERFLOW in str(exc).lower():
        return True
    if not (isinstance(exc, litellm.BadRequestError) or getattr(exc, "status_code", None) == 400):
        return False
    text = str(exc).lower()
    return any(phrase in text for phrase in _CONTEXT_PHRASES)


def stated_context_window(text: str) -> int | None:
    """The window a context-length error names ("maximum context length is 640 tokens")."""
    match = _STATED_WINDOW.search(text)
    if match is None:
        return None
    return int(next(g for g in match.groups() if g is not None))
