"""Failed model calls as one error: litellm's exceptions converted once, at the edge, into
ModelCallError (status, code, retry_after, cause), and the rules the policy reads from it.

Why: the retry policy, the tool-mode ladder, stream refusal and the context-window shrink used
to test `isinstance(exc, litellm.RateLimitError | ...)`, so a provider that was not litellm had
to imitate litellm's exception classes to be retried right. Now a provider raises
ModelCallError (the litellm provider converts here, as soon as litellm raises) and the policy
(_retries.py, _tool_modes.py, _streaming.py, the turn loop's shrink) classifies by its
`status`, `code` and `retry_after` alone. The bid's error text is unchanged: `kind` is the
class name litellm raised ("RateLimitError: ...").
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

from .._errors import ModelCallError

# Failures worth another try: the server was busy or failing, or the connection broke.
RETRYABLE_CODES = frozenset({"rate_limited", "server_error", "bad_gateway", "unavailable",
                             "connection", "deployment_at_limit"})
# Failures whose text may say the request's tools or tool_choice are unsupported (the ladder).
REJECTING_CODES = frozenset({"bad_request", "context_window", "unsupported_params",
                             "unprocessable", "server_error"})
# Failures whose text may say the server cannot stream (stream refusal).
REFUSING_CODES = frozenset({"bad_request", "unsupported_params", "unprocessable"})

# litellm's exception classes by name, most specific first, and the code each becomes.
_LITELLM_CODES: tuple[tuple[str, str], ...] = (
    ("ContextWindowExceededError", "context_window"),
    ("UnsupportedParamsError", "unsupported_params"),
    ("BadRequestError", "bad_request"),
    ("UnprocessableEntityError", "unprocessable"),
    ("AuthenticationError", "auth"),
    ("PermissionDeniedError", "permission"),
    ("NotFoundError", "not_found"),
    ("RateLimitError", "rate_limited"),
    ("InternalServerError", "server_error"),
    ("BadGatewayError", "bad_gateway"),
    ("ServiceUnavailableError", "unavailable"),
    ("Timeout", "timeout"),
    ("APIConnectionError", "connection"),
)
# Codes with no HTTP status behind them (litellm still gives these classes one: 408, 500).
_NO_STATUS = frozenset({"timeout", "connection"})
# litellm's Router refuses a deployment at its own rpm count before any request is sent, with a
# made-up "retry-after: 60" (its calendar minute). No server asked for a wait: the next try
# picks another deployment (the model's total rpm is paced by _deployments.pace_routed).
_ROUTER_AT_LIMIT = "Deployment over defined rpm limit"


def from_litellm(exc: Exception) -> ModelCallError:
    """The ModelCallError for an exception litellm (or its Router) raised; an exception of
    another kind becomes code "error", its class name kept for the bid's error."""
    if isinstance(exc, ModelCallError):
        return exc
    litellm = _litellm()
    code = "error"
    for name, found in _LITELLM_CODES:
        kind = getattr(litellm, name, None)
        if isinstance(kind, type) and isinstance(exc, kind):
            code = found
            break
    text = str(exc)
    if code == "rate_limited" and _ROUTER_AT_LIMIT in text:
        code = "deployment_at_limit"
    raw_status = getattr(exc, "status_code", None)
    status = raw_status if isinstance(raw_status, int) and code not in _NO_STATUS else None
    asked = None if code == "deployment_at_limit" else retry_after_seconds(exc)
    return ModelCallError(text, status=status, code=code, retry_after=asked, cause=exc,
                          kind=type(exc).__name__)


# A status's code and the name a bid's error shows for it: the class litellm's openai route
# reports, so a bid reads the same on either path (it names a 403 and any other 4xx a bad
# request, a 504 a timeout).
_BY_STATUS: dict[int, tuple[str, str]] = {
    400: ("bad_request", "BadRequestError"), 401: ("auth", "AuthenticationError"),
    403: ("permission", "BadRequestError"), 404: ("not_found", "NotFoundError"),
    408: ("timeout", "Timeout"), 422: ("unprocessable", "BadRequestError"),
    429: ("rate_limited", "RateLimitError"), 500: ("server_error", "InternalServerError"),
    502: ("bad_gateway", "BadGatewayError"), 503: ("unavailable", "ServiceUnavailableError"),
    504: ("timeout", "Timeout"),
}
# A 400 saying the prompt does not fit (OpenAI, vLLM, llama.cpp, LM Studio wordings).
CONTEXT_PHRASES = (
    "maximum context length", "context length exceeded", "context_length_exceeded",
    "context window", "exceeds the available context size", "maximum context limit",
    "longer than the model's context length",
)


def for_status(status: int, message: str, *, retry_after: float | None = None,
               cause: BaseException | None = None) -> ModelCallError:
    """The ModelCallError for an HTTP status of 400 or more (a provider that reads the
    response itself: _direct.py)."""
    code, kind = _BY_STATUS.get(status, ("bad_request", "BadRequestError") if status < 500
                                else ("error", "APIError"))
    if code == "bad_request" and any(p in message.lower() for p in CONTEXT_PHRASES):
        code, kind = "context_window", "ContextWindowExceededError"
    return ModelCallError(message, status=status, code=code, retry_after=retry_after,
                          cause=cause, kind=kind)


def _litellm() -> Any:
    from ._litellm import litellm_module

    return litellm_module()


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
        asked = retry_after_from(headers)
        if asked is not None:
            return asked
    return None


def retry_after_from(headers: Any) -> float | None:
    """`retry-after-ms`, else `Retry-After` (seconds or an HTTP date) from one set of headers."""
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000.0)
        raw = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_tz(str(raw))
        if parsed is not None:
            return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def code_of(exc: BaseException) -> str | None:
    """The code of a ModelCallError, None for any other exception."""
    return exc.code if isinstance(exc, ModelCallError) else None
