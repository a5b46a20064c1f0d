"""One long-lived event loop on a daemon thread, shared by every run, and the bridge to it.

litellm caches async HTTP clients per event loop, so a fresh asyncio.run per call breaks it
("Event loop is closed"); and run() must work from threads that already run a loop (Jupyter,
Streamlit). Submitting to this loop solves both. Callers still want their callbacks on their own
thread or loop, in order, and a clean stop when one raises: `run_relaying` (sync callers) and
`arun_relaying` (async callers) are the one implementation of that bridge, used by GroupChat's
run/arun and by run_sweep.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

Relay = Callable[..., None]
"""`relay(fn, *args)`: have `fn(*args)` run on the caller's side, after every earlier relay."""

Start = Callable[[Relay], Coroutine[Any, Any, T]]
"""Builds the coroutine to run on the loop, given the relay its callbacks must go through."""

Keep = Callable[[Callable[..., None], tuple[Any, ...]], bool]
"""Which relayed calls still run after a failure (e.g. observers, so they see the end)."""


def _keep_none(fn: Callable[..., None], args: tuple[Any, ...]) -> bool:
    return False


def _call_now(fn: Callable[..., None], *args: Any) -> None:
    fn(*args)


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

    def run_relaying(self, start: Start[T], keep: Keep = _keep_none) -> T:
        """Run `start(relay)` on the loop and wait; relayed calls run on this thread, in order.

        If a relayed call raises, or the wait is interrupted (Ctrl-C), the run is cancelled, the
        relayed calls still queued are skipped unless `keep` admits them, and the exception is
        re-raised only after the coroutine has finished (so its record says it was cancelled).
        A run cancelled from elsewhere raises concurrent.futures.CancelledError.
        """
        if self.is_loop_thread():
            raise RuntimeError("a synchronous run was started on the engine's loop thread, "
                               "which it would block forever; await the async API instead")
        calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        done = object()

        async def drive() -> T:
            try:
                return await start(lambda fn, *args: calls.put((fn, args)))
            finally:  # not the future's done-callback: that fires before cancellation finishes
                calls.put(done)

        future = self.submit(drive())
        failure: BaseException | None = None
        while True:
            try:
                item = calls.get()
                if item is done:
                    break
                fn, args = item
                if failure is None or keep(fn, args):
                    fn(*args)
            except BaseException as exc:  # a callback raised, or Ctrl-C: stop the run, keep it
                failure = failure or exc
                future.cancel()
        if failure is not None:
            raise failure
        return future.result()

    async def arun_relaying(self, start: Start[T]) -> T:
        """Async twin of run_relaying: relayed calls run on the caller's loop, in order.

        A relayed call that raises cancels the run and is re-raised once the run has finished;
        cancelling the caller cancels the run, waits for it to finish, then propagates. A run
        cancelled from elsewhere raises concurrent.futures.CancelledError. Called on the loop's
        own thread, the coroutine simply runs there, its relayed calls made at once.
        """
        if self.is_loop_thread():
            return await start(_call_now)
        caller = asyncio.get_running_loop()
        failures: list[BaseException] = []
        finished = asyncio.Event()
        future: concurrent.futures.Future[T] | None = None

        def on_caller(fn: Callable[..., None], *args: Any) -> None:
            if not failures:
                try:
                    fn(*args)
                except Exception as exc:  # a callback raised: stop the run, re-raise below
                    failures.append(exc)
                    if future is not None:
                        future.cancel()

        def relay(fn: Callable[..., None], *args: Any) -> None:
            caller.call_soon_threadsafe(on_caller, fn, *args)

        async def drive() -> T:
            try:
                return await start(relay)
            finally:  # queued after every relayed call, so they have all run by then
                caller.call_soon_threadsafe(finished.set)

        future = self.submit(drive())
        try:
            result = await asyncio.shield(asyncio.wrap_future(future))
        except asyncio.CancelledError:
            future.cancel()
            await finished.wait()  # the run's record says "cancelled" before we go on
            if failures:
                raise failures[0] from None
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            raise concurrent.futures.CancelledError from None  # cancelled from elsewhere
        await finished.wait()
        if failures:
            raise failures[0]
        return result


_lock = threading.Lock()
_runner: BackgroundLoop | None = None


def background_loop() -> BackgroundLoop:
    """The process's shared loop, started on first use."""
    global _runner
    with _lock:
        if _runner is None:
            _runner = BackgroundLoop()
        return _runner
