"""Two browser sessions run chats at the same time; each sees only its own job.

Two browser contexts are two Streamlit sessions of one server. Both prepare a run, then start
within a moment of each other; the agents' simulated latency makes each run last seconds, so
the two overlap on the server's one background loop. Each Run page (status line, sidebar, the
whole page) names only its own job, while running and after; both runs end up in the store.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from groupchat_core.store import RunStore

from .conftest import (
    VIEWPORT,
    WAIT_MS,
    create_agent,
    expect,
    fill_task,
    job_id,
    open_page,
    pick_roster,
    screenshot,
    set_number,
    start_run,
    status_line,
)

STARTED = re.compile(r"^status: (running|finished) · job [0-9a-f]{32}")


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


def test_two_sessions_run_at_once_and_see_only_their_own_job(app_server, app_db_url, open_context):
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
