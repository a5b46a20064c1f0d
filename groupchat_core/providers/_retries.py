"""Retries with backoff: which failures are transient, how long to wait (the server's
Retry-After, else jittered exponential backoff), the bid's deadline, and context-window errors."""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .._errors import ModelCallError
from ._call_errors import CONTEXT_PHRASES, RETRYABLE_CODES, code_of
from ._deployments import pace_routed
from ._limit_waits import queued, queued_seconds
from ._limiter import CALL_LIMITER
from ._ratelimit import RATE_LIMITS
from ._requests import one_request
from ._tokens import count_tokens

RETRY_BASE_DELAY = 0.5  # seconds; doubled per attempt, capped below
RETRY_MAX_DELAY = 8.0
MAX_RETRY_AFTER = 30.0  # seconds: the longest a server's Retry-After is honoured


def is_retryable(exc: BaseException) -> bool:
    """A failure worth another try, read from the ModelCallError every provider raises
    (_call_errors.py): its code says the server was busy or failing or the connection broke."""
    if not isinstance(exc, ModelCallError):
        return False  # not a model call's failure (a body over its cap, a bug): never retried
    text = str(exc).lower()
    if "api_key" in text or "credentials" in text or "api key" in text:
        return False  # a missing or bad key is reported as a server error; retrying cannot help
    if _LLAMA_CPP_OVERFLOW in text:
        return False  # the same prompt overflows the same window again (see below)
    return exc.code in RETRYABLE_CODES


def _retry_delay(attempt: int) -> float:
    delay: float = min(RETRY_MAX_DELAY, RETRY_BASE_DELAY * 2.0**attempt)
    return delay * (0.5 + random.random() / 2)


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
                    response = await send(_litellm(), kwargs)
                finally:
                    CALL_LIMITER.release()
        except Exception as exc:
            RATE_LIMITS.settle(model, reserved, 0)  # a refused request used no tokens
            if isinstance(exc, ModelCallError):
                exc.attempts = attempts.calls
            retryable = is_retryable(exc)
            asked = exc.retry_after if retryable and isinstance(exc, ModelCallError) else None
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


_STATED_WINDOW = re.compile(
    r"maximum context length is (\d+)|context window of (\d+)|context size \((\d+)", re.I)


# llama-cpp-python's server (0.3.x) answers HTTP 500 with this numpy error when the prompt plus
# the reply outgrow its n_ctx, instead of a context-length 400 (seen with SmolLM2 at n_ctx 520-600).
_LLAMA_CPP_OVERFLOW = "could not broadcast input array from shape"


def is_context_window_error(exc: BaseException) -> bool:
    """A request refused because the prompt (plus the reply's room) exceeds the context window:
    code "context_window", a 400 whose text says so, or llama-cpp-python's 500."""
    code = code_of(exc)
    if code == "context_window":
        return True
    if _LLAMA_CPP_OVERFLOW in str(exc).lower():
        return True
    status = exc.status if isinstance(exc, ModelCallError) else getattr(exc, "status_code", None)
    if not (code in ("bad_request", "unsupported_params") or status == 400):
        return False
    text = str(exc).lower()
    return any(phrase in text for phrase in CONTEXT_PHRASES)


def stated_context_window(text: str) -> int | None:
    """The window a context-length error names ("maximum context length is 640 tokens")."""
    match = _STATED_WINDOW.search(text)
    if match is None:
        return None
    return int(next(g for g in match.groups() if g is not None))


def _litellm() -> Any:
    """litellm, for a `send` that may call it (already loaded by the provider)."""
    from ._litellm import litellm_module

    return litellm_module()
