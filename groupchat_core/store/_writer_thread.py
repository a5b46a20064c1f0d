"""The process's store writer thread, and when the engine's thread hands it the GIL.

Writes run on one daemon thread so that the engine never waits for the database when it has
something better to do (a slow disk, a lock held by another process, a remote PostgreSQL).
But a thread that wants the GIL while a busy asyncio loop runs is starved: CPython hands the
GIL over only after its holder has kept it a whole switch interval (5 ms) without releasing
it, and the loop releases and retakes it on every iteration (each epoll call), which resets
that clock. Measured on a 200-turn offline chat (BENCHMARKS.md, store findings): the writer,
woken at the first turn, got the GIL back only at the run's end (181-200 of 200 turns in one
batch), and meanwhile every iteration of the loop paid a futex wake-up for it (12,395 futex
calls in 11 runs instead of 240), 5-10 % of the chat (tests/store/test_store_cadence.py watches a
1,500-turn chat from another process: 2.8 s behind a 2.9 s chat before, 0.1 s now).

So a recorder does not wake the writer for every turn. It *defers* its write and arms a timer
on the engine's own loop for when the write is due (COALESCE_S after the writer's last batch).
When the timer fires the write is submitted, and if the chat is producing turns faster than
that (more than one turn waiting), the engine's thread *hands over*: it waits, at most
HAND_OVER_S, for the writer to write them, so the writer takes the GIL at once instead of
fighting for it; if the writer is not done by then, the engine hands over again, briefly, every
COALESCE_S until it is. A chat waiting for its models is idle when the timer fires, and does
not wait. Without a running loop (a recorder fed from a plain thread) writes are submitted at
once and coalesced by the writer itself.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("groupchat_core")
FLUSH_AT_EXIT_S = 10.0
COALESCE_S = 0.1  # a run's turns reach the store at most about this long after they complete
HAND_OVER_S = 0.25  # the longest the engine's thread waits for a write that is due
HAND_OVER_BEHIND_S = 0.01  # ... and while the writer is behind, every COALESCE_S


class WriterThread:
    """A daemon thread running submitted writes one after another, in order.

    Writes submitted with `coalesce=True` (a recorder fed outside an event loop) are run at most
    once per COALESCE_S: when turns come faster than that the writer wakes once for several
    of them. `defer` holds a write back until `run_deferred` or `flush` (see the module's
    docstring for why). `flush()` cuts every wait short.
    """

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[..., None], tuple[Any, ...], bool]] = (
            queue.SimpleQueue())
        self._hurry = threading.Event()
        self._last_batch = 0.0
        self._batches = 0  # completed batches, to tell when a writer that was behind caught up
        self._behind_at: int | None = None  # the batch count when a hand-over timed out
        self._deferred: set[Callable[[], None]] = set()
        self._deferred_lock = threading.Lock()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., None], *args: Any, coalesce: bool = False) -> None:
        self._queue.put((fn, args, coalesce))

    def due_in(self) -> float:
        """Seconds until a write deferred now is due: COALESCE_S after the last batch."""
        return max(0.0, self._last_batch + COALESCE_S - time.monotonic())

    def defer(self, fn: Callable[[], None]) -> None:
        """Hold `fn` back until `run_deferred(fn)` or the next `flush()`."""
        with self._deferred_lock:
            self._deferred.add(fn)

    def run_deferred(self, fn: Callable[[], None]) -> None:
        """Submit `fn` if it is still deferred."""
        with self._deferred_lock:
            if fn not in self._deferred:
                return
            self._deferred.discard(fn)
        self.submit(fn)

    def hand_over(self) -> bool:
        """On the engine's thread: let the writer have the GIL until what is queued now is
        written. Wait at most HAND_OVER_S; while the writer is still behind from a wait that
        timed out, only HAND_OVER_BEHIND_S (a starved writer gets on; a database that is slow
        or down does not halve the chat's speed). True when it is written."""
        if threading.current_thread() is self._thread:
            return True
        behind = self._behind_at is not None and self._batches <= self._behind_at
        done = threading.Event()
        self.submit(done.set)
        if done.wait(HAND_OVER_BEHIND_S if behind else HAND_OVER_S):
            self._behind_at = None
            return True
        if not behind:
            self._behind_at = self._batches
        return False

    def flush(self, timeout: float | None = None) -> bool:
        """Write everything submitted or deferred so far; False on timeout."""
        with self._deferred_lock:
            deferred, self._deferred = self._deferred, set()
        for fn in deferred:
            self.submit(fn)
        if threading.current_thread() is self._thread:
            return True
        done = threading.Event()
        self.submit(done.set)
        self._hurry.set()
        return done.wait(timeout)

    def _main(self) -> None:
        while True:
            fn, args, coalesce = self._queue.get()
            if coalesce:
                wait = self._last_batch + COALESCE_S - time.monotonic()
                if wait > 0:
                    self._hurry.wait(wait)
                self._hurry.clear()
            self._run(fn, args)
            while True:  # everything that arrived meanwhile, without waiting again
                try:
                    fn, args, _ = self._queue.get_nowait()
                except queue.Empty:
                    break
                self._run(fn, args)
            self._last_batch = time.monotonic()
            self._batches += 1

    @staticmethod
    def _run(fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except Exception:  # a bug in a write must not kill the thread for every later run
            logger.exception("run store writer: %r failed", fn)


_thread: WriterThread | None = None
_thread_lock = threading.Lock()


def writer_thread() -> WriterThread:
    """The process's one store writer thread, started on first use (writes are short; one
    thread keeps every database's writes in order and costs nothing while idle)."""
    global _thread
    with _thread_lock:
        if _thread is None:
            _thread = WriterThread("groupchat-store-writer")
            atexit.register(flush_all)
        return _thread


def flush_all(timeout: float = FLUSH_AT_EXIT_S) -> None:
    """Finish queued and deferred writes (at interpreter exit, so a script's last turns are
    not lost)."""
    if _thread is not None:
        _thread.flush(timeout)
