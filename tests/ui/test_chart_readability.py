"""Issue 41: the Analysis charts stay readable at sixteen agents and on a phone. Picture checks
on the figure objects: distinct colours per agent, a complete legend under the plot, a score
scale that does not invert at the threshold, labels apart from reference lines, axis ranges."""

from __future__ import annotations

import itertools
import math
import random

import pandas as pd
import pytest
from plotly.colors import hex_to_rgb, unlabel_rgb

from groupchat_core.analysis import charts

AGENTS = [f"Agent{i:02d}" for i in range(16)]


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
                  "message": "x"} for a, s in scores.items()]
        turn_rows.append({"turn": turn, "winner": winner, "lull": winner is None})
    return pd.DataFrame(rows), pd.DataFrame(turn_rows)


def test_sixteen_agents_get_sixteen_clearly_different_colours():
    """Plotly + Dark24 had near twins (9.4 apart at 20 agents, 14.9 at 16): two agents read as
    one. The first 24 colours are now at least 20 apart (CIE76)."""
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


def test_the_legends_sit_under_the_plot_where_they_wrap_instead_of_scrolling():
    """A side legend showed Agent00-13 and hid Agent14, Agent15 and 'winner' behind a scroll,
    and took a third of a phone's width."""
    bids, turns = run(agents=8, turns=20)
    agents = AGENTS[:8]
    for fig in (charts.bid_lines(bids, turns, 0.5, "adjusted", agents),
                charts.bids_heatmap(bids, "adjusted", 0.5, agents)):
        legend = fig.layout.legend
        assert legend.orientation == "h" and legend.y < 0 and legend.yanchor == "top"
        assert fig.layout.margin.l <= 10 and fig.layout.margin.r <= 10
    lines = charts.bid_lines(bids, turns, 0.5, "adjusted", agents)
    assert [t.name for t in lines.data if t.showlegend is not False] == [*agents, "winner"]


def test_the_heatmap_scale_does_not_invert_at_the_threshold():
    """A 0.29 near-miss was saturated blue and a winning 0.31 pale orange: the scale is one
    sequential ramp now, darker for a higher score, the threshold a tick on it."""
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


def test_the_heatmap_leaves_a_phone_the_plot_width():
    """The colour bar sat beside the cells (with 'threshold 0.5'), leaving ~40% of a phone's
    width to the plot: it lies above the cells now, the whole width."""
    bids, _ = run(agents=4, turns=12)
    fig = charts.bids_heatmap(bids, "adjusted", 0.5, AGENTS[:4])
    bar = fig.data[0].colorbar
    assert bar.orientation == "h" and bar.y >= 1 and bar.yanchor == "bottom"
    assert fig.layout.height >= charts.ROW_PX * 4  # rows tall enough for a value and its marks


@pytest.mark.parametrize("agents", [3, 16])
def test_turn_share_labels_stay_off_the_equal_share_line(agents: int):
    """The 'equal share' line struck the labels printed above the bars: each share is printed
    under its bar with the name, and the line's name is in the legend."""
    shares = {a: 1 / agents for a in AGENTS[:agents]}  # every bar top on the line
    fig = charts.turn_shares(shares)
    bars = fig.data[0]
    assert bars.texttemplate is None and bars.text is None  # nothing printed on the plot
    assert not fig.layout.annotations
    assert list(fig.layout.xaxis.ticktext) == [f"{a}<br>{1 / agents:.0%}" for a in shares]


def test_turn_axes_start_at_the_first_turn_and_tick_in_round_steps():
    """The bid-lines axis started at turn -1; 149 turns ticked every 15th (1, 16, 31...)."""
    bids, turns = run(agents=3, turns=149)
    for fig in (charts.bid_lines(bids, turns, 0.5, "adjusted", AGENTS[:3]),
                charts.bids_heatmap(bids, "adjusted", 0.5, AGENTS[:3])):
        axis = fig.layout.xaxis
        assert list(axis.range) == [0.5, 149.5]
        assert axis.dtick == 20 and axis.tick0 == 0 and 149 / axis.dtick <= charts.MAX_TURN_TICKS
    few = charts.bid_lines(*run(agents=3, turns=4), 0.5, "adjusted", AGENTS[:3])
    assert list(few.layout.xaxis.range) == [0.5, 4.5] and few.layout.xaxis.dtick == 1
