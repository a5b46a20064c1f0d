"""The one seam for model calls: litellm requests, tool-choice fallbacks, retries, usage, cost.

litellm is imported only by this module and _sim_litellm.py (the sim provider litellm can call),
always lazily, inside functions: it takes seconds to import (tests/test_imports_litellm.py pins
the rule). In-process providers (`sim/...`, scripted fakes; see _providers.py) plug in by model
prefix and skip litellm's request path for speed.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import os
import random
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from ._bidding import FORCED_RESPOND_CHOICE, ParsedBid, parse_text_reply, parse_tool_calls
from ._errors import ModelCallError
from ._limiter import CALL_LIMITER
from ._providers import BidRequest as BidRequest  # re-exported: callers route bids via here
from ._providers import InProcessModel, ModelReply, register_in_process, registered_in_process
from ._ratelimit import RATE_LIMITS
from ._records import BidPath
from ._sim import is_sim_model
from ._sim_provider import SimProvider

if TYPE_CHECKING:
    from ._agent import Agent

DEFAULT_INPUT_BUDGET = 8192
RETRY_BASE_DELAY = 0.5  # seconds; doubled per attempt, capped below
RETRY_MAX_DELAY = 8.0
MAX_RETRY_AFTER = 30.0  # seconds: the longest a server's Retry-After is honoured
JSON_TEXT_INSTRUCTION = (
    "\n\nYou cannot call functions here. Answer with only a JSON object of the form "
    '{"score": <number from 0 to 1>, "message": "<your reply, or empty to stay silent>"}.'
)
_LADDER: tuple[str, ...] = ("forced", "required", "auto", "json")
_PATHS: dict[str, BidPath] = {
    "forced": "tool_call",
    "required": "tool_call:required",
    "auto": "tool_call:auto",
    "json": "json_text",
}


def in_process_model(model_name: str) -> InProcessModel | None:
    """The in-process provider for a model name, or None for litellm; sim/ is built in."""
    prefix, sep, _ = model_name.partition("/")
    if not sep:
        return None
    local = registered_in_process(prefix)
    if local is None and is_sim_model(model_name):
        local = SimProvider()
        register_in_process(prefix, local)
    return local


# --- litellm loading and the test guard ---------------------------------------------------


@functools.cache
def litellm_module() -> Any:
    """Import litellm once, offline-friendly: local price map, no debug banner, sim registered."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    from ._sim_litellm import register_litellm_provider

    register_litellm_provider()
    return litellm


_litellm_ready = False


async def load_litellm_off_loop() -> None:
    """Import litellm (seconds) on a worker thread, so the shared loop keeps serving other chats
    (a dashboard's live views, sim runs) while the first real-model chat starts."""
    global _litellm_ready
    if not _litellm_ready:
        await asyncio.to_thread(litellm_module)
        _litellm_ready = True


def remote_calls_blocked() -> bool:
    """Tests set GROUPCHAT_BLOCK_REMOTE_CALLS=1: only loopback api_base hosts may be called."""
    return os.environ.get("GROUPCHAT_BLOCK_REMOTE_CALLS", "") not in ("", "0", "false")


def _check_allowed(agent: Agent) -> None:
    if not remote_calls_blocked():
        return
    host = urlparse(agent.api_base or "").hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ModelCallError(
            f"real model calls are blocked (GROUPCHAT_BLOCK_REMOTE_CALLS is set): agent "
            f"{agent.agent_name!r} would call {agent.model_name!r}; use a sim/ model or a local "
            "api_base"
        )


@functools.cache
def input_budget(model_name: str) -> int:
    """The model's input token budget from litellm's model info; 8,192 when unknown."""
    if in_process_model(model_name) is not None:
        return DEFAULT_INPUT_BUDGET
    try:
        info = litellm_module().get_model_info(model_name)
        return int(info.get("max_input_tokens") or DEFAULT_INPUT_BUDGET)
    except Exception:
        return DEFAULT_INPUT_BUDGET


def approximate_tokens(text: str) -> int:
    """A fast, slightly pessimistic token estimate (about 3.5 characters per token)."""
    return len(text) * 2 // 7 + 1


@functools.lru_cache(maxsize=65536)
def count_tokens(model_name: str, text: str) -> int:
    """Tokens of one text for one model; cached because history lines repeat every turn."""
    if in_process_model(model_name) is not None:
        return approximate_tokens(text)
    try:
        return int(litellm_module().token_counter(model=model_name, text=text))
    except Exception:
        return approximate_tokens(text)


# --- the litellm path ---------------------------------------------------------------------

# Remembers, per (model, api_base), the first mode the provider accepted, so a model that
# rejects forced tool_choice costs one rejected call per process, not one per bid.
_accepted_mode: dict[tuple[str, str | None], str] = {}


def _request_kwargs(agent: Agent, messages: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        **agent.litellm_kwargs,
        "model": agent.model_name,
        "messages": messages,
        "temperature": agent.temperature,
        "max_tokens": agent.max_tokens,
        "timeout": agent.timeout,
        "num_retries": 0,  # retries are ours (below), so they are counted and bounded
        "max_retries": 0,
    }
    if agent.api_base:
        kwargs["api_base"] = agent.api_base
    key = agent.secret_key()
    if key:
        kwargs["api_key"] = key
    if mode == "json":
        last = dict(messages[-1])
        last["content"] = str(last.get("content", "")) + JSON_TEXT_INSTRUCTION
        kwargs["messages"] = [*messages[:-1], last]
        return kwargs
    kwargs["tools"] = agent.tools_list_dictionary
    kwargs["tool_choice"] = {"forced": FORCED_RESPOND_CHOICE}.get(mode, mode)
    return kwargs


def _rejection(exc: Exception, mode: str) -> str | None:
    """The next mode when a provider rejected this one at call time, else None."""
    litellm = litellm_module()
    if not isinstance(exc, litellm.BadRequestError | litellm.UnsupportedParamsError):
        return None
    text = str(exc).lower()
    if "tool" not in text and "function" not in text:
        return None
    if mode == "json":
        return None
    if "tool_choice" in text or "tool choice" in text:
        return _LADDER[_LADDER.index(mode) + 1]
    return "json"


def _retryable(exc: Exception) -> bool:
    litellm = litellm_module()
    text = str(exc).lower()
    if "api_key" in text or "credentials" in text or "api key" in text:
        return False  # a missing or bad key is reported as a server error; retrying cannot help
    return isinstance(
        exc,
        litellm.RateLimitError
        | litellm.InternalServerError
        | litellm.ServiceUnavailableError
        | litellm.APIConnectionError
        | litellm.BadGatewayError,
    )


def _retry_delay(attempt: int) -> float:
    delay = min(RETRY_MAX_DELAY, RETRY_BASE_DELAY * 2**attempt)
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


# The loop-clock time (loop.time()) by which the current bid must be done, set by the turn loop
# for each bid's task. Why a context variable: the seam's signature (agent, messages) stays as it
# is, and each concurrently bidding agent runs in its own task, so each sees its own deadline.
BID_DEADLINE: ContextVar[float | None] = ContextVar("groupchat_bid_deadline", default=None)


def _time_left() -> float | None:
    deadline = BID_DEADLINE.get()
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
class _Attempts:
    calls: int = 0
    retries_left: int = 0
    errors: list[str] = field(default_factory=list)


async def _call_with_retries(kwargs: dict[str, Any], attempts: _Attempts) -> Any:
    """One request, retried on transient errors: after the server's Retry-After when it sends
    one (at most MAX_RETRY_AFTER, and never past the bid's deadline: the error is raised at
    once instead), else after a jittered exponential backoff. Per-model rate limits
    (_ratelimit.py) are waited for before each attempt."""
    litellm = litellm_module()
    model = str(kwargs.get("model", ""))
    while True:
        tokens = _request_tokens(kwargs) if RATE_LIMITS.wants_tokens(model) else 0
        reserved = await RATE_LIMITS.acquire(model, tokens)
        attempts.calls += 1
        try:
            async with CALL_LIMITER:
                response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            RATE_LIMITS.settle(model, reserved, 0)  # a refused request used no tokens
            retryable = _retryable(exc)
            asked = retry_after_seconds(exc) if retryable else None
            if asked is not None:  # every bid on this model waits, not only this one
                RATE_LIMITS.pause(model, min(asked, MAX_RETRY_AFTER))
            if not retryable or attempts.retries_left <= 0:
                raise
            delay = _retry_delay(attempts.calls - 1) if asked is None else min(
                asked, MAX_RETRY_AFTER)
            left = _time_left()
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


def is_context_window_error(exc: BaseException) -> bool:
    """A request refused because the prompt (plus the reply's room) exceeds the context window:
    litellm's ContextWindowExceededError, or a 400 whose text says so."""
    litellm = litellm_module()
    if isinstance(exc, litellm.ContextWindowExceededError):
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


def _parse_response(response: Any, mode: str) -> tuple[ParsedBid, BidPath]:
    message = response.choices[0].message
    calls = [(c.function.name, c.function.arguments) for c in (message.tool_calls or [])]
    if mode != "json":
        parsed = parse_tool_calls(calls)
        if parsed is not None:
            return parsed, _PATHS[mode]
        return parse_text_reply(message.content), "text_fallback"
    return parse_text_reply(message.content), "json_text"


def _usage_and_cost(response: Any) -> tuple[int | None, int | None, float | None]:
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


class ModelCallFailed(Exception):
    """A bid call that failed for good; carries how many HTTP calls it took."""

    def __init__(self, cause: BaseException, calls: int) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause
        self.calls = calls


async def call_litellm(agent: Agent, messages: list[dict[str, Any]]) -> ModelReply:
    """One bid through litellm, stepping down the fallback ladder only on call-time rejection."""
    _check_allowed(agent)
    await load_litellm_off_loop()
    cache_key = (agent.model_name, agent.api_base)
    mode = agent.tool_choice_mode or _accepted_mode.get(cache_key, "forced")
    attempts = _Attempts(retries_left=agent.num_retries)
    while True:
        try:
            response = await _call_with_retries(_request_kwargs(agent, messages, mode), attempts)
        except Exception as exc:
            next_mode = None if agent.tool_choice_mode else _rejection(exc, mode)
            if next_mode is None:
                raise ModelCallFailed(exc, attempts.calls) from exc
            mode = next_mode
            continue
        if agent.tool_choice_mode is None:
            _accepted_mode[cache_key] = mode
        parsed, path = _parse_response(response, mode)
        prompt, completion, cost = _usage_and_cost(response)
        return ModelReply(parsed, path, prompt, completion, cost, calls=attempts.calls)
