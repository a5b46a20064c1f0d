"""Two people at once in a real browser: two browser contexts are two sessions of one server.

- Two sessions run chats at the same time; each page (status line, sidebar, the whole page)
  names only its own job, while running and after; both runs are recorded and overlapped.
- Two people and three agents in one room (issue 22), signed in as alice and bob through the
  local OIDC provider, the agents on the fake OpenAI server (real HTTP from the app):
  turn 1: the bids arriving and the seconds left counting down; alice's hand in the queue on
  bob's screen; bob passes; alice's hand wins, her message shows on
  both screens and her hand goes down. Turn 2 (one agent slow, so the window stays open): bob's
  hand, then alice's, listed in that order on both screens; bob wins (alice's bid carries the
  recency penalty as an agent's would). Turn 3: alice closes her tab mid-window: the room
  counts her as passing, so once bob passes the turn closes before its window ends. Names,
  drafts and model output stay inert: no image in an agent's draft loads.
- A room without login seats a person only by its link's token (256 bits): a second browser
  opening Bo's link is seated as Bo, on a phone; a wrong token only watches; the same link in
  a third browser does not take Bo's seat. A guest sees only the room, and another page asked
  for by his browser is refused in one line. The token never reaches the server's log.
- A person as selector (issue 22 item 3): agents with fixed bids (Ash 0.9, Bea 0.7, Cy 0.6);
  Pia lets Bea speak on turn 1 and accepts the rule's pick on turn 2; the store records both
  picks beside the rule's, and Analysis shows the agreement (1 of 2).

What each page shows is waited for, never a time.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call

from .conftest import (
    SCREENSHOTS,
    VIEWPORT,
    WAIT_MS,
    create_agent,
    expect,
    fill_task,
    fresh,
    job_id,
    open_page,
    pick_roster,
    screenshot,
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
STARTED = re.compile(r"^status: (running|finished) · job [0-9a-f]{32}")
SCORES = {"Ash": 0.9, "Bea": 0.7, "Cy": 0.6}


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
    """Open the "People in the room" expander (again, if a rerun landed on the click)."""
    field = page.locator(".st-key-room_person_name input")
    for _ in range(3):
        wait_idle(page)
        page.locator(".st-key-room_people_open summary").click()
        try:
            expect(field).to_be_visible(timeout=10_000)
            return
        except AssertionError:
            continue
    expect(field).to_be_visible()


def add_person(page: Any, name: str, *, me: bool = False, user: str = "") -> None:
    wait_idle(page)
    page.locator(".st-key-room_person_name input").fill(name)
    page.locator(".st-key-room_person_name input").press("Tab")
    if user:
        page.locator(".st-key-room_person_user input").fill(user)
        page.locator(".st-key-room_person_user input").press("Tab")
    if me:
        page.locator(".st-key-room_person_me label").click()
    wait_idle(page)
    page.locator(".st-key-room_add_person button").click()
    expect(page.get_by_text(re.compile(rf"^{name} · person, bids"))).to_be_visible(
        timeout=WAIT_MS)


def post(page: Any, text: str) -> None:
    """Write and post the winner's message until it shows in this page's chat: a fragment
    redraw landing at the fill or the click can swallow it, as with `act`. A post that
    arrives empty is refused by the page (no draft to confirm), so the window stays open for
    the next try."""
    box = fresh(page, ".st-key-room_controls textarea").first
    expect(box).to_be_visible(timeout=WAIT_MS)
    shown = page.get_by_test_id("stChatMessage").filter(has_text=text).first  # old + new copy
    for attempt in range(3):
        if box.is_visible():
            box.fill(text)
            if box.input_value() != text:  # a redraw took the text: type it again
                box.fill(text)
            click(page, "room_post")
        try:
            expect(shown).to_be_visible(timeout=WAIT_MS // 3)
            return
        except AssertionError:
            if attempt == 2:  # what the page showed is in the failure's evidence (evidence.py)
                raise


def shows(page: Any, text: str) -> None:
    """This page's chat shows `text` (while the transcript redraws, its old and new copies of
    a message are both in the page: the first)."""
    expect(page.get_by_test_id("stChatMessage").filter(has_text=text).first).to_be_visible(
        timeout=WAIT_MS)


def prepare_run(page: Any, base: str, agents: list[str], task: str) -> None:
    page.goto(base)
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    pick_roster(page, agents)
    fill_task(page, task)
    set_number(page, "run_param_max_loops", 16)
    set_number(page, "run_param_threshold", 0.2)


def sees_only(page: Any, mine: str, other: str) -> None:
    expect(status_line(page)).to_contain_text(f"job {mine}")
    expect(page.get_by_text(re.compile(r"^Jobs of this session: \d running, 1 in all$"))
           ).to_be_visible()
    assert other not in page.content()
    assert other not in page.url


def test_two_sessions_run_at_once_and_see_only_their_own_job(app_server, app_db_url,
                                                             open_context):
    suffix = uuid.uuid4().hex[:6]
    ann, bob = f"Ann-{suffix}", f"Bob-{suffix}"
    tasks = {"A": f"Session A asks: should we adopt AI for medical diagnosis? {suffix}",
             "B": f"Session B asks: should we adopt AI for medical billing? {suffix}"}
    contexts = {s: open_context(viewport=VIEWPORT) for s in "AB"}
    pages = {s: ctx.new_page() for s, ctx in contexts.items()}
    a, b = pages["A"], pages["B"]
    a.goto(app_server)
    open_page(a, "Agents")
    create_agent(a, ann, "sim/eager", "You argue for the benefits.", latency_s=0.8)
    create_agent(a, bob, "sim/contrarian", "You argue for the risks.", latency_s=0.8)
    for s, page in pages.items():
        prepare_run(page, app_server, [ann, bob], tasks[s])

    start_run(a)
    start_run(b)
    # Each page names its own job, running (or, if starting B took a loaded machine longer
    # than A's 12 s of turns, already finished: the overlap is checked in the store below).
    expect(status_line(a)).to_have_text(STARTED, timeout=WAIT_MS)
    expect(status_line(b)).to_have_text(STARTED, timeout=WAIT_MS)
    jobs = {s: job_id(page) for s, page in pages.items()}
    assert jobs["A"] != jobs["B"]
    sees_only(a, jobs["A"], jobs["B"])
    sees_only(b, jobs["B"], jobs["A"])
    for s, page in pages.items():
        expect(page.get_by_test_id("stChatMessage").first).to_contain_text(tasks[s])
        screenshot(page, f"two-sessions-{s}-running")

    for s, page in pages.items():
        expect(status_line(page)).to_have_text(
            re.compile(rf"^status: finished · job {jobs[s]} "), timeout=WAIT_MS)
    for s, page in pages.items():
        other = jobs["B" if s == "A" else "A"]
        sees_only(page, jobs[s], other)
        expect(page.locator(".st-key-job_select")).to_have_count(0)  # one job: no picker
        chat = page.get_by_test_id("stChatMessage")
        expect(chat.first).to_contain_text(tasks[s])
        expect(chat.filter(has_text=tasks["B" if s == "A" else "A"])).to_have_count(0)
        screenshot(page, f"two-sessions-{s}-finished")

    # Both runs were recorded, each with its own task, and they did run at the same time.
    runs = RunStore(app_db_url).list_runs(agent=ann)
    by_task = {row["task"]: row for row in runs.to_dict("records")}
    assert set(by_task) == set(tasks.values()), list(by_task)
    assert all(row["status"] == "finished" for row in by_task.values())
    first, second = (by_task[tasks[s]] for s in "AB")
    at = datetime.fromisoformat
    assert at(first["started_at"]) < at(second["ended_at"])
    assert at(second["started_at"]) < at(first["ended_at"])


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



# The room links shown now (in a code block each, not left over from a redraw), once both are.
LINKS = """() => {
  const codes = [...document.querySelectorAll('[data-testid="stCode"]')]
    .filter(e => !e.closest('[data-stale="true"]'))
    .map(e => e.innerText.trim()).filter(t => t.includes('seat='));
  return codes.length === 2 ? codes : null;
}"""


def test_a_room_link_seats_its_holder_and_a_wrong_token_only_watches(app_server, app_db_url,
                                                                     open_context):
    tag = uuid.uuid4().hex[:6]
    names = [f"Quill{tag}", f"Moss{tag}"]
    RunStore(app_db_url).save_agents([
        Agent(agent_name=n, model_name="sim/reserved", litellm_kwargs={"sim_latency": 0.5})
        for n in names])
    contexts = [open_context(viewport=v) for v in (VIEWPORT, PHONE, VIEWPORT)]
    ann, bo, eve = (ctx.new_page() for ctx in contexts)
    ann.goto(app_server)
    open_page(ann, "Run")
    pick_roster(ann, names)
    open_people(ann)
    add_person(ann, "Ann", me=True)
    add_person(ann, "Bo")
    set_number(ann, "room_window", 120)  # the test stops the room itself
    fill_task(ann, f"A room by link {tag}")
    start_run(ann)
    expect(panel(ann)).to_contain_text("You are Ann in this room.", timeout=WAIT_MS)
    fresh(ann, ".st-key-room_links_" + job_id(ann)).get_by_text("Room links").click()
    # Ann's and Bo's, drawn one by one. Read both in the page at once: the room panel
    # redraws every half second, and a count checked first, then read, once found one.
    links = ann.wait_for_function(LINKS, timeout=WAIT_MS).json_value()
    bo_link = links[1]  # the seats in the order they were added: Ann, Bo
    assert re.search(r"/run\?job=[0-9a-f]{32}&seat=[A-Za-z0-9_-]{43}$", bo_link), bo_link

    bo.goto(bo_link)
    expect(panel(bo)).to_contain_text("You are Bo in this room.", timeout=WAIT_MS)
    _only_the_room(bo)
    eve.goto(bo_link[:-4] + ("AAAA" if not bo_link.endswith("AAAA") else "BBBB"))
    expect(panel(eve)).to_contain_text("Turn 1", timeout=WAIT_MS)
    expect(fresh(eve, ".st-key-room_watching")).to_contain_text(
        "You are watching: this link's seat token opens no seat in this room.")
    assert "You are Eve" not in panel(eve).inner_text()
    assert "You are Bo" not in panel(eve).inner_text()
    assert fresh(eve, ".st-key-room_raise").count() == 0  # watching: no controls
    # Bo's own link in another browser: the seat stays Bo's first browser's; this one watches
    twin = open_context(viewport=VIEWPORT).new_page()
    twin.goto(bo_link)
    expect(fresh(twin, ".st-key-room_watching")).to_contain_text(
        "You are watching: the seat of Bo is held by the browser that opened this link first",
        timeout=WAIT_MS)
    expect(panel(twin)).to_contain_text("Turn 1", timeout=WAIT_MS)
    assert "You are Bo" not in panel(twin).inner_text()
    assert fresh(twin, ".st-key-room_raise").count() == 0

    act(bo, "room_raise", hands(ann), "1. Bo")
    act(ann, "room_raise", hands(ann), re.compile(r"1\. Bo\s+2\. Ann"))
    for page in (ann, bo, eve, twin):
        expect(hands(page)).to_contain_text(re.compile(r"1\. Bo\s+2\. Ann"),
                                            timeout=WAIT_MS)
    DOCS.mkdir(parents=True, exist_ok=True)
    bo.screenshot(path=str(DOCS / "room-link-phone.png"), full_page=True)
    # Bo's browser asks for the Agents page (its browser id kept, the link's seat= dropped,
    # as a page switch or a hand-edited URL would): the server refuses it in one line
    sid = re.search(r"[?&]sid=([0-9a-f]{32})", bo.url)
    assert sid, bo.url
    bo.goto(f"{app_server}/agents?sid={sid.group(1)}")
    refusal = fresh(bo, '[data-testid="stAlertContentError"]')
    expect(refusal).to_contain_text(re.compile(r"Not allowed: the Agents page is not open to a "
                                               r"room guest\. [^\n]*ask whoever started the "
                                               r"room\.$"), timeout=WAIT_MS)
    assert bo.get_by_text("Saved agents").count() == 0
    assert bo.locator(".stButton").count() == 0  # not one of the page's actions is drawn
    bo.get_by_text("Back to the room").click()  # the seat is this browser's: Bo is back in it
    expect(panel(bo)).to_contain_text("You are Bo in this room.", timeout=WAIT_MS)
    _only_the_room(bo)
    # nobody stopped it (it may have ended by itself, never cancelled)
    expect(status_line(ann)).to_have_text(re.compile(r"^status: (running|finished)"))
    fresh(ann, ".st-key-stop_run button").first.click()
    expect(status_line(ann)).to_have_text(re.compile(r"^status: (cancelled|finished)"),
                                          timeout=WAIT_MS)
    log = Path(app_db_url.removeprefix("sqlite:///")).parent / "streamlit.log"
    token = bo_link.rsplit("seat=", 1)[1]
    assert token not in log.read_text(encoding="utf-8", errors="replace")


def _only_the_room(page: Any) -> None:
    """A room guest's Run page: the room and its controls, nothing else."""
    hand = ".st-key-room_raise, .st-key-room_lower"  # the seat's hand, whichever way it is
    expect(panel(page).locator(hand)).to_have_count(1, timeout=WAIT_MS)
    expect(page.get_by_text("You joined through a room link")).to_be_visible()
    assert page.get_by_test_id("stSidebarNav").count() == 0  # no menu: no other page
    assert fresh(page, ".st-key-new_run_open").count() == 0  # no New run
    assert fresh(page, ".st-key-start_run").count() == 0
    stop = fresh(page, ".st-key-stop_run button")
    assert stop.count() == 0 or stop.first.is_disabled()



def _add_picker(page: Any, name: str) -> None:
    """The person in the room who picks who speaks (and does not bid), seated in this session."""
    wait_idle(page)
    page.locator(".st-key-room_person_name input").fill(name)
    page.locator(".st-key-room_person_name input").press("Tab")
    for key in ("room_person_me", "room_person_picker"):
        _check(page, key)
    wait_idle(page)
    page.locator(".st-key-room_add_person button").click()
    expect(page.get_by_text(re.compile(rf"^{name} · person, picks who speaks"))).to_be_visible(
        timeout=WAIT_MS)


def _check(page: Any, key: str) -> None:
    """Tick a keyed checkbox until it shows ticked (a rerun landing at the click, e.g. the one
    the previous checkbox started, redraws it unticked; CI once lost the picker's tick)."""
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


def _pick(page: Any, turn: int, button: str, effect: Any) -> None:
    """Click turn `turn`'s pick button until its effect shows (a redraw of the room panel
    landing at the click can swallow it; once it took, the button is gone). Only that turn's
    button (its key carries the turn): a click that took late must not be followed by one on
    the next turn's button of the same name (fresh clone L1 picked Bea twice so, and the room
    ended at turn 2). The effect is a `.first`: while the transcript redraws, its old and new
    copies of a message are both in the page."""
    target = panel(page).locator(f'[class*="st-key-room_pick_{turn}_"]').get_by_role(
        "button", name=button)
    for attempt in range(3):
        if target.count():
            target.first.click()
        try:
            expect(effect).to_be_visible(timeout=WAIT_MS // 3)
            return
        except AssertionError:
            if attempt == 2:
                raise


def test_a_person_picks_who_speaks_and_analysis_shows_the_agreement(app_server, app_db_url,
                                                                    fake, open_context):
    tag = uuid.uuid4().hex[:6]
    names = {short: f"{short}{tag}" for short in SCORES}
    for short, name in names.items():
        fake.set_responder(f"pick{short}{tag}", lambda body, name=name, score=SCORES[short]:
                           tool_call(score, f"{name}'s draft"))
    RunStore(app_db_url).save_agents([
        Agent(agent_name=name, model_name=f"openai/pick{short}{tag}", api_base=fake.base_url,
              num_retries=0) for short, name in names.items()])
    dispose_engines()
    task = f"Who should speak? {tag}"
    context = open_context(viewport={"width": 1280, "height": 1400})
    page = context.new_page()
    page.goto(app_server)
    open_page(page, "Run")
    pick_roster(page, list(names.values()))
    open_people(page)
    _add_picker(page, "Pia")
    set_number(page, "room_window", 60)
    set_number(page, "run_param_max_loops", 3)  # the task and two replies
    fill_task(page, task)
    start_run(page)
    expect(status_line(page)).to_have_text(re.compile(r"^status: running"),
                                           timeout=WAIT_MS)

    # turn 1: the top bids with their drafts, the rule's pick named; Pia lets Bea speak
    expect(panel(page)).to_contain_text(
        f"Pick who speaks. The bidding rule would pick {names['Ash']}.", timeout=WAIT_MS)
    for name in names.values():
        expect(panel(page)).to_contain_text(f"{name}'s draft")
    DOCS.mkdir(parents=True, exist_ok=True)
    panel(page).screenshot(path=str(DOCS / "room-selector-desktop.png"))
    expect(panel(page).get_by_role("button", name=f"Let {names['Bea']} speak")
           ).to_be_visible()
    _pick(page, 1, f"Let {names['Bea']} speak", page.get_by_test_id("stChatMessage").filter(
        has_text=f"{names['Bea']}'s draft").first)

    # turn 2: Bea's bid carries the recency penalty; Pia accepts the rule's pick (Ash)
    expect(panel(page)).to_contain_text("Turn 2 ·", timeout=WAIT_MS)
    expect(panel(page)).to_contain_text(
        f"Pick who speaks. The bidding rule would pick {names['Ash']}.", timeout=WAIT_MS)
    _pick(page, 2, "Accept the rule's pick", page.get_by_test_id("stChatMessage").filter(
        has_text=f"{names['Ash']}'s draft").first)
    expect(status_line(page)).to_have_text(re.compile(r"^status: finished"),
                                           timeout=WAIT_MS)

    store = RunStore(app_db_url)
    runs = store.list_runs()
    run_id = str(runs[runs["task"] == task]["run_id"].iloc[0])
    turns = store.turns(run_id).set_index("turn")
    assert turns.loc[1, "winner"] == names["Bea"] and turns.loc[1, "reason"] == "human_pick"
    assert (turns.loc[1, "rule_winner"], turns.loc[1, "human_pick"]) == (names["Ash"],
                                                                         names["Bea"])
    assert turns.loc[2, "winner"] == names["Ash"]
    assert (turns.loc[2, "rule_winner"], turns.loc[2, "human_pick"]) == (names["Ash"],
                                                                         names["Ash"])

    page.goto(f"{app_server}/analysis?run={run_id}")
    expect(fresh(page, '[data-testid="stAlert"]').filter(
        has_text="A person picked who speaks on 2 turns")).to_contain_text(
        "the bidding rule would have picked the same speaker on 1 (agreement 50%)",
        timeout=WAIT_MS)
