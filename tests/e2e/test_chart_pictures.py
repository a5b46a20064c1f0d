"""The Analysis charts of a 16-agent run as Chromium draws them, on a desktop and a phone
(issue 41): every legend entry the figure asks for is drawn inside the picture, no two labels of
a kind overlap (nor a legend entry a tick label), heatmap values are readable where printed,
and a phone leaves the plot most of the width.

No app server: each figure is drawn by plotly.js (inlined from the installed plotly package)
in a static page loaded with `set_content`, which must request nothing. The figure-level facts
(traces, colours, ranges) are tests/ui/test_charts.py's; only the drawn picture is checked here.

What it found (fixed in groupchat_core/analysis/charts.py): on a 390 px phone the bids
heatmap's values drew at 3 px, Plotly's 80 px side margins and a side colour bar left the
speaker charts 54-55% of the width, and 16 two-line turn-share labels overlapped (29 pairs;
15 at half a desktop).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from groupchat_core import SIM_MODELS, Agent, GroupChat, RunRecord
from groupchat_core.analysis import agent_order, charts

AGENTS, TURNS = 16, 24
# 1280: a desktop; 390: a phone (iPhone 12-15). The figure gets the page's width less
# Streamlit's 1 rem padding a side; at 1280 the two speaker summaries share a row (st.columns).
WIDTHS = (1280, 390)
HALF = {"transitions", "turn_shares"}
MIN_CELL_PX = 9  # a printed value smaller than this is not read, only squinted at
# The plot keeps at least 70% of a phone's chart width: the old side colour bar left the cells
# 40%, Plotly's default 80 px margins ~55%; the agents' names beside the rows take the rest.
PHONE_PLOT_SHARE = 0.7
# Draws `fig` in a `width` px div and returns its texts by kind, each with its font size, its
# box and its four corners (relative to the picture; a slanted tick label's box is no outline:
# neighbours' boxes overlap where the letters do not), the picture's and the plot area's size,
# and any legend scroll bar's height.
DRAW = """async ([fig, width]) => {
  const div = document.getElementById('chart');
  div.style.width = width + 'px';
  Plotly.purge(div);
  await Plotly.newPlot(div, fig.data, fig.layout, {displayModeBar: false});
  const svg = div.querySelector('svg.main-svg').getBoundingClientRect();
  const boxes = (sel) => [...div.querySelectorAll(sel)].map(e => {
    const r = e.getBoundingClientRect(), b = e.getBBox(), m = e.getScreenCTM();
    const at = (x, y) => { const p = new DOMPoint(x, y).matrixTransform(m);
                           return [p.x - svg.left, p.y - svg.top]; };
    return {text: e.textContent, size: parseFloat(getComputedStyle(e).fontSize),
            x0: r.left - svg.left, y0: r.top - svg.top, x1: r.right - svg.left,
            y1: r.bottom - svg.top, corners: [at(b.x, b.y), at(b.x + b.width, b.y),
            at(b.x + b.width, b.y + b.height), at(b.x, b.y + b.height)]}; });
  return {width: svg.width, height: svg.height,
    plot: div.querySelector('.cartesianlayer .bg, .nsewdrag').getBoundingClientRect().width,
    scroll: [...div.querySelectorAll('g.legend .scrollbar')].map(e => e.getBBox().height),
    legend: boxes('g.legend g.traces text.legendtext'), xticks: boxes('g.xtick text'),
    yticks: boxes('g.ytick text'), cells: boxes('g.heatmaplayer text'),
    annotations: boxes('g.annotation text'), bars: boxes('.bartext')}; }"""
KINDS = ("legend", "xticks", "yticks", "cells", "annotations", "bars")


@pytest.fixture(scope="module")
def record() -> RunRecord:
    """16 simulated agents (five personas), 24 turns, offline and seeded."""
    agents = [Agent(agent_name=f"Agent{i:02d}", model_name=SIM_MODELS[i % 5])
              for i in range(AGENTS)]
    chat = GroupChat(agents=agents, max_loops=TURNS + 1, threshold=0.3, seed=1,
                     output_type="basemodel")
    return chat.run("Should the city build a new bridge?")


def apart(a: list[list[float]], b: list[list[float]]) -> bool:
    """Whether two labels' outlines (rectangles, maybe turned) are apart, or touch by at most
    half a pixel: some side of one is a line that separates them (the separating axis test)."""
    for quad in (a, b):
        for (x0, y0), (x1, y1) in itertools.pairwise([*quad, quad[0]]):
            nx, ny = y0 - y1, x1 - x0
            length = (nx * nx + ny * ny) ** 0.5 or 1.0
            on_a = [(nx * x + ny * y) / length for x, y in a]
            on_b = [(nx * x + ny * y) / length for x, y in b]
            if min(max(on_a), max(on_b)) - max(min(on_a), min(on_b)) <= 0.5:
                return True
    return False


def overlapping(texts: list[dict[str, Any]], others: list[dict[str, Any]] | None = None,
                ) -> list[tuple[str, str]]:
    """Pairs of labels that overlap: of `texts`, or one of `texts` and one of `others`."""
    pairs = itertools.combinations(texts, 2) if others is None else itertools.product(texts,
                                                                                      others)
    return [(a["text"], b["text"]) for a, b in pairs if not apart(a["corners"], b["corners"])]


def legend_names(fig: Any) -> list[str]:
    """The entries the figure asks its legend to show (a heatmap has none)."""
    if fig.layout.showlegend is False:
        return []
    return [t.name for t in fig.data if t.type != "heatmap" and t.showlegend is not False]


def printed_cells(fig: Any) -> int:
    """How many values the figure's heatmaps print in their cells."""
    return sum(sum(v is not None for row in t.z for v in row) for t in fig.data
               if t.type == "heatmap" and t.texttemplate)


def test_the_analysis_charts_of_sixteen_agents_read_on_a_desktop_and_a_phone(
        record: RunRecord, open_context: Any):
    from plotly.offline import get_plotlyjs

    bids = record.bids_frame()
    assert len(agent_order(bids)) == AGENTS and len(record.turns) == TURNS
    figures = dict(record.figures(), short_heatmap=charts.bids_heatmap(  # a run of 8 turns
        bids[bids["turn"] <= charts.CELL_TEXT_TURNS], "adjusted", 0.3, agent_order(bids)))
    context = open_context(viewport={"width": WIDTHS[0], "height": 900})
    asked: list[str] = []
    context.route("**/*", lambda route: (asked.append(route.request.url), route.abort()))
    page = context.new_page()
    page.set_content(f"<!doctype html><html><head><meta charset='utf-8'><script>"
                     f"{get_plotlyjs()}</script></head><body style='margin:0 16px'>"
                     "<div id='chart'></div></body></html>")
    found: dict[tuple[int, str], list[str]] = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for name, fig in figures.items():
            chart = width - 32
            chart //= 2 if name in HALF and width >= 640 else 1  # columns stack under 640 px
            drawn = page.evaluate(DRAW, [fig.to_plotly_json(), chart])
            problems = [f"{kind} overlap: {pairs}" for kind in KINDS
                        if (pairs := overlapping(drawn[kind]))]
            if pairs := overlapping(drawn["legend"], drawn["xticks"]):
                problems.append(f"legend on the ticks: {pairs}")
            if [e["text"] for e in drawn["legend"]] != legend_names(fig):
                problems.append(f"legend {[e['text'] for e in drawn['legend']]}")
            problems += [f"legend entry {e['text']!r} outside the picture" for e in drawn["legend"]
                         if e["x0"] < 0 or e["y0"] < 0 or e["x1"] > drawn["width"]
                         or e["y1"] > drawn["height"]]
            if any(drawn["scroll"]):
                problems.append("the legend scrolls")
            if len(drawn["cells"]) != printed_cells(fig):
                problems.append(f"{len(drawn['cells'])} cell values of {printed_cells(fig)}")
            if small := sorted({e["size"] for e in drawn["cells"] if e["size"] < MIN_CELL_PX}):
                problems.append(f"cell values at {small} px")
            if width < 640 and drawn["plot"] < PHONE_PLOT_SHARE * drawn["width"]:
                problems.append(f"plot {drawn['plot']:.0f} of {drawn['width']:.0f} px")
            found[(width, name)] = problems
    assert {k: v for k, v in found.items() if v} == {}
    assert asked == []
    shown = {name: printed_cells(fig) for name, fig in figures.items()}
    assert shown["short_heatmap"] == AGENTS * charts.CELL_TEXT_TURNS and shown["transitions"]
