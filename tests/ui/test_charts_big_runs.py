"""Big runs stay cheap to draw: past a size, the heatmap has no per-cell text and the bid lines
no per-point markers (a 1,000-turn x 16-agent run drew 16,000 SVG labels and 16,000 markers,
keeping the browser busy for seconds); small runs keep both. Also: the served app watches no
files (Streamlit's watcher covered the whole repo, .venv/ and data/ included)."""

from __future__ import annotations

import random
import subprocess
import sys

import pandas as pd
import pytest

from groupchat_core.analysis import charts
from groupchat_ui.analysis import logic
from tests.helpers import ROOT


def bids_frame(agents: int, turns: int) -> pd.DataFrame:
    """One bid per agent per turn, the first agent winning every turn."""
    rng = random.Random(3)
    rows = [{"turn": t, "agent": f"A{a:02d}", "score": s, "adjusted": s, "winner": a == 0,
             "message": "x"}
            for t in range(1, turns + 1) for a in range(agents)
            for s in [round(rng.uniform(0.3, 1.0), 3)]]
    return pd.DataFrame(rows)


def turns_frame(turns: int) -> pd.DataFrame:
    return pd.DataFrame({"turn": range(1, turns + 1), "winner": ["A00"] * turns,
                         "lull": [False] * turns})


@pytest.mark.parametrize(("agents", "turns"), [(16, 1000), (16, 26), (3, 200), (4, 100)])
def test_a_big_heatmap_has_no_cell_text(agents: int, turns: int):
    """Too many cells to draw cheaply, or cells too narrow to read (4 x 100 printed ~7 px)."""
    fig = charts.bids_heatmap(bids_frame(agents, turns), "adjusted", 0.5)
    heat = fig.data[0]
    assert heat.type == "heatmap" and len(heat.y) == agents and len(heat.x) == turns
    assert agents * turns > charts.CELL_TEXT_MAX or turns > charts.CELL_TEXT_TURNS
    assert heat.texttemplate is None and heat.text is None
    assert "%{z:.3f}" in heat.hovertemplate  # every value is still there on hover
    assert len(fig.layout.annotations) == 0  # nor one annotation per cell instead
    assert "texttemplate" not in fig.to_plotly_json()["data"][0]  # what st.plotly_chart sends


@pytest.mark.parametrize(("agents", "turns"), [(3, 3), (16, 25), (4, 30)])
def test_a_small_heatmap_keeps_its_cell_text(agents: int, turns: int):
    assert agents * turns <= charts.CELL_TEXT_MAX and turns <= charts.CELL_TEXT_TURNS
    heat = charts.bids_heatmap(bids_frame(agents, turns), "score", 0.5).data[0]
    assert heat.texttemplate == "%{z:.2f}"


def test_big_bid_lines_are_lines_without_markers():
    fig = charts.bid_lines(bids_frame(16, 1000), turns_frame(1000), 0.5)
    lines = [t for t in fig.data if t.name != "winner" and t.x != (None,)]
    assert len(lines) == 16 and all(t.mode == "lines" for t in lines)
    assert all(len(t.x) == 1000 for t in lines)  # every point is still drawn, as a line
    small = charts.bid_lines(bids_frame(3, 10), turns_frame(10), 0.5)
    assert all(t.mode == "lines+markers" for t in small.data if t.name != "winner")


def served_option(*names: str) -> list[str]:
    """Options as `streamlit run` in the repo root sees them (its .streamlit/config.toml), and
    which path watcher Streamlit would start for a session's sources."""
    code = ("from streamlit import config; config.get_config_options(force_reparse=True);"
            "from streamlit.watcher import path_watcher;"
            f"print(*[repr(config.get_option(n)) for n in {list(names)!r}], "
            "path_watcher.get_default_path_watcher_class().__name__, sep='\\n')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.split("\n")[:len(names) + 1]


def test_the_served_app_watches_no_files():
    watcher_type, blacklist, watcher = served_option("server.fileWatcherType",
                                                     "server.folderWatchBlacklist")
    assert watcher_type == "'none'"
    assert watcher == "NoOpPathWatcher"
    # Turned back on for development, it still skips the big folders.
    for folder in (".venv", "data"):
        assert repr(folder) in blacklist


def rotating_winners(agents: int, turns: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bids and turns of a big run where agent (t * 7) % agents wins turn t: every agent wins."""
    rng = random.Random(5)
    winner = {t: f"A{(t * 7) % agents:02d}" for t in range(1, turns + 1)}
    rows = [{"turn": t, "agent": f"A{a:02d}", "score": s, "adjusted": s,
             "winner": winner[t] == f"A{a:02d}", "message": "x"}
            for t in range(1, turns + 1) for a in range(agents)
            for s in [round(rng.uniform(0.3, 1.0), 3)]]
    turns_df = pd.DataFrame({"turn": list(winner), "winner": list(winner.values()),
                             "lull": [False] * turns})
    return pd.DataFrame(rows), turns_df


@pytest.mark.parametrize(("turns", "expected"), [
    (1000, [(1, 200), (201, 400), (401, 600), (601, 800), (801, 1000)]),
    (450, [(1, 200), (201, 400), (401, 450)]),
    (200, [(1, 200)]),
    (3, [(1, 3)]),
    (0, []),
])
def test_the_per_turn_charts_page_by_windows_that_cover_every_turn(turns: int, expected):
    assert logic.turn_windows(list(range(turns, 0, -1))) == expected  # any order in, oldest first
    covered = [t for first, last in expected for t in range(first, last + 1)]
    assert covered == list(range(1, turns + 1))  # every turn once: nothing lost, nothing twice


def test_each_window_of_a_big_run_shows_every_agent_and_that_windows_winners():
    """Issue 11 §3: cheaper to draw, nothing lost. The Bids tab draws one window of turns at a
    time (the latest first); each window's heatmap, bid lines and speaker timeline show all 16
    agents and every winner of its turns, and the windows together reach every turn and every
    winner. Marks are SVG (WebGL is drawn in software on a machine without a GPU and cost more
    than the SVG stars it replaced)."""
    bids, turns = rotating_winners(16, 1000)
    agents = [f"A{a:02d}" for a in range(16)]
    colors = charts.agent_colors(agents)
    reached: list[tuple[int, str]] = []
    for window in logic.turn_windows(list(turns["turn"])):
        part, part_turns = logic.in_window(bids, window), logic.in_window(turns, window)
        span = list(range(window[0], window[1] + 1))
        winners = sorted(zip(part_turns["turn"], part_turns["winner"], strict=True))
        assert [t for t, _ in winners] == span

        heatmap = charts.bids_heatmap(part, "adjusted", 0.5, agents)
        heat, stars = heatmap.data[0], heatmap.data[1]
        assert list(heat.y) == agents and list(heat.x) == span
        assert sorted(zip(stars.customdata, stars.text, strict=True)) == winners

        lines = charts.bid_lines(part, part_turns, 0.5, "adjusted", agents)
        by_name = {t.name: t for t in lines.data}
        assert [t.name for t in lines.data[:16]] == agents
        assert all(list(by_name[a].x) == span for a in agents)
        assert sorted(by_name["winner"].x) == span
        lit = set(charts.focus_agents(part, agents))  # the rest: grey lines with grey stars
        assert len(lit) == charts.FOCUS
        assert list(by_name["winner"].marker.color) == [
            colors[a] if a in lit else charts.OTHERS_COLOR for a in part[part["winner"]]["agent"]]
        assert stars.type == "scatter" and stars.name == charts.WINNER_LABEL

        timeline = charts.winner_timeline(part_turns, agents)
        assert all(t.type == "scatter" for fig in (heatmap, lines, timeline) for t in fig.data
                   if t.type != "heatmap")
        assert sorted((x, t.name) for t in timeline.data if t.name in agents
                      for x in t.x) == winners
        reached += winners
    assert reached == sorted(zip(turns["turn"], turns["winner"], strict=True))
    assert {a for _, a in reached} == set(agents)
