"""The one seam for model calls: a bid through litellm, stepping down the tool-choice ladder.

The parts live in modules by job: _litellm.py (loading litellm lazily), _routing.py (in-process
providers by model prefix: `sim/...`, scripted fakes skip litellm for speed), _tokens.py (budgets
and counts), _requests.py (building and sending one request), _bodies.py (bounded bodies),
_retries.py (retries, backoff, deadlines), _tool_modes.py (the ladder and its memory),
_replies.py (reading a reply), _streaming.py (streamed bids). This module composes them and
re-exports what callers use.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ._deployments import deployment_of, has_deployments
from ._endpoints import explain_refusal
from ._litellm import litellm_module as litellm_module
from ._litellm import load_litellm_off_loop as load_litellm_off_loop
from ._providers import BidRequest as BidRequest  # re-exported: callers route bids via here
from ._providers import ModelReply
from ._replies import MAX_ERROR_CHARS as MAX_ERROR_CHARS
from ._replies import ModelCallFailed as ModelCallFailed
from ._replies import cap_text as cap_text
from ._replies import parse_response, usage_and_cost
from ._requests import check_allowed, request_kwargs
from ._requests import is_loopback as is_loopback
from ._retries import BID_DEADLINE as BID_DEADLINE
from ._retries import RETRY_MAX_DELAY, Attempts, call_with_retries
from ._retries import is_context_window_error as is_context_window_error
from ._retries import retry_after_seconds as retry_after_seconds
from ._retries import stated_context_window as stated_context_window
from ._routing import in_process_model as in_process_model
from ._streaming import BID_STREAM as BID_STREAM
from ._streaming import (
    STREAMED_PATHS,
    UNSTREAMED_PATHS,
    DeltaSink,
    cut_note,
    stream_refused,
    streamed_cost,
    streamed_request,
)
from ._tokens import approximate_tokens as approximate_tokens
from ._tokens import count_tokens as count_tokens
from ._tokens import input_budget as input_budget
from ._tool_modes import RememberedMode as RememberedMode
from ._tool_modes import forget_remembered_modes as forget_remembered_modes
from ._tool_modes import (
    mode_key,
    recalled_mode,
    rejection,
    remember,
    remember_unstreamed,
    streams,
)
from ._tool_modes import rejection_kind as rejection_kind
from ._tool_modes import remembered_modes as remembered_modes
from ._tool_modes import tools_hash as tools_hash

if TYPE_CHECKING:
    from .._agent import Agent

FALLBACK_RUNGS = 3  # rejected requests a bid may add while stepping down the ladder


def default_bid_deadline(agent: Agent) -> float:
    """The total deadline of a bid when bid_timeout is None: every request it may make (retries
    and fallback rungs) at Agent.timeout each, plus the longest backoffs between them."""
    requests = agent.num_retries + 1 + FALLBACK_RUNGS
    return agent.timeout * requests + RETRY_MAX_DELAY * agent.num_retries


async def call_litellm(agent: Agent, messages: list[dict[str, Any]]) -> ModelReply:
    """One bid through litellm, stepping down the fallback ladder only on call-time rejection.

    When the turn loop set a delta sink (BID_STREAM: the chat streams bids and an observer asks
    for deltas), tool modes are asked with stream=true; a model that refuses (a 400 naming
    streaming, or a stream without a respond call) is asked again without, and remembered."""
    check_allowed(agent)
    await load_litellm_off_loop()
    cache_key = mode_key(agent)
    first = agent.tool_choice_mode or recalled_mode(cache_key)
    mode = first
    attempts = Attempts(retries_left=agent.num_retries)
    sink = BID_STREAM.get()
    wants_stream = sink is not None
    # A routed model (several deployments, _deployments.py) is asked unstreamed: the Router
    # picks the deployment per request and says which answered on the whole reply.
    stream = wants_stream and streams(cache_key) and not has_deployments(agent.model_name)
    while True:
        kwargs = request_kwargs(agent, messages, mode)
        streaming = stream and mode != "json" and sink is not None
        try:
            if streaming:
                assert sink is not None
                send = functools.partial(_stream_send, sink=sink)
                response = await call_with_retries(kwargs, attempts, send)
            else:
                response = await call_with_retries(kwargs, attempts)
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
            cost = streamed_cost(kwargs, response.usage)
            path = STREAMED_PATHS.get(path, path)
        else:
            parsed, path = parse_response(response, mode)
            prompt, completion, cost = usage_and_cost(response)
            if wants_stream and mode != "json":
                path = UNSTREAMED_PATHS.get(path, path)
        return ModelReply(parsed, path, prompt, completion, cost, calls=attempts.calls,
                          deployment=None if streaming else deployment_of(response))


async def _stream_send(litellm: Any, kwargs: dict[str, Any], *, sink: DeltaSink) -> Any:
    return await streamed_request(litellm, kwargs, sink)
