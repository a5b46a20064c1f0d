"""A sweep in a real browser, in one journey from the form to its results and export: a small
sim sweep over a task set with answers, its one live status moving per turn and read the same in
the caption, the progress bar, the Results header and the sidebar (issue 11), then its Outcomes
tab drawn (accuracy with its count of right answers, equality against outcome) and its accuracy
CSV downloaded. What needs no browser is in AppTest (tests/ui/test_app_sweeps.py: the estimate,
the sidebar's job count, the four places after a rerun; tests/ui/test_outcome_pages.py and
tests/ui/test_sweep_charts.py: accuracy per strategy, its table and tick labels). A sweep on Ray
(its workers, live and after a reload) and the exploring views' figures are AppTests
(tests/ui/test_app_sweeps_ray.py, tests/ui/test_app_sweeps.py); how they fit a phone is the
phone journey's.

Before, the caption sat at "0 / 12 cells" until the sweep ended, the bar said "2 of 24 cells
done" while Results said "0 / 24 cells finished" and the sidebar "0 running" (and, later, a fast
sweep showed 9/12 in the sidebar beside 1/12 in Results: issue 21). Each place now shows the one
line `sweep_status` builds from the store; the live caption and bar hold the page's one timer
(issue 40.5: several timers crash Streamlit 1.67's renderer), Results and the sidebar are drawn
as of the last full page run.

So the test samples the four places in the page every 0.1 s while the sweep runs and checks
what that design promises, whatever the machine's load: every place moves forward only, shows
the running line in the caption's very format, none is ahead of the live caption (a sidebar
drawn at 0 / 4 may rightly stay there while two cells finish: that failed an earlier form of
this test on a loaded machine), and all four read the same once the status stands still
(finished). It no longer waits for a moment when three timers happen to
redraw within one turn: on a loaded machine such a moment may never come (issue 25).

The four cells are four repeats (seeds) of one threshold and one task. Cells that differ only
in threshold send the sims the same bid requests, which the bid cache answers at once: such a
cell ended within a redraw of the one before it, so two places were rightly two cells apart for
a moment, which failed this test now and then (seen in the app's log: the last two cells ended
within 0.4 s). The test checks that the cache answered nothing.
"""

from __future__ import annotations

import csv
import re

from groupchat_core.store import RunStore
from groupchat_core.sweeps import accuracy_table, sweep_results
from groupchat_ui.kit.presets import DEBATE_TRIO
from groupchat_ui.sweeps import task_sets

from .conftest import PLOTS_DRAWN, WAIT_MS, choose, expect, fresh, screenshot, wait_idle

# The four places, as the user sees them: {caption, bar, results, sidebar}, each the status
# part of its line ("sweep status: running · 0 / 4 cells finished · 1 running (3 turns so far)",
# the bar without the "sweep status: <state>" head), or null where it is not drawn.
FOUR_PLACES = """() => {
  const live = e => !e.closest('[data-stale="true"]');
  const side = document.querySelector('[data-testid="stSidebar"]');
  const inSide = e => side !== null && side.contains(e);
  const caps = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .filter(live);
  const line = t => {
    const i = t.indexOf('sweep status: ');
    if (i < 0) return null;
    const parts = t.slice(i).split(' · ');
    return [parts[0], ...parts.slice(1, 3).filter(
      p => p.includes('cells finished') || p.includes('running ('))].join(' · ');
  };
  const main = caps.filter(e => !inSide(e)).map(e => e.innerText.trim());
  const pick = (list, test) => { const t = list.find(test); return t ? line(t) : null; };
  const bars = [...document.querySelectorAll('[data-testid="stProgress"]')].filter(live);
  return {
    caption: pick(main, t => t.startsWith('sweep status: ')),
    results: pick(main, t => !t.startsWith('sweep status: ') && t.includes('sweep status: ')),
    sidebar: pick(caps.filter(inSide).map(e => e.innerText.trim()),
                  t => t.startsWith('sweep status: ')),
    bar: bars.length ? bars[0].innerText.trim() : null,
  };
}"""
# While a cell runs, the page's caption counts its turns before any cell finished.
RUNNING_WITH_TURNS = "() => { const s = (" + FOUR_PLACES + """)();
  const m = s.caption && s.caption.match(
    /^sweep status: running · (\\d+) \\/ 4 cells finished · 1 running \\((\\d+) turns? so far\\)$/);
  return m !== null && Number(m[2]) > 0 ? s.caption : null; }"""
# More cells finished, or more turns in the running cell, than `[cells, turns]` counted first
# (the first reading may already count a finished cell).
MOVED_ON = "([cells, turns]) => { const s = (" + FOUR_PLACES + """)();
  const m = s.caption && s.caption.match(
    /(\\d+) \\/ 4 cells finished(?: · 1 running \\((\\d+))?/);
  return m && (Number(m[1]) > cells || (Number(m[1]) === cells && Number(m[2]) > turns))
    ? s.caption : null; }"""
# Samples the four places every 0.1 s into window.__places (the page's own clock, so a busy
# test process cannot thin the samples out).
SAMPLE = "() => { window.__places = []; window.__sampler = setInterval(() => " \
    "window.__places.push((" + FOUR_PLACES + ")()), 100); }"
STOP_SAMPLING = "() => { clearInterval(window.__sampler); return window.__places; }"
RUNNING_LINE = re.compile(
    r"^sweep status: running · (\d+) / 4 cells finished(?: · 1 running \((\d+) turns? so far\))?$")


def progress(line: str) -> tuple[int, int]:
    """(cells finished, turns so far in the running cell) of a running line."""
    match = RUNNING_LINE.match(line)
    assert match, f"not the caption's running line: {line!r}"
    return int(match.group(1)), int(match.group(2) or 0)


def check_samples(samples: list[dict]) -> dict[str, int]:
    """What the sampled places showed while the sweep ran: each place's running lines move
    forward only; the live caption holds the page's one timer, so Results and the sidebar,
    drawn as of the last full page run, may lag it but never run ahead of it. Returns how
    many running samples each place had."""
    last: dict[str, tuple[int, int]] = {}
    seen = dict.fromkeys(("caption", "results", "sidebar"), 0)
    for i, sample in enumerate(samples):
        now = {place: progress(sample[place]) for place in seen
               if sample[place] and sample[place].startswith("sweep status: running")}
        for place, step in now.items():
            seen[place] += 1
            assert step >= last.get(place, (0, 0)), f"{place} went back: {around(samples, i)}"
            last[place] = step
        if "caption" in now:
            ahead = [p for p in ("results", "sidebar") if p in now and now[p] > now["caption"]]
            assert not ahead, f"{ahead} ahead of the live caption: {around(samples, i)}"
    return seen


def around(samples: list[dict], i: int) -> str:
    """Sample `i` and, for the record, when each place last changed before it (stale
    Streamlit fragments froze the caption and Results while the sidebar ran on, once)."""
    changed = {place: next((j for j in range(i, 0, -1)
                            if samples[j - 1][place] != samples[j][place]), 0)
               for place in ("caption", "results", "sidebar", "bar")}
    ages = ", ".join(f"{place} {(i - j) / 10:.1f} s" for place, j in changed.items())
    return f"sample {i} of {len(samples)} (one per 0.1 s): {samples[i]}; unchanged for: {ages}"


FINISHED = "sweep status: finished · 4 / 4 cells finished"


def fill(page, key: str, value: str) -> None:
    field = page.locator(f".st-key-{key} input")
    wait_idle(page)
    field.fill(value)
    field.press("Tab")
    expect(field).to_have_value(value, timeout=WAIT_MS)


def start_sweep(page, attempts: int = 3) -> None:
    """Click Start sweep; a rerun landing at that moment can swallow the click, so click again
    only while the page's own status caption still says no sweep was started."""
    line = fresh(page, '[data-testid="stCaptionContainer"]:not([data-testid="stSidebar"] *)'
                 ).filter(has_text=re.compile(r"^sweep status: ")).first
    for attempt in range(attempts):
        wait_idle(page)
        page.locator(".st-key-sw_start button").click()
        try:
            expect(line).to_have_text(re.compile(r"^sweep status: (?!idle)"), timeout=10_000)
            return
        except AssertionError:
            if attempt == attempts - 1:
                raise


def pick_radio(page, key: str, label: str, attempts: int = 3) -> None:
    """Click a radio option; a rerun landing at that moment can swallow the click, so click
    again while the option is not checked."""
    option = page.locator(f".st-key-{key}").get_by_role("radio", name=label, exact=True)
    for attempt in range(attempts):
        wait_idle(page)
        page.locator(f".st-key-{key}").get_by_text(label, exact=True).click()
        try:
            expect(option).to_be_checked(timeout=10_000)
            return
        except AssertionError:
            if attempt == attempts - 1:
                raise


def test_a_sweep_from_the_form_through_its_live_status_to_its_outcomes_and_export(
        app_server, app_db_url, page):
    # A turn lasts a second (the three sims answer after 0.5, 0.75 and 1 s; at latency_s=1.0 it
    # was 2 s): the status stands still between turns for longer than each place takes to
    # redraw (0.5 s), so the four places have a stable moment to agree while it runs.
    agents = DEBATE_TRIO.build_agents(latency_s=0.5)
    store = RunStore(app_db_url)
    store.save_agents(agents)
    page.goto(f"{app_server}/sweeps")
    expect(page.get_by_role("heading", name="Sweeps", exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(fresh(page, '[data-testid="stCaptionContainer"]').filter(
        has_text="sweep status: idle")).to_be_visible(timeout=WAIT_MS)
    choose(page, page.locator(".st-key-sw_room"),
           page.get_by_role("option", name="Saved agents", exact=True))
    picker = page.locator(".st-key-sw_saved")
    for agent in agents:  # saved by another writer, yet shown at once (no cache to outwait)
        expect(picker.get_by_text(agent.agent_name)).to_be_visible(timeout=WAIT_MS)

    pick_radio(page, "sw_task_source", task_sets.SOURCES[task_sets.DU_MATH])  # with answers
    fill(page, "sw_task_limit", "1")
    fill(page, "sw_threshold", "0.01")  # low: nobody lulls, every cell runs all turns
    fill(page, "sw_recency_penalty", "0")
    fill(page, "sw_max_loops", "3")  # 2 turns of a second per cell: a turn counted, then more
    fill(page, "sw_repeats", "4")  # 4 seeds: no cell can be answered from another's bids
    fill(page, "sw_concurrency", "1")
    estimate = fresh(page, '[data-testid="stMarkdownContainer"]').filter(has_text="4 cells")
    expect(estimate).to_contain_text("estimated wall time up to", timeout=WAIT_MS)
    page.evaluate(SAMPLE)
    start_sweep(page)

    # A turn of the running cell is counted (a cell may have finished already).
    seen = page.wait_for_function(RUNNING_WITH_TURNS, timeout=WAIT_MS).json_value()
    counted = RUNNING_LINE.match(seen)
    assert counted is not None, seen
    first = [int(counted.group(1)), int(counted.group(2))]  # cells finished, turns so far
    screenshot(page, "sweep-status-running")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: the status still reads
    caption = fresh(page, '[data-testid="stCaptionContainer"]:not([data-testid="stSidebar"] *)'
                    ).filter(has_text=re.compile(r"^sweep status: ")).first
    caption.scroll_into_view_if_needed()
    expect(caption).to_be_in_viewport()
    screenshot(page, "sweep-status-running-phone")
    page.set_viewport_size({"width": 1280, "height": 1000})
    later = page.wait_for_function(MOVED_ON, arg=first, timeout=WAIT_MS).json_value()
    assert later != seen  # it moved on while the sweep ran, not only at the end

    try:
        done = page.wait_for_function(
            "() => { const s = (" + FOUR_PLACES + ")(); return s.caption === '" + FINISHED +
            "' && s.results === s.caption && s.sidebar === s.caption ? s : null; }",
            timeout=WAIT_MS).json_value()
    except Exception as exc:  # playwright's TimeoutError: say what each place shows
        raise AssertionError(f"the places never all read finished: "
                             f"{page.evaluate(FOUR_PLACES)}") from exc
    assert done["bar"] == "4 / 4 cells finished"
    seen = check_samples(page.evaluate(STOP_SAMPLING))
    # The live panel's caption holds the page's one timer (issue 40.5: several timed fragments
    # crash Streamlit 1.67's renderer), so it alone moves while the sweep runs; Results defers
    # to it and the sidebar reads as of the last full run, and all read the same at the end.
    assert seen["caption"], f"the live caption never showed the sweep running: {seen}"
    # Every cell ran its own turns: the cache answered nothing (else a cell can end at once).
    totals = fresh(page, '[data-testid="stCaptionContainer"]').filter(has_text=" runs · ").first
    expect(totals).to_contain_text("model calls")
    assert "the cache answered" not in totals.inner_text()
    screenshot(page, "sweep-status-finished")

    # Its Outcomes tab (issue 20): accuracy with its interval and its count of right answers
    # by its point, and the equality against outcome chart, drawn.
    sweep_id = re.search(r"[?&]sweep=([0-9a-f]+)", page.url).group(1)
    [expected] = accuracy_table(sweep_results(store, sweep_id), by=[]).itertuples()
    tab = page.get_by_role("tab", name="Outcomes")
    expect(tab).to_be_visible(timeout=WAIT_MS)
    page.wait_for_function(PLOTS_DRAWN, arg=1, timeout=WAIT_MS)  # the first tab's heatmap
    wait_idle(page)
    tab.click()
    chart = page.locator(".st-key-sw_acc_chart")
    expect(chart).to_contain_text("accuracy with its 95% Wilson interval", timeout=WAIT_MS)
    expect(chart).to_contain_text(f"{expected.correct} of 4 right")
    expect(page.locator(".st-key-sw_eq_chart")).to_contain_text("outcome (1: right)",
                                                               timeout=WAIT_MS)
    page.wait_for_function(PLOTS_DRAWN, arg=2, timeout=WAIT_MS)
    screenshot(page, "sweep-outcomes")

    # Its export: the accuracy CSV downloads, its commented header first, then the numbers.
    with page.expect_download(timeout=WAIT_MS) as download:
        fresh(page, ".st-key-sw_acc_csv button").click()
    assert download.value.suggested_filename == f"sweep-{sweep_id[:8]}-accuracy.csv"
    with open(download.value.path(), encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert lines[0].startswith("# ")
    [row] = csv.DictReader(line for line in lines if not line.startswith("#"))
    assert (int(row["correct"]), int(row["n"])) == (expected.correct, 4)
