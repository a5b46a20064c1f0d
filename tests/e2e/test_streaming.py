"""A live run streams its bids: a candidate's reply grows on the Run page before the turn ends,
its text stays inert, and once the turn settles the winner is posted and the other candidate
folds away (one click from its text).

Two agents on the fake OpenAI server (real HTTP from the app's process): A's reply arrives as a
stream of deltas that the server holds twice (once "Streaming words" can show, once "so the
room can watch" can) until the test has looked, so its growth and the open turn are seen
whatever the machine's speed; B answers at once with a weaker bid. Sim agents answer
in-process and do not stream, so the fake server is the model here.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator

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
    start_run,
    status_line,
)

WORDS = ["Streaming", "words", "arrive", "one", "by", "one", "so", "the", "room", "can",
         "watch", "this", "reply", "form", "<img", "src=x", "onerror=window.__pwned=1>", "end."]


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


def test_a_candidate_reply_grows_before_the_turn_ends(app_server, app_db_url, page, fake):
    suffix = uuid.uuid4().hex[:6]
    slow, quick = f"Slow-{suffix}", f"Quick-{suffix}"
    message = " ".join(WORDS)
    head = '{"score": 0.9, "message": "'
    fragments = [head + WORDS[0]] + [" " + w for w in WORDS[1:]] + ['"}']
    # Write 0 is the role chunk, write k+1 fragment k. The page holds back a reply's trailing
    # word until the next one comes (it may begin a secret), so hold the stream before " one"
    # (write 4: "Streaming words" shown, "arrive" held) and before " reply" (write 13: "...
    # can watch" shown) until the test has looked. The holds time out after WAIT_MS, so a
    # failed test never leaves the server's thread waiting.
    holds = {4: threading.Event(), 13: threading.Event()}

    def pace(index: int) -> None:  # the server's thread, before write `index` of the stream
        if index in holds:
            holds[index].wait(timeout=WAIT_MS / 1000)

    fake.script(f"slow{suffix}", [tool_call(fragments=fragments, chunk_delay=0.1, score=None,
                                            message=None, pace=pace)])
    fake.script(f"quick{suffix}", [tool_call(0.3, f"{quick} would rather listen.")])
    fake.set_responder(None, lambda body: tool_call(0.0, ""))  # turn 2: a lull ends the run
    RunStore(app_db_url).save_agents([
        Agent(agent_name=slow, model_name=f"openai/slow{suffix}", api_base=fake.base_url),
        Agent(agent_name=quick, model_name=f"openai/quick{suffix}", api_base=fake.base_url)])

    page.goto(app_server)
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    open_page(page, "Run")
    pick_roster(page, [slow, quick])
    fill_task(page, "Watch the bids form.")
    start_run(page)

    candidate = fresh(page, ".st-key-cand_0")
    try:
        expect(candidate).to_contain_text("Streaming words", timeout=WAIT_MS)
        early = candidate.inner_text()
        assert "arrive" not in early  # held there: what the panel shows is all that came
        expect(candidate).to_contain_text("score 0.90 · typing…")
        holds[4].set()
        expect(candidate).to_contain_text("so the room can watch", timeout=WAIT_MS)
        grown = candidate.inner_text()
        assert len(grown) > len(early)
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
    expect(fresh(page, ".st-key-cand_0")).to_have_count(0)  # the forming panel folded away
    folded = "Turn 1: 1 other candidate (not posted)"
    other = page.get_by_test_id("stExpander").filter(has_text=folded)
    expect(other).to_be_visible()
    other.get_by_text(folded).click()
    expect(other.get_by_text(f"{quick} would rather listen.")).to_be_visible()
    screenshot(page, "streaming-2-settled")
    assert fake.requests_for(f"slow{suffix}")[0].body["stream"] is True
    stored = RunStore(app_db_url).list_runs(agent=slow)
    bids = RunStore(app_db_url).load_run(stored.iloc[0]["run_id"]).bids
    assert [(b.agent, b.message, b.path) for b in bids[:1]] == [
        (slow, message, "tool_call:stream")]
