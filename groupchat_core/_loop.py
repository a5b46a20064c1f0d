"""One long-lived event loop on a daemon thread, shared by every synchronous run.

litellm caches async HTTP clients per event loop, so a fresh asyncio.run per call breaks it
("Event loop is closed"); and run() must work from threads that already run a loop (Jupyter,
Streamlit). Submitting to this loop solves both.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    """A daemon thread running one asyncio loop forever; jobs are submitted thread-safely."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="groupchat-loop", daemon=True)
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def is_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread


_lock = threading.Lock()
_runner: BackgroundLoop | None = None


def background_loop() -> BackgroundLoop:
    """The process's shared runner, started on first use."""
    global _runner
    with _lock:
        if _runner is None:
            _runner = BackgroundLoop()
        return _runner
