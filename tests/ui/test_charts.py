"""Figure builders of the Analysis charts: traces and shapes of a small run, empty inputs,
readable at sixteen agents and on a phone (issues 21, 41), and big runs cheap to draw."""

from __future__ import annotations

import itertools
import math
import random
import subprocess
import sys

import pandas as pd
import plotly.graph_objects as go
import pytest
from plotly.colors import hex_to_rgb, unlabel_rgb

from groupchat_core import RunRecord
from groupchat_core.analysis import charts, speaker_metrics, transition_matrix
from groupchat_ui.analysis import logic
from tests.helpers import ROOT
from tests.helpers.chats import scripted_chat
from tests.helpers.scripted_trio import trio_record

AGENTS = [f"Agent{i:02d}" for i in range(16)]


@pytest.fixture(scope="module")
def record() -> RunRecord:
    """Alice wins, Bob wins (Alice penalised), then a lull on turn 3."""
    return trio_record("Debate.")


def lines_at(fig: go.Figure, **coords: float) -> list:
    return [s for s in fig.layout.shapes if s.type == "line"
            and all(getattr(s, k) == v for k, v in coords.items())]


def annotation_texts(fig: go.Figure) -> list[str]:
    return [a.text for a in fig.layout.annotations]


def test_agent_colours_are_stable_by_list_order():
    two = charts.agent_colors(["A", "B"])
    three = charts.agent_colors(["A", "B", "C"])
    assert two["A"] == three["A"] and two["B"] == three["B"] and len(set(three.values())) == 3
    assert len(charts.agent_colors([str(i) for i in range(50)])) == 50  # the palette cycles


def test_bids_heatmap_stars_winners_and_rings_silent_bids_off_the_printed_values(
        record: RunRecord):
    """The star covered "0.9*"'s last digit, the ring a minus sign: marks sit off the text."""
    bids = record.bids_frame()
    bids.loc[(bids["turn"] == 1) & (bids["agent"] == "Cara"), "adjusted"] = -0.21
    fig = charts.bids_heatmap(bids, value="adjusted", threshold=0.5)
    heat, stars, silent = fig.data
    assert heat.type == "heatmap" and list(heat.y) == ["Alice", "Bob", "Cara"]
    assert list(heat.x) == [1, 2, 3]
    assert heat.z[0][1] == pytest.approx(0.6)  # Alice's penalised bid on turn 2
    assert heat.texttemplate == "%{z:.2f}"  # the value is shown in every cell, whole
    assert f"{heat.z[2][0]:.2f}" == "-0.21" and f"{heat.z[0][0]:.2f}" == "0.90"
    assert "threshold 0.5" in fig.layout.title.text
    assert "threshold 0.5" in heat.colorbar.ticktext
    assert heat.colorbar.tickvals[1] == 0.5  # the threshold is a tick on the one scale
    rows = {agent: i for i, agent in enumerate(heat.y)}
    for trace, side in ((stars, -1), (silent, 1)):
        assert trace.yaxis == "y2" and list(trace.x) == list(trace.customdata)  # no offset
        offsets = [y - rows[a] for y, a in zip(trace.y, trace.text, strict=True)]
        assert all(0.3 <= side * o < 0.5 for o in offsets), (trace.name, offsets)
        assert trace.showlegend is not False and "turn %{customdata}" in trace.hovertemplate
    assert list(zip(stars.customdata, stars.text, strict=True)) == [(1, "Alice"), (2, "Bob")]
    assert "winner" in stars.name and stars.marker.symbol == "triangle-down"
    assert "silent" in silent.name and silent.marker.symbol == "circle-open"
    # Cara's empty message on turn 1 and Alice's on turn 3 are silent; nothing else is
    assert sorted(zip(silent.customdata, silent.text, strict=True)) == [(1, "Cara"), (3, "Alice")]
    assert fig.layout.showlegend is True
    assert list(fig.layout.xaxis.range) == [0.5, 3.5]  # the marks do not widen the axis
    # the marks' numeric rows line up with the agent rows: one range for both axes
    assert list(fig.layout.yaxis2.range) == list(fig.layout.yaxis.range) == [2.5, -0.5]
    assert fig.layout.yaxis2.overlaying == "y" and fig.layout.yaxis2.visible is False
    with pytest.raises(ValueError, match="'score' or 'adjusted'"):
        charts.bids_heatmap(record.bids_frame(), value="latency_ms")


def test_at_a_200_turn_window_winner_marks_do_not_merge():
    """An 11 px star spanned ~3 turns of a 600 px plot: alternating wins read as one."""
    def alternating(turns: int) -> pd.DataFrame:
        bids, _ = run(agents=2, turns=turns)
        bids["winner"] = (bids["turn"] % 2 == 1) == (bids["agent"] == "Agent00")
        return bids

    winners = next(t for t in charts.bids_heatmap(alternating(200), "adjusted").data
                   if t.name == charts.WINNER_LABEL)
    assert len(winners.x) == 200 and list(winners.x) == list(range(1, 201))
    assert winners.marker.size * 200 <= charts.MARK_PIXELS
    assert winners.marker.size >= charts.MARK_SIZE_MIN
    small = next(t for t in charts.bids_heatmap(alternating(3), "adjusted").data
                 if t.name == charts.WINNER_LABEL)
    assert small.marker.size == charts.MARK_SIZE_MAX  # few turns: a mark big enough to see


def test_failed_bids_are_marked_apart_from_silent_ones_on_the_heatmap_and_the_floor():
    bids = pd.DataFrame([
        {"turn": 1, "agent": "A", "score": 0.9, "adjusted": 0.9, "winner": True,
         "message": "hi", "error": None, "path": "tool", "outcome": "read"},
        {"turn": 1, "agent": "B", "score": 0.0, "adjusted": 0.0, "winner": False,
         "message": "", "error": "Timeout: no answer", "path": "none", "outcome": "failed"},
    ])
    fig = charts.bids_heatmap(bids)
    names = [t.name for t in fig.data[1:]]
    assert names == [charts.WINNER_LABEL, charts.FAILED_LABEL]
    record = scripted_chat({"A": [(0.9, "a"), (0.1, "")], "B": [RuntimeError("down"), (0.1, "")]},
                           output_type="basemodel").run("t")
    fig = charts.bidding_floor([b for b in record.bids if b.turn == 1], 0.5, 0.3)
    assert list(fig.data[1].text) == ["", "failed"]


def test_bid_lines_draw_one_line_per_agent_the_threshold_and_the_lull(record: RunRecord):
    fig = charts.bid_lines(record.bids_frame(), record.turns_frame(), threshold=0.5)
    names = [t.name for t in fig.data]
    assert names == ["Alice", "Bob", "Cara", "winner"]
    colors = charts.agent_colors(["Alice", "Bob", "Cara"])
    assert [t.line.color for t in fig.data[:3]] == list(colors.values())
    assert len(lines_at(fig, y0=0.5, y1=0.5)) == 1  # horizontal threshold line
    assert len(lines_at(fig, x0=3, x1=3)) == 1  # vertical line at the lull
    assert "lull" in annotation_texts(fig) and "threshold 0.5" in annotation_texts(fig)


def test_winner_timeline_puts_each_turn_on_its_winner_and_marks_the_lull(record: RunRecord):
    fig = charts.winner_timeline(record.turns_frame(), agents=["Alice", "Bob", "Cara"])
    by_name = {t.name: t for t in fig.data}
    assert list(by_name["Alice"].x) == [1] and list(by_name["Bob"].x) == [2]
    assert list(by_name["Cara"].x) == []
    assert len(lines_at(fig, x0=3, x1=3)) == 1 and "lull" in annotation_texts(fig)


def test_transition_heatmap_shows_the_matrix(record: RunRecord):
    matrix = transition_matrix(record.turns_frame(), agents=["Alice", "Bob", "Cara"])
    fig = charts.transition_heatmap(matrix)
    (heat,) = fig.data
    assert list(heat.x) == list(heat.y) == ["Alice", "Bob", "Cara"]
    assert heat.z.tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("kind", ["metrics", "dict", "series"])
def test_turn_shares_accepts_metrics_dicts_and_series(record: RunRecord, kind: str):
    metrics = speaker_metrics(record.turns_frame(), record.bids_frame())
    given = {"metrics": metrics, "dict": metrics.shares,
             "series": pd.Series(metrics.shares)}[kind]
    fig = charts.turn_shares(given)
    bars, equal = fig.data
    assert list(bars.x) == ["Alice", "Bob", "Cara"] and list(bars.y) == [0.5, 0.5, 0.0]
    assert len(lines_at(fig, y0=pytest.approx(1 / 3))) == 1  # the equal-share reference
    assert equal.name == "equal share 33%"  # named in the legend, not over the bars


def test_bidding_floor_shows_raw_and_adjusted_with_penalties_and_threshold(record: RunRecord):
    turn_two = [b for b in record.bids if b.turn == 2]
    fig = charts.bidding_floor(turn_two, threshold=0.5, recency_penalty=0.3)
    raw, adjusted = fig.data
    assert (raw.name, adjusted.name) == ("raw score", "adjusted")
    assert list(raw.y) == [0.9, 0.7, 0.65]
    assert adjusted.y[0] == pytest.approx(0.6)
    assert list(adjusted.text) == ["−0.3 recency", "", ""]
    assert list(adjusted.marker.pattern.shape) == ["/", "", ""]
    assert list(adjusted.marker.line.width) == [0, 3, 0]  # Bob won
    assert len(lines_at(fig, y0=0.5, y1=0.5)) == 1
    assert "recency penalty 0.3" in fig.layout.title.text


def test_bidding_floor_mid_turn_shows_who_is_still_thinking(record: RunRecord):
    arrived = [record.bids[0]]  # only Alice's first bid so far
    fig = charts.bidding_floor(arrived, 0.5, 0.3, agents=["Alice", "Bob", "Cara"])
    assert list(fig.data[1].text) == ["", "waiting…", "waiting…"]
    silent = charts.bidding_floor(record.bids_frame().query("turn == 1"), 0.5, 0.3)
    assert list(silent.data[1].text) == ["", "", "silent"]


def test_empty_inputs_give_a_figure_with_a_note():
    empty = RunRecord(run_id="r", config={}, task="t")
    bids, turns = empty.bids_frame(), empty.turns_frame()
    figures = [
        charts.bids_heatmap(bids, threshold=0.5),
        charts.bid_lines(bids, turns, 0.5),
        charts.winner_timeline(turns),
        charts.transition_heatmap(transition_matrix(turns)),
        charts.turn_shares({}),
        charts.bidding_floor(bids, 0.5, 0.3),
        charts.bidding_floor([], 0.5, 0.3),
        charts.bidding_floor(None, 0.5, 0.3),
    ]
    for fig in figures:
        assert isinstance(fig, go.Figure) and not fig.data
        assert annotation_texts(fig)[0] in ("no bids yet", "no turns yet", "no messages yet")
        fig.to_json()  # a valid figure


def _lab(color: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of a '#rrggbb' or 'rgb(r, g, b)' colour."""
    rgb = hex_to_rgb(color) if color.startswith("#") else unlabel_rgb(color)
    lin = [((c / 255 + 0.055) / 1.055) ** 2.4 if c / 255 > 0.04045 else c / 255 / 12.92
           for c in rgb]
    r, g, b = lin
    xyz = ((r * 0.4124 + g * 0.3576 + b * 0.1805) / 0.95047, r * 0.2126 + g * 0.7152 + b * 0.0722,
           (r * 0.0193 + g * 0.1192 + b * 0.9505) / 1.08883)
    fx, fy, fz = (t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def run(agents: int = 16, turns: int = 149) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Random bids; the highest over 0.5 wins, else a lull."""
    rng = random.Random(41)
    rows, turn_rows = [], []
    for turn in range(1, turns + 1):
        scores = {a: round(rng.uniform(-0.1, 0.95), 3) for a in AGENTS[:agents]}
        best = max(scores, key=lambda a: scores[a])
        winner = best if scores[best] > 0.5 else None
        rows += [{"turn": turn, "agent": a, "score": s, "adjusted": s, "winner": a == winner,
                  "message": "x", "outcome": "read"} for a, s in scores.items()]
        turn_rows.append({"turn": turn, "winner": winner, "lull": winner is None})
    return pd.DataFrame(rows), pd.DataFrame(turn_rows)


def test_sixteen_agents_get_sixteen_clearly_different_colours():
    """Plotly + Dark24 had near twins (14.9 apart at 16 agents): two agents read as one."""
    assert len(charts.PALETTE) >= 24
    worst = min(math.dist(_lab(a), _lab(b))
                for a, b in itertools.combinations(charts.PALETTE[:24], 2))
    assert worst >= 20, worst
    assert len(set(charts.agent_colors(AGENTS).values())) == 16


def test_sixteen_agents_bid_lines_focus_on_the_top_and_keep_every_line():
    bids, turns = run()
    fig = charts.bid_lines(bids, turns, 0.5, "adjusted", AGENTS)
    lines = {t.name: t for t in fig.data if t.name in AGENTS}
    assert list(lines) == AGENTS and all(len(t.x) == 149 for t in lines.values())
    lit = charts.focus_agents(bids, AGENTS)
    wins = bids[bids["winner"]].groupby("agent").size()
    assert len(lit) == charts.FOCUS
    assert min(wins.get(a, 0) for a in lit) >= max(wins.get(a, 0) for a in AGENTS
                                                   if a not in lit)
    colors = charts.agent_colors(AGENTS)
    for agent, trace in lines.items():
        assert trace.line.color == (colors[agent] if agent in lit else charts.OTHERS_COLOR)
        assert trace.hovertemplate.startswith("%{fullData.name}")  # hover names each line
    # the legend: every coloured agent, one entry for the grey ones, the winners; nothing more
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert legend == [*lit, "10 other agents (grey)", "winner"]
    (label,) = [a for a in fig.layout.annotations if a.text == "threshold 0.5"]
    assert label.bgcolor is not None  # on its own ground, not struck through by the lines


def test_on_a_phone_legends_wrap_under_the_plot_and_the_heatmap_leaves_it_the_width():
    """A side legend hid Agent14, Agent15 and 'winner' behind a scroll, on a third of a phone;
    the colour bar beside the cells left ~40% of a phone's width to the plot."""
    bids, turns = run(agents=8, turns=20)
    agents = AGENTS[:8]
    for fig in (charts.bid_lines(bids, turns, 0.5, "adjusted", agents),
                charts.bids_heatmap(bids, "adjusted", 0.5, agents)):
        legend = fig.layout.legend
        assert legend.orientation == "h" and legend.y < 0 and legend.yanchor == "top"
        assert fig.layout.margin.l <= 10 and fig.layout.margin.r <= 10
    lines = charts.bid_lines(bids, turns, 0.5, "adjusted", agents)
    assert [t.name for t in lines.data if t.showlegend is not False] == [*agents, "winner"]
    heatmap = charts.bids_heatmap(bids, "adjusted", 0.5, agents)
    bar = heatmap.data[0].colorbar
    assert bar.orientation == "h" and bar.y >= 1 and bar.yanchor == "bottom"
    assert heatmap.layout.height >= charts.ROW_PX * 8  # rows tall enough for a value and marks


def test_the_heatmap_scale_does_not_invert_at_the_threshold():
    """A 0.29 near-miss was saturated blue and a winning 0.31 pale orange."""
    bids, _ = run(agents=3, turns=10)
    heat = charts.bids_heatmap(bids, "adjusted", 0.3, AGENTS[:3]).data[0]
    low, high = heat.zmin, heat.zmax

    stops = [(float(at), _lab(color)) for at, color in heat.colorscale]

    def lightness(score: float) -> float:
        """L* of the scale at `score`, linear between the scale's stops."""
        at = (score - low) / (high - low)
        for (a, la), (b, lb) in itertools.pairwise(stops):
            if a <= at <= b:
                return la[0] + (lb[0] - la[0]) * ((at - a) / (b - a) if b > a else 0.0)
        raise AssertionError(at)

    steps = [low + (high - low) * i / 50 for i in range(51)]
    shades = [lightness(s) for s in steps]
    assert all(a > b for a, b in itertools.pairwise(shades))  # strictly darker upwards
    assert lightness(0.31) < lightness(0.29)
    assert 0.3 in heat.colorbar.tickvals


@pytest.mark.parametrize("agents", [3, 16])
def test_turn_share_labels_stay_off_the_equal_share_line(agents: int):
    """The 'equal share' line struck the labels printed above the bars."""
    shares = {a: 1 / agents for a in AGENTS[:agents]}  # every bar top on the line
    fig = charts.turn_shares(shares)
    bars = fig.data[0]
    assert bars.texttemplate is None and bars.text is None  # nothing printed on the plot
    assert not fig.layout.annotations
    assert list(fig.layout.xaxis.ticktext) == [f"{a} {1 / agents:.0%}" for a in shares]


def test_turn_axes_start_at_the_first_turn_and_tick_whole_turns_in_round_steps():
    """The bid-lines axis started at turn -1; 149 turns ticked every 15th (1, 16, 31...)."""
    bids, turns = run(agents=3, turns=149)
    for fig in (charts.bid_lines(bids, turns, 0.5, "adjusted", AGENTS[:3]),
                charts.bids_heatmap(bids, "adjusted", 0.5, AGENTS[:3])):
        axis = fig.layout.xaxis
        assert list(axis.range) == [0.5, 149.5]
        assert axis.dtick == 20 and axis.tick0 == 0 and 149 / axis.dtick <= charts.MAX_TURN_TICKS
    bids, turns = run(agents=3, turns=4)
    for fig in (charts.bids_heatmap(bids), charts.bid_lines(bids, turns, 0.5),
                charts.winner_timeline(turns)):
        axis = fig.layout.xaxis
        assert axis.dtick == 1 and axis.tickformat == "d" and axis.tickmode == "linear"
    assert list(charts.bid_lines(bids, turns, 0.5).layout.xaxis.range) == [0.5, 4.5]


def big_run(agents: int, turns: int, rotate: int = 0,
            seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bids and turns of a big run, one bid per agent per turn: agent (t * rotate) % agents
    wins turn t (the first agent every turn at rotate 0; every agent at rotate 7)."""
    rng = random.Random(seed)
    winner = {t: f"A{(t * rotate) % agents:02d}" for t in range(1, turns + 1)}
    rows = [{"turn": t, "agent": f"A{a:02d}", "score": s, "adjusted": s,
             "winner": winner[t] == f"A{a:02d}", "message": "x", "outcome": "read"}
            for t in range(1, turns + 1) for a in range(agents)
            for s in [round(rng.uniform(0.3, 1.0), 3)]]
    turns_df = pd.DataFrame({"turn": list(winner), "winner": list(winner.values()),
                             "lull": [False] * turns})
    return pd.DataFrame(rows), turns_df


@pytest.mark.parametrize(("agents", "turns", "small"), [
    (16, 1000, False), (16, 9, False), (3, 200, False), (4, 30, False), (51, 8, False),
    (3, 3, True), (16, 8, True), (50, 8, True)])
def test_only_a_small_heatmap_prints_its_cell_values(agents: int, turns: int, small: bool):
    """Big runs drew 16,000 SVG labels; cells too narrow to read (4 x 100 printed ~7 px; 16 x 24
    on a phone 3 px: tests/e2e/test_chart_pictures.py)."""
    fig = charts.bids_heatmap(big_run(agents, turns)[0], "adjusted", 0.5)
    heat = fig.data[0]
    assert heat.type == "heatmap" and len(heat.y) == agents and len(heat.x) == turns
    assert (agents * turns <= charts.CELL_TEXT_MAX and turns <= charts.CELL_TEXT_TURNS) is small
    assert heat.texttemplate == ("%{z:.2f}" if small else None) and heat.text is None
    assert "%{z:.3f}" in heat.hovertemplate  # every value is still there on hover
    assert len(fig.layout.annotations) == 0  # nor one annotation per cell instead
    sent = fig.to_plotly_json()["data"][0]  # what st.plotly_chart sends
    assert ("texttemplate" in sent) is small


def test_big_bid_lines_are_lines_without_markers():
    bids, turns = big_run(16, 1000)
    fig = charts.bid_lines(bids, turns, 0.5)
    lines = [t for t in fig.data if t.name != "winner" and t.x != (None,)]
    assert len(lines) == 16 and all(t.mode == "lines" for t in lines)
    assert all(len(t.x) == 1000 for t in lines)  # every point is still drawn, as a line
    small = charts.bid_lines(*big_run(3, 10), 0.5)
    assert all(t.mode == "lines+markers" for t in small.data if t.name != "winner")


def served_option(*names: str) -> list[str]:
    """Options as `streamlit run` in the repo root sees them, and the path watcher it starts."""
    code = ("from streamlit import config; config.get_config_options(force_reparse=True);"
            "from streamlit.watcher import path_watcher;"
            f"print(*[repr(config.get_option(n)) for n in {list(names)!r}], "
            "path_watcher.get_default_path_watcher_class().__name__, sep='\\n')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.split("\n")[:len(names) + 1]


def test_the_served_app_watches_no_files():
    """Streamlit's watcher covered the whole repo, .venv/ and data/ included."""
    watcher_type, blacklist, watcher = served_option("server.fileWatcherType",
                                                     "server.folderWatchBlacklist")
    assert watcher_type == "'none'"
    assert watcher == "NoOpPathWatcher"
    # Turned back on for development, it still skips the big folders.
    for folder in (".venv", "data"):
        assert repr(folder) in blacklist


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
    """Issue 11 §3: cheaper to draw, nothing lost; SVG marks (WebGL without a GPU cost more)."""
    bids, turns = big_run(16, 1000, rotate=7, seed=5)
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
