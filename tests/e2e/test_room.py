"""Two people and three agents in one room (issue 22), in a real browser: two browser contexts
are two sessions of one server, signed in as alice and bob through the local OIDC provider, the
agents on the fake OpenAI server (real HTTP from the app). Turn 1: the bids arriving and the
seconds left counting down; alice's hand in the queue on bob's screen; bob passes; alice's hand
wins, her message shows on both screens and her hand goes down. Turn 2 (one agent slow, so the
window stays open): bob's hand, then alice's, listed in that order on both screens; bob wins
(alice's bid carries the recency penalty as an agent's would). Turn 3: alice closes her tab
mid-window: the room counts her as passing, so once bob passes the turn closes before its window
ends. Names, drafts and model output stay inert: no image in an agent's draft loads. No room
link token reaches the server's log.

What needs no browser is in AppTest (tests/ui/test_room_app.py): two sessions running at once,
each seeing only its own job; room links, room guests, a wrong token and a link opened twice;
a person picking who speaks and Analysis's agreement rate.

What each page shows is waited for, never a time.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers.waits import eventually

from .conftest import (
    SCREENSHOTS,
    VIEWPORT,
    WAIT_MS,
    expect,
    fill_task,
    fresh,
    job_id,
    pick_roster,
    serve_with_login,
    set_number,
    sign_in,
    start_run,
    status_line,
    wait_idle,
)

# Pictures of the room (artifacts/, git-ignored): a test never writes into docs/ (the README's
# pictures come from tests/e2e/readme_screenshots.py).
DOCS = SCREENSHOTS
PHONE = {"width": 390, "height": 844}
PIXEL = "http://127.0.0.1:9/pixel.png"


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def room_server(oidc_provider: str, tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """The dashboard with login on, for this test alone."""
    with serve_with_login(oidc_provider, tmp_path) as (app, db):
        yield app, db, tmp_path


def panel(page: Any) -> Any:
    return fresh(page, ".st-key-room_panel")


def clock(page: Any) -> Any:
    return panel(page).get_by_text(re.compile(r"^Turn \d+ · "))


def hands(page: Any) -> Any:
    return fresh(page, ".st-key-room_hands")


def click(page: Any, key: str) -> None:
    """Click a keyed button of the room panel (redrawn twice a second: take the fresh one; on
    a phone a button with a tooltip is drawn twice, one copy hidden: take the visible one)."""
    button = panel(page).locator(f".st-key-{key} button:visible").first
    expect(button).to_be_visible(timeout=WAIT_MS)
    button.click()


def act(page: Any, key: str, effect: Any, text: Any) -> None:
    """Click a room button until its effect shows on this page: a fragment redraw landing at
    the click can swallow it (the button is gone once it took: a raised hand shows Lower)."""
    for attempt in range(3):
        if panel(page).locator(f".st-key-{key} button:visible").count():
            click(page, key)
        try:
            expect(effect).to_contain_text(text, timeout=WAIT_MS // 3)
            return
        except AssertionError:
            if attempt == 2:
                raise


def seconds_left(page: Any) -> int:
    found = re.search(r"(\d+) s left", clock(page).inner_text())
    assert found, clock(page).inner_text()
    return int(found.group(1))


def open_people(page: Any) -> None:
    """Open the "People in the room" expander: a rerun landing at the click redraws it closed,
    so click again whenever the idle page shows it closed (never while it is open: a click
    would close it), until its first field shows."""
    field = page.locator(".st-key-room_person_name input")
    expander = page.locator(".st-key-room_people_open")

    def opened() -> bool:
        wait_idle(page)
        if field.is_visible():
            return True
        if not expander.locator("details[open]").count():
            expander.locator("summary").click()
        return False

    eventually(opened, "the people in the room to show", step=0.5)


def add_person(page: Any, name: str, *, me: bool = False, user: str = "") -> None:
    """Add a person to the next run; `me`: this session takes the seat (the line says "you":
    a tick lost to a rerun once added Alice as someone else, and the room never seated her)."""
    wait_idle(page)
    page.locator(".st-key-room_person_name input").fill(name)
    page.locator(".st-key-room_person_name input").press("Tab")
    if user:
        page.locator(".st-key-room_person_user input").fill(user)
        page.locator(".st-key-room_person_user input").press("Tab")
    if me:
        tick(page, "room_person_me")
    wait_idle(page)
    page.locator(".st-key-room_add_person button").click()
    line = rf"^{name} · person, bids" + (r"( · \S+)? · you$" if me else "")  # (· email)
    expect(page.get_by_text(re.compile(line))).to_be_visible(timeout=WAIT_MS)


def tick(page: Any, key: str) -> None:
    """Tick a keyed checkbox until it shows ticked (a rerun landing at the click, e.g. the one
    the previous field started, redraws it unticked)."""
    box = page.locator(f".st-key-{key} input[type=checkbox]")
    for attempt in range(3):
        wait_idle(page)
        if not box.is_checked():
            page.locator(f".st-key-{key} label").click()
        try:
            expect(box).to_be_checked(timeout=5_000)
            wait_idle(page)
            if box.is_checked():
                return
        except AssertionError:
            if attempt == 2:
                raise
    expect(box).to_be_checked()


def post(page: Any, text: str) -> None:
    """Write and post the winner's message until it shows in this page's chat. A fragment
    redraw landing at the fill or the click can lose the text (the post arrives empty and the
    page refuses it, no draft to confirm: the window stays open) or swallow the click. The
    retry has to land inside the post window: waiting up to a third of the hang guard for the
    message before trying again once outlasted the 60 s window, and the floor went by unsaid
    (a lull, turn 1). So the box is watched instead: there without the text, write and post
    at once; still holding the text a few polls after a click, post again (a second post of
    a turn the room already has is refused: Room.submit)."""
    box = fresh(page, ".st-key-room_controls textarea").first
    expect(box).to_be_visible(timeout=WAIT_MS)
    shown = page.get_by_test_id("stChatMessage").filter(has_text=text).first  # old + new copy
    since_click = [0]

    def posted() -> bool:
        if shown.is_visible():
            return True
        since_click[0] += 1
        try:
            if box.input_value(timeout=1_000) != text:  # not written yet, or a redraw took it
                box.fill(text, timeout=1_000)
            elif since_click[0] < 3:
                return False
            panel(page).locator(".st-key-room_post button:visible").first.click(timeout=1_000)
            since_click[0] = 0
        except Exception:  # playwright's TimeoutError: the box is gone (posted) or redrawn
            pass
        return False

    eventually(posted, f"{text!r} in the chat", step=1.0)


def shows(page: Any, text: str) -> None:
    """This page's chat shows `text` (while the transcript redraws, its old and new copies of
    a message are both in the page: the first)."""
    expect(page.get_by_test_id("stChatMessage").filter(has_text=text).first).to_be_visible(
        timeout=WAIT_MS)


def test_two_people_and_three_agents_share_one_room(room_server, fake, open_context):
    app, db_url, data = room_server
    tag = uuid.uuid4().hex[:6]
    names = [f"Sage{tag}", f"Rex{tag}", f"Ivy{tag}"]
    for i, name in enumerate(names):
        model = f"room{i}{tag}"
        slow = 8.0 if i == 2 else 0.0  # turn 2: Ivy takes 8 s, so the window stays open
        fake.script(model, [
            tool_call(0.3, f"{name} weighs in ![p]({PIXEL})", latency=1.0 + i),
            tool_call(0.3, f"{name} again", latency=slow),
        ])
        fake.set_responder(model, lambda body: tool_call(0.2, "quiet now"))
    RunStore(db_url).save_agents([
        Agent(agent_name=n, model_name=f"openai/room{i}{tag}", api_base=fake.base_url,
              num_retries=0) for i, n in enumerate(names)])
    dispose_engines()
    task = f"Should the lab let people bid? {tag}"
    contexts = [open_context(viewport=VIEWPORT) for _ in range(2)]
    alice, bob = (ctx.new_page() for ctx in contexts)
    sign_in(bob, app, "bob")
    sign_in(alice, app, "alice")
    pick_roster(alice, names)
    open_people(alice)
    add_person(alice, "Alice", me=True)
    add_person(alice, "Bob", user="bob@example.org")
    set_number(alice, "room_window", 60)
    fill_task(alice, task)
    start_run(alice)
    expect(status_line(alice)).to_have_text(re.compile(r"^status: running"),
                                            timeout=WAIT_MS)
    expect(panel(alice)).to_contain_text("You are Alice in this room.", timeout=WAIT_MS)

    # turn 1: the clock counts down; bob joins; alice raises her hand; bob sees it
    expect(clock(alice)).to_have_text(re.compile(r"^Turn 1 · bidding · \d+ s left"),
                                      timeout=WAIT_MS)
    first = seconds_left(alice)
    expect(clock(alice)).not_to_contain_text(f"· {first} s left", timeout=WAIT_MS)
    expect(clock(alice)).to_have_text(re.compile(r"^Turn 1 · bidding · \d+ s left"))
    assert seconds_left(alice) < first  # counting down, as the page redraws
    bob.reload()
    join = bob.locator(".st-key-room_join_" + job_id(alice) + " button")
    expect(join).to_be_visible(timeout=WAIT_MS)
    join.click()
    expect(panel(bob)).to_contain_text("You are Bob in this room.", timeout=WAIT_MS)
    act(alice, "room_raise", hands(alice), "1. Alice")
    expect(hands(bob)).to_contain_text("1. Alice", timeout=WAIT_MS)
    expect(panel(bob)).to_contain_text(f"{names[0]} · agent · score 0.30", timeout=WAIT_MS)
    DOCS.mkdir(parents=True, exist_ok=True)
    bob.screenshot(path=str(DOCS / "room-1-turn-1-desktop.png"), full_page=True)
    # bob passes (a window that expires is a pass too: tests/engine/test_people.py, on a fake
    # clock), so everyone has bid and the turn closes at once: alice's hand wins
    act(bob, "room_pass_1", panel(bob), "Bob · person · passed")
    expect(fresh(alice, ".st-key-room_controls")).to_contain_text(
        "You won the floor", timeout=WAIT_MS)
    post(alice, "Alice here: people can bid now.")
    for page in (alice, bob):
        shows(page, "Alice here: people can bid now.")
        expect(clock(page)).to_have_text(re.compile(r"^Turn 2 · bidding"), timeout=WAIT_MS)
        expect(hands(page)).to_contain_text("No hand up.")  # hers went down when she won

    # turn 2: bob's hand, then alice's; Ivy is slow, so the window is still open
    act(bob, "room_raise", hands(alice), "1. Bob")
    act(alice, "room_raise", hands(alice), re.compile(r"1\. Bob\s+2\. Alice"))
    for page in (alice, bob):
        expect(hands(page)).to_contain_text(re.compile(r"1\. Bob\s+2\. Alice"),
                                            timeout=WAIT_MS)
    bob.screenshot(path=str(DOCS / "room-2-hand-queue-desktop.png"), full_page=True)
    expect(fresh(bob, ".st-key-room_controls")).to_contain_text("You won the floor",
                                                               timeout=WAIT_MS)
    post(bob, "Bob here: my hand went up first, and the rule agreed.")
    for page in (alice, bob):
        shows(page, "Bob here: my hand went up first")

    # turn 3: alice closes her tab mid-window; the room goes on without her
    expect(clock(bob)).to_have_text(re.compile(r"^Turn 3 · bidding"), timeout=WAIT_MS)
    alice.close()
    expect(panel(bob)).to_contain_text("Alice: away", timeout=WAIT_MS)
    bob.set_viewport_size(PHONE)
    bob.screenshot(path=str(DOCS / "room-3-away-phone.png"), full_page=True)
    # bob passes: with alice counted as passing, everyone has bid, so the turn closes
    # now, not at its window's end
    act(bob, "room_pass_3", status_line(bob), "status: finished")  # keyed by its turn
    assert bob.evaluate(f"() => [...document.images].every(i => i.src !== '{PIXEL}')")

    store = RunStore(db_url)
    runs = store.list_runs()
    run_id = str(runs[runs["task"] == task]["run_id"].iloc[0])
    bids = store.bids(run_id)
    people = bids[bids["kind"] == "human"].set_index(["turn", "agent"])
    assert people.loc[(1, "Bob"), "score"] == 0.0  # bob passed
    assert bool(people.loc[(1, "Alice"), "winner"])
    assert bool(people.loc[(2, "Bob"), "winner"])
    assert bool(people.loc[(2, "Alice"), "penalized"])  # alice spoke last: the same penalty
    assert people.loc[(3, "Alice"), "score"] == 0.0  # she left: a pass
    assert people.loc[(3, "Bob"), "score"] == 0.0
    assert len(bids[bids["kind"] == "agent"]) == 9
    log = (data / "streamlit.log").read_text(encoding="utf-8", errors="replace")
    assert "seat=" not in log  # no room link (token) is ever logged
