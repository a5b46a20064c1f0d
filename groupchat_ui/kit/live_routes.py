"""The live channel's route beside the app: `GET /live/job/<id>?token=...`, a chat job's entries
as server-sent events (no streamlit; kit/live_feed.py says what an entry is).

Who may watch: the same rule as the page. A session sees a job on the Run page only when it is
in the session's list (it started it, its owner's browser, or a watcher holding the job's
link, kit/state.py and run/live_view.py). When the page draws a job's live view it grants that
job to the session's channel token (`GRANTS.allow`), a per-session secret the session never
puts in a URL of the app; the route serves a job only to a token it was granted to. No token,
an unknown one, another session's job or a guessed id: 403, the same answer for each, so the
route tells a prober nothing about which ids exist.

Resumable: each event's `id:` is its number in the job's feed; a reconnecting EventSource
sends `Last-Event-ID` (a new one on a page that had a stream passes `?last=`), and gets the
entries after it. A run that has ended and has nothing left to send answers 204, which tells
the browser to stop reconnecting.

GROUPCHAT_LIVE_STREAM_EVENTS (default 0: never) ends each stream after that many events, so a
proxy that dislikes long responses sees them recycled; the browser reconnects and resumes (the
browser tests use it to drop the stream on purpose).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from .jobs import JobRegistry, registry
from .live_feed import Entry, LiveFeed, Subscription

PATH = "/live/job/{job_id}"
STREAM_EVENTS_ENV = "GROUPCHAT_LIVE_STREAM_EVENTS"
KEEPALIVE_S = 15.0  # a comment line this often: a gone client's connection is noticed
RETRY_MS = 250  # the browser's wait before it reconnects a dropped stream
MAX_TOKENS = 10_000  # sessions' tokens remembered (the oldest forgotten first)
MAX_JOBS_PER_TOKEN = 256
REFUSED = "not yours to watch"
SERVED = threading.Event()  # set once this process serves the routes (kit/live_view.served)


class Grants:
    """Which jobs each session's channel token may watch (thread-safe, bounded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, OrderedDict[str, None]] = OrderedDict()

    @staticmethod
    def new_token() -> str:
        """A session's channel token: unguessable, unrelated to any id in a URL."""
        return secrets.token_urlsafe(32)

    def allow(self, token: str, job_id: str) -> None:
        with self._lock:
            jobs = self._jobs.setdefault(token, OrderedDict())
            self._jobs.move_to_end(token)
            jobs[job_id] = None
            jobs.move_to_end(job_id)
            while len(jobs) > MAX_JOBS_PER_TOKEN:
                jobs.popitem(last=False)
            while len(self._jobs) > MAX_TOKENS:
                self._jobs.popitem(last=False)

    def may_watch(self, token: str | None, job_id: str) -> bool:
        with self._lock:
            return bool(token) and job_id in self._jobs.get(token or "", {})


GRANTS = Grants()


def stream_events(environ: Mapping[str, str] | None = None) -> int:
    """GROUPCHAT_LIVE_STREAM_EVENTS as a count (0: streams never end on their own)."""
    raw = (os.environ if environ is None else environ).get(STREAM_EVENTS_ENV, "").strip()
    return int(raw) if raw.isdigit() else 0


def last_seen(request: Request) -> int | None:
    """The last entry number the browser saw: the reconnect's header, else `?last=`."""
    raw = request.headers.get("last-event-id") or request.query_params.get("last") or ""
    return int(raw) if raw.strip().isdigit() else None


def sse(entry: Entry) -> str:
    """One server-sent event: its number and its entry as one line of JSON."""
    seq, payload = entry
    return f"id: {seq}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n"


async def _events(feed: LiveFeed, backlog: list[Entry], sub: Subscription,
                  limit: int) -> AsyncIterator[str]:
    """The stream: what was missed, then each entry as it comes, until the run ends, the
    reader falls too far behind (dropped), or `limit` events (0: none) were sent."""
    sent = 0
    try:
        yield f"retry: {RETRY_MS}\n\n"
        for entry in backlog:
            yield sse(entry)
            sent += 1
            if entry[1]["t"] == "end" or (entry[1]["t"] == "reset" and entry[1]["ended"]):
                return
            if limit and sent >= limit:  # the rest comes on the reconnect, from the log
                return
        while not sub.dropped and not (limit and sent >= limit):
            try:
                entry = await asyncio.wait_for(sub.queue.get(), KEEPALIVE_S)
            except TimeoutError:
                yield ": keepalive\n\n"
                continue
            yield sse(entry)
            sent += 1
            if entry[1]["t"] == "end":
                return
    finally:
        feed.unsubscribe(sub)


def job_stream_endpoint(jobs: JobRegistry | None = None, grants: Grants = GRANTS) -> Any:
    """The route's endpoint over a job table and its grants (the process's by default)."""

    async def job_stream(request: Request) -> Response:
        job_id = str(request.path_params["job_id"])
        if not grants.may_watch(request.query_params.get("token"), job_id):
            return PlainTextResponse(REFUSED, status_code=403)
        try:
            feed = (jobs or registry()).feed(job_id)
        except KeyError:  # granted once, since expired
            return Response(status_code=204)
        backlog, sub = feed.subscribe(last_seen(request), asyncio.get_running_loop())
        if not backlog and feed.ended:
            feed.unsubscribe(sub)
            return Response(status_code=204)
        return StreamingResponse(
            _events(feed, backlog, sub, stream_events()), media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return job_stream


def routes(jobs: JobRegistry | None = None, grants: Grants = GRANTS) -> list[BaseRoute]:
    """The live channel's routes, for `st.App(..., routes=...)` (streamlit_app.py)."""
    SERVED.set()
    return [Route(PATH, job_stream_endpoint(jobs, grants), methods=["GET"])]
