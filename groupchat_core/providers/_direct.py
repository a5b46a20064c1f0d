"""OpenAI-compatible requests sent and read by the engine itself, without litellm's call path.

Why: per call litellm spends about 5 ms of CPU building the request through the OpenAI SDK and
reading the reply back, and about 0.6 ms per streamed chunk in its stream wrapper (a pydantic
model per chunk); on one loop that is the ceiling of a 32-agent room and most of a streamed
bid's cost (BENCHMARKS.md, issue 24). For the route where litellm's request is the plain
chat-completions body, `openai/<model>` with an explicit api_base and api_key and no litellm
settings of the agent's own (`direct_route`), the engine posts the same JSON body through its
own httpx client and reads the JSON reply or the SSE stream itself.

What stays as it was: the client's transport is the bounded one (_bodies.py: body caps, the
request's whole deadline, SSE coalescing, the stream text cap); a failed request raises
ModelCallError itself (its status, the engine's code for it, the server's Retry-After and
words: _call_errors.for_status), which retries, the fallback ladder and stream refusal read
as they read litellm's converted errors; usage comes
from the reply and cost from litellm's price map (`cost_per_token`, as for a streamed bid).
Everything else (other prefixes, routed models, a reasoning model whose parameters litellm
rewrites, an agent with its own litellm_kwargs) goes through litellm. GROUPCHAT_DIRECT_HTTP=0
sends everything through litellm.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import weakref
from collections.abc import AsyncGenerator
from types import SimpleNamespace
from typing import Any

from .._errors import ModelCallError
from ._call_errors import for_status, retry_after_from
from ._litellm import async_transport, litellm_module

DIRECT_ENV = "GROUPCHAT_DIRECT_HTTP"
# The request settings the direct path knows how to send; any other key (an agent's own
# litellm_kwargs: headers, a custom client, drop_params...) sends the request through litellm.
_KNOWN = frozenset({"model", "messages", "temperature", "max_tokens", "timeout", "num_retries",
                    "max_retries", "api_base", "api_key", "tools", "tool_choice",
                    "response_format", "stream", "stream_options"})
_BODY_KEYS = ("messages", "temperature", "max_tokens", "tools", "tool_choice",
              "response_format", "stream", "stream_options")
_PREFIX = "openai/"


def direct_enabled() -> bool:
    return os.environ.get(DIRECT_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def direct_route(kwargs: dict[str, Any]) -> bool:
    """Whether this request goes out directly: an `openai/` model with an explicit api_base and
    key, only settings the direct path sends, and a model litellm passes parameters through
    for unchanged (not an o-series or gpt-5 model, whose max_tokens/temperature it rewrites)."""
    model = kwargs.get("model")
    if not (isinstance(model, str) and model.startswith(_PREFIX) and direct_enabled()):
        return False
    if not isinstance(kwargs.get("api_base"), str) or not isinstance(kwargs.get("api_key"), str):
        return False
    if not set(kwargs) <= _KNOWN:
        return False
    return not _rewritten(model[len(_PREFIX):])


def _rewritten(name: str) -> bool:
    litellm = litellm_module()
    try:
        return bool(litellm.openaiOSeriesConfig.is_model_o_series_model(model=name)
                    or litellm.OpenAIGPT5Config.is_model_gpt_5_model(model=name))
    except Exception:
        return True  # cannot tell: litellm's own path


def request_body(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions body litellm's openai route sends for these settings."""
    body: dict[str, Any] = {"model": str(kwargs["model"])[len(_PREFIX):]}
    for key in _BODY_KEYS:
        if kwargs.get(key) is not None:
            body[key] = kwargs[key]
    return body


def _url(api_base: str) -> str:
    return api_base.rstrip("/") + "/chat/completions"


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def _client() -> Any:
    """One httpx client per event loop on litellm's own transport (aiohttp: httpcore's pool
    scans every connection per request, quadratic in a 32-agent turn), which _bodies.install
    has already wrapped in the bounded transport."""
    import httpx

    from ._bodies import bounded

    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        transport = bounded(async_transport())
        client = httpx.AsyncClient(transport=transport, follow_redirects=False)
        if not _clients:
            atexit.register(_close_clients)
        _clients[loop] = client
    return client


def _close_clients() -> None:
    """At exit, close each client on its own loop while that loop still runs (the shared
    background loop does): an aiohttp session left open warns with a traceback at exit."""
    for loop, client in list(_clients.items()):
        if client.is_closed or loop.is_closed() or not loop.is_running():
            continue
        try:
            asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(timeout=2)
        except Exception:  # exiting anyway; nothing more to do
            continue


def _said(text: str) -> str:
    """What a failed response says: its JSON body's `error.message` (or `message`), else the
    body as it came (already cut to the error body cap by the transport)."""
    try:
        body: Any = json.loads(text)
    except ValueError:
        return text
    error = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return str(error) if error else text


def _status_failure(response: Any, text: str) -> ModelCallError:
    """A status of 400 or more: the server's own words, its status and Retry-After."""
    return for_status(response.status_code, f"OpenAIException - {_said(text)}",
                      retry_after=retry_after_from(response.headers))


def _transport_failure(exc: BaseException) -> ModelCallError:
    """An httpx failure: a timeout, or a connection error (no status: no response came; named
    InternalServerError in the bid's error, as litellm's openai route names it)."""
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return ModelCallError("OpenAIException - Request timed out.", code="timeout",
                              kind="Timeout", cause=exc)
    return ModelCallError("OpenAIException - Connection error.", code="connection",
                          kind="InternalServerError", cause=exc)


async def _send(kwargs: dict[str, Any], body: dict[str, Any]) -> Any:
    """POST the body; the response with its body still to read (bounded by the transport).
    A status of 400 or more raises ModelCallError for it, read from the capped body."""
    import httpx

    from ._bodies import ResponseTooLarge, in_chain

    timeout = kwargs.get("timeout")
    client = _client()
    request = client.build_request(
        "POST", _url(str(kwargs["api_base"])),
        content=json.dumps(body, separators=(",", ":")).encode(),
        headers={"Authorization": f"Bearer {kwargs['api_key']}",
                 "Content-Type": "application/json", "Accept": "application/json"},
        timeout=httpx.Timeout(float(timeout)) if timeout else httpx.Timeout(600.0))
    try:
        response = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        if in_chain(exc, ResponseTooLarge) is not None:
            raise
        raise _transport_failure(exc) from exc
    if response.status_code >= 400:
        try:
            text = (await response.aread()).decode("utf-8", "replace")
        except httpx.HTTPError as exc:
            raise _transport_failure(exc) from exc
        finally:
            await response.aclose()
        raise _status_failure(response, text)
    return response


def _namespace(data: str) -> Any:
    """JSON as attribute objects (what the shared reply readers take)."""
    return json.loads(data, object_hook=lambda d: SimpleNamespace(**d))


def _not_json(kwargs: dict[str, Any], what: str) -> ModelCallError:
    """A 200 whose body is no chat completion: code "bad_reply" (not retried)."""
    return ModelCallError(f"the server's {what} is not a chat completion", code="bad_reply",
                          kind="APIError")


def _reply(value: Any, kwargs: dict[str, Any]) -> Any:
    """A parsed chat completion with every field the reply readers ask for present."""
    choices = getattr(value, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _not_json(kwargs, "reply")
    choice = choices[0]
    message = getattr(choice, "message", None) or SimpleNamespace()
    calls = getattr(message, "tool_calls", None) or []
    tool_calls = [SimpleNamespace(function=SimpleNamespace(
        name=getattr(getattr(c, "function", None), "name", None) or "",
        arguments=getattr(getattr(c, "function", None), "arguments", None) or ""))
        for c in calls if isinstance(c, SimpleNamespace)]
    content = getattr(message, "content", None)
    reply = SimpleNamespace(
        choices=[SimpleNamespace(
            message=SimpleNamespace(tool_calls=tool_calls or None,
                                    content=content if isinstance(content, str) else None),
            finish_reason=getattr(choice, "finish_reason", None))],
        usage=getattr(value, "usage", None))
    reply._hidden_params = {"response_cost": cost_of(kwargs, reply.usage)}
    return reply


def cost_of(kwargs: dict[str, Any], usage: Any) -> float | None:
    """The cost of a reply (streamed or not, on either path) from its reported usage and
    litellm's prices, else None (unpriced)."""
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    try:
        costs = litellm_module().cost_per_token(
            model=str(kwargs.get("model", "")), prompt_tokens=prompt,
            completion_tokens=completion)
        return float(costs[0] + costs[1])
    except Exception:
        return None


async def direct_completion(kwargs: dict[str, Any]) -> Any:
    """One unstreamed request, its reply read like litellm's (choices, usage, cost)."""
    import httpx

    response = await _send(kwargs, request_body({**kwargs, "stream": None,
                                                 "stream_options": None}))
    try:
        raw = await response.aread()
    except httpx.HTTPError as exc:
        from ._bodies import ResponseTooLarge, in_chain

        if in_chain(exc, ResponseTooLarge) is not None:
            raise
        raise _transport_failure(exc) from exc
    finally:
        await response.aclose()
    try:
        value = _namespace(raw.decode("utf-8", "replace"))
    except ValueError:
        raise _not_json(kwargs, "reply") from None
    return _reply(value, kwargs)


def estimated_usage(kwargs: dict[str, Any], completion_text: str) -> SimpleNamespace:
    """Usage for a stream whose server sent none (llama.cpp ignores `include_usage`): counted
    with litellm's tokenizer over the request's messages and the streamed text, as litellm's
    stream wrapper counts it on its own path, so tokens and cost do not depend on the path."""
    litellm = litellm_module()
    model = kwargs.get("model")
    prompt = int(litellm.token_counter(model=model, messages=kwargs.get("messages") or []))
    completion = int(litellm.token_counter(model=model, text=completion_text,
                                           count_response_tokens=True)) if completion_text else 0
    return SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion,
                           total_tokens=prompt + completion)


async def direct_stream(kwargs: dict[str, Any]) -> AsyncGenerator[Any, None]:
    """One stream=true request: its SSE chunks, parsed, until `[DONE]` or the body's end.

    A chunk carrying an `error` raises ModelCallError (code "error", not retried); a
    `[DONE]` before any finish reason ends with "stop", as litellm's stream wrapper reports it
    (a body that just stops has none: the stream was cut)."""
    import httpx

    response = await _send(kwargs, request_body(kwargs))
    finished = False
    try:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                if not finished:
                    yield SimpleNamespace(usage=None, choices=[SimpleNamespace(
                        index=0, delta=None, finish_reason="stop")])
                break
            try:
                chunk = _namespace(data)
            except ValueError:
                raise _not_json(kwargs, "stream chunk") from None
            if not isinstance(chunk, SimpleNamespace):
                continue
            if getattr(chunk, "error", None) is not None:
                error = chunk.error
                said = getattr(error, "message", None) or str(error)
                raise ModelCallError(str(said)[:2_000], code="error", kind="APIError")
            choices = getattr(chunk, "choices", None)
            if isinstance(choices, list) and choices and getattr(choices[0], "finish_reason",
                                                                  None):
                finished = True
            yield chunk
    except httpx.HTTPError as exc:
        from ._bodies import ResponseTooLarge, in_chain

        if in_chain(exc, ResponseTooLarge) is not None:
            raise
        raise _transport_failure(exc) from exc
    finally:
        await response.aclose()
