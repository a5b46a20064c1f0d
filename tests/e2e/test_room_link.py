"""A room without login: two browser sessions, each seated by a room link with a token.

Login off, a seat is held only by presenting its link's token (256 bits, compared in constant
time). Ann starts a room with herself and Bo in it and reads Bo's link from her room panel; a
second browser opens it and is seated as Bo; a link with a wrong token only watches. Bo is on a
phone. Each sees the other's hand go up, in the order hands went up. The token never reaches
the server's log.

A guest is a guest (issue 44): Bo, seated by the link, sees only the room (no menu, no New run,
no Stop he can press), and another page asked for by his browser is refused by the server in
one line; the same link opened in a third browser does not take Bo's seat: it watches, and
says so. The room is still running after all of it, and Ann (not a guest) stops it.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from groupchat_core import Agent
from groupchat_core.store import RunStore
from tests.helpers import ROOT

from .conftest import (
    VIEWPORT,
    WAIT_MS,
    expect,
    fill_task,
    fresh,
    open_page,
    pick_roster,
    set_number,
    start_run,
    status_line,
)
from .test_room_two_people import act, add_person, hands, open_people, panel

DOCS = ROOT / "docs" / "screenshots"
PHONE = {"width": 390, "height": 844}


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
    fresh(ann, ".st-key-room_links_" + _job(ann)).get_by_text("Room links").click()
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


def _job(page: Any) -> str:
    found = re.search(r"· job ([0-9a-f]{32}) ·", status_line(page).inner_text())
    assert found
    return found.group(1)
