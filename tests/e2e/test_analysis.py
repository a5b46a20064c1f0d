"""Recorded runs on Analysis and Runs in a real browser (issues 20, 21): a permalink to a turn
and a bid survives a reload; the run picker keeps sweep runs apart from single runs; a chart
downloads as a PNG from plotly's own button (drawn in the browser, no kaleido); the bids
heatmap's marks leave every value readable and at a 200-turn window draw each winner apart;
a scored run shows its verdict; two runs compared side by side with overlaid charts.

Every run is recorded into this test's own store before the page opens. What needs no browser
(labels, picker contents, the figures' data) is the AppTests' (tests/ui/)."""

from __future__ import annotations

import re
from typing import Any

from groupchat_core import Agent, GroupChat
from groupchat_core.outcomes import du_math_tasks
from groupchat_core.store import RunStore
from groupchat_core.sweeps import parse_sweep, run_sweep
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit.presets import DEBATE_TRIO

from .conftest import WAIT_MS, expect, fresh, open_list, screenshot, wait_idle
from .test_journey import compare_all_rows

# Every text of a chart and every mark it draws (the scatter traces' points, not the legend's),
# as rectangles on the screen.
CHART_BOXES = """(key) => {
  const root = document.querySelector('.st-key-' + key);
  if (!root) return null;
  const box = e => { const r = e.getBoundingClientRect();
                     return {x: r.x, y: r.y, w: r.width, h: r.height}; };
  return {texts: [...root.querySelectorAll('.heatmaplayer text, g.textpoint text, text')]
            .map(t => ({s: t.textContent, ...box(t)})),
          marks: [...root.querySelectorAll('.scatterlayer path.point')].map(box)}; }"""
# The winner marks (the heatmap's first scatter trace) as rectangles on the screen.
WINNER_MARKS = """(key) => {
  const root = document.querySelector('.st-key-' + key);
  const layer = root && root.querySelector('.scatterlayer');
  if (!layer) return null;
  const trace = layer.querySelectorAll(':scope > g.trace')[0];
  return [...trace.querySelectorAll('path.point')].map(p => {
    const r = p.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; }); }"""


def record(store: RunStore, chat: GroupChat, task: str) -> str:
    store.attach(chat)
    chat.run(task)
    assert store.flush(timeout=30) and chat.last_run is not None
    return str(chat.last_run.run_id)


def scripted(store: RunStore, script: dict[str, list[Any]], **params: Any) -> str:
    fake = ScriptedBids(script)
    agents = [Agent(agent_name=n, model_name=fake.model_name) for n in script]
    return record(store, GroupChat(agents=agents, **params), "Scripted.")


def overlap(a: dict[str, float], b: dict[str, float]) -> float:
    """The area two rectangles share."""
    w = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return max(w, 0) * max(h, 0)


def test_recorded_runs_on_analysis_and_runs(app_server, app_db_url, page):
    store = RunStore(app_db_url)
    a, b = (record(store, GroupChat(name=f"views {x}", agents=DEBATE_TRIO.build_agents(
        latency_s=0.0), max_loops=8, threshold=t, seed=5), "Plan a picnic for twelve.")
            for x, t in (("A", 0.4), ("B", 0.6)))
    trio = [x.to_spec() for x in DEBATE_TRIO.build_agents(latency_s=0.0)]
    run_sweep(parse_sweep({"name": "picker", "tasks": ["Plan it."], "grid": {
        "threshold": [0.4, 0.6]}, "base": {"max_loops": 4, "agents": trio}}), store)
    sweep_runs = [r for r in store.list_runs()["run_id"] if r not in (a, b)]
    bids = store.bids([a])
    agent = str(bids[bids["turn"] == 2]["agent"].iloc[0])

    # A permalink opens the turn and the bid, and survives a reload.
    page.goto(f"{app_server}/analysis?run={a}&turn=2&bid={agent}")
    tab = fresh(page, '[data-testid="stTab"]').filter(has_text=re.compile("^Why\\?$"))
    expect(tab).to_have_attribute("aria-selected", "true", timeout=WAIT_MS)
    expect(fresh(page, ".st-key-explain_turn").get_by_role("combobox")).to_have_value(
        re.compile("^turn 2: "), timeout=WAIT_MS)
    box = fresh(page, ".st-key-explain_bid_box")
    expect(box).to_contain_text(f"Bid of {agent} on turn 2", timeout=WAIT_MS)
    expect(page.get_by_text(f"Link to this bid: analysis?run={a}&turn=2&bid={agent}")
           ).to_be_visible()
    screenshot(page, "analysis-permalink-desktop")
    page.reload()
    expect(fresh(page, ".st-key-explain_bid_box")).to_contain_text(
        f"Bid of {agent} on turn 2", timeout=WAIT_MS)
    assert "turn=2" in page.url and f"bid={agent}" in page.url
    # a plain run link opens the run on its first tab, with no turn in the address
    page.goto(f"{app_server}/analysis?run={a}")
    first = fresh(page, '[data-testid="stTab"]').filter(has_text=re.compile("^Bids$"))
    expect(first).to_have_attribute("aria-selected", "true", timeout=WAIT_MS)
    wait_idle(page)
    assert "turn=" not in page.url

    # The heatmap downloads as a PNG from plotly's own button.
    chart = fresh(page, ".st-key-bids_heatmap .js-plotly-plot")
    expect(chart).to_be_visible(timeout=WAIT_MS)
    chart.hover()
    button = fresh(page, ".st-key-bids_heatmap").get_by_role("button",
                                                             name="Download plot as a PNG")
    expect(button).to_be_attached(timeout=WAIT_MS)
    with page.expect_download(timeout=WAIT_MS) as info:
        button.click(force=True)
    assert info.value.suggested_filename.endswith(".png")
    with open(info.value.path(), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"

    # The run picker keeps sweep runs apart from single runs.
    page.goto(f"{app_server}/analysis?run={sweep_runs[0]}")
    kinds = fresh(page, ".st-key-analysis_kind")
    expect(kinds.get_by_role("radio", name=re.compile(r"^sweep runs \(2\)$"))).to_be_checked(
        timeout=WAIT_MS)
    wait_idle(page)
    texts = open_list(page, fresh(page, ".st-key-analysis_run")).all_inner_texts()
    assert not any("views" in t for t in texts), texts
    page.keyboard.press("Escape")
    single = kinds.get_by_role("radio", name=re.compile(r"^single runs"))
    single.click()
    expect(single).to_be_checked(timeout=WAIT_MS)
    # The control shows the click before the page's rerun has begun; that rerun sets `?run=`
    # to a single run after it has drawn the new list: wait for it.
    expect(page).to_have_url(re.compile(rf"[?&]run=({a}|{b})"), timeout=WAIT_MS)
    wait_idle(page)
    texts = open_list(page, fresh(page, ".st-key-analysis_run")).all_inner_texts()
    assert not any("picker" in t for t in texts) and any("views B" in t for t in texts), texts
    page.keyboard.press("Escape")

    # The heatmap's marks leave every value readable: it showed "0.9*" for a winning 0.93 and
    # the silent-bid ring hid the minus of -0.21.
    marked = scripted(store, {"Ann": [(0.93, "a1"), (0.09, ""), (0.1, "")],
                              "Bob": [(0.5, "b1"), (0.6, "b2"), (0.1, "")]},
                      max_loops=6, threshold=0.5, recency_penalty=0.3, recency_window=1)
    adjusted = store.bids([marked]).set_index(["turn", "agent"])["adjusted"]
    assert round(adjusted[(2, "Ann")], 2) == -0.21  # a silent bid below zero
    page.goto(f"{app_server}/analysis?run={marked}")
    drawn = page.wait_for_function(
        "(key) => { const b = (" + CHART_BOXES + ")(key); return b && b.marks.length >= 2 && "
        "b.texts.some(t => t.s === '0.93') ? b : null; }", arg="bids_heatmap",
        timeout=WAIT_MS).json_value()
    values = [t for t in drawn["texts"] if re.fullmatch(r"[-\u2212]?\d\.\d\d", t["s"])]
    shown = {t["s"].replace("\u2212", "-") for t in values}
    assert {"0.93", "-0.21", "0.60"} <= shown, shown  # whole, with the minus sign
    assert not any(t["s"].endswith("*") for t in drawn["texts"])  # no star glued to a value
    for value in values:
        for mark in drawn["marks"]:
            assert overlap(value, mark) == 0, (value, mark)
    screenshot(page, "heatmap-marks-beside-values")

    # At a 200-turn window the stars merged (one agent seemed to win 20 turns in a row while
    # its longest monologue was 1): two agents take turns, 200 marks, each drawn apart.
    names = ["R0", "R1"]
    rotation = scripted(store, {n: [(0.9 if t % 2 == i else 0.2, f"{n} {t}") for t in range(200)]
                                for i, n in enumerate(names)},
                        max_loops=201, threshold=0.5, recency_penalty=0.0)
    page.goto(f"{app_server}/analysis?run={rotation}")
    marks = page.wait_for_function(
        "(key) => { const m = (" + WINNER_MARKS + ")(key); return m && m.length === 200 ? m : "
        "null; }", arg="bids_heatmap", timeout=WAIT_MS).json_value()
    marks.sort(key=lambda m: (round(m["y"]), m["x"]))
    touching = [(m, n) for m, n in zip(marks, marks[1:], strict=False)
                if round(m["y"]) == round(n["y"]) and n["x"] - (m["x"] + m["w"]) < 1]
    assert not touching, f"{len(touching)} pairs of winner marks run together: {touching[:2]}"

    # A scored run shows its verdict, and the outcomes across scored runs.
    agents = [Agent(agent_name=n, model_name=m, system_prompt=f"You are {n}.")
              for n, m in (("Solver", "sim/balanced"), ("Checker", "sim/reserved"))]
    chat = GroupChat(name="scored", agents=agents, max_loops=3, seed=3)
    store.attach(chat)
    chat.run(du_math_tasks(1)[0])
    outcome = chat.last_run.outcome if chat.last_run else None
    assert store.flush(timeout=30) and chat.last_run is not None and outcome is not None
    page.goto(f"{app_server}/analysis?run={chat.last_run.run_id}")
    verdict = "correct" if outcome.correct else "wrong"
    expect(page.get_by_text(f"Outcome: {verdict}, answer {outcome.answer}, expected 246 "
                            "(numeric scorer)")).to_be_visible(timeout=WAIT_MS)
    page.get_by_text("Outcome details").click()
    expect(page.locator(".st-key-outcome_box [data-testid='stDataFrameResizable']").first
           ).to_be_visible(timeout=WAIT_MS)
    page.get_by_text(re.compile(r"^Outcomes across scored runs \(\d+\)$")).click()
    expect(page.locator(".st-key-an_eq_chart")).to_contain_text("outcome (1: right)",
                                                               timeout=WAIT_MS)
    screenshot(page, "analysis-outcome")

    # Two runs compared on Runs: parameters side by side, per-turn charts overlaid.
    page.goto(f"{app_server}/runs")
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)
    page.locator(".st-key-filter_text input").fill("views")
    page.locator(".st-key-apply_filters button").click()
    expect(page.get_by_text("2 run(s)", exact=True)).to_be_visible(timeout=WAIT_MS)
    compare_all_rows(page, "runs_table")
    note = fresh(page, '[data-testid="stCaptionContainer"]').filter(has_text="Parameters:")
    expect(note).to_contain_text("setting(s) differ", timeout=WAIT_MS)
    lines = fresh(page, ".st-key-compare_bids_chart .js-plotly-plot").locator(".legendtext")
    expect(lines).to_have_count(2, timeout=WAIT_MS)
    names = lines.all_text_contents()
    assert any(n.startswith("A: views") for n in names), names
    assert any(n.startswith("B: views") for n in names), names
    expect(fresh(page, ".st-key-compare_rotation_chart .js-plotly-plot").locator(".gtitle")
           ).to_have_text("Rotation: who spoke on each turn")
    screenshot(page, "runs-compare-desktop")
