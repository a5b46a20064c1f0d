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
import hashlib
import json
import os
import random
import re
import threading
import time
import weakref
from collections.abc import AsyncIterator
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
MODE_MEMORY_TTL_S = 600.0  # a remembered fallback mode is re-probed from "forced" after this
MAX_ERROR_CHARS = 2_000  # stored error text (bid.error); a provider body is not a log file
ERROR_BODY_CAP = 16_000  # bytes of an HTTP error body read; the rest is cut unread
REPLY_BODY_CAP = 2_000_000  # bytes of a successful reply; more fails the request unread
FALLBACK_RUNGS = 3  # rejected requests a bid may add while stepping down the ladder
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
    if not is_loopback(agent.api_base):
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

# What a provider accepted, remembered so a model that rejects forced tool_choice costs one
# rejected call per TTL, not one per bid. Scoped by the agent's tools (one agent's broken extra
# tool cannot change another agent's requests), it expires (the provider may have been fixed,
# the rejection may have been transient) and `remembered_modes()` shows it.
_ModeKey = tuple[str, str | None, str]
_accepted_mode: dict[_ModeKey, tuple[str, float]] = {}  # key -> (mode, expiry on monotonic)
_mode_lock = threading.Lock()  # read from UI threads while the loop thread writes


@dataclass(frozen=True)
class RememberedMode:
    """One remembered fallback: this (model, api_base, tools) answers in `mode` until expiry."""

    model: str
    api_base: str | None
    tools_hash: str
    mode: str
    expires_in: float  # seconds until the next bid re-probes from "forced"


def tools_hash(tools: list[dict[str, Any]]) -> str:
    """A short stable hash of an agent's tools list (part of the mode memory's key)."""
    text = json.dumps(tools, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _mode_key(agent: Agent) -> _ModeKey:
    return (agent.model_name, agent.api_base, tools_hash(agent.tools_list_dictionary))


def _recalled_mode(key: _ModeKey) -> str:
    """The remembered mode for this key, or "forced" when none is remembered or it expired."""
    with _mode_lock:
        found = _accepted_mode.get(key)
        if found is None:
            return "forced"
        if found[1] <= time.monotonic():
            del _accepted_mode[key]
            return "forced"
        return found[0]


def _remember(key: _ModeKey, mode: str) -> None:
    """Remember a step down (a fresh TTL); an accepted "forced" needs no memory."""
    with _mode_lock:
        if mode == "forced":
            _accepted_mode.pop(key, None)
        else:
            _accepted_mode[key] = (mode, time.monotonic() + MODE_MEMORY_TTL_S)


def remembered_modes() -> list[RememberedMode]:
    """A read-only view of the fallback modes this process remembers (for the Run page)."""
    now = time.monotonic()
    with _mode_lock:
        items = list(_accepted_mode.items())
    return [
        RememberedMode(model, base, tools, mode, round(expiry - now, 1))
        for (model, base, tools), (mode, expiry) in sorted(items, key=lambda i: str(i[0]))
        if expiry > now
    ]


def forget_remembered_modes() -> None:
    """Drop every remembered mode: the next bid of each model probes from "forced" again."""
    with _mode_lock:
        _accepted_mode.clear()


LOCAL_PLACEHOLDER_KEY = "no-key"
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(url: str | None) -> bool:
    """True for an api_base on this machine (a local server: llama.cpp, vLLM, Ollama...)."""
    return urlparse(url or "").hostname in _LOOPBACK_HOSTS


def _local_placeholder_key(agent: Agent) -> str | None:
    """A key for an OpenAI-compatible server on loopback when none was given: local servers
    ignore it, but the OpenAI SDK refuses to send a request without one."""
    if (agent.model_name.startswith("openai/") and is_loopback(agent.api_base)
            and not os.environ.get("OPENAI_API_KEY")):
        return LOCAL_PLACEHOLDER_KEY
    return None


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
    key = agent.secret_key() or _local_placeholder_key(agent)
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


# Recognisers for a provider saying tools or tool_choice are unsupported, written from real
# messages. Anything else that mentions tools or functions (OpenAI's context-length error counts
# "functions" tokens; "Invalid schema for function 'x'" is one agent's broken tool) is NOT a
# rejection: stepping down on it would silence a working model.
_NOT_SUPPORTED = r"(?:is not supported|are not supported|not supported|unsupported|not allowed|" \
    r"not enabled|not available|requires --)"
_TOOLS_REJECTED = re.compile(
    "|".join((
        # OpenAI: "Unsupported parameter: 'tools' is not supported with this model."
        r"unsupported parameter:?\s*'?tools'?(?![_\w])",
        # Ollama: "registry.ollama.ai/library/gemma:2b does not support tools";
        # llama.cpp / others: "model does not support tool calling|function calling"
        r"(?:does not|doesn't|do not) support (?:tools\b|tool use|tool calling|tool calls|"
        r"function calling|functions\b)",
        # litellm UnsupportedParamsError: "... does not support parameters: ['tools', ...]"
        r"does not support parameters:[^\]}]*'tools'",
        # "tools are not supported by this model", "tools param requires --jinja flag"
        r"(?<![_\w])'?tools'?(?: param(?:eter)?)? (?:are |is )?" + _NOT_SUPPORTED,
        r"(?:tool|function) calling is " + _NOT_SUPPORTED,
    )),
    re.IGNORECASE,
)
_CHOICE_REJECTED = re.compile(
    "|".join((
        # OpenAI: "Unsupported parameter: 'tool_choice' is not supported with this model."
        r"unsupported (?:parameter|value):?\s*'?tool_choice'?",
        # "tool_choice of type 'function' is not supported", "tool_choice 'required' is not
        # supported", vLLM: '"auto" tool choice requires --enable-auto-tool-choice ...',
        # vLLM: 'tool_choice = "required" is not supported!'
        r"tool[_ ]choice[^.\n]{0,80}?" + _NOT_SUPPORTED,
        # litellm UnsupportedParamsError: "... does not support parameters: ['tool_choice']"
        r"does not support parameters:[^\]}]*'tool_choice'",
        # vLLM: 'Only named tools, "none" or "auto" are supported'
        r"only named tools[^.\n]{0,40}are supported",
    )),
    re.IGNORECASE,
)


def rejection_kind(text: str) -> str | None:
    """"tools" when the text says tools are unsupported, "tool_choice" when only the choice
    is, else None (not a capability rejection: the mode must not change)."""
    if _TOOLS_REJECTED.search(text):
        return "tools"
    if _CHOICE_REJECTED.search(text):
        return "tool_choice"
    return None


def _rejection(exc: Exception, mode: str) -> str | None:
    """The next mode when a provider clearly rejected this one at call time, else None."""
    litellm = litellm_module()
    rejecting = (litellm.BadRequestError, litellm.UnsupportedParamsError,
                 litellm.UnprocessableEntityError, litellm.InternalServerError)
    if mode == "json" or not isinstance(exc, rejecting):
        return None
    kind = rejection_kind(str(exc)[:ERROR_BODY_CAP])
    if kind is None:
        return None
    if kind == "tool_choice":
        return _LADDER[_LADDER.index(mode) + 1]
    return "json"


def _retryable(exc: Exception) -> bool:
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
                response = await _one_request(litellm, kwargs)
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


# --- bounded response bodies -------------------------------------------------------------
# litellm builds its exception text from the whole error body and runs its secret-redaction
# regexes over it on the calling thread, holding the GIL (a 10 MB body froze the shared loop for
# 40 s); a worker thread cannot help with that. So bodies are bounded before litellm sees them:
# an error body is cut at ERROR_BODY_CAP bytes (its status, hence litellm's error class, kept),
# a reply over REPLY_BODY_CAP fails unread. This covers every model litellm sends through the
# OpenAI SDK with an api_base (OpenAI-compatible servers: vLLM, llama.cpp, LM Studio, ...).


class ResponseTooLarge(Exception):
    """A reply body larger than any bid can need; the rest was not read."""


@functools.cache
def _capped_stream_class() -> type:
    """Build the capped body stream on first use (httpx is imported with litellm, lazily)."""
    import httpx

    class CappedStream(httpx.AsyncByteStream):
        """A response body that stops at `cap` bytes: cut with a note, or fail."""

        def __init__(self, inner: Any, cap: int, cut: bool) -> None:
            self._inner, self._cap, self._cut = inner, cap, cut

        async def __aiter__(self) -> AsyncIterator[bytes]:
            seen = 0
            async for chunk in self._inner:
                if seen + len(chunk) > self._cap:
                    if not self._cut:
                        raise ResponseTooLarge(
                            f"reply body larger than {self._cap:,} bytes; not read (a bid "
                            "reply is a few kilobytes)")
                    yield chunk[: self._cap - seen]
                    yield f"… (error body cut at {self._cap:,} bytes)".encode()
                    return
                seen += len(chunk)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return CappedStream


async def _identity_encoding(request: Any) -> None:
    """Ask for uncompressed bodies, so the caps count the bytes that will be parsed."""
    request.headers["Accept-Encoding"] = "identity"


async def _cap_body(response: Any) -> None:
    error = response.status_code >= 400
    cap = ERROR_BODY_CAP if error else REPLY_BODY_CAP
    response.stream = _capped_stream_class()(response.stream, cap, cut=error)


@functools.lru_cache(maxsize=1024)
def _provider(model: str, api_base: str) -> str | None:
    """litellm's provider for a model and api_base (cached: it is asked on every request)."""
    try:
        return str(litellm_module().get_llm_provider(model=model, api_base=api_base)[1])
    except Exception:
        return None


_capped_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, Any]] = (
    weakref.WeakKeyDictionary())


def _capped_client_kwargs(litellm: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """`client=` for litellm: an OpenAI SDK client whose bodies are capped, for OpenAI-compatible
    calls with an api_base; {} otherwise (other providers use litellm's own clients)."""
    base = kwargs.get("api_base")
    if not base or "client" in kwargs or _provider(str(kwargs["model"]), base) != "openai":
        return {}
    key = kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY")
    if not key:
        return {}  # litellm reports the missing key itself; no request is made
    import httpx
    from openai import AsyncOpenAI

    per_loop = _capped_clients.setdefault(asyncio.get_running_loop(), {})
    cache_key = (base, hashlib.sha256(str(key).encode()).hexdigest())
    client = per_loop.get(cache_key)
    if client is None:
        http = httpx.AsyncClient(
            follow_redirects=True,
            event_hooks={"request": [_identity_encoding], "response": [_cap_body]})
        client = AsyncOpenAI(api_key=str(key), base_url=base, http_client=http, max_retries=0)
        per_loop[cache_key] = client
    return {"client": client}


async def _one_request(litellm: Any, kwargs: dict[str, Any]) -> Any:
    """One HTTP request under a total deadline of Agent.timeout.

    litellm's `timeout` bounds each read, so a server trickling a byte every few seconds would
    hold a bid forever; this bounds the request from send to last byte.
    """
    limit = kwargs.get("timeout")
    try:
        async with asyncio.timeout(limit):
            return await litellm.acompletion(**kwargs, **_capped_client_kwargs(litellm, kwargs))
    except TimeoutError as exc:
        raise litellm.Timeout(
            message=f"no complete reply within {limit} s (Agent.timeout bounds each request, "
            "first byte to last)", model=kwargs.get("model"), llm_provider="") from exc
    except Exception as exc:
        too_large = _in_chain(exc, ResponseTooLarge)
        if too_large is not None:  # the SDK calls it "Connection error."; say what happened,
            raise too_large from None  # and as no litellm error it is neither retried nor a rung
        raise


def _in_chain(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` among exc, its causes and contexts."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _parse_response(response: Any, mode: str) -> tuple[ParsedBid, BidPath]:
    """Read the bid from a reply. A respond call counts in every mode: a server asked for JSON
    text may still answer with the call (the path then says `tool_call:json`)."""
    choice = response.choices[0]
    message = choice.message
    calls = [(c.function.name, c.function.arguments) for c in (message.tool_calls or [])]
    parsed = parse_tool_calls(calls)
    if parsed is not None:
        path: BidPath = "tool_call:json" if mode == "json" else _PATHS[mode]
    else:
        parsed = parse_text_reply(message.content)
        path = "json_text" if mode == "json" else "text_fallback"
    if not parsed.readable and getattr(choice, "finish_reason", None) == "length":
        parsed = ParsedBid(parsed.score, parsed.message,
                           f"{parsed.error} (the reply was cut off at max_tokens)", False)
    return parsed, path


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


def cap_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Text cut to `limit` characters with a note of how much was cut (for stored errors)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} characters cut)"


class ModelCallFailed(Exception):
    """A bid call that failed for good; carries how many HTTP calls it took."""

    def __init__(self, cause: BaseException, calls: int) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause
        self.calls = calls


def default_bid_deadline(agent: Agent) -> float:
    """The total deadline of a bid when bid_timeout is None: every request it may make (retries
    and fallback rungs) at Agent.timeout each, plus the longest backoffs between them."""
    requests = agent.num_retries + 1 + FALLBACK_RUNGS
    return agent.timeout * requests + RETRY_MAX_DELAY * agent.num_retries


async def call_litellm(agent: Agent, messages: list[dict[str, Any]]) -> ModelReply:
    """One bid through litellm, stepping down the fallback ladder only on call-time rejection."""
    _check_allowed(agent)
    await load_litellm_off_loop()
    cache_key = _mode_key(agent)
    first = agent.tool_choice_mode or _recalled_mode(cache_key)
    mode = first
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
        if agent.tool_choice_mode is None and mode != first:
            _remember(cache_key, mode)
        parsed, path = _parse_response(response, mode)
        prompt, completion, cost = _usage_and_cost(response)
        return ModelReply(parsed, path, prompt, completion, cost, calls=attempts.calls)
