"""One rpm pace for a whole Ray sweep: a limiter actor every worker asks before each request
(docs/sweeps.md, "Sweeps on Ray", limits across the cluster).

Why: a deployment's rpm is paced by a WindowLimit in each process (providers/_deployments.py);
with N worker processes a provider saw up to N times the rpm (76 requests in a minute at rpm 20
on Ray). Here the driver creates one `SweepLimits` actor per sweep (named after it) holding the
windows, and each CellWorker installs a `ClusterPacing` (the `Pacing` seam of _deployments.py)
that asks that actor for a permit (an async actor call) before each request and hands it back
when the request ends. The wait is the same wait as the local one: inside `queued()` and before
the request's own timeout, so it never fails a bid.

Why the limit holds across machines: the window counts on the actor's clock alone, from the
moment a permit comes back (after its request ended) to the moment it is granted again (before
the next request leaves), so request k + rpm reaches the server no sooner than request k ended
plus the window, whatever the network delays (they only add).

Only deployment names, digests of where they point, and counts travel to the actor: never a
key. Not yet cluster-wide: tpm (the Router's, per process) and the in-flight cap (per process).
A worker that dies holding permits (or waiting for them) would keep them for good, and a sweep
whose rpm it held would wait forever: the driver, which sees the death first, tells the limiter
to `forget` that process's leases (a held permit comes back as a request that ended then; a
wait is cancelled).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
from typing import Any

from ..providers._deployments import Deployment, pace_key
from ..providers._ratelimit import WindowLimit


def limiter_name(sweep_id: str) -> str:
    return f"groupchat-limits-{sweep_id}"


def lease_owner(host: str, pid: int) -> str:
    """The prefix of every lease a worker process takes (its host and pid, as its cells' hello
    names it to the driver)."""
    return f"{host}/{pid}/"


class SweepLimits:
    """The Ray actor (async) holding one sweep's windows: one WindowLimit per model and set of
    deployments, over the driver's window. Leases name each wait, so a caller cancelled while
    waiting gives back exactly what it took, whichever of its calls arrives first."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._windows: dict[str, WindowLimit] = {}
        self._waiting: dict[str, asyncio.Task[Any]] = {}
        self._held: dict[str, str] = {}  # lease -> key, granted and not given back
        self._abandoned: set[str] = set()  # abandoned before their acquire arrived
        self.granted = 0
        self.cancelled = 0  # waits cancelled
        self._gone: set[str] = set()  # leases whose wait was cancelled, before their abandon

    def _window(self, key: str, limit: int) -> WindowLimit:
        if key not in self._windows:
            self._windows[key] = WindowLimit(limit, self.window_s)
        return self._windows[key]

    async def acquire(self, key: str, limit: int, lease: str) -> bool:
        """Wait for a permit of `key` (at most `limit` per window); False if the lease was
        abandoned first."""
        if lease in self._abandoned:
            self._abandoned.discard(lease)
            return False
        task = asyncio.current_task()
        assert task is not None
        self._waiting[lease] = task
        try:
            await self._window(key, limit).acquire()
        except asyncio.CancelledError:  # by abandon/forget, or by Ray (its caller's cell was
            self.cancelled += 1  # cancelled: Ray cancels the calls it made too)
            self._gone.add(lease)  # its abandon may still come
            raise
        finally:
            self._waiting.pop(lease, None)
        self._held[lease] = key
        self.granted += 1
        return True

    async def release(self, lease: str) -> None:
        """The lease's request ended: its permit is due again a window from now."""
        key = self._held.pop(lease, None)
        if key is not None:
            self._windows[key].release()

    async def abandon(self, lease: str) -> None:
        """The caller stopped waiting (its cell was cancelled): cancel the wait, or give back a
        permit granted meanwhile (as a request that ended now), or refuse the lease later."""
        task = self._waiting.pop(lease, None)
        if lease in self._gone:  # Ray cancelled its wait already
            self._gone.discard(lease)
        elif task is not None:
            await _cancelled([task])
            self._gone.discard(lease)
        elif lease in self._held:
            await self.release(lease)
        else:
            self._abandoned.add(lease)

    async def forget(self, owner: str) -> None:
        """A worker process died: its waits end and its permits come back (as requests that
        ended now: whatever it sent reached the server before)."""
        await _cancelled([self._waiting.pop(lease) for lease in list(self._waiting)
                          if lease.startswith(owner)])
        self._gone = {lease for lease in self._gone if not lease.startswith(owner)}
        for lease in [lease for lease in self._held if lease.startswith(owner)]:
            await self.release(lease)

    async def stats(self) -> dict[str, Any]:
        return {"window_s": self.window_s, "granted": self.granted, "held": len(self._held),
                "waiting": len(self._waiting), "cancelled": self.cancelled}


async def _cancelled(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel waits and let each leave its window's queue before anything is given back (a
    permit handed to a wait cancelled but still queued would wake no one)."""
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)


class ClusterLimits:
    """What a worker needs to pace through the sweep's limiter: its handle and window (small,
    pickled into each cell's call; no key)."""

    def __init__(self, handle: Any, name: str, window_s: float) -> None:
        self.handle, self.name, self.window_s = handle, name, window_s

    def __repr__(self) -> str:
        return f"ClusterLimits({self.name!r}, window {self.window_s} s)"


class ClusterPacing:
    """The worker's Pacing: every permit comes from the sweep's SweepLimits actor."""

    def __init__(self, limits: ClusterLimits) -> None:
        self.limits = limits
        self._leases = itertools.count()
        self._prefix = lease_owner(socket.gethostname(), os.getpid()) + f"{id(self):x}-"

    @property
    def window_s(self) -> float:
        return self.limits.window_s

    async def acquire(self, group: str, items: list[Deployment], rpm: int) -> Any:
        lease = f"{self._prefix}{next(self._leases)}"
        handle = self.limits.handle
        try:
            await handle.acquire.remote(pace_key(group, items), rpm, lease)
        except asyncio.CancelledError:
            handle.abandon.remote(lease)
            raise
        return lease

    def release(self, permit: Any) -> None:
        self.limits.handle.release.remote(permit)


# Calls the actor runs at once. Every method runs on its one event loop (one thread: no locks,
# and a cancel reaches its wait; a concurrency group of its own would run releases on another
# loop's thread). Waits never fill it: one per request in flight, at most the sweep's
# concurrency x its agents; were it full, releases would queue behind the waits.
MAX_CALLS = 100_000


def start_limits(sweep_id: str, window_s: float) -> ClusterLimits:
    """The driver's part: the sweep's limiter actor (no CPU; found again by name if this driver
    made it before)."""
    import ray

    name = limiter_name(sweep_id)
    options: dict[str, Any] = {"num_cpus": 0, "max_restarts": 0, "max_concurrency": MAX_CALLS}
    actor: Any = ray.remote(**options)(SweepLimits)
    handle = actor.options(name=name, get_if_exists=True).remote(window_s)
    return ClusterLimits(handle, name, window_s)
