"""The litellm provider: a bid through litellm, stepping down the tool-choice ladder.

The parts live in modules by job: _litellm.py (loading litellm lazily), _tokens.py (budgets
and counts), _requests.py (building and sending one request), _bodies.py (bounded bodies),
_retries.py (retries, backoff, deadlines), _tool_modes.py (the ladder and its memory),
_replies.py (reading a reply), _streaming.py (streamed bids), _direct.py (OpenAI-compatible
requests sent and read without litellm). This module composes them into
the Provider (_providers.py) the engine uses for every model that is not in-process; callers
import each other name from the module that defines it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ._deployments import deployment_of, has_deployments
from ._direct import cost_of
from ._endpoints import explain_refusal
from ._litellm import load_litellm_off_loop
from ._providers import BidRequest, DeltaSink, ModelReply, Provider
from ._replies import ModelCallFailed, parse_response, usage_and_cost
from ._requests import check_destination, request_kwargs
from ._retries import RETRY_MAX_DELAY, Attempts, call_with_retries
from ._routing import Providers, in_process_provider
from ._streaming import (
    STREAMED_PATHS,
    UNSTREAMED_PATHS,
    cut_note,
    stream_refused,
    streamed_request,
)
from ._tool_modes import (
    TEXT_MODES,
    mode_key,
    recalled_mode,
    rejection,
    remember,
    remember_unstreamed,
    streams,
)

if TYPE_CHECKING:
    from .._agent import Agent

FALLBACK_RUNGS = 3  # rejected requests a bid may add while stepping down the ladder


def default_bid_deadline(agent: Agent) -> float:
    """The total deadline of a bid when bid_timeout is None: every request it may make (retries
    and fallback rungs) at Agent.timeout each, plus the longest backoffs between them."""
    requests = agent.num_retries + 1 + FALLBACK_RUNGS
    return agent.timeout * requests + RETRY_MAX_DELAY * agent.num_retries


class LiteLLMProvider:
    """The Provider for every model litellm serves: needs the bid prompt, honours the
    request's deadline (retries never start past it) and streams to its sink when set."""

    needs_prompt = True

    async def bid(self, request: BidRequest) -> ModelReply:
        return await call_litellm(request.agent, request.messages, deadline=request.deadline,
                                  sink=request.sink)


LITELLM = LiteLLMProvider()


def provider_for(model_name: str, chosen: Providers | None = None) -> Provider:
    """The provider answering a model: an in-process one (_routing.py), else litellm."""
    return in_process_provider(model_name, chosen) or LITELLM


async def call_litellm(agent: Agent, messages: list[dict[str, Any]], *,
                       deadline: float | None = None,
                       sink: DeltaSink | None = None) -> ModelReply:
    """One bid through litellm, stepping down the fallback ladder only on call-time rejection.

    `deadline` (a loop time) bounds the retries: none starts that could not end by it. With a
    `sink` (the chat streams bids and an observer asks for deltas), tool modes are asked with
    stream=true; a model that refuses (a 400 naming streaming, or a stream without a respond
    call) is asked again without, and remembered."""
    check_destination(agent)
    await load_litellm_off_loop()
    cache_key = mode_key(agent)
    first = agent.tool_choice_mode or recalled_mode(cache_key)
    mode = first
    attempts = Attempts(retries_left=agent.num_retries)
    wants_stream = sink is not None
    # A routed model (several deployments, _deployments.py) is asked unstreamed: the Router
    # picks the deployment per request and says which answered on the whole reply.
    stream = wants_stream and streams(cache_key) and not has_deployments(agent.model_name)
    while True:
        kwargs = request_kwargs(agent, messages, mode)
        streaming = stream and mode not in TEXT_MODES and sink is not None
        try:
            if streaming:
                assert sink is not None
                send = functools.partial(_stream_send, sink=sink)
                response = await call_with_retries(kwargs, attempts, send, deadline=deadline)
            else:
                response = await call_with_retries(kwargs, attempts, deadline=deadline)
        except Exception as exc:
            next_mode = None if agent.tool_choice_mode else rejection(exc, mode)
            if next_mode is None and streaming and stream_refused(exc):
                remember_unstreamed(cache_key)
                stream = False
                continue
            if next_mode is None:
                raise ModelCallFailed(explain_refusal(agent.agent_name, kwargs, exc),
                                      attempts.calls) from exc
            mode = next_mode
            continue
        if streaming and not response.has_respond:  # content only: ask again, unstreamed
            remember_unstreamed(cache_key)
            stream = False
            continue
        if agent.tool_choice_mode is None and mode != first:
            remember(cache_key, mode)
        if streaming:
            parsed, path = parse_response(response.as_response(), mode)
            parsed = cut_note(parsed, response)
            prompt = getattr(response.usage, "prompt_tokens", None)
            completion = getattr(response.usage, "completion_tokens", None)
            cost = cost_of(kwargs, response.usage)
            path = STREAMED_PATHS.get(path, path)
        else:
            parsed, path = parse_response(response, mode)
            prompt, completion, cost = usage_and_cost(response)
            if wants_stream and mode not in TEXT_MODES:
                path = UNSTREAMED_PATHS.get(path, path)
        return ModelReply(parsed, path, prompt, completion, cost, calls=attempts.calls,
                          deployment=None if streaming else deployment_of(response))


async def _stream_send(litellm: Any, kwargs: dict[str, Any], *, sink: DeltaSink) -> Any:
    return await streamed_request(litellm, kwargs, sink)
