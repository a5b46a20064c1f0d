"""A live run streams its bids: a candidate's reply grows on the Run page before the turn ends,
pushed through the page's live channel (kit/live_routes.py, kit/live.js: no rerun between two
tokens), its text stays inert, and once the turn settles the winner is posted and the other
candidate folds away (one click from its text). A stream the server drops again and again
resumes where it stopped: every word once, none lost.

Two agents on the fake OpenAI server (real HTTP from the app's process): A's reply arrives as a
stream of deltas that the server holds (once "Streaming words" can show, once "so the room can
watch" can, before its end) until the test has looked, so its growth and the open turn are
seen whatever the machine's speed; B answers at once with a weaker bid. Sim agents answer
in-process and do not stream, so the fake server is the model here.

The channel's refusals (no token, another session's job, a guessed id) are checked over HTTP
on the route itself: tests/ui/test_live_channel.py.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_core.testing import FakeOpenAIServer, tool_call

from .conftest import (
    WAIT_MS,
    expect,
    fill_task,
    fresh,
    open_page,
    pick_roster,
    screenshot,
    serve_app,
    start_run,
    status_line,
    wait_idle,
)

WORDS = ["Streaming", "words", "arrive", "one", "by", "one", "so", "the", "room", "can",
         "watch", "this", "reply", "form", "<img", "src=x", "onerror=window.__pwned=1>", "end."]
CANDIDATE = '.gc-cand[data-i="0"]'  # the first candidate's row in the live channel (live.js)
SENT = "() => window.__gcWire.sent"  # messages the tab sent the app (a rerun asks with one)


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def two_agents(fake: FakeOpenAIServer, db_url: str, pace: Callable[[int], None]
               ) -> tuple[str, str]:
    """Slow streams WORDS (one write a word, `pace` before each) with a bid of 0.9; Quick bids
    0.3 at once; the next turn lulls. Saved in the app's store; returns their names."""
    suffix = uuid.uuid4().hex[:6]
    slow, quick = f"Slow-{suffix}", f"Quick-{suffix}"
    head = '{"score": 0.9, "message": "'
    fragments = [head + WORDS[0]] + [" " + w for w in WORDS[1:]] + ['"}']
    fake.script(f"slow{suffix}", [tool_call(fragments=fragments, chunk_delay=0.1, score=None,
                                            message=None, pace=pace)])
    fake.script(f"quick{suffix}", [tool_call(0.3, f"{quick} would rather listen.")])
    fake.set_responder(None, lambda body: tool_call(0.0, ""))  # turn 2: a lull ends the run
    RunStore(db_url).save_agents([
        Agent(agent_name=slow, model_name=f"openai/slow{suffix}", api_base=fake.base_url),
        Agent(agent_name=quick, model_name=f"openai/quick{suffix}", api_base=fake.base_url)])
    return slow, quick


def start(page: Any, app: str, agents: list[str]) -> None:
    page.goto(app)
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    open_page(page, "Run")
    pick_roster(page, agents)
    fill_task(page, "Watch the bids form.")
    start_run(page)


def test_a_candidate_reply_grows_before_the_turn_ends(app_server, app_db_url, page, fake):
    message = " ".join(WORDS)
    # Write 0 is the role chunk, write k+1 fragment k. The page holds back a reply's trailing
    # word until the next one comes (it may begin a secret), so hold the stream before " one"
    # (write 4: "Streaming words" shown, "arrive" held) and before " reply" (write 13: "...
    # can watch" shown) until the test has looked. The holds time out after WAIT_MS, so a
    # failed test never leaves the server's thread waiting.
    holds = {4: threading.Event(), 13: threading.Event()}

    def pace(index: int) -> None:  # the server's thread, before write `index` of the stream
        if index in holds:
            holds[index].wait(timeout=WAIT_MS / 1000)

    slow, quick = two_agents(fake, app_db_url, pace)
    start(page, app_server, [slow, quick])

    candidate = fresh(page, CANDIDATE)
    try:
        expect(candidate).to_contain_text("Streaming words", timeout=WAIT_MS)
        early = candidate.inner_text()
        assert "arrive" not in early  # held there: what the panel shows is all that came
        expect(candidate).to_contain_text("score 0.90 · typing…")
        # Pushed, not polled: the page has settled from the turn's opening, and from here to
        # the next words nothing asks the app for a rerun (a timed fragment asked twice a
        # second); the words come through the live channel's stream alone.
        wait_idle(page)
        sent = page.evaluate(SENT)
        holds[4].set()
        expect(candidate).to_contain_text("so the room can watch", timeout=WAIT_MS)
        grown = candidate.inner_text()
        assert len(grown) > len(early)
        assert page.evaluate(SENT) == sent
        # the turn is still open (held): nobody has spoken yet, the status says running
        expect(status_line(page)).to_have_text(re.compile(r"^status: running .* messages 0$"),
                                               timeout=WAIT_MS)
        screenshot(page, "streaming-1-forming")
    finally:
        for hold in holds.values():
            hold.set()

    expect(status_line(page)).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)
    posted = page.get_by_test_id("stChatMessage").filter(has_text="onerror=window.__pwned=1")
    expect(posted.first).to_be_visible()
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator('[data-testid="stChatMessage"] img[src="x"]').count() == 0
    assert page.locator(".gc-live img").count() == 0  # the forming text was inert too
    expect(fresh(page, CANDIDATE)).to_have_count(0)  # the forming panel folded away
    folded = "Turn 1: 1 other candidate (not posted)"
    other = page.get_by_test_id("stExpander").filter(has_text=folded)
    expect(other).to_be_visible()
    other.get_by_text(folded).click()
    expect(other.get_by_text(f"{quick} would rather listen.")).to_be_visible()
    screenshot(page, "streaming-2-settled")
    assert fake.requests_for(slow.replace("Slow-", "slow"))[0].body["stream"] is True
    stored = RunStore(app_db_url).list_runs(agent=slow)
    bids = RunStore(app_db_url).load_run(stored.iloc[0]["run_id"]).bids
    assert [(b.agent, b.message, b.path) for b in bids[:1]] == [
        (slow, message, "tool_call:stream")]


def test_a_dropped_stream_resumes_without_losing_or_repeating_a_word(app_db_url, page, fake,
                                                                      tmp_path):
    # The server ends every stream after two events (GROUPCHAT_LIVE_STREAM_EVENTS): the
    # browser reconnects again and again, each time from the last event it saw. Held before
    # the reply's last write, so the panel is read while the turn is still open.
    # The words wait until the page's stream is open: a page that connected only after the
    # reply had formed got it whole in one `reset` event and never needed to reconnect.
    last = len(WORDS) + 1  # write 0 is the role chunk; the last write closes the reply
    hold, opened = threading.Event(), threading.Event()

    def pace(index: int) -> None:
        if index == 1:
            opened.wait(timeout=WAIT_MS / 1000)
        if index == last:
            hold.wait(timeout=WAIT_MS / 1000)

    slow, quick = two_agents(fake, app_db_url, pace)
    with serve_app(app_db_url, tmp_path / "streamlit.log",
                   extra_env={"GROUPCHAT_LIVE_STREAM_EVENTS": "2"}) as app:
        start(page, app, [slow, quick])
        try:
            expect(fresh(page, ".gc-live")).to_have_attribute(
                "data-connects", re.compile(r"^[1-9]"), timeout=WAIT_MS)
            opened.set()
            shown = " ".join(WORDS[:-1])  # the trailing word waits for the reply's end
            words = fresh(page, f"{CANDIDATE} .gc-cand-text")
            expect(words).to_contain_text(shown, timeout=WAIT_MS)
            # each word once, in order (the gate may pass the space after the last one)
            assert words.evaluate("e => e.firstChild.data").split() == WORDS[:-1]
            connects = fresh(page, ".gc-live").get_attribute("data-connects")
            assert int(connects or 0) >= 3  # dropped and resumed, more than once
        finally:
            opened.set()
            hold.set()
        expect(status_line(page)).to_have_text(re.compile(r"^status: finished"),
                                               timeout=WAIT_MS)


def test_a_page_whose_stream_is_blocked_still_follows_the_run(app_server, app_db_url, page,
                                                              fake):
    # A proxy or a network that will not carry the stream: the page falls back to a rerun a
    # second (kit/live.js), so the run still settles on screen without a click.
    slow, quick = two_agents(fake, app_db_url, lambda index: None)
    page.route("**/live/job/**", lambda route: route.abort())
    try:
        start(page, app_server, [slow, quick])
        expect(status_line(page)).to_have_text(re.compile(r"^status: finished"),
                                               timeout=WAIT_MS)
        expect(page.get_by_test_id("stChatMessage").filter(has_text="Streaming words").first
               ).to_be_visible()
    finally:
        page.unroute("**/live/job/**")
