"""Loading litellm: once, lazily, off the event loop.

litellm is imported only by this module and _sim_litellm.py (the sim provider litellm can call),
always inside functions: it takes seconds to import (tests/architecture/test_imports_litellm.py
pins the rule).
"""

from __future__ import annotations

import asyncio
import functools
import os
from typing import Any


@functools.cache
def litellm_module() -> Any:
    """Import litellm once, offline-friendly: local price map, no debug banner, sim registered,
    every HTTP transport bounded (_bodies.py)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    from ._bodies import install
    from ._sim_litellm import register_litellm_provider

    install(AsyncHTTPHandler)  # every route's bytes bounded where they are read, before any client

    register_litellm_provider()
    return litellm


def async_transport() -> Any:
    """A new httpx transport as litellm builds them (aiohttp by default), already bounded
    (_bodies.install), for the engine's own OpenAI-compatible client (_direct.py)."""
    litellm_module()
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    return AsyncHTTPHandler.create_async_transport()


_litellm_ready = False


async def load_litellm_off_loop() -> None:
    """Import litellm (seconds) on a worker thread, so the shared loop keeps serving other chats
    (a dashboard's live views, sim runs) while the first real-model chat starts."""
    global _litellm_ready
    if not _litellm_ready:
        await asyncio.to_thread(litellm_module)
        _litellm_ready = True


WARM_ROUTES = ("openai/warm-up", "hosted_vllm/warm-up")  # the direct path's provider; litellm's


def warm_routes() -> None:
    """Load litellm and what its first completion with tools imports (hundreds of modules: its
    OpenAI and OpenAI-compatible routes, tool handling, cost): one `mock_response` completion
    per route, answered inside litellm, no socket opened. A server calls this before it takes
    sessions (`groupchat_core.warm_up`), so a user's first chat does not pay it."""
    litellm = litellm_module()
    tools = [{"type": "function", "function": {
        "name": "respond", "parameters": {"type": "object", "properties": {
            "score": {"type": "number"}, "message": {"type": "string"}}}}}]
    for model in WARM_ROUTES:
        litellm.completion(model=model, api_base="http://127.0.0.1:9", api_key="warm-up",
                           messages=[{"role": "user", "content": "warm up"}], tools=tools,
                           tool_choice="required", mock_response="warm")
