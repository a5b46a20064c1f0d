"""People in the room (issue 22): from a person's click to the other person's screen.
Measurement only: nothing here asserts on time.

    python -m bench.room_click [--reps 20]

The dashboard served as `make run` starts it (login off), Debian's chromium, two browser
contexts seated by room links (as tests/ui/test_room_app.py seats them). Each round Ann raises (or
lowers) her hand; the time runs from just before Playwright's click on Ann's page to the moment
Bo's page shows the changed hand queue (a `requestAnimationFrame`-polled check in Bo's page).
What it adds up to: Ann's click round trip and script run, the engine's Room update, and Bo's
live fragment picking it up on its next 0.5 s refresh (REFRESH_S), so 0-500 ms of it is the
refresh phase.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

from bench import _harness as h
from bench.dashboard import chromium
from groupchat_core import Agent
from groupchat_core.store import RunStore
from tests.e2e.conftest import (
    VIEWPORT,
    WAIT_MS,
    expect,
    fill_task,
    fresh,
    open_page,
    pick_roster,
    serve_app,
    set_number,
    start_run,
)
from tests.e2e.test_room import add_person, click, hands, open_people, panel

SHOWS = """([sel, want]) => {
  const el = [...document.querySelectorAll(sel)].find(e => !e.closest('[data-stale="true"]'));
  return !!el && el.innerText.includes('Ann') === want;
}"""


def main() -> None:
    args = h.options(__doc__, reps=20).parse_args()
    data = Path(tempfile.mkdtemp(prefix="room-bench-"))
    db = f"sqlite:///{data}/groupchat.db"
    names = [f"Quill{uuid.uuid4().hex[:4]}", f"Moss{uuid.uuid4().hex[:4]}"]
    RunStore(db).save_agents([Agent(agent_name=n, model_name="sim/reserved") for n in names])
    times: list[float] = []
    with serve_app(db, data / "streamlit.log") as url, chromium() as browser:
        ann, bo = (browser.new_context(viewport=VIEWPORT).new_page() for _ in range(2))
        ann.goto(url)
        open_page(ann, "Run")
        pick_roster(ann, names)
        open_people(ann)
        add_person(ann, "Ann", me=True)
        add_person(ann, "Bo")
        set_number(ann, "room_window", 3600)
        fill_task(ann, "How fast does a hand reach the room?")
        start_run(ann)
        expect(panel(ann)).to_contain_text("You are Ann", timeout=WAIT_MS)
        fresh(ann, '[data-testid="stExpander"]').get_by_text("Room links").click()
        code = fresh(ann, '[data-testid="stCode"]').filter(has_text="seat=")
        expect(code.first).to_be_visible(timeout=WAIT_MS)
        bo.goto(code.all()[1].inner_text().strip())
        expect(panel(bo)).to_contain_text("You are Bo", timeout=WAIT_MS)
        for i in range(args.reps):
            up = i % 2 == 0
            expect(fresh(ann, f".st-key-{'room_raise' if up else 'room_lower'} button").first
                   ).to_be_visible(timeout=WAIT_MS)
            t0 = time.monotonic()
            click(ann, "room_raise" if up else "room_lower")
            bo.wait_for_function(SHOWS, arg=[".st-key-room_hands", up], polling="raf",
                                 timeout=WAIT_MS)
            times.append(time.monotonic() - t0)
            expect(hands(ann)).to_contain_text("1. Ann" if up else "No hand up.",
                                               timeout=WAIT_MS)
    ms = [t * 1000 for t in times]
    print(f"machine: {h.machine()}; rounds {len(ms)}")
    print(f"click -> other screen (ms): median {h.median(ms):.0f}, "
          f"p90 {h.quantile(ms, 0.9):.0f}, min {min(ms):.0f}, max {max(ms):.0f}")


if __name__ == "__main__":
    main()
