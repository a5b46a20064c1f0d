"""The app on a phone-width screen (390x844, touch): nothing wider than the screen anywhere.
Analysis: the metric cards in a compact grid so the first chart comes early, every tab label in
full, the tabs work by touch, a permalink's bid shown; Run: a run's summary cards three a row;
Agents: Edit brings the form into view; Sweeps: every exploring view draws without a sideways
scroll.

Before: the nine metric cards stacked one per row (~1,700 px of scrolling before any chart),
the tabs overflowed ("Downlo>"), Edit opened the form off-screen. Screenshots go to
artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit.presets import DEBATE_TRIO

from .conftest import (
    SCREENSHOTS,
    WAIT_MS,
    expect,
    fresh,
    set_number,
    start_run,
    status_line,
    wait_idle,
    wait_plots,
)

PHONE = {"width": 390, "height": 844}
SHOTS = SCREENSHOTS / "phone"  # artifacts/ (git-ignored), like every e2e screenshot
FIRST_CHART_MAX_PX = 850  # title to first chart: about one phone screen (was ~2,100 px)
OVERFLOW = "() => [document.documentElement.scrollWidth, window.innerWidth]"
# Tops of the elements that match `sel`, relative to the top of the Analysis/Run title.
TOPS = """(sel) => { const h = document.querySelector('h1').getBoundingClientRect().top;
  return [...document.querySelectorAll(sel)].filter(e => e.offsetParent !== null)
    .map(e => e.getBoundingClientRect().top - h); }"""
TABS = """() => { const list = document.querySelector('[role=tablist]');
  return {scroll: list.scrollWidth, client: list.clientWidth, width: window.innerWidth,
          tabs: [...list.querySelectorAll('[role=tab]')].map(t => {
            const r = t.getBoundingClientRect();
            return {text: t.innerText, left: r.left, right: r.right}; })}; }"""


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def record_run(db_url: str, agents: int, turns: int) -> str:
    """A finished run of `turns` turns, one speaker each, recorded into the app's store."""
    script = {f"Agent{i}": [(0.3 + 0.1 * ((i + t) % 7), f"Agent{i} on turn {t}")
                            for t in range(turns)] for i in range(agents)}
    fake = ScriptedBids(script)
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in script],
                     max_loops=turns + 1, threshold=0.5)
    store = RunStore(db_url)
    store.attach(chat)
    chat.run("Phone check.")
    store.flush(timeout=30)
    return str(chat.last_run.run_id)


@pytest.fixture
def phone(open_context: Any) -> Any:
    return open_context(viewport=PHONE, is_mobile=True, has_touch=True).new_page()


def assert_fits(page: Any) -> None:
    scroll, inner = page.evaluate(OVERFLOW)
    assert scroll <= inner, f"the page is {scroll} px wide on a {inner} px screen"


def record_sweep(db_url: str) -> str:
    """A sweep whose views all have something to draw; its runs also give Analysis its tallest
    header: the single/sweep switch above the run picker (the chart once sat 907 px down)."""
    agents = [a.to_spec() for a in DEBATE_TRIO.build_agents(latency_s=0.0)]
    return str(run_sweep(parse_sweep({
        "name": "phone sweep", "tasks": ["Phone sweep."], "repeats": 2,
        "base": {"max_loops": 4, "agents": agents, "seed": 11},
        "grid": {"threshold": [0.4, 0.6], "recency_window": [1, 4, 16]}}),
        RunStore(db_url)).sweep_id)


def sweep_tab(page: Any, name: str) -> None:
    """Tap a results tab (the tab bar scrolls sideways when it is wider than the page)."""
    tab = fresh(page, '[data-testid="stTab"]').filter(has_text=re.compile(f"^{name}$"))
    expect(tab).to_be_attached(timeout=WAIT_MS)
    tab.scroll_into_view_if_needed(timeout=WAIT_MS)
    tab.tap()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=WAIT_MS)
    wait_idle(page)


def test_every_page_fits_a_phone(app_server: str, app_db_url: str, phone: Any):
    sweep_id = record_sweep(app_db_url)
    run_id = record_run(app_db_url, agents=4, turns=40)
    phone.goto(f"{app_server}/analysis?run={run_id}")
    metrics = phone.get_by_test_id("stMetric")
    expect(metrics.first).to_be_visible(timeout=WAIT_MS)
    wait_plots(phone, 1)
    wait_idle(phone)
    expect(fresh(phone, ".st-key-analysis_kind")).to_be_visible()
    shot(phone, "after-analysis-phone-test")
    assert_fits(phone)

    # Nine cards in a grid of three per row (3 rows), not one per row.
    card_tops = phone.evaluate(TOPS, '[data-testid="stMetric"]')
    assert len(card_tops) == 9
    rows = sorted({round(t) for t in card_tops})
    assert len(rows) == 3, f"cards in {len(rows)} rows: {rows}"
    chart_top = min(phone.evaluate(TOPS, '[data-testid="stPlotlyChart"]'))
    assert chart_top <= FIRST_CHART_MAX_PX, f"first chart {chart_top:.0f} px below the title"

    tabs = phone.evaluate(TABS)
    assert tabs["scroll"] <= tabs["client"], tabs
    for tab in tabs["tabs"]:
        assert 0 <= tab["left"] and tab["right"] <= tabs["width"], tab
    assert [t["text"] for t in tabs["tabs"]] == ["Bids", "Speakers", "Why?", "Transcript",
                                                 "Files"]
    # The tabs work by touch: Files shows the downloads, still within the screen.
    phone.get_by_role("tab", name="Files").tap()
    expect(phone.get_by_role("button", name="Bundle (JSON)")).to_be_visible(timeout=WAIT_MS)
    wait_idle(phone)
    assert_fits(phone)

    # A permalink to a bid opens it on the phone.
    phone.goto(f"{app_server}/analysis?run={run_id}&turn=2&bid=Agent1")
    bid = fresh(phone, ".st-key-explain_bid_box")
    expect(bid).to_contain_text("Bid of Agent1 on turn 2", timeout=WAIT_MS)
    wait_idle(phone)
    assert_fits(phone)
    bid.scroll_into_view_if_needed()
    shot(phone, "analysis-permalink-phone")

    # Run: the Debate trio's run, its six summary cards three a row.
    phone.goto(app_server)
    expect(status_line(phone)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    assert_fits(phone)
    wait_idle(phone)
    phone.locator(".st-key-use_preset button").click()
    expect(phone.get_by_text(re.compile("^Loaded the"))).to_be_visible(timeout=WAIT_MS)
    set_number(phone, "run_param_max_loops", 3)  # two turns show the cards as well as eleven
    start_run(phone)
    expect(status_line(phone)).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)
    # The run's six summary cards: three per row on a phone (two rows), not six rows.
    expect(fresh(phone, '.st-key-cards_summary [data-testid="stMetric"]')).to_have_count(
        6, timeout=WAIT_MS)
    wait_idle(phone)
    shot(phone, "after-run-phone-test")
    assert_fits(phone)
    tops = phone.evaluate(TOPS, '.st-key-cards_summary [data-testid="stMetric"]')
    assert len(tops) == 6 and len({round(t) for t in tops}) == 2, tops

    # Agents: at 390x844 the form sits below the list of agents, and Edit opened it
    # off-screen (issue 11); now the form scrolls into view, its title and name field shown.
    names = [f"PhoneEdit{i}" for i in range(6)]
    RunStore(app_db_url).save_agents([Agent(agent_name=n, model_name="sim/eager",
                                            system_prompt=f"Agent {n} for the phone test.")
                                      for n in names])
    edit = fresh(phone, f".st-key-agent_edit_{names[1]} button").filter(visible=True)
    phone.goto(f"{app_server}/agents")  # saved by another writer, yet listed at once
    expect(edit).to_be_visible(timeout=WAIT_MS)
    assert_fits(phone)
    form = fresh(phone, ".st-key-agent_form_box")
    expect(form).not_to_be_in_viewport()  # below the list: why it must scroll
    for _ in range(3):  # a rerun landing on the tap swallows it: tap again while not editing
        wait_idle(phone)
        edit.tap()
        try:
            expect(form.get_by_text(f"Edit {names[1]}", exact=True)).to_be_attached(
                timeout=10_000)
            break
        except AssertionError:
            continue
    expect(form.get_by_text(f"Edit {names[1]}", exact=True)).to_be_in_viewport(timeout=WAIT_MS)
    expect(form.locator(".st-key-agent_form_name input")).to_be_in_viewport()
    expect(form.locator(".st-key-agent_form_name input")).to_have_value(names[1])
    shot(phone, "after-agents-edit-phone-test")

    # Sweeps: every exploring view of issue 21 draws without a sideways scroll.
    phone.goto(f"{app_server}/sweeps?sweep={sweep_id}")
    expect(phone.get_by_role("heading", name="Results")).to_be_visible(timeout=WAIT_MS)
    wait_idle(phone)
    for tab in ("Group by", "Parallel coordinates", "Run matrix", "Stability", "Failures"):
        sweep_tab(phone, tab)
        if tab == "Parallel coordinates":  # no g.trace: its own layer
            expect(fresh(phone, '[data-testid="stTabPanel"]:visible g.parcoords').first
                   ).to_be_attached(timeout=WAIT_MS)
        elif tab != "Failures":
            wait_plots(phone, 1)
        assert_fits(phone)
        shot(phone, f"sweeps-{tab.split()[0].lower()}-phone")
