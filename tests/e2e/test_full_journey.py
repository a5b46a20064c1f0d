"""The whole journey of issue 11 in a real browser, asserting what a user sees at each step:
create three agents by the form (each save leaves a blank form: three agents, not one renamed
three times), run them twice, open Analysis, compare the two runs on Runs, run a tiny sweep,
then start a long run, switch pages (Run comes back to the job being watched) and reload in the
middle of it (the run, this browser's job list and Stop are all still there).

Kept fast: sim agents with 0.05 s bids, six-message runs, a one-cell sweep.
"""

from __future__ import annotations

import re
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
    wait_idle,
    wait_plots,
)

TASK = "Should we adopt AI for medical diagnosis?"
RUNNING = re.compile(r"^status: running · job [0-9a-f]{32}")


def settle(page: Any) -> None:
    """Wait out the rerun a click has just asked for: until it starts (briefly: a quick one may
    have run already), then until no script run is in flight."""
    busy = page.locator('[data-testid="stApp"]:not([data-test-script-state="notRunning"])')
    try:
        expect(busy).to_be_attached(timeout=2_000)
    except AssertionError:
        pass  # it ran before we looked
    wait_idle(page)


def new_run(page: Any, max_loops: int, threshold: float | None = None) -> str:
    """Open "New run" if it is closed, set max_loops (and threshold), start; returns the new
    job's id."""
    expander = page.get_by_test_id("stExpander").filter(has_text="New run").first
    start = page.locator(".st-key-start_run button")
    # Look only once no script run is in flight: the rerun after the last Start closes the
    # panel, and a look before it lands sees the panel still open (then it shuts while typing).
    # The click opens the panel in the browser at once; look again once its own rerun has run
    # (clone W, under extra load: the panel was shut again by then and stayed shut).
    for _ in range(3):
        wait_idle(page)
        if not start.is_visible():
            expander.get_by_text("New run").first.click()
            settle(page)
        if start.is_visible():
            break
    expect(start).to_be_visible(timeout=WAIT_MS // 3)
    set_number(page, "run_param_max_loops", max_loops)
    if threshold is not None:
        set_number(page, "run_param_threshold", threshold)
    start_run(page)
    return job_id(page)


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


def test_three_agents_run_analysis_compare_sweep_and_reload_mid_run(app_server, app_db_url,
                                                                      page):
    suffix = uuid.uuid4().hex[:6]
    names = [f"Opti-{suffix}", f"Pessi-{suffix}", f"Real-{suffix}"]
    page.goto(app_server)
    expect(status_line(page)).to_have_text(re.compile(r"^status: idle"), timeout=WAIT_MS)
    assert re.search(r"[?&]sid=[0-9a-f]{32}", page.url), page.url  # this browser's id

    # Agents: three in a row by the form, with no "New agent" click between them.
    open_page(page, "Agents")
    for name, model in zip(names, ("sim/eager", "sim/contrarian", "sim/balanced"), strict=True):
        create_agent(page, name, model, f"You are {name}.", latency_s=0.05)
    # in the order they were made, after any agents other tests saved in this app
    rows = [page.get_by_text(re.compile(rf"^\d+\. {re.escape(name)}$")) for name in names]
    for row in rows:
        expect(row).to_be_visible()
    numbers = [int(row.inner_text().split(".")[0]) for row in rows]
    assert numbers == list(range(numbers[0], numbers[0] + 3)), numbers
    assert [a for a in (x.agent_name for x in RunStore(app_db_url).list_agents())
            if a.endswith(suffix)] == names
    screenshot(page, "full-1-agents")

    # Run them twice (two short runs to compare), watching each one finish.
    open_page(page, "Run")
    pick_roster(page, names)
    task = f"{TASK} ({suffix})"
    fill_task(page, task)
    set_number(page, "run_param_threshold", 0.2)
    first = new_run(page, 6)
    expect(status_line(page)).to_have_text(re.compile(rf"^status: finished · job {first}"),
                                           timeout=WAIT_MS)
    second = new_run(page, 6)
    assert second != first
    expect(status_line(page)).to_have_text(re.compile(rf"^status: finished · job {second}"),
                                           timeout=WAIT_MS)
    expect(page.get_by_test_id("stChatMessage").first).to_contain_text(task)

    # Analysis of the run just watched: its metric cards and charts.
    page.get_by_test_id("stPageLink").filter(has_text="Open this run in Analysis").click()
    expect(page.get_by_role("heading", name="Analysis", exact=True)).to_be_visible(
        timeout=WAIT_MS)
    expect(page.get_by_test_id("stMetric").filter(has_text="Speaker entropy").first
           ).to_be_visible(timeout=WAIT_MS)
    wait_plots(page, 1)
    screenshot(page, "full-2-analysis")

    # Compare the two runs on Runs: the side-by-side metrics and the aligned speakers.
    open_page(page, "Runs")
    page.locator(".st-key-filter_text input").fill(suffix)
    page.locator(".st-key-apply_filters button").click()
    expect(page.get_by_text("2 run(s)", exact=True)).to_be_visible(timeout=WAIT_MS)
    compare_all_rows(page, "runs_table")
    expect(page.get_by_text("Speaker entropy").first).to_be_attached()  # a canvas grid cell
    screenshot(page, "full-3-compare")

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
    screenshot(page, "full-4-sweep")

    # Edit mode is explicit (the Edit button) and says a changed name renames: slow one
    # agent down so each turn of the next run lasts at least 5 s.
    open_page(page, "Agents")
    wait_idle(page)
    fresh(page, f".st-key-agent_edit_{names[0]} button:visible").first.click()
    expect(page.get_by_text(f"Edit {names[0]}", exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_text(re.compile(f"^Editing the saved agent {names[0]}\\. Rename:"))
           ).to_be_visible()
    form = page.get_by_test_id("stForm").filter(has=page.locator(".st-key-save_agent"))
    latency = form.locator(".st-key-agent_form_sim_latency input")
    if not latency.is_visible():
        form.get_by_test_id("stExpander").get_by_text("Advanced").click()
    set_number(page, "agent_form_sim_latency", 5)
    form.locator(".st-key-save_agent button").click()
    expect(page.get_by_test_id("stAlertContentSuccess").filter(
        has_text=f"Saved changes to {names[0]}.")).to_be_visible(timeout=WAIT_MS)
    assert [a.agent_name for a in RunStore(app_db_url).list_agents()
            if a.agent_name.endswith(suffix)] == names  # still three, same names, same order

    # A long run: switch pages and come back to it, then reload in the middle of it.
    open_page(page, "Run")
    expect(status_line(page)).to_contain_text(f"job {second}", timeout=WAIT_MS)
    # A run that cannot end by itself while the test looks: the sims fall silent only after
    # 29 turns or more (they tire; a threshold of -1 lulls nobody before that, and max_loops is
    # the most a run may have), at least 145 s at 5 s a turn, far longer than these few page
    # switches take; Stop ends it below.
    long = new_run(page, int(CHAT_BOUNDS["max_loops"].high), threshold=-1)
    expect(status_line(page)).to_have_text(re.compile(rf"^status: running · job {long}"),
                                           timeout=WAIT_MS)
    open_page(page, "Analysis")
    open_page(page, "Run")
    expect(status_line(page)).to_have_text(re.compile(rf"^status: running · job {long}"),
                                           timeout=WAIT_MS)
    page.reload()
    expect(status_line(page)).to_have_text(re.compile(rf"^status: running · job {long}"),
                                           timeout=WAIT_MS)
    # This browser's jobs count its sweep too: three runs and the finished sweep, each with
    # its link in the sidebar.
    expect(page.get_by_text(re.compile(r"^Jobs of this session: 1 running, 4 in all$"))
           ).to_be_visible(timeout=WAIT_MS)
    links = page.get_by_test_id("stSidebar").get_by_test_id("stPageLink")
    expect(links).to_have_count(4)
    expect(links.filter(has_text="sweep · finished")).to_have_count(1)
    screenshot(page, "full-5-reloaded-mid-run")
    page.locator(".st-key-stop_run button").click()
    expect(status_line(page)).to_have_text(re.compile(rf"^status: cancelled · job {long}"),
                                           timeout=WAIT_MS)
    # The sweep survived the reload too: its page shows it finished, not idle.
    open_page(page, "Sweeps")
    expect(sweep_line).to_have_text(re.compile(r"^sweep status: finished · 1 / 1 cells"),
                                    timeout=WAIT_MS)
