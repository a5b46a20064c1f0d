"""Warm what the first real-model run needs, in the background, once per server process.

Why: litellm (and what its first completion imports) took seconds on the first run after a
server start (~8-16 s to the first model request on a loaded 2-core machine, bench.live_view),
while later runs start in a fraction of a second. A daemon thread pays that once, when the Run
page is shown with a real-model agent saved (`for_agents`), so the first Start finds litellm
loaded. Only then: the import holds the GIL for seconds and slows every page of the process
while it runs (a fresh Analysis tab right after a server start took 5.1 -> 8.9 s when every
first script run started it, bench.analysis_cold), and a sims-only lab never needs litellm.
(The engine's loop starts with the job registry, on the first script run: no measurable cost.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from groupchat_core import Agent, is_sim_model, prepare_litellm

_lock = threading.Lock()
_thread: threading.Thread | None = None


def start() -> threading.Thread:
    """The warm-up thread (started on the first call; later calls return the same one)."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=prepare_litellm, name="groupchat-warmup", daemon=True)
            _thread.start()
        return _thread


def for_agents(agents: Iterable[Agent]) -> threading.Thread | None:
    """Start the warm-up if any of `agents` is a real model (sims never load litellm)."""
    if any(not is_sim_model(a.model_name) for a in agents):
        return start()
    return None


def thread() -> threading.Thread | None:
    """The warm-up thread if one was started in this process (for tests and diagnostics)."""
    with _lock:
        return _thread
