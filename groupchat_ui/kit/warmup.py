"""Warm what the first real-model run needs, in the background, once per server process.

Why: litellm (and what its first completion imports) took seconds on the first run after a
server start (~8-10 s to the first model request on a loaded 2-core machine, bench.live_view),
while later runs start in a fraction of a second. A daemon thread pays that once, after the
first script run has drawn its page (streamlit_app.py calls `start()` at the end of each run),
so the user's first Start finds litellm loaded. (The engine's loop starts with the job
registry, on the first script run: a thread, no measurable cost.)
"""

from __future__ import annotations

import threading

from groupchat_core import prepare_litellm

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


def thread() -> threading.Thread | None:
    """The warm-up thread if one was started in this process (for tests and diagnostics)."""
    with _lock:
        return _thread
