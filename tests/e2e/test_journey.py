"""The main journey in a real browser, asserting what a user sees at each step (issues 11, 21,
39): three agents made by the form (each save leaves a blank form: three agents, not one
renamed three times); an out-of-range threshold refused in one line; two short runs, labelled
by their task and by a given name; Analysis of the second; both compared on Runs; a one-cell
sweep; then a live run that cannot end by itself: its chat and bidding floor redraw while the
status says `running`, the page survives a switch and a reload, Stop cancels it, and the
bubbles are what the store recorded; its Analysis draws its charts.

The live run cannot end on its own while the test looks: one agent takes 5 s a bid, the
threshold of -1 lulls nobody, and the sims fall silent only once they tire (after some 20
turns: at least 100 s), where the test needs two turns before it stops the run.
"""

from __future__ import annotations

import re
from typing import Any

from groupchat_core import CHAT_BOUNDS
from groupchat_core.store import RunStore
from tests.helpers.waits import eventually

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
    wait_idle,
    wait_plots,
)

TASK = "Should we adopt AI for medical diagnosis?"
NAME = "DB choice"  # the second run's own name
NAMES = ["Opti", "Pessi", "Real"]
MAX_LOOPS = int(CHAT_BOUNDS["max_loops"].high)  # the most turns a run may have
JOB_LABEL = r"^\d\d:\d\d · [0-9a-f]{8} · "  # the sidebar's: time and id first, then the label
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


def settle(page: Any) -> None:
    """Wait out the rerun a click has just asked for: until it starts (briefly: a quick one may
    have run already), then until no script run is in flight."""
    busy = page.locator('[data-testid="stApp"]:not([data-test-script-state="notRunning"])')
    try:
        expect(busy).to_be_attached(timeout=2_000)
    except AssertionError:
        pass  # it ran before we looked
    wait_idle(page)


def new_run(page: Any, max_loops: int, threshold: float | None = None, name: str = "",
            task: str = "") -> str:
    """Open "New run" if it is closed, set what is given, start; returns the new job's id."""
    expander = page.get_by_test_id("stExpander").filter(has_text="New run").first
    start = page.locator(".st-key-start_run button")
    # Look only once no script run is in flight: the rerun after the last Start closes the
    # panel, and a look before it lands sees the panel still open (then it shuts while typing).
    for _ in range(3):
        wait_idle(page)
        if not start.is_visible():
            expander.get_by_text("New run").first.click()
            settle(page)
        if start.is_visible():
            break
    expect(start).to_be_visible(timeout=WAIT_MS // 3)
    if task:
        fill_task(page, task)
    if name:
        field = page.locator(".st-key-run_param_name input")
        field.fill(name)
        field.press("Tab")
    set_number(page, "run_param_max_loops", max_loops)
    if threshold is not None:
        set_number(page, "run_param_threshold", threshold)
    start_run(page)
    return job_id(page)


def refused(page: Any, value: int) -> None:
    """Start with an out-of-range threshold: one line naming the range, nothing started (the
    input's own min/max once made the browser drop the value silently: Start did nothing)."""
    set_number(page, "run_param_threshold", value)
    said = page.get_by_test_id("stAlert").filter(has_text=f"got {value}.0")
    for attempt in range(3):  # a rerun landing at the click can swallow it (see start_run)
        wait_idle(page)
        page.locator(".st-key-start_run button").click()
        try:
            expect(said).to_be_visible(timeout=WAIT_MS // 3)
            break
        except AssertionError:
            if attempt == 2:
                raise
    expect(said).to_have_text(re.compile(rf"threshold must be a number from -1 to 2, got "
                                         rf"{value}\.0"))
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"))


def compare_all_rows(page: Any, table_key: str) -> None:
    """Tick every row of a selectable st.dataframe (a canvas grid: its header checkbox) and
    turn on "Compare the two selected"; a rerun landing between two clicks can undo one, so
    look at what the buttons say and redo what is missing."""
    grid = page.locator(f".st-key-{table_key} [data-testid='stDataFrameResizable']")
    expect(grid).to_be_visible(timeout=WAIT_MS)
    switch = page.locator(".st-key-compare_runs").get_by_role("switch")
    for attempt in range(10):
        wait_idle(page)
        one = page.locator(".st-key-open_run button").is_enabled()
        none = page.locator(".st-key-delete_runs button").is_disabled()
        if one or none:
            box = grid.bounding_box()
            page.mouse.click(box["x"] + 14, box["y"] + 17)  # the header: select all
            wait_idle(page)
        if switch.is_enabled() and not switch.is_checked():
            switch.click(force=True)
        try:
            expect(page.get_by_text(re.compile(r"^Same speaker on \d+ of \d+ turns\.$"))
                   ).to_be_visible(timeout=3_000)
            return
        except AssertionError:
            if attempt == 9:
                raise


def sweep_status_line(page: Any) -> Any:
    """The Sweeps page's own status caption (the sidebar shows the same line for each sweep of
    this session: not that one)."""
    return fresh(page, '[data-testid="stCaptionContainer"]:not([data-testid="stSidebar"] *)'
                 ).filter(has_text=re.compile(r"^sweep status: "))


def start_sweep(page: Any, attempts: int = 3) -> Any:
    """Click Start sweep; a rerun landing at that moment can swallow the click, so click again
    only while the page still says no sweep was started. Returns the status caption."""
    line = sweep_status_line(page)
    for attempt in range(attempts):
        wait_idle(page)
        page.locator(".st-key-sw_start button").click()
        try:
            expect(line).to_have_text(re.compile(r"^sweep status: (?!idle)"), timeout=10_000)
            return line
        except AssertionError:
            if attempt == attempts - 1:
                raise
    return line


def stop(page: Any) -> None:
    """Click Stop until the status says cancelled (a rerun landing at the click can swallow
    it); the run cannot have ended by itself (see the module's docstring)."""
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


def recorded_end(store: RunStore, run_id: str) -> Any:
    """The run once the store has recorded its end (the page can say cancelled a moment
    before the store's writer has written it)."""
    def row() -> Any:
        return store.list_runs().set_index("run_id").loc[run_id]

    eventually(lambda: row()["status"] != "running", f"the store recording {run_id}'s end",
               step=0.2)
    return row()


def test_agents_runs_analysis_compare_sweep_then_a_live_run_reloaded_and_stopped(
        app_server, app_db_url, page):
    store = RunStore(app_db_url)
    page.goto(app_server)
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    assert re.search(r"[?&]sid=[0-9a-f]{32}", page.url), page.url  # this browser's id
    screenshot(page, "journey-1-run-idle")

    # Agents: three in a row by the form, with no "New agent" click between them.
    open_page(page, "Agents")
    for name, model in zip(NAMES, ("sim/eager", "sim/contrarian", "sim/balanced"), strict=True):
        create_agent(page, name, model, f"You are {name}.", latency_s=0.05)
    for number, name in enumerate(NAMES, 1):  # in the order they were made
        expect(page.get_by_text(f"{number}. {name}", exact=True)).to_be_visible()
    assert [a.agent_name for a in store.list_agents()] == NAMES
    screenshot(page, "journey-2-agents")

    # Run: an out-of-range threshold is refused; then two short runs, the second named.
    open_page(page, "Run")
    pick_roster(page, NAMES)
    fill_task(page, TASK)
    for value in (5, -3):
        refused(page, value)
    screenshot(page, "journey-3-run-form")
    first = new_run(page, 6, threshold=0.2)
    expect(status_line(page)).to_have_text(re.compile(rf"^status: finished · job {first}"),
                                           timeout=WAIT_MS)
    expect(page.get_by_test_id("stChatMessage").first).to_contain_text(TASK)
    second = new_run(page, 6, name=NAME, task=f"Pick a database for {TASK}")
    assert second != first
    expect(status_line(page)).to_have_text(re.compile(rf"^status: finished · job {second}"),
                                           timeout=WAIT_MS)
    sidebar = page.get_by_test_id("stSidebar")  # labelled by task and by name, never "dynamic"
    expect(sidebar.get_by_role("link", name=re.compile(f"{JOB_LABEL}{re.escape(TASK)}$")).first
           ).to_be_visible(timeout=WAIT_MS)
    expect(sidebar.get_by_role("link", name=re.compile(f"{JOB_LABEL}{NAME}$")).first
           ).to_be_visible(timeout=WAIT_MS)
    expect(sidebar.get_by_text("dynamic-groupchat")).to_have_count(0)

    # Analysis of the run just watched: labelled by its name, its local start time to the
    # minute and its id, which is the job id the Run page showed; its cards and charts.
    page.get_by_test_id("stPageLink").filter(has_text="Open this run in Analysis").click()
    expect(page.get_by_role("heading", name="Analysis", exact=True)).to_be_visible(
        timeout=WAIT_MS)
    expect(page.locator(".st-key-analysis_run input")).to_have_value(re.compile(
        rf"^{NAME} · \d{{4}}-\d\d-\d\d \d\d:\d\d · {second[:8]}$"), timeout=WAIT_MS)
    assert second in set(store.list_runs()["run_id"])  # the Run page's id is the run's id
    expect(page.get_by_test_id("stMetric").filter(has_text="Speaker entropy").first
           ).to_be_visible(timeout=WAIT_MS)
    wait_plots(page, 1)
    screenshot(page, "journey-4-analysis")

    # Compare the two runs on Runs: the side-by-side metrics and the aligned speakers.
    open_page(page, "Runs")
    expect(page.get_by_text("2 run(s)", exact=True)).to_be_visible(timeout=WAIT_MS)
    compare_all_rows(page, "runs_table")
    expect(page.get_by_text("Speaker entropy").first).to_be_attached()  # a canvas grid cell
    screenshot(page, "journey-5-compare")

    # A tiny sweep: one cell of the saved agents, to its end.
    open_page(page, "Sweeps")
    for axis, value in (("threshold", "0.3"), ("recency_penalty", "0.0"),
                        ("recency_window", "1")):
        field = page.locator(f".st-key-sw_{axis} input")
        field.fill(value)
        field.press("Enter")
        wait_idle(page)
    set_number(page, "sw_repeats", 1)
    set_number(page, "sw_max_loops", 4)
    expect(page.get_by_text("1 cells", exact=False).first).to_be_visible(timeout=WAIT_MS)
    sweep_line = start_sweep(page)
    expect(sweep_line).to_have_text(re.compile(r"^sweep status: finished · 1 / 1 cells"),
                                    timeout=WAIT_MS)
    screenshot(page, "journey-6-sweep")

    # Edit mode is explicit (the Edit button) and says a changed name renames: slow one agent
    # down so each turn of the next run lasts at least 5 s.
    open_page(page, "Agents")
    wait_idle(page)
    fresh(page, f".st-key-agent_edit_{NAMES[0]} button:visible").first.click()
    expect(page.get_by_text(f"Edit {NAMES[0]}", exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text(re.compile(f"^Editing the saved agent {NAMES[0]}\\. Rename:"))
           ).to_be_visible()
    form = page.get_by_test_id("stForm").filter(has=page.locator(".st-key-save_agent"))
    latency = form.locator(".st-key-agent_form_sim_latency input")
    if not latency.is_visible():
        form.get_by_test_id("stExpander").get_by_text("Advanced").click()
    set_number(page, "agent_form_sim_latency", 5)
    form.locator(".st-key-save_agent button").click()
    expect(page.get_by_test_id("stAlertContentSuccess").filter(
        has_text=f"Saved changes to {NAMES[0]}.")).to_be_visible(timeout=WAIT_MS)
    assert [a.agent_name for a in store.list_agents()] == NAMES  # still three, same order

    # The live run: Run comes back to the job being watched; the long run's floor redraws.
    open_page(page, "Run")
    expect(status_line(page)).to_contain_text(f"job {second}", timeout=WAIT_MS)
    job = new_run(page, MAX_LOOPS, threshold=-1, task=TASK)
    expect(status_line(page)).to_have_text(re.compile(rf"^status: running · job {job}"),
                                           timeout=WAIT_MS)
    bubbles = page.get_by_test_id("stChatMessage").filter(
        has_text=re.compile(rf"({'|'.join(NAMES)}) · sim/\w+ \(simulated\) · score \d\.\d\d"))
    expect(bubbles.first).to_be_visible(timeout=WAIT_MS)
    drawn = page.wait_for_function(FLOOR_WHILE_RUNNING, arg=job, timeout=WAIT_MS).json_value()
    # FLOOR_CHANGED holds only while the status says running: the floor redrew during the run
    page.wait_for_function(FLOOR_CHANGED, arg=[job, drawn], timeout=WAIT_MS)
    expect(bubbles.nth(1)).to_be_visible(timeout=WAIT_MS)  # two turns posted
    screenshot(page, "journey-7-running")
    open_page(page, "Analysis")
    open_page(page, "Run")
    expect(status_line(page)).to_have_text(re.compile(rf"^status: running · job {job}"),
                                           timeout=WAIT_MS)
    page.reload()
    expect(status_line(page)).to_have_text(re.compile(rf"^status: running · job {job}"),
                                           timeout=WAIT_MS)
    # This browser's jobs count its sweep too: three runs and the sweep, each with its link.
    expect(page.get_by_text(re.compile(r"^Jobs of this session: 1 running, 4 in all$"))
           ).to_be_visible(timeout=WAIT_MS)
    links = page.get_by_test_id("stSidebar").get_by_test_id("stPageLink")
    expect(links).to_have_count(4)
    expect(links.filter(has_text="sweep · finished")).to_have_count(1)
    screenshot(page, "journey-8-reloaded-mid-run")

    stop(page)
    expect(status_line(page)).to_have_text(
        re.compile(rf"^status: cancelled · job {job} · turn \d+ · messages \d+"),
        timeout=WAIT_MS)
    expect(page.locator(".st-key-stop_run")).to_have_count(0)
    # What the bubbles show is what the store recorded, message for message.
    row = recorded_end(store, job)
    assert (row["status"], row["max_loops"], row["threshold"]) == ("cancelled", MAX_LOOPS,
                                                                   -1.0), row
    messages = store.messages(job)
    assert len(messages) >= 3, messages
    expect(page.get_by_test_id("stChatMessage")).to_have_count(len(messages), timeout=WAIT_MS)
    said = messages.iloc[1]
    bubble = page.get_by_test_id("stChatMessage").nth(1)
    expect(bubble).to_contain_text(said["role"])
    expect(bubble).to_contain_text(said["content"])

    # Analysis of the stopped run (the form kept the name): labelled as cancelled, its cards,
    # two tabs of charts.
    page.get_by_test_id("stPageLink").filter(has_text="Open this run in Analysis").click()
    expect(page.locator(".st-key-analysis_run input")).to_have_value(re.compile(
        rf"^{NAME} · \d{{4}}-\d\d-\d\d \d\d:\d\d · {job[:8]} · cancelled$"), timeout=WAIT_MS)
    assert f"run={job}" in page.url
    metrics = page.get_by_test_id("stMetric")
    for label in ("Turns", "Speaker entropy", "Evenness", "Gini", "Longest monologue"):
        expect(metrics.filter(has_text=label).first).to_be_visible(timeout=WAIT_MS)
    assert metrics.count() >= 9
    wait_plots(page, 2)  # Bids: the heatmap and the bid lines
    screenshot(page, "journey-9-analysis-bids")
    page.get_by_role("tab", name="Speakers").click()
    wait_plots(page, 3)  # winner timeline, transitions, turn shares
    # The sweep survived the reload too: its page shows it finished, not idle.
    open_page(page, "Sweeps")
    expect(sweep_line).to_have_text(re.compile(r"^sweep status: finished · 1 / 1 cells"),
                                    timeout=WAIT_MS)
