"""The Sweeps page's exploring views in a real browser (issue 21 item 4): parallel coordinates
with a log axis and a top-k % brush, group by with interval bands, only the configuration
columns that differ, a run matrix with a baseline, bid stability across seeds, and failed bids
grouped by reason (a scripted sweep whose bids time out, fail at the provider and come back
unreadable). Screenshots at desktop and phone width go to artifacts/screenshots/."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from groupchat_core import Agent
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep, sweep_results, top_k
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit.presets import DEBATE_TRIO

from .conftest import PLOTS_DRAWN, WAIT_MS, expect, fresh, screenshot, wait_idle

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def sim_sweep(app_db_url: str) -> str:
    store = RunStore(app_db_url)
    agents = [a.to_spec() for a in DEBATE_TRIO.build_agents(latency_s=0.0)]
    spec = {"name": f"views {uuid.uuid4().hex[:6]}", "repeats": 2,
            "base": {"max_loops": 10, "agents": agents, "seed": 11},
            "grid": {"threshold": [0.4, 0.6], "recency_window": [1, 4, 16]},
            "tasks": ["Plan a picnic."]}
    return run_sweep(parse_sweep(spec), store).sweep_id


@pytest.fixture(scope="module")
def failing_sweep(app_db_url: str) -> str:
    script = ScriptedBids({"Ann": [(0.9, "hi"), {"score": "high?", "message": "x"}],
                           "Ben": [TimeoutError("request timed out"),
                                   RuntimeError("APIError: 500 from the provider")]})
    try:
        agents = [Agent(agent_name=n, model_name=script.model_name).to_spec()
                  for n in ("Ann", "Ben")]
        spec = {"name": f"fails {uuid.uuid4().hex[:6]}", "tasks": ["Plan it."],
                "base": {"max_loops": 3, "agents": agents}, "grid": {"threshold": [0.5]}}
        sweep_id = run_sweep(parse_sweep(spec), RunStore(app_db_url)).sweep_id
        script.assert_complete()
        return sweep_id
    finally:
        script.close()


def _open(page: Any, url: str, sweep_id: str, tab: str) -> None:
    page.goto(f"{url}/sweeps?sweep={sweep_id}")
    expect(page.get_by_role("heading", name="Results")).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    _tab(page, tab)


def _tab(page: Any, name: str) -> None:
    """Click a results tab (the tab bar scrolls sideways when it is wider than the page)."""
    tab = fresh(page, '[data-testid="stTab"]').filter(has_text=re.compile(f"^{name}$"))
    expect(tab).to_be_attached(timeout=WAIT_MS)
    tab.scroll_into_view_if_needed(timeout=WAIT_MS)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true", timeout=WAIT_MS)
    wait_idle(page)


def _plot_text(page: Any) -> Any:
    return fresh(page, '[data-testid="stTabPanel"]:visible .js-plotly-plot')


def slide_to(page: Any, key: str, target: int) -> None:
    """Move a keyed integer slider to `target` with its keys, as a keyboard user does: PageUp
    and PageDown move ten steps, the arrows one. Each press is a rerun, so a few big steps
    (the old 75 ArrowLefts took 51 s); the value shown is read back until it is the target."""
    slider = fresh(page, f".st-key-{key}").get_by_role("slider")
    wait_idle(page)
    _, low, high = _slider_numbers(page, key)  # the value, then the range's ends
    slider.press("Home" if target - low < high - target else "End")
    for _ in range(12):
        wait_idle(page)
        gap = target - _slider_numbers(page, key)[0]
        if gap == 0:
            return
        if abs(gap) >= 10:
            slider.press("PageUp" if gap > 0 else "PageDown")
        else:
            for _ in range(abs(gap)):
                slider.press("ArrowRight" if gap > 0 else "ArrowLeft")
    raise AssertionError(f"the slider {key} never reached {target}")


def _slider_numbers(page: Any, key: str) -> list[int]:
    """A slider's shown value and its range's ends, in the order the widget shows them."""
    text = fresh(page, f".st-key-{key}").inner_text()
    numbers = [int(n) for n in re.findall(r"\d+", text)]
    assert len(numbers) >= 3, text
    return numbers[-3:]


def test_parallel_coordinates_draw_a_log_axis_and_brush_the_top_k_percent(
        app_server, app_db_url, sim_sweep, page):
    _open(page, app_server, sim_sweep, "Parallel coordinates")
    plot = _plot_text(page).first
    expect(plot.locator("g.parcoords")).to_be_attached(timeout=WAIT_MS)
    # recency_window 1, 4, 16 spans a factor of 16: its axis is logarithmic, threshold's not
    expect(plot.locator("text", has_text="(log)")).to_have_count(1, timeout=WAIT_MS)
    kept = fresh(page, '[data-testid="stMetric"]').filter(has_text="Cells kept")
    expect(kept).to_contain_text("12 of 12", timeout=WAIT_MS)
    slide_to(page, "sw_pc_topk", 25)
    frame = sweep_results(RunStore(app_db_url), sim_sweep)
    expected = len(top_k(frame, "messages", 25))
    expect(kept).to_contain_text(f"{expected} of 12", timeout=WAIT_MS)
    expect(page.get_by_text("Top 25% on mean chat length (messages)")).to_be_visible()
    # the brush is drawn on the colour metric's axis (plotly's constraint range)
    assert plot.locator(".axis-brush .highlight").count() >= 1 or \
        plot.locator("rect.highlight").count() >= 1
    screenshot(page, "after-sweeps-parcoords-desktop")


def test_group_by_draws_a_band_per_other_parameter_and_configurations_show_what_differs(
        app_server, sim_sweep, page):
    _open(page, app_server, sim_sweep, "Group by")
    page.wait_for_function(PLOTS_DRAWN, arg=1, timeout=WAIT_MS)
    legend = _plot_text(page).first.locator(".legendtext")
    expect(legend).to_have_text(["recency_window 1", "recency_window 4", "recency_window 16"],
                                timeout=WAIT_MS)
    expect(_plot_text(page).first.locator(".gtitle")).to_contain_text(
        "seeds collapsed into 95% bands")
    screenshot(page, "after-sweeps-groupby-desktop")
    _tab(page, "Configurations")
    note = fresh(page, '[data-testid="stCaptionContainer"]').filter(has_text="configuration(s)")
    expect(note).to_contain_text("6 configuration(s)", timeout=WAIT_MS)
    expect(note).to_contain_text("columns that differ: threshold, recency_window")
    fresh(page, ".st-key-sw_diff_only").get_by_role("switch").click(force=True)
    wait_idle(page)
    expect(note).to_contain_text("all columns", timeout=WAIT_MS)


def test_the_run_matrix_names_its_baseline_and_stability_lists_each_agent(
        app_server, sim_sweep, page):
    _open(page, app_server, sim_sweep, "Run matrix")
    page.wait_for_function(PLOTS_DRAWN, arg=1, timeout=WAIT_MS)
    ticks = _plot_text(page).first.locator(".xtick text")
    expect(ticks.first).to_have_text(re.compile(r"^baseline: threshold 0.4"), timeout=WAIT_MS)
    rows = _plot_text(page).first.locator(".ytick text")
    expect(rows).to_have_count(2)
    assert sorted(rows.all_text_contents()) == ["task 0 · repeat 0", "task 0 · repeat 1"]
    screenshot(page, "after-sweeps-matrix-desktop")
    _tab(page, "Stability")
    page.wait_for_function(PLOTS_DRAWN, arg=1, timeout=WAIT_MS)
    legend = _plot_text(page).first.locator(".legendtext")
    expect(legend).to_have_count(3, timeout=WAIT_MS)
    assert set(legend.all_text_contents()) == {"Optimist", "Pessimist", "Realist"}
    screenshot(page, "after-sweeps-stability-desktop")


def test_failures_are_grouped_by_reason(app_server, failing_sweep, page):
    _open(page, app_server, failing_sweep, "Failures")
    alerts = fresh(page, '[data-testid="stAlertContentWarning"]')
    expect(alerts).to_have_count(3, timeout=WAIT_MS)
    expect(alerts.nth(0)).to_contain_text("unreadable: 1 bid(s) in 1 run(s), by Ann.")
    expect(alerts.nth(1)).to_contain_text("provider error: 1 bid(s) in 1 run(s), by Ben.")
    expect(alerts.nth(2)).to_contain_text("timeout: 1 bid(s) in 1 run(s), by Ben.")
    expect(page.get_by_text("1 cell run(s) ended in error")).to_be_visible()
    screenshot(page, "after-sweeps-failures-desktop")


def test_a_sweep_with_no_failed_bids_says_so_and_the_views_fit_a_phone(
        app_server, sim_sweep, open_context):
    context = open_context(viewport=PHONE)
    page = context.new_page()
    _open(page, app_server, sim_sweep, "Failures")
    expect(page.get_by_text("No failed bids: every bid of this sweep's runs was read.")
           ).to_be_visible(timeout=WAIT_MS)
    screenshot(page, "after-sweeps-failures-phone")
    # every view of issue 21 draws on a phone without a sideways scroll
    for tab, shot in (("Group by", "groupby"), ("Parallel coordinates", "parcoords"),
                      ("Run matrix", "matrix"), ("Stability", "stability")):
        _tab(page, tab)
        if tab == "Parallel coordinates":  # no g.trace: its own layer
            expect(_plot_text(page).first.locator("g.parcoords")).to_be_attached(
                timeout=WAIT_MS)
        else:
            page.wait_for_function(PLOTS_DRAWN, arg=1, timeout=WAIT_MS)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{tab} scrolls sideways on a phone ({width}px)"
        _plot_text(page).first.scroll_into_view_if_needed()  # the page scrolls inside
        screenshot(page, f"after-sweeps-{shot}-phone")
