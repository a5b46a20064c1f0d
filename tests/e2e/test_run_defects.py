"""Run page defects of issue 21 item 5, in a real browser: "Use preset" must not switch the
roster while its confirm is still open (only "Replace them" does), and a run shows one id, its
run id, on the Run page as everywhere else."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_ui.kit.presets import DEBATE_TRIO

from .conftest import (
    WAIT_MS,
    choose,
    expect,
    fill_task,
    fresh,
    pick_roster,
    screenshot,
    start_run,
    status_line,
    wait_idle,
)

pytestmark = pytest.mark.usefixtures("fresh_engines")


# The roster's chips drawn now (none left over from a redraw), once there is one: read in the
# page at once. Waiting for the first chip, then reading them all, read none when a rerun
# marked them stale in between (a 3-worker run, then the serial run of 2026-12-06).
CHIPS = """() => {
  const tags = [...document.querySelectorAll('.st-key-run_roster [data-tag]')]
    .filter(t => !t.closest('[data-stale="true"]'));
  return tags.length ? tags.map(t => t.getAttribute('aria-label').split(' · ')[0]) : null;
}"""


def _chips(page: Any) -> list[str]:
    """The roster's chips, once the roster is drawn."""
    return list(page.wait_for_function(CHIPS, timeout=WAIT_MS).json_value())


def test_use_preset_waits_for_its_confirm_before_switching_the_roster(
        app_server, app_db_url, page):
    store = RunStore(app_db_url)
    tag = uuid.uuid4().hex[:5]
    mine = [f"Mia {tag}", f"Noa {tag}"]
    for name in mine:
        store.save_agent(Agent(agent_name=name, model_name="sim/balanced"))
    edited = DEBATE_TRIO.build_agents()[0]  # a preset agent the user changed: the confirm asks
    store.save_agent(edited.model_copy(update={"system_prompt": f"edited {tag}"}))
    try:
        _switch_after_confirm(page, app_server, mine)
    finally:  # the preset's own agent again, also when this failed: later tests load the preset
        store.save_agent(edited)


def _switch_after_confirm(page: Any, app_server: str, mine: list[str]) -> None:
    page.goto(f"{app_server}/run")
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    pick_roster(page, mine)
    assert _chips(page) == mine
    choose(page, fresh(page, ".st-key-run_preset_choice"),
           page.get_by_role("option", name=DEBATE_TRIO.name, exact=True))
    wait_idle(page)
    fresh(page, ".st-key-use_preset button").click()
    question = fresh(page, ".st-key-confirm_preset_box")
    expect(question).to_contain_text("would replace your saved", timeout=WAIT_MS)
    wait_idle(page)
    assert _chips(page) == mine, "the roster switched before the confirm was answered"
    screenshot(page, "after-run-preset-confirm-desktop")
    fresh(page, ".st-key-confirm_preset_no button").click()
    expect(fresh(page, ".st-key-confirm_preset_box")).to_have_count(0, timeout=WAIT_MS)
    wait_idle(page)
    assert _chips(page) == mine, "cancelling the confirm switched the roster"
    fresh(page, ".st-key-use_preset button").click()
    expect(fresh(page, ".st-key-confirm_preset_box")).to_be_visible(timeout=WAIT_MS)
    fresh(page, ".st-key-confirm_preset_yes button").click()
    expected = [a.agent_name for a in DEBATE_TRIO.build_agents()]
    expect(fresh(page, ".st-key-run_roster").locator("[data-tag]")
           ).to_have_count(len(expected), timeout=WAIT_MS)
    assert _chips(page) == expected


def test_the_run_page_shows_the_run_id_that_analysis_shows(app_server, app_db_url, page):
    page.goto(f"{app_server}/run")
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    names = [a.agent_name for a in DEBATE_TRIO.build_agents()]
    store = RunStore(app_db_url)
    for agent in DEBATE_TRIO.build_agents(latency_s=0.0):
        if agent.agent_name not in {a.agent_name for a in store.list_agents()}:
            store.save_agent(agent)
    page.reload()
    wait_idle(page)
    pick_roster(page, names)
    task = f"One id please {uuid.uuid4().hex[:6]}"
    fill_task(page, task)
    start_run(page)
    line = status_line(page)
    expect(line).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)
    shown = re.search(r"· job ([0-9a-f]{32}) ·", line.inner_text())
    assert shown, line.inner_text()
    store.flush()
    runs = store.list_runs()
    run_id = str(runs[runs["task"] == task]["run_id"].iloc[0])
    assert run_id == shown.group(1)  # the Run page's id is the run's id
    page.goto(f"{app_server}/analysis")
    picker = fresh(page, ".st-key-analysis_run").get_by_role("combobox")
    expect(picker).to_have_value(re.compile(f"{run_id[:8]}"), timeout=WAIT_MS)
