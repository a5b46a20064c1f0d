"""The simulation as a litellm custom provider: litellm.(a)completion(model="sim/<persona>").

Why a module of its own: litellm is imported only by _model_calls.py and this module, always
lazily inside functions (it takes seconds to import), and importing _sim.py must stay cheap.
The engine itself runs sims in-process (_sim_provider.py); this is for litellm's request path
(tests, benchmarks, anyone calling litellm directly with a sim model).
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import lru_cache
from typing import Any

from ._sim import (
    SIM_PREFIX,
    SimBid,
    SimContext,
    asimulate_bid,
    maybe_fail,
    persona_for,
    sim_options_from,
    simulate_bid,
)


def _text_of(content: Any) -> str:
    """Flatten OpenAI-style content (str, list of parts or None) to text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _context_from_request(
    model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any], logging_obj: Any
) -> SimContext:
    """Map a chat-completions request onto a SimContext (assistant turns = this agent)."""
    details = getattr(logging_obj, "model_call_details", None) or {}
    agent = str(optional_params.get("user") or details.get("user") or "sim-agent")
    system = " ".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system")
    history: list[tuple[str, str]] = []
    for m in messages:
        if m.get("role") == "system":
            continue
        role = m.get("name") or m.get("role") or "user"
        role = agent if role == "assistant" else ("User" if role == "user" else role)
        history.append((str(role), _text_of(m.get("content"))))
    temperature = optional_params.get("temperature")
    return SimContext(
        agent_name=agent,
        system_prompt=system,
        persona=persona_for(model).name,
        history=history,
        turn=len(history),
        seed=int(optional_params.get("seed") or 0),
        temperature=0.5 if temperature is None else float(temperature),
    )


def _wants_respond_tool(optional_params: dict[str, Any]) -> bool:
    """True when the request offers a function tool named respond."""
    tools = optional_params.get("tools") or []
    return any((t.get("function") or {}).get("name") == "respond" for t in tools)


def _fill_response(model_response: Any, ctx: SimContext, bid: SimBid, tool: bool) -> Any:
    """Write the bid into litellm's ModelResponse as a respond tool call or JSON text."""
    from litellm.types.utils import ChatCompletionMessageToolCall, Function, Message, Usage

    args = json.dumps({"score": bid.score, "message": bid.message}, ensure_ascii=False)
    choice = model_response.choices[0]
    if tool:
        call_id = "call_sim_" + hashlib.sha1(args.encode()).hexdigest()[:12]
        function = Function(name="respond", arguments=args)
        call = ChatCompletionMessageToolCall(id=call_id, type="function", function=function)
        choice.message = Message(content=None, role="assistant", tool_calls=[call])
        choice.finish_reason = "tool_calls"
    else:
        choice.message = Message(content=args, role="assistant")
        choice.finish_reason = "stop"
    prompt = len(ctx.system_prompt.split()) + sum(len(t.split()) for _, t in ctx.history)
    completion = len(args.split())
    model_response.model = SIM_PREFIX + ctx.persona
    model_response.usage = Usage(
        prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
    )
    return model_response


@lru_cache(maxsize=1)
def _make_handler_class() -> type:
    """Build SimLLM on first use so importing this module never imports litellm."""
    import litellm

    class SimLLM(litellm.CustomLLM):  # type: ignore[misc, name-defined]
        """litellm provider "sim": (a)completion(model="sim/<persona>") runs simulate_bid."""

        def completion(  # same parameters as litellm.CustomLLM.completion (1.106.2)
            self, model: str, messages: list[dict[str, Any]], api_base: str,
            custom_prompt_dict: dict[str, Any],
            model_response: Any, print_verbose: Any, encoding: Any, api_key: Any,
            logging_obj: Any, optional_params: dict[str, Any], acompletion: Any = None,
            litellm_params: Any = None, logger_fn: Any = None, headers: Any = None,
            timeout: Any = None, client: Any = None,
        ) -> Any:
            ctx = _context_from_request(model, messages, optional_params, logging_obj)
            options = sim_options_from(optional_params)
            if options.latency_s > 0:
                time.sleep(options.latency_s)
            maybe_fail(ctx, options)
            tool = _wants_respond_tool(optional_params)
            return _fill_response(model_response, ctx, simulate_bid(ctx), tool)

        async def acompletion(  # same parameters as litellm.CustomLLM.acompletion (1.106.2)
            self, model: str, messages: list[dict[str, Any]], api_base: str,
            custom_prompt_dict: dict[str, Any],
            model_response: Any, print_verbose: Any, encoding: Any, api_key: Any,
            logging_obj: Any, optional_params: dict[str, Any], acompletion: Any = None,
            litellm_params: Any = None, logger_fn: Any = None, headers: Any = None,
            timeout: Any = None,  # noqa: ASYNC109 - litellm passes it
            client: Any = None,
        ) -> Any:
            ctx = _context_from_request(model, messages, optional_params, logging_obj)
            bid = await asimulate_bid(ctx, sim_options_from(optional_params))
            tool = _wants_respond_tool(optional_params)
            return _fill_response(model_response, ctx, bid, tool)

    SimLLM.__qualname__ = "SimLLM"
    return SimLLM


def register_litellm_provider() -> None:
    """Idempotently register provider "sim" so litellm.(a)completion(model="sim/...") works."""
    import litellm

    if not any(e.get("provider") == "sim" for e in litellm.custom_provider_map):
        handler = _make_handler_class()()
        litellm.custom_provider_map.append({"provider": "sim", "custom_handler": handler})
    setup = getattr(litellm.utils, "custom_llm_setup", None)
    if callable(setup):  # adds "sim" to litellm.provider_list / _custom_providers
        setup()


def __getattr__(name: str) -> Any:
    """Expose SimLLM lazily as a module attribute (resolving it imports litellm)."""
    if name == "SimLLM":
        return _make_handler_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
