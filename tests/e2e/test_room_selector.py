"""Human as selector in a real browser (issue 22 item 3): a person who picks who speaks.

Login off; three agents on the fake OpenAI server (real HTTP from the app) with fixed bids:
Ash 0.9, Bea 0.7, Cy 0.6. Pia starts the room as its picker. Turn 1: she sees the top bids
with their drafts and what the rule would pick (Ash), and lets Bea speak instead; Bea's draft
is posted. Turn 2: she accepts the rule's pick (Ash again: Bea carries the recency penalty).
The store records both picks beside the rule's, and Analysis shows the agreement: 1 of 2.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore, dispose_engines
from groupchat_core.testing import FakeOpenAIServer, tool_call
from tests.helpers import ROOT

from .conftest import (
    WAIT_MS,
    expect,
    fill_task,
    fresh,
    open_page,
    pick_roster,
    set_number,
    start_run,
    status_line,
    wait_idle,
)
from .test_room_two_people import open_people, panel

DOCS = ROOT / "docs" / "screenshots"
SCORES = {"Ash": 0.9, "Bea": 0.7, "Cy": 0.6}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


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
