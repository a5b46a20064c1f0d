"""The Run page's live channel (issue 41, point 1): the route's refusals over HTTP, the feed's
resume without losing or repeating a token, a slow stream dropped without holding the engine up,
and the page granting its own session's job to its own token only.

The route is served as `streamlit run` serves it (kit/live_routes.routes() in a Starlette app,
over HTTP through Starlette's test client); the browser's side (a candidate growing through
the channel, a dropped stream resumed) is tests/e2e/test_streaming.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient
from streamlit.testing.v1 import AppTest

from groupchat_core import (
    Agent,
    Bid,
    BidDelta,
    BidReceived,
    GroupChat,
    Turn,
    TurnCompleted,
    TurnStarted,
)
from groupchat_ui.kit import live_routes, live_view
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.kit.live_feed import CLIENT_QUEUE, LiveFeed
from tests.helpers.app_helpers import fill, goto, new_app, session, sim_agents, status


@pytest.fixture
def reg() -> Iterator[JobRegistry]:
    registry = JobRegistry()
    yield registry
    registry.shutdown()


def chat() -> GroupChat:
    agents = [Agent(agent_name=n, model_name="sim/eager") for n in ("Ann", "Ben")]
    return GroupChat(agents=agents, max_loops=2, threshold=0.3, seed=1)


def events(body: str) -> list[tuple[int, dict[str, object]]]:
    """(id, entry) of each server-sent event in a response body."""
    found = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "id" in fields:
            found.append((int(fields["id"]), json.loads(fields["data"])))
    return found


def test_the_route_serves_a_job_only_to_the_session_it_was_granted_to(reg):
    mine = reg.start_chat(chat(), "Plan a picnic.", owner="alice")
    theirs = reg.start_chat(chat(), "Plan a party.", owner="bob")
    for job in (mine, theirs):
        assert reg.wait(job, timeout=60)
    grants = live_routes.Grants()
    alice, bob = grants.new_token(), grants.new_token()
    grants.allow(alice, mine)
    grants.allow(bob, theirs)
    client = TestClient(Starlette(routes=live_routes.routes(reg, grants)))
    refusals = {
        "no token": f"/live/job/{mine}",
        "an empty token": f"/live/job/{mine}?token=",
        "another session's job": f"/live/job/{theirs}?token={alice}",
        "a guessed id": f"/live/job/{uuid.uuid4().hex}?token={alice}",
        "a made-up token": f"/live/job/{mine}?token={grants.new_token()}",
    }
    for what, url in refusals.items():
        answer = client.get(url)
        # one answer for each: a prober learns nothing about which ids exist
        assert (answer.status_code, answer.text) == (403, live_routes.REFUSED), what
    answer = client.get(f"/live/job/{mine}?token={alice}")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    [(seq, entry)] = events(answer.text)  # a new stream of an ended job: where it stands
    assert entry["t"] == "reset" and entry["ended"] is True and entry["turn"] >= 1
    # a stream that saw the end: nothing more, and no reconnect (204 stops the browser's)
    assert client.get(f"/live/job/{mine}?token={alice}",
                      headers={"Last-Event-ID": str(seq)}).status_code == 204


def test_grants_stay_bounded_and_a_granted_job_gone_from_the_table_ends_its_stream(
        reg, monkeypatch):
    monkeypatch.setattr(live_routes, "MAX_JOBS_PER_TOKEN", 2)
    monkeypatch.setattr(live_routes, "MAX_TOKENS", 2)
    grants = live_routes.Grants()
    first, second, third = (grants.new_token() for _ in range(3))
    for job in ("a", "b", "c"):
        grants.allow(first, job)
    assert [grants.may_watch(first, job) for job in "abc"] == [False, True, True]  # oldest out
    grants.allow(second, "a")
    grants.allow(third, "a")  # a third session: the least recently granted token is forgotten
    assert (grants.may_watch(first, "c"), grants.may_watch(second, "a"),
            grants.may_watch(third, "a")) == (False, True, True)
    # a job granted, since gone from the job table: 204, so the browser stops reconnecting
    client = TestClient(Starlette(routes=[
        Route(live_routes.PATH, live_routes.job_stream_endpoint(reg, grants))]))
    assert client.get(f"/live/job/a?token={third}").status_code == 204


def bid(agent: str, score: float, message: str) -> Bid:
    return Bid(turn=1, agent=agent, position=0, score=score, message=message)


def test_a_stream_resumes_after_the_last_entry_it_saw_without_losing_or_repeating_a_token():
    feed = LiveFeed()
    feed(TurnStarted(run_id="r", turn=1))
    for so_far in ("Hel", "Hello", "Hello wor", "Hello world"):
        feed(BidDelta(run_id="r", turn=1, agent="Ann", score=0.8, message=so_far))
    feed(BidReceived(run_id="r", bid=bid("Ann", 0.8, "Hello world!")))
    loop = asyncio.new_event_loop()
    try:
        whole, sub = feed.subscribe(0, loop)  # from the turn's first entry on
        assert [e["t"] for _, e in whole] == ["turn", "tok", "tok", "tok", "tok", "bid"]
        assert "".join(str(e.get("add", "")) for _, e in whole) == "Hello world"
        for cut in range(1, len(whole) + 1):  # dropped after any entry: the rest, once
            rest, _ = feed.subscribe(cut, loop)
            assert rest == whole[cut:]
        # a stream from before the turn (the log has only this turn) or a stale id from an
        # older server: one reset with every candidate's text so far, numbered as the newest
        feed(TurnCompleted(run_id="r", turn=Turn(turn=1, winner="Ann"), bids=[], message=None))
        feed(TurnStarted(run_id="r", turn=2))
        feed(BidDelta(run_id="r", turn=2, agent="Ben", score=None, message="Hi"))
        for stale in (None, 1, 10_000):
            [(seq, reset)] = feed.subscribe(stale, loop)[0]
            assert seq == 9 and reset == {"t": "reset", "turn": 2, "ended": False,
                                          "cands": {"Ben": [None, "Hi", False]}}
        feed.close()
        assert feed.subscribe(9, loop)[0] == [(10, {"t": "end"})]
        feed.unsubscribe(sub)
    finally:
        loop.close()


def test_a_slow_stream_is_dropped_without_holding_the_engine_up():
    feed = LiveFeed()
    loop = asyncio.new_event_loop()
    try:
        _, slow = feed.subscribe(None, loop)
        # the engine's thread publishes while the stream's loop is busy (not running): each
        # event only schedules a put there, so the engine never waits for the reader
        publisher = threading.Thread(target=lambda: [
            feed(BidDelta(run_id="r", turn=0, agent="Ann", message="x" * (i + 1)))
            for i in range(CLIENT_QUEUE + 10)])
        publisher.start()
        publisher.join()
        assert not slow.dropped and slow.queue.qsize() == 0
        loop.run_until_complete(asyncio.sleep(0))  # the loop runs the puts it was handed
        assert slow.dropped and slow.queue.qsize() == CLIENT_QUEUE
        _, fresh = feed.subscribe(CLIENT_QUEUE + 10, loop)  # its reconnect: a new place
        feed(BidDelta(run_id="r", turn=0, agent="Ann", message="y"))
        loop.run_until_complete(asyncio.sleep(0))
        assert not fresh.dropped and fresh.queue.qsize() == 1
        assert feed.streams == 2  # the route unsubscribes a stream when it ends
        feed.unsubscribe(slow)
        assert feed.streams == 1
    finally:
        loop.close()


def start(at: AppTest) -> str:
    """Start a slow two-agent run on the Run page; its job id."""
    fill(goto(at, "run"), run_roster=["Ann", "Ben"], run_task="Talk.", run_param_max_loops=60,
         run_param_threshold=0.0)
    at.button(key="start_run").click().run()
    assert status(at).startswith(("status: running", "status: queued")), status(at)
    return session(at).current_job or ""


def test_the_run_page_grants_its_own_job_to_its_own_session_token_only(app, store,
                                                                        monkeypatch):
    served = threading.Event()
    served.set()
    monkeypatch.setattr(live_routes, "SERVED", served)  # as `streamlit run` serves it
    monkeypatch.setattr(live_routes, "GRANTS", live_routes.Grants())
    sim_agents(store, "Ann", "Ben", latency=0.3)
    other = new_app()  # another browser session
    mine, theirs = start(app), start(other)
    token, their_token = (at.session_state[live_view.TOKEN_KEY] for at in (app, other))
    assert token != their_token
    assert live_routes.GRANTS.may_watch(token, mine)
    assert live_routes.GRANTS.may_watch(their_token, theirs)
    assert not live_routes.GRANTS.may_watch(token, theirs)
    assert not live_routes.GRANTS.may_watch(their_token, mine)
    # pushed: no timed fragment while the job runs (AppTest never fires a timer, so who holds
    # the page's one timer is read from kit/components.refresh_every's record); where the
    # channel is not served, the fragment falls back to its timer
    assert app.session_state["_page_timer_owner"] is None
    served.clear()
    app.run()
    assert status(app).startswith("status: running"), status(app)
    assert app.session_state["_page_timer_owner"] == "run-live"
