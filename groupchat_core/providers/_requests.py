"""Building one bid request for litellm and sending it under a total deadline."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from .._bidding import FORCED_RESPOND_CHOICE
from .._errors import ModelCallError
from .._kwargs_policy import kwargs_problem
from ._bodies import REQUEST_DEADLINE, ResponseTooLarge, deadline_error, in_chain
from ._call_errors import from_litellm
from ._deployments import routed_bases, routed_call
from ._direct import direct_completion, direct_route
from ._endpoints import (
    PLACEHOLDER_KEY,
    SIGNING_PROVIDERS,
    TRUSTED_BASES_ENV,
    endpoint_trusted,
    provider_of,
)
from ._tool_modes import JSON_TEXT_INSTRUCTION, TEXT_MODES, schema_response_format

if TYPE_CHECKING:
    from .._agent import Agent


def remote_calls_blocked() -> bool:
    """Tests set GROUPCHAT_BLOCK_REMOTE_CALLS=1: only loopback api_base hosts may be called."""
    return os.environ.get("GROUPCHAT_BLOCK_REMOTE_CALLS", "") not in ("", "0", "false")


def check_destination(agent: Agent) -> None:
    """Judge where this agent's requests go before any is sent, from first-class settings only.

    The destination is the agent's `api_base` (None: the provider's own endpoint) or, for a
    routed model, its deployments' bases: `litellm_kwargs` can name no endpoint, provider or
    credential (_kwargs_policy.py; checked again here for an agent built around validation).
    Keys (`_endpoint_key`), the remote-call block and the signing providers are all judged
    against that one destination."""
    problem = kwargs_problem(agent.litellm_kwargs)
    if problem is not None:
        raise ModelCallError(f"agent {agent.agent_name!r} refused: {problem}")
    base = agent.api_base
    provider = provider_of(agent.model_name)
    if base and provider in SIGNING_PROVIDERS and not endpoint_trusted(agent.model_name, base):
        raise ModelCallError(
            f"agent {agent.agent_name!r} refused: a {provider} model signs every request with "
            f"the server's {provider} credentials, and its api_base {base} is not trusted; "
            f"remove the api_base or ask an admin to trust it via {TRUSTED_BASES_ENV}")
    if not remote_calls_blocked():
        return
    bases = routed_bases(agent.model_name) or [base]  # a routed model: its endpoints
    if not all(is_loopback(one) for one in bases):
        raise ModelCallError(
            f"real model calls are blocked (GROUPCHAT_BLOCK_REMOTE_CALLS is set): agent "
            f"{agent.agent_name!r} would call {agent.model_name!r}; use a sim/ model or a local "
            "api_base"
        )


LOCAL_PLACEHOLDER_KEY = PLACEHOLDER_KEY
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(url: str | None) -> bool:
    """True for an api_base on this machine (a local server: llama.cpp, vLLM, Ollama...)."""
    return urlparse(url or "").hostname in _LOOPBACK_HOSTS


def _endpoint_key(agent: Agent) -> str | None:
    """The key this request carries: the agent's own (its caller's choice), else none on a
    trusted endpoint (litellm reads the provider's key from the environment, or a loopback
    server gets the placeholder the OpenAI SDK insists on), else the placeholder: an untrusted
    endpoint must never receive the environment's key, which litellm would send by itself."""
    own = agent.secret_key()
    if own:
        return own
    base = agent.api_base
    if not endpoint_trusted(agent.model_name, base):
        return PLACEHOLDER_KEY
    if (agent.model_name.startswith("openai/") and is_loopback(base)
            and not os.environ.get("OPENAI_API_KEY")):
        return LOCAL_PLACEHOLDER_KEY
    return None


def request_kwargs(agent: Agent, messages: list[dict[str, Any]], mode: str) -> dict[str, Any]:
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
    key = _endpoint_key(agent)
    if key:
        kwargs["api_key"] = key
    if mode in TEXT_MODES:
        last = dict(messages[-1])
        last["content"] = str(last.get("content", "")) + JSON_TEXT_INSTRUCTION
        kwargs["messages"] = [*messages[:-1], last]
        if mode == "json_schema":  # constrained decoding: the server can only write a bid
            kwargs["response_format"] = schema_response_format(agent)
        return kwargs
    kwargs["tools"] = agent.tools_list_dictionary
    kwargs["tool_choice"] = {"forced": FORCED_RESPOND_CHOICE}.get(mode, mode)
    return kwargs


async def one_request(litellm: Any, kwargs: dict[str, Any]) -> Any:
    """One HTTP request under a total deadline of Agent.timeout.

    litellm's `timeout` bounds each read, so a server trickling a byte every few seconds would
    hold a bid forever; this bounds the request from send to last byte. Limits are waited for
    before (_retries.call_with_retries): waiting for a limit is not the request's time, so the
    deadline starts when the request is sent.
    """
    limit = kwargs.get("timeout")
    token = set_request_deadline(limit)
    try:
        async with asyncio.timeout(limit):
            routed = routed_call(kwargs)  # a model with several deployments: litellm's Router
            if routed is not None:
                return await routed
            if direct_route(kwargs):  # OpenAI-compatible: sent and read by us (_direct.py)
                return await direct_completion(kwargs)
            return await litellm.acompletion(**kwargs)
    except TimeoutError as exc:
        raise deadline_exceeded(kwargs) from exc
    except Exception as exc:
        raise_if_bounded(kwargs, exc)
        raise from_litellm(exc) from exc  # the litellm provider's edge: one error class
    finally:
        REQUEST_DEADLINE.reset(token)


def set_request_deadline(limit: Any) -> Any:
    """Tell the bounded HTTP layer (_bodies.py) when this task's request must have ended."""
    deadline = asyncio.get_running_loop().time() + float(limit) if limit else None
    return REQUEST_DEADLINE.set(deadline)


def deadline_exceeded(kwargs: dict[str, Any]) -> ModelCallError:
    """What a request past its whole deadline raises, streamed or not: code "timeout", reported
    like a read timeout (a bid's error "Timeout: ...")."""
    said = (f"no complete reply within {kwargs.get('timeout')} s (Agent.timeout bounds each "
            "request, first byte to last)")
    return ModelCallError(said, code="timeout", kind="Timeout")


def raise_if_bounded(kwargs: dict[str, Any], exc: BaseException) -> None:
    """A bound of the HTTP layer, whatever error litellm wrapped it in ("Connection error.",
    an APIConnectionError): a reply over the body cap is ResponseTooLarge (no ModelCallError,
    so neither retried nor a rung); a body still arriving at the deadline is the deadline."""
    too_large = in_chain(exc, ResponseTooLarge)
    if too_large is not None:
        raise too_large from None
    if in_chain(exc, deadline_error()) is not None:
        raise deadline_exceeded(kwargs) from None
