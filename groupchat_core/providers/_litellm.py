"""Loading litellm: once, lazily, off the event loop.

litellm is imported only by this module and _sim_litellm.py (the sim provider litellm can call),
always inside functions: it takes seconds to import (tests/architecture/test_imports_litellm.py
pins the rule).
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from typing import Any

_loading = threading.Lock()  # a warm-up thread and the first chat may both ask at once


def litellm_module() -> Any:
    """Import litellm once, offline-friendly: local price map, no debug banner, sim registered,
    every HTTP transport bounded (_bodies.py). Thread-safe: set up exactly once."""
    with _loading:
        return _load()


@functools.cache
def _load() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    from ._bodies import install
    from ._sim_litellm import register_litellm_provider

    install(AsyncHTTPHandler)  # every route's bytes bounded where they are read, before any client

    register_litellm_provider()
    _first_call_imports()
    return litellm


# What litellm 1.x imports on its first completion with tools (measured in bench.live_view:
# ~700 modules, 2-6 s on a loaded 2-core machine): paid here, where a warm-up can pay it ahead
# of the first request (the dashboard does, groupchat_ui/kit/warmup.py), not on that request.
_FIRST_CALL = ("litellm.proxy.openai_files_endpoints.common_utils",
               "litellm.responses.mcp.chat_completions_handler",
               "litellm.litellm_core_utils.default_encoding")


def _first_call_imports() -> None:
    import importlib

    for name in _FIRST_CALL:
        try:
            importlib.import_module(name)
        except ImportError:  # another litellm version: its first call imports what it needs
            continue


_litellm_ready = False


async def load_litellm_off_loop() -> None:
    """Import litellm (seconds) on a worker thread, so the shared loop keeps serving other chats
    (a dashboard's live views, sim runs) while the first real-model chat starts."""
    global _litellm_ready
    if not _litellm_ready:
        await asyncio.to_thread(litellm_module)
        _litellm_ready = True
