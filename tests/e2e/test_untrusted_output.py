"""Agent messages are untrusted model output: in a real browser they must stay inert text.

A message carrying `<script>`, an `<img onerror=...>` and a remote markdown image must not run
script or load anything. A tiny HTTP listener on a free loopback port records every request,
so a remote image that "phones home" would be caught; a control image loaded by the test at the
end proves the page could have reached it.

Two paths to the screen: a stored run (recorded from this test process with scripted bids into
the app's own SQLite file) opened on the Analysis page, then a live run on the Run page whose
task, agent name and hence agent replies (a sim agent quotes who it answers) carry the payload.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBids
from tests.helpers.waits import eventually

from .conftest import (
    WAIT_MS,
    create_agent,
    expect,
    fill_task,
    open_page,
    pick_roster,
    screenshot,
    set_number,
    start_run,
    status_line,
)

GRACE_MS = 2_000  # how long a request that should never come gets to arrive
# Where an element sits: the data-testids of its ancestors, innermost first.
WHERE = """(el) => { const path = [];
    for (let e = el; e; e = e.parentElement) {
      if (e.dataset && e.dataset.testid) path.push(e.dataset.testid); }
    return path.join(' < '); }"""
# Anything the payloads could have left behind in the page (images with where they are).
LEFTOVERS = """(port) => ({
  pwned: typeof window.__pwned === 'undefined' ? null : window.__pwned,
  scripts: [...document.querySelectorAll('script')]
    .filter(s => (s.textContent || '').includes('__pwned')).length,
  handlers: [...document.querySelectorAll('[onerror]')].length,
  images: [...document.querySelectorAll('img')]
    .filter(i => i.getAttribute('src') === 'x' || (i.src || '').includes(':' + port + '/'))
    .map(i => i.src + ' in ' + (%s)(i)),
})""".replace("%s", WHERE)


@dataclass
class Beacon:
    """A loopback HTTP listener that records the path of every request it gets."""

    port: int = 0
    hits: list[str] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


@pytest.fixture
def beacon() -> Iterator[Beacon]:
    found = Beacon()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            found.hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield found
    server.shutdown()
    server.server_close()


def payload(beacon: Beacon, tag: str) -> str:
    return (f"Plain words first. <script>window.__pwned=1</script> then "
            f'<img src=x onerror="window.__pwned=2"> then ![]({beacon.url(tag + ".png")}) end.')


def assert_inert(page: Any, beacon: Beacon, control: str) -> None:
    """Nothing ran, nothing loaded, no script or handler from a message is in the DOM; then a
    control image proves the listener was reachable from this page all along."""
    page.wait_for_timeout(GRACE_MS)  # an absence cannot be waited for: give it time to happen
    assert page.evaluate(LEFTOVERS, beacon.port) == {
        "pwned": None, "scripts": 0, "handlers": 0, "images": []}
    assert beacon.hits == []
    page.evaluate("(url) => { new Image().src = url; }", beacon.url(f"{control}.png"))
    eventually(lambda: f"/{control}.png" in beacon.hits,  # a positive control: reachable
               "the control image arriving", detail=lambda: f"; hits: {beacon.hits}")
    beacon.hits.remove(f"/{control}.png")
    assert beacon.hits == []


def record_payload_run(db_url: str, beacon: Beacon) -> str:
    """A finished one-turn run in the app's store whose one agent message is the payload."""
    # The speaker's name carries a payload too: names show up in labels, captions and charts.
    mallory = f"Mallory ![]({beacon.url('winner.png')}) <script>window.__pwned=3</script>"
    trent = f'Trent <img src=x onerror="window.__pwned=4"> {uuid.uuid4().hex[:4]}'
    fake = ScriptedBids({mallory: [(0.9, payload(beacon, "stored"))], trent: [(0.1, "")]})
    chat = GroupChat(name="Untrusted <b>output</b>", max_loops=2, threshold=0.5, agents=[
        Agent(agent_name=mallory, model_name=fake.model_name),
        Agent(agent_name=trent, model_name=fake.model_name)])
    store = RunStore(db_url)
    chat.add_observer(store.recorder(chat))
    chat.run(f"Task with <script>window.__pwned=5</script> and ![]({beacon.url('task.png')})")
    assert store.flush(timeout=30)
    run_id = str(chat.last_run.run_id)
    assert store.run_info(run_id)["status"] == "finished"
    return run_id


def test_untrusted_output_stays_inert_stored_and_live(app_server, app_db_url, page, beacon):
    # A stored run on Analysis, its transcript, charts and the Runs table.
    run_id = record_payload_run(app_db_url, beacon)
    page.goto(f"{app_server}/analysis?run={run_id}")
    page.get_by_role("tab", name="Transcript").click()
    message = page.get_by_test_id("stChatMessage").filter(has_text="Plain words first.")
    expect(message).to_be_visible(timeout=WAIT_MS)
    # Shown as the literal text it is, markup and all.
    expect(message).to_contain_text("<script>window.__pwned=1</script>")
    expect(message).to_contain_text('<img src=x onerror="window.__pwned=2">')
    expect(page.get_by_test_id("stChatMessage").filter(
        has_text="<script>window.__pwned=5</script>")).to_be_visible()
    page.get_by_role("tab", name="Speakers").click()  # agent names in chart labels
    page.get_by_role("tab", name="Why?").click()
    page.get_by_role("tab", name="Transcript").click()
    screenshot(page, "untrusted-1-analysis-transcript")
    open_page(page, "Runs")  # names and task in the runs table and its filters
    expect(page.get_by_text(re.compile(r"^\d+ run\(s\)$"))).to_be_visible(timeout=WAIT_MS)
    assert_inert(page, beacon, "stored")

    # A live run: task, agent name and the replies quoting that name carry the payload.
    ann = "Ann"
    eve = (f'Eve <img src=x onerror="window.__pwned=6"> '
           f"![]({beacon.url('name.png')}) <script>window.__pwned=7</script>")
    open_page(page, "Agents")
    create_agent(page, ann, "sim/eager", "You argue for the benefits.", latency_s=0.2)
    create_agent(page, eve, "sim/contrarian", "You argue for the risks.", latency_s=0.2)
    open_page(page, "Run")
    pick_roster(page, [ann, eve])
    fill_task(page, payload(beacon, "task"))
    set_number(page, "run_param_max_loops", 6)
    set_number(page, "run_param_threshold", 0.2)
    start_run(page)  # clicked again only while the status still says idle (a swallowed click)
    # a six-message run can finish between two refreshes of the live view: running may be skipped
    expect(status_line(page)).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)

    # The store confirms an agent reply really carries the payload (Ann quoting Eve's name).
    runs = RunStore(app_db_url).list_runs(agent=ann)
    messages = RunStore(app_db_url).messages(runs.iloc[0]["run_id"])
    quoting = [m for m in messages.to_dict("records")[1:] if "onerror=" in m["content"]]
    assert quoting, messages
    bubbles = page.get_by_test_id("stChatMessage")
    expect(bubbles.filter(has_text="Plain words first. <script>window.__pwned=1</script>")
           ).to_be_visible()
    by_ann = bubbles.filter(has=page.locator("strong", has_text=re.compile(f"^{ann}$")))
    expect(by_ann.filter(has_text='<img src=x onerror="window.__pwned=6">').filter(
        has_text="<script>window.__pwned=7</script>").first).to_be_visible()
    screenshot(page, "untrusted-2-live-run")
    assert_inert(page, beacon, "live")
