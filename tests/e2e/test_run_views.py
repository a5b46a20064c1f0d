"""Runs and Analysis views in a real browser (issue 21 item 4): permalinks to a run, a turn and
a bid that survive a reload; the run picker keeps sweep runs apart from single runs; Analysis
charts download as PNG images from plotly's own button (drawn in the browser, no kaleido); and
two runs compared with their parameters side by side and overlaid per-turn charts."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from groupchat_core import GroupChat
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_ui.kit.presets import DEBATE_TRIO

from .conftest import WAIT_MS, expect, fresh, open_list, screenshot, wait_idle
from .test_full_journey import compare_all_rows

PHONE = {"width": 390, "height": 844}


def _chat(store: RunStore, name: str, threshold: float) -> str:
    chat = GroupChat(name=name, agents=DEBATE_TRIO.build_agents(latency_s=0.0), max_loops=8,
                     threshold=threshold, seed=5)
    store.attach(chat)
    chat.run("Plan a picnic for twelve.")
    assert chat.last_run is not None
    return str(chat.last_run.run_id)


@pytest.fixture(scope="module")
def made(app_db_url: str) -> dict[str, Any]:
    store = RunStore(app_db_url)
    tag = uuid.uuid4().hex[:6]
    a = _chat(store, f"views {tag} A", 0.4)
    b = _chat(store, f"views {tag} B", 0.6)
    agents = [x.to_spec() for x in DEBATE_TRIO.build_agents(latency_s=0.0)]
    sweep = run_sweep(parse_sweep({"name": f"picker {tag}", "tasks": ["Plan it."],
                                   "base": {"max_loops": 4, "agents": agents},
                                   "grid": {"threshold": [0.4, 0.6]}}), store).sweep_id
    sweep_runs = list(store.list_runs(sweep_id=sweep)["run_id"])
    bids = store.bids([a])
    agent = str(bids[bids["turn"] == 2]["agent"].iloc[0])
    return {"tag": tag, "a": a, "b": b, "sweep_runs": sweep_runs, "agent": agent}


def phone_shot(page: Any, part: Any, name: str) -> None:
    """The same page at phone width: nothing scrolls sideways; `part` shown, then a shot."""
    page.set_viewport_size(PHONE)
    wait_idle(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways on a phone ({width}px)"
    part.scroll_into_view_if_needed()
    screenshot(page, name)


def _why_turn(page: Any) -> Any:
    return fresh(page, ".st-key-explain_turn").get_by_role("combobox")


def test_a_permalink_opens_the_turn_and_the_bid_and_survives_a_reload(app_server, made, page,
                                                                     open_context):
    run_id, agent = made["a"], made["agent"]
    page.goto(f"{app_server}/analysis?run={run_id}&turn=2&bid={agent}")
    tab = fresh(page, '[data-testid="stTab"]').filter(has_text=re.compile("^Why\\?$"))
    expect(tab).to_have_attribute("aria-selected", "true", timeout=WAIT_MS)
    expect(_why_turn(page)).to_have_value(re.compile("^turn 2: "), timeout=WAIT_MS)
    box = fresh(page, ".st-key-explain_bid_box")
    expect(box).to_contain_text(f"Bid of {agent} on turn 2", timeout=WAIT_MS)
    expect(page.get_by_text(f"Link to this bid: analysis?run={run_id}&turn=2&bid={agent}")
           ).to_be_visible()
    screenshot(page, "after-analysis-permalink-desktop")
    phone = open_context(viewport=PHONE)  # a phone opens the link
    small = phone.new_page()
    small.goto(page.url)
    part = fresh(small, ".st-key-explain_bid_box")
    expect(part).to_contain_text(f"Bid of {agent} on turn 2", timeout=WAIT_MS)
    phone_shot(small, part, "after-analysis-permalink-phone")
    phone.close()
    page.reload()
    expect(fresh(page, ".st-key-explain_bid_box")).to_contain_text(
        f"Bid of {agent} on turn 2", timeout=WAIT_MS)
    assert re.search(r"turn=2", page.url) and re.search(f"bid={agent}", page.url)
    # a plain run link opens the run on its first tab, with no turn in the address
    page.goto(f"{app_server}/analysis?run={run_id}")
    first = fresh(page, '[data-testid="stTab"]').filter(has_text=re.compile("^Bids$"))
    expect(first).to_have_attribute("aria-selected", "true", timeout=WAIT_MS)
    wait_idle(page)
    assert "turn=" not in page.url


def test_the_run_picker_keeps_sweep_runs_apart(app_server, made, page):
    page.goto(f"{app_server}/analysis?run={made['sweep_runs'][0]}")
    kinds = fresh(page, ".st-key-analysis_kind")
    sweep_runs = kinds.get_by_role("radio", name=re.compile(r"^sweep runs \(\d+\)$"))
    expect(sweep_runs).to_be_checked(timeout=WAIT_MS)
    wait_idle(page)
    texts = open_list(page, fresh(page, ".st-key-analysis_run")).all_inner_texts()
    assert not any(f"views {made['tag']} A" in t for t in texts), texts
    page.keyboard.press("Escape")
    single = kinds.get_by_role("radio", name=re.compile(r"^single runs"))
    single.click()
    expect(single).to_be_checked(timeout=WAIT_MS)
    # The control shows the click before the page's rerun has begun (so waiting for no run in
    # flight could pass at once, and the list opened was still the sweep runs': fresh clone
    # P3). That rerun sets `?run=` to a single run after it has drawn the new list: wait for it.
    not_a_sweep_run = "|".join(made["sweep_runs"])
    expect(page).to_have_url(re.compile(rf"[?&]run=(?!{not_a_sweep_run})[0-9a-f]{{32}}"),
                             timeout=WAIT_MS)
    wait_idle(page)
    texts = open_list(page, fresh(page, ".st-key-analysis_run")).all_inner_texts()
    assert not any(f"picker {made['tag']}" in t for t in texts), texts
    assert any(f"views {made['tag']} B" in t for t in texts), texts


def test_an_analysis_chart_downloads_as_a_png_without_kaleido(app_server, made, page):
    page.goto(f"{app_server}/analysis?run={made['a']}")
    chart = fresh(page, ".st-key-bids_heatmap .js-plotly-plot")
    expect(chart).to_be_visible(timeout=WAIT_MS)
    chart.hover()
    button = fresh(page, ".st-key-bids_heatmap").get_by_role(
        "button", name="Download plot as a PNG")
    expect(button).to_be_attached(timeout=WAIT_MS)
    with page.expect_download(timeout=WAIT_MS) as info:
        button.click(force=True)
    download = info.value
    assert download.suggested_filename.endswith(".png")
    with open(download.path(), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_two_runs_compared_show_parameters_side_by_side_and_overlaid_charts(
        app_server, made, page):
    page.goto(f"{app_server}/runs")
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    page.locator(".st-key-filter_text input").fill(f"views {made['tag']}")
    page.locator(".st-key-apply_filters button").click()
    expect(page.get_by_text("2 run(s)", exact=True)).to_be_visible(timeout=WAIT_MS)
    compare_all_rows(page, "runs_table")
    note = fresh(page, '[data-testid="stCaptionContainer"]').filter(has_text="Parameters:")
    expect(note).to_contain_text("setting(s) differ", timeout=WAIT_MS)
    bids = fresh(page, ".st-key-compare_bids_chart .js-plotly-plot")
    expect(bids.locator(".legendtext")).to_have_count(2, timeout=WAIT_MS)
    names = bids.locator(".legendtext").all_text_contents()
    assert any(n.startswith("A: views") for n in names) and \
        any(n.startswith("B: views") for n in names), names
    rotation = fresh(page, ".st-key-compare_rotation_chart .js-plotly-plot")
    expect(rotation.locator(".gtitle")).to_have_text("Rotation: who spoke on each turn")
    screenshot(page, "after-runs-compare-desktop")
    phone_shot(page, bids, "after-runs-compare-phone")
