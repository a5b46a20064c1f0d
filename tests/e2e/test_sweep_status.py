"""A small sim sweep in a real browser: one live status, moving per turn, read the same in the
caption, the progress bar, the Results header and the sidebar (issue 11).

Before, the caption sat at "0 / 12 cells" until the sweep ended, the bar said "2 of 24 cells
done" while Results said "0 / 24 cells finished" and the sidebar "0 running". Each place now
redraws on its own timer (every 0.5 s), so the test waits for a moment when all four agree
while a cell is still running, and for all four to read "finished" at the end. A turn lasts a
second here, so between two turns the status stands still for longer than any place takes to
redraw: the four places get a stable moment to agree on every turn, even on a busy machine.
"""

from __future__ import annotations

import re
import uuid

from groupchat_core.store import RunStore
from groupchat_ui.kit.presets import DEBATE_TRIO

from .conftest import WAIT_MS, choose, expect, fresh, screenshot, wait_idle

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
# More turns in the running cell, or a cell finished, since `first` turns were counted.
MOVED_ON = "(first) => { const s = (" + FOUR_PLACES + """)();
  const m = s.caption && s.caption.match(
    /(\\d+) \\/ 4 cells finished(?: · 1 running \\((\\d+))?/);
  return m && (Number(m[1]) > 0 || Number(m[2]) > first) ? s.caption : null; }"""
# While the sweep runs, the four places read the same: the caption, Results and the sidebar the
# same line, the bar its counts (the line after "sweep status: running · ").
AGREE_RUNNING = "() => { const s = (" + FOUR_PLACES + """)();
  const m = s.caption && s.caption.match(
    /^sweep status: running · (\\d+ \\/ 4 cells finished · 1 running \\((\\d+) turns? so far\\))$/);
  return m !== null && Number(m[2]) > 0 && s.results === s.caption && s.sidebar === s.caption
    && s.bar === m[1] ? s : null; }"""
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


def test_a_sim_sweeps_status_moves_per_turn_and_reads_the_same_everywhere(
        app_server, app_db_url, page):
    suffix = uuid.uuid4().hex[:6]
    # A turn lasts a second: the status stands still between turns for longer than each place
    # takes to redraw (0.5 s), so the four places have a stable moment to agree while it runs.
    agents = DEBATE_TRIO.build_agents(latency_s=1.0)
    for agent in agents:
        agent.agent_name = f"0-{suffix}-{agent.agent_name}"
    store = RunStore(app_db_url)
    store.save_agents(agents)
    # A new agent goes to the end of the stored order (schema v5), after the agents other tests
    # saved in this app: put these three first, where the Saved agents picker starts.
    store.set_agent_order([a.agent_name for a in agents])
    page.goto(f"{app_server}/sweeps")
    expect(page.get_by_role("heading", name="Sweeps", exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(fresh(page, '[data-testid="stCaptionContainer"]').filter(
        has_text="sweep status: idle")).to_be_visible(timeout=WAIT_MS)
    choose(page, page.locator(".st-key-sw_room"),
           page.get_by_role("option", name="Saved agents", exact=True))
    picker = page.locator(".st-key-sw_saved")
    for agent in agents:  # saved by another writer, yet shown at once (no cache to outwait)
        expect(picker.get_by_text(agent.agent_name)).to_be_visible(timeout=WAIT_MS)

    fill(page, "sw_threshold", "0.01, 0.02")  # low: nobody lulls, every cell runs all turns
    fill(page, "sw_recency_penalty", "0")
    fill(page, "sw_max_loops", "6")  # 5 turns of a second per cell
    fill(page, "sw_repeats", "2")
    fill(page, "sw_concurrency", "1")
    estimate = fresh(page, '[data-testid="stMarkdownContainer"]').filter(has_text="4 cells")
    expect(estimate).to_contain_text("estimated wall time up to", timeout=WAIT_MS)
    expect(estimate).to_contain_text("· 0 tokens ·")  # sims send no prompt
    start_sweep(page)

    # A turn is counted before any cell finished.
    seen = page.wait_for_function(RUNNING_WITH_TURNS, timeout=WAIT_MS).json_value()
    first = int(re.search(r"\((\d+) turns? so far\)", seen).group(1))
    expect(page.get_by_test_id("stSidebar").get_by_text(
        re.compile(r"^Jobs of this session: [1-9]\d* running"))).to_be_visible(timeout=WAIT_MS)
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

    # While it runs, at a moment the status stands still, all four places read the same.
    agreed = page.wait_for_function(AGREE_RUNNING, timeout=WAIT_MS).json_value()
    assert agreed["caption"].startswith("sweep status: running · ")
    assert agreed["results"] == agreed["sidebar"] == agreed["caption"]

    done = page.wait_for_function(
        "() => { const s = (" + FOUR_PLACES + ")(); return s.caption === '" + FINISHED +
        "' && s.results === s.caption && s.sidebar === s.caption ? s : null; }",
        timeout=WAIT_MS).json_value()
    assert done["bar"] == "4 / 4 cells finished"
    table = fresh(page, '[data-testid="stDataFrame"]').first
    expect(table).to_be_visible()
    screenshot(page, "sweep-status-finished")
