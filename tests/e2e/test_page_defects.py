"""Issue 21 item 5 in a real browser, the defects whose fixes had only AppTest or figure tests:
the heatmap's marks never cover the values they mark, the delete question names the run, a
reload keeps the Sweeps form's agent choice and the Run form's task, and where streaming is
offered the page says sims never stream."""

from __future__ import annotations

import re
import uuid

from groupchat_core import Agent, GroupChat
from groupchat_core.store import RunStore
from groupchat_core.testing import ScriptedBids
from groupchat_ui.kit.labels import row_label

from .conftest import (
    WAIT_MS,
    choose,
    expect,
    fill_task,
    fresh,
    open_page,
    pick_roster,
    screenshot,
    set_number,
    start_run,
    status_line,
    wait_idle,
)

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


def overlap(a: dict[str, float], b: dict[str, float]) -> float:
    """The area two rectangles share."""
    w = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return max(w, 0) * max(h, 0)


def test_the_heatmaps_marks_leave_every_value_readable(app_server, app_db_url, page):
    """It showed "0.9*" for a winning 0.93 and the silent-bid ring hid the minus of -0.21."""
    tag = uuid.uuid4().hex[:6]
    ann, bob = f"Ann {tag}", f"Bob {tag}"
    fake = ScriptedBids({ann: [(0.93, "a1"), (0.09, ""), (0.1, "")],
                         bob: [(0.5, "b1"), (0.6, "b2"), (0.1, "")]})
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in (ann, bob)],
                     max_loops=6, threshold=0.5, recency_penalty=0.3, recency_window=1)
    store = RunStore(app_db_url)
    store.attach(chat)
    chat.run(f"Marks {tag}")
    store.flush(timeout=30)
    run_id = str(chat.last_run.run_id)
    adjusted = store.bids([run_id]).set_index(["turn", "agent"])["adjusted"]
    assert round(adjusted[(2, ann)], 2) == -0.21  # a silent bid below zero

    page.goto(f"{app_server}/analysis?run={run_id}")
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


def test_the_delete_question_names_the_run_and_no_deletes_nothing(app_server, app_db_url, page):
    """It said "Delete 1 run(s) ... for good?"; now it names the run."""
    task = f"Delete question {uuid.uuid4().hex[:6]}"
    fake = ScriptedBids({"A": [(0.9, "a")], "B": [(0.1, "")]})
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in "AB"],
                     max_loops=2, threshold=0.5)
    store = RunStore(app_db_url)
    store.attach(chat)
    chat.run(task)
    store.flush(timeout=30)
    run_id = str(chat.last_run.run_id)
    row = store.list_runs().set_index("run_id").loc[run_id].to_dict()
    label = row_label({**row, "run_id": run_id})

    page.goto(f"{app_server}/runs")
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible(timeout=WAIT_MS)
    field = page.locator(".st-key-filter_text input")
    wait_idle(page)
    field.fill(task)
    field.press("Enter")
    grid = page.locator(".st-key-runs_table [data-testid='stDataFrameResizable']")
    expect(grid).to_be_visible(timeout=WAIT_MS)
    delete = page.locator(".st-key-delete_runs button")
    for attempt in range(5):  # the table holds this run alone: its header selects it
        wait_idle(page)
        if delete.is_enabled():
            break
        box = grid.bounding_box()
        page.mouse.click(box["x"] + 14, box["y"] + 17)
        try:  # a second click before the rerun lands would select nothing again
            expect(delete).to_be_enabled(timeout=10_000)
            break
        except AssertionError:
            if attempt == 4:
                raise
    delete.click()
    question = page.get_by_test_id("stAlertContentWarning").filter(has_text="for good?")
    expect(question).to_contain_text(f"Delete the run {label} and its bid log for good?",
                                     timeout=WAIT_MS)
    expect(question).not_to_contain_text("run(s)")
    screenshot(page, "runs-delete-question")
    page.locator(".st-key-confirm_delete_no button").click()
    expect(question).to_have_count(0, timeout=WAIT_MS)
    assert run_id in set(store.list_runs()["run_id"])  # "No" deleted nothing


def test_a_reload_keeps_the_sweeps_agents_and_the_run_task(app_server, app_db_url, page):
    """The sweep's agent choice went back to the default on reload (so the estimate was for
    other agents), and the Run form's task was lost."""
    tag = uuid.uuid4().hex[:6]
    names = [f"0-{tag}-{c}" for c in "ABCD"]
    store = RunStore(app_db_url)
    store.save_agents([Agent(agent_name=n, model_name="sim/eager") for n in names])
    store.set_agent_order(names)  # first in the picker, where its default (the first 3) starts

    page.goto(f"{app_server}/sweeps")
    expect(page.get_by_role("heading", name="Sweeps", exact=True)).to_be_visible(timeout=WAIT_MS)
    choose(page, page.locator(".st-key-sw_room"),
           page.get_by_role("option", name="Saved agents", exact=True))
    picker = fresh(page, ".st-key-sw_saved")
    for name in names[:3]:
        expect(picker.get_by_text(name)).to_be_visible(timeout=WAIT_MS)
    for name in (names[0], names[2]):  # keep B, add D: B and D
        wait_idle(page)
        picker.locator(f'[aria-label="Remove {name}"]').click()
        expect(picker.get_by_text(name)).to_have_count(0, timeout=WAIT_MS)
    choose(page, picker, page.get_by_role("option", name=names[3], exact=True))
    page.keyboard.press("Escape")
    expect(picker.get_by_text(names[3])).to_be_visible(timeout=WAIT_MS)
    wait_idle(page)

    open_page(page, "Run")
    pick_roster(page, names[:2])
    fill_task(page, f"Remembered task {tag}")
    set_number(page, "run_param_max_loops", 3)
    start_run(page)
    expect(status_line(page)).to_have_text(re.compile(r"^status: finished"), timeout=WAIT_MS)

    page.reload()
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(fresh(page, ".st-key-run_task textarea")).to_have_value(f"Remembered task {tag}",
                                                                   timeout=WAIT_MS)
    open_page(page, "Sweeps")
    picker = fresh(page, ".st-key-sw_saved")
    expect(picker.get_by_text(names[1])).to_be_visible(timeout=WAIT_MS)
    expect(picker.get_by_text(names[3])).to_be_visible()
    expect(picker.get_by_text(names[0])).to_have_count(0)
    expect(picker.get_by_text(names[2])).to_have_count(0)
    estimate = fresh(page, '[data-testid="stMarkdownContainer"]').filter(
        has_text=re.compile(r"^\d[\d,]* cells \("))
    expect(estimate.first).to_be_visible()  # the estimate is drawn for the remembered agents
    screenshot(page, "sweeps-form-after-reload")


def test_where_streaming_is_offered_the_page_says_sims_never_stream(app_server, app_db_url,
                                                                     page):
    tag = uuid.uuid4().hex[:6]
    names = [f"Sim {tag} {c}" for c in "AB"]
    store = RunStore(app_db_url)
    store.save_agents([Agent(agent_name=n, model_name="sim/balanced") for n in names])
    page.goto(f"{app_server}/run")
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=WAIT_MS)
    pick_roster(page, names)
    note = fresh(page, '[data-testid="stCaptionContainer"]').filter(has_text="never stream")
    expect(note).to_contain_text("simulated agents (sim/) never stream", timeout=WAIT_MS)
    screenshot(page, "run-sims-never-stream")

    open_page(page, "Settings")
    wait_idle(page)
    fresh(page, ".st-key-pref_stream_bids").get_by_test_id("stTooltipHoverTarget").hover()
    expect(page.get_by_test_id("stTooltipContent")).to_contain_text("never stream",
                                                                    timeout=WAIT_MS)


# The winner marks (the heatmap's first scatter trace) as rectangles on the screen.
WINNER_MARKS = """(key) => {
  const root = document.querySelector('.st-key-' + key);
  const layer = root && root.querySelector('.scatterlayer');
  if (!layer) return null;
  const trace = layer.querySelectorAll(':scope > g.trace')[0];
  return [...trace.querySelectorAll('path.point')].map(p => {
    const r = p.getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; }); }"""


def test_a_200_turn_window_draws_each_winner_mark_apart(app_server, app_db_url, page):
    """At 200-turn windows the stars merged, so one agent seemed to win 20 turns in a row while
    its longest monologue was 1. Here two agents take turns for 200 turns: 200 marks, and on
    each agent's row a visible gap between every two of them."""
    tag = uuid.uuid4().hex[:6]
    names = [f"R{i} {tag}" for i in range(2)]
    fake = ScriptedBids({n: [(0.9 if t % 2 == i else 0.2, f"{n} {t}") for t in range(200)]
                         for i, n in enumerate(names)})
    chat = GroupChat(agents=[Agent(agent_name=n, model_name=fake.model_name) for n in names],
                     max_loops=201, threshold=0.5, recency_penalty=0.0)
    store = RunStore(app_db_url)
    store.attach(chat)
    chat.run(f"Rotation {tag}")
    store.flush(timeout=30)
    assert len(chat.last_run.turns) == 200

    page.goto(f"{app_server}/analysis?run={chat.last_run.run_id}")
    marks = page.wait_for_function(
        "(key) => { const m = (" + WINNER_MARKS + ")(key); return m && m.length === 200 ? m : "
        "null; }", arg="bids_heatmap", timeout=WAIT_MS).json_value()
    marks.sort(key=lambda m: (round(m["y"]), m["x"]))
    touching = [(a, b) for a, b in zip(marks, marks[1:], strict=False)
                if round(a["y"]) == round(b["y"]) and b["x"] - (a["x"] + a["w"]) < 1]
    assert not touching, f"{len(touching)} pairs of winner marks run together: {touching[:2]}"
    screenshot(page, "heatmap-200-turn-window")
