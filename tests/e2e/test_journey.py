"""The main journey in a real browser: agents → a live run → its analysis.

Create two offline agents with the Agents form, start a chat with them on the Run page, watch
the chat bubbles and the live bidding floor redraw while the status line says `running`, stop
it (`cancelled`), then open the run in Analysis and see its charts and metric cards drawn.

The run cannot end on its own while the test watches: at a threshold of -1 nobody lulls
until both sims have tired and fall silent, which takes them 21 turns or more (max_loops is
the most a run may have), and each turn takes at least the sims' 5 s: at least 105 s, where
the test needs two turns before it stops the run. Nothing waits on a state that may pass.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from groupchat_core import CHAT_BOUNDS
from groupchat_core.store import RunStore

from .conftest import (
    WAIT_MS,
    create_agent,
    expect,
    fill_task,
    fresh,
    job_id,
    open_page,
    pick_roster,
    screenshot,
    set_number,
    start_run,
    status_line,
    wait_plots,
)

TASK = "Should we adopt AI for medical diagnosis?"
MAX_LOOPS = int(CHAT_BOUNDS["max_loops"].high)  # the most turns a run may have
# The floor's plotly figure as data (traces and notes), or null unless the status line says
# `running` and the chart has drawn: two different values mean it redrew during the run.
FLOOR_WHILE_RUNNING = """(jobId) => {
  const line = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .map(e => e.innerText).find(t => t.startsWith('status: '));
  if (!line || !line.startsWith('status: running')) return null;
  const g = document.querySelector(`.st-key-floor_${jobId} .js-plotly-plot`);
  if (!g || !g.data || !g.querySelector('svg.main-svg g.cartesianlayer')) return null;
  return JSON.stringify([g.data.map(t => [t.name, t.x, t.y]),
                         ((g.layout || {}).annotations || []).map(a => a.text)]);
}"""
FLOOR_CHANGED = ("([jobId, first]) => { const now = (" + FLOOR_WHILE_RUNNING + ")(jobId);"
                 " return now !== null && now !== first; }")


def stop(page) -> None:
    """Click Stop until the status says cancelled (a rerun landing at the click can swallow
    it); the run cannot have ended by itself yet (see the module's docstring)."""
    button = fresh(page, ".st-key-stop_run button").first
    for _ in range(5):
        if status_line(page).inner_text().startswith("status: cancelled"):
            return
        try:
            expect(button).to_be_enabled(timeout=10_000)
            button.click(timeout=10_000)
            expect(status_line(page)).to_have_text(re.compile(r"^status: cancelled"),
                                                   timeout=10_000)
            return
        except Exception:  # AssertionError or playwright's TimeoutError: look again
            continue


def recorded_end(db_url: str, agent: str) -> Any:
    """The one run of `agent` once the store has recorded its end (the page can say cancelled
    a moment before the store's writer has written it)."""
    deadline = time.monotonic() + WAIT_MS / 1000  # a wait for a condition, not a speed claim
    while True:
        runs = RunStore(db_url).list_runs(agent=agent)
        assert len(runs) == 1, runs
        if runs.iloc[0]["status"] != "running" or time.monotonic() > deadline:
            return runs.iloc[0]
        time.sleep(0.2)


def test_agents_run_live_then_analysis(app_server, app_db_url, page):
    suffix = uuid.uuid4().hex[:6]
    ann, bob = f"Ann-{suffix}", f"Bob-{suffix}"

    page.goto(app_server)
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    screenshot(page, "journey-1-run-idle")

    # Agents: two offline agents, each bid taking 5 s, so the run outlasts the test's look.
    open_page(page, "Agents")
    create_agent(page, ann, "sim/eager", "You argue for the benefits.", latency_s=5)
    create_agent(page, bob, "sim/contrarian", "You argue for the risks.", latency_s=5)
    expect(page.get_by_text(f"{bob} · sim/contrarian (simulated)")).to_be_visible()
    screenshot(page, "journey-2-agents")

    # Run: pick them, a task, a threshold no speaking bid can miss and the most turns the form
    # allows, so only the sims' tiring could end it (see above); start.
    open_page(page, "Run")
    pick_roster(page, [ann, bob])
    fill_task(page, TASK)
    set_number(page, "run_param_max_loops", MAX_LOOPS)
    set_number(page, "run_param_threshold", -1)
    screenshot(page, "journey-3-run-form")
    start_run(page)  # retried only while the status still says idle (a swallowed click)

    expect(status_line(page)).to_have_text(re.compile(r"^status: running · job [0-9a-f]{32}"),
                                           timeout=WAIT_MS)
    job = job_id(page)
    user = page.get_by_test_id("stChatMessage").filter(has_text=TASK)
    expect(user.first).to_be_visible(timeout=WAIT_MS)
    agent_bubbles = page.get_by_test_id("stChatMessage").filter(
        has_text=re.compile(rf"({ann}|{bob}) · sim/\w+ \(simulated\) · score \d\.\d\d"))
    expect(agent_bubbles.first).to_be_visible(timeout=WAIT_MS)
    first = page.wait_for_function(FLOOR_WHILE_RUNNING, arg=job, timeout=WAIT_MS).json_value()
    # FLOOR_CHANGED holds only while the status says running: the floor redrew during the run
    page.wait_for_function(FLOOR_CHANGED, arg=[job, first], timeout=WAIT_MS)
    expect(agent_bubbles.nth(1)).to_be_visible(timeout=WAIT_MS)  # two turns posted
    screenshot(page, "journey-4-running")

    stop(page)
    expect(status_line(page)).to_have_text(
        re.compile(rf"^status: cancelled · job {job} · turn \d+ · messages \d+"),
        timeout=WAIT_MS)
    expect(page.locator(".st-key-stop_run")).to_have_count(0)
    screenshot(page, "journey-5-stopped")

    # What the bubbles show is what the store recorded, message for message.
    row = recorded_end(app_db_url, ann)
    assert (row["status"], row["max_loops"], row["threshold"]) == ("cancelled", MAX_LOOPS,
                                                                   -1.0), row
    run_id = row["run_id"]
    messages = RunStore(app_db_url).messages(run_id)
    assert len(messages) >= 3, messages
    expect(page.get_by_test_id("stChatMessage")).to_have_count(len(messages))
    said = messages.iloc[1]
    bubble = page.get_by_test_id("stChatMessage").nth(1)
    expect(bubble).to_contain_text(said["role"])
    expect(bubble).to_contain_text(said["content"])

    # Analysis of that run: metric cards, then the charts of two tabs, drawn as SVG.
    page.get_by_test_id("stPageLink").filter(has_text="Open this run in Analysis").click()
    expect(page.get_by_role("heading", name="Analysis", exact=True)).to_be_visible(
        timeout=WAIT_MS)
    # The run is labelled by its task (no name was given), its local start time, a short id,
    # and how it ended when not finished.
    expect(page.locator(".st-key-analysis_run input")).to_have_value(
        re.compile(rf"^{re.escape(TASK)} · \d{{4}}-\d\d-\d\d \d\d:\d\d · {run_id[:8]}"
                   r" · cancelled$"), timeout=WAIT_MS)
    assert f"run={run_id}" in page.url
    metrics = page.get_by_test_id("stMetric")
    for label in ("Turns", "Speaker entropy", "Evenness", "Gini", "Longest monologue"):
        expect(metrics.filter(has_text=label).first).to_be_visible(timeout=WAIT_MS)
    assert metrics.count() >= 9
    wait_plots(page, 2)  # Bids: the heatmap and the bid lines
    screenshot(page, "journey-6-analysis-bids")
    page.get_by_role("tab", name="Speakers").click()
    wait_plots(page, 3)  # winner timeline, transitions, turn shares
    screenshot(page, "journey-7-analysis-speakers")
