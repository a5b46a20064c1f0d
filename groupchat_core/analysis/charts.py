"""Plotly figure builders: DataFrame in, Figure out; the dashboard's Analysis charts and a
record's `figures()` in a notebook draw with them (pure plotly and pandas, so they live in the
core; plotly comes with the `[dashboard]` extra, and `import groupchat_core.analysis` never
imports this module).

Every agent keeps one colour in every chart (from its place in the agent list), so a reader can
follow an agent from the live bidding floor to the heatmaps. Empty inputs give a figure with a
note instead of an exception: a live page renders before the first bid arrives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from .._bidding import format_decimal
from .._config import chat_default
from ._metrics import SpeakerMetrics, agent_order, bid_outcome, bid_outcomes

# 24 colours, any two at least 21 apart in CIE76 Lab (Plotly's ten first, so small runs keep
# theirs): Plotly + Dark24 had near twins (0 and 18: 9.4 apart; 6 and 11: 14.9), so two of 16
# agents read as one. Picked greedily, each the farthest from those before it; past 24 it cycles.
PALETTE: tuple[str, ...] = (
    *qualitative.Plotly, "#654522", "#316395", "#FE00CE", "#511CFB", "#109618", "#B279A2",
    "#C2B280", "#750D86", "#86CE00", "#DA16FF", "#F8A19F", "#AF0038", "#6C7C32", "#1C8356")
EMPTY_TEXT = "no bids yet"
# One sequential scale for a score, light to dark: the old scale broke at the threshold (blues
# below, oranges above), so a 0.29 near-miss was saturated blue and a winning 0.31 pale orange.
SCORE_SCALE = "Blues"
OTHERS_COLOR = "#b8b8b8"
# Past FOCUS_MAX agents the bid lines keep FOCUS agents in colour (the most wins, then the
# highest mean bid) and draw the others thin and grey: 16 coloured lines over 149 turns were
# spaghetti. Every agent's line is still there, with its name on hover.
FOCUS_MAX, FOCUS = 8, 6
# A legend under the plot, left-aligned: it wraps instead of scrolling (a side legend hid
# Agent14, Agent15 and "winner" behind a scroll) and leaves a phone the plot's whole width.
LEGEND_BELOW: dict[str, Any] = {"orientation": "h", "yanchor": "top", "xanchor": "left", "x": 0,
                                "y": -0.18, "itemsizing": "constant"}
BELOW_AXIS_PX = 62  # the turn ticks and the axis title, between the plot and that legend
# Thin side margins, the axes' labels pushing them as far as they need (automargin): Plotly's
# default 80 px a side left a 390 px phone's speaker charts ~55% of the width for the plot.
SIDE_MARGIN: dict[str, int] = {"l": 10, "r": 10}
# Heatmap marks sit on the cell's top or bottom edge (in rows, on an overlaid numeric axis), never
# beside the value: a mark left or right of the centre covered the value's last digit ("0.9*" for
# 0.93) or its minus sign once the cells were narrow. The winner's mark at the top, a silent or
# failed bid's at the bottom; the value, centred, keeps the middle of the cell.
MARK_OFFSET = 0.36
# A mark is never wider than its cell: past ~60 turns a fixed 11 px star spans several turns, and
# alternating winners merged into one agent seemingly winning 20 turns in a row.
MARK_SIZE_MAX, MARK_SIZE_MIN, MARK_PIXELS = 10, 2, 600
WINNER_LABEL = "winner of the turn"  # the legend draws each trace's symbol before its name
SILENT_LABEL = "silent: bid without a message"
FAILED_LABEL = "failed: no bid (error)"
MAX_TURN_TICKS = 10  # a phone's plot (~300 px) keeps ~30 px per tick label
_NICE_STEPS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)
# Past these sizes a chart drops what costs the browser most and no one can read anyway: a text
# label in every heatmap cell (16,000 SVG texts for 1,000 turns x 16 agents kept Chromium busy
# for seconds), a marker on every point of every bid line. Hover still gives each value.
CELL_TEXT_MAX = 400
# ... and past CELL_TEXT_TURNS turns a cell is too narrow for its value on a phone: Plotly shrinks
# the text to fit its cell (its size is left to Plotly: a fixed one spills over its neighbours),
# and a 390 px phone leaves 16 agents' cells ~285 px: "0.42" drew at 12 px for 8 turns, 8 px for
# 10, 3 px for 24 (the limit was 30; tests/e2e/test_chart_pictures.py measures it).
CELL_TEXT_TURNS = 8
ROW_PX = 34  # heatmap row height: the value's text and a mark above and below it
LINE_MARKERS_MAX = 400


def agent_colors(agents: Sequence[str]) -> dict[str, str]:
    """A stable colour per agent, by agent-list order (the same agent list, the same colours)."""
    return {agent: PALETTE[i % len(PALETTE)] for i, agent in enumerate(agents)}


def empty_figure(text: str = EMPTY_TEXT, title: str | None = None) -> go.Figure:
    """A blank figure with a centred note, for frames with nothing to draw yet."""
    fig = go.Figure()
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font={"size": 16})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.update_layout(title=title)
    return fig


def as_bids_frame(bids: pd.DataFrame | Iterable[Any] | None) -> pd.DataFrame:
    """Accept a bids frame, or Bid models / dicts as the job registry holds them."""
    if bids is None:
        return pd.DataFrame()
    if isinstance(bids, pd.DataFrame):
        return bids
    return pd.DataFrame([_bid_row(b) for b in bids])


def _bid_row(bid: Any) -> dict[str, Any]:
    """A Bid model or a mapping as one row."""
    return dict(bid.model_dump() if hasattr(bid, "model_dump") else bid)


def _order(bids: pd.DataFrame, agents: Sequence[str] | None) -> list[str]:
    order = list(agents) if agents is not None else []
    return order + [a for a in agent_order(bids) if a not in order]


def turn_ticks(fig: go.Figure, turns: Iterable[Any], axis: str = "x") -> None:
    """Whole-number turn ticks (never 1.5): every turn, or every k-th on a long run."""
    values = [int(t) for t in turns if pd.notna(t)]
    span = (max(values) - min(values) + 1) if values else 1
    step = next((s for s in _NICE_STEPS if span / s <= MAX_TURN_TICKS), -(-span // 10))
    start = min(values, default=1) if step <= 2 else 0  # 20, 40, ... not 1, 21, 41
    settings = {"tickmode": "linear", "tick0": start, "dtick": step, "tickformat": "d"}
    if axis == "x":
        fig.update_xaxes(**settings)
    else:
        fig.update_yaxes(**settings)


def _silent(bids: pd.DataFrame) -> pd.Series:
    """Bids that posted no message although they did not fail."""
    message = bids["message"] if "message" in bids else pd.Series("", index=bids.index)
    failed = _failed(bids)
    return ~message.apply(lambda m: isinstance(m, str) and bool(m)) & ~failed


def _failed(bids: pd.DataFrame) -> pd.Series:
    return bid_outcomes(bids) == "failed"


def mark_size(turns: int) -> int:
    """Marker size (px) for a heatmap `turns` wide: at most about one cell's width."""
    return max(MARK_SIZE_MIN, min(MARK_SIZE_MAX, MARK_PIXELS // max(1, turns)))


def _mark(rows: pd.DataFrame, rows_of: Mapping[str, int], offset: float, name: str,
          marker: dict[str, Any], what: str) -> go.Scatter:
    """Marks on the cells of `rows`, `offset` rows from the centre (on the overlaid axis y2),
    hovering as the cell's agent and turn. Always SVG,
    never WebGL (`Scattergl`): on a machine without a GPU, Chromium draws WebGL in software
    (SwiftShader), and the WebGL trace's set-up alone cost more than 1,000 SVG stars (Plotly's
    first draw of the 1,000-turn heatmap: ~850 ms with WebGL stars, ~530 ms with SVG ones,
    ~190 ms with none; BENCHMARKS.md, dashboard findings)."""
    return go.Scatter(
        x=[int(t) for t in rows["turn"]], y=[rows_of[a] + offset for a in rows["agent"]],
        yaxis="y2", mode="markers", name=name, marker=marker, text=list(rows["agent"]),
        customdata=[int(t) for t in rows["turn"]],
        hovertemplate=f"{what}: %{{text}}, turn %{{customdata}}<extra></extra>")


def _turn_range(fig: go.Figure, turns: Iterable[Any]) -> None:
    """Half a turn either side of the outer turns, no more (markers and annotations had
    widened a bid-lines axis to start at turn -1)."""
    values = [int(t) for t in turns if pd.notna(t)]
    if values:
        fig.update_xaxes(range=[min(values) - 0.5, max(values) + 0.5])


def _size(fig: go.Figure, plot_px: int, top_px: int, legend_px: int = 70) -> None:
    """A fixed plot height with the legend under the turn axis (placed in pixels, so it clears
    the axis at any height) and thin side margins (a phone keeps the plot's width)."""
    fig.update_layout(height=top_px + plot_px + BELOW_AXIS_PX + legend_px,
                      margin={"l": 10, "r": 10, "t": top_px, "b": BELOW_AXIS_PX + legend_px},
                      legend=LEGEND_BELOW | {"y": -BELOW_AXIS_PX / plot_px})


def cell_text(agents: int, turns: int) -> bool:
    """Whether the heatmap prints each cell's value: only where it is readable and cheap."""
    return agents * turns <= CELL_TEXT_MAX and turns <= CELL_TEXT_TURNS


def bids_heatmap(bids: pd.DataFrame, value: str = "score", threshold: float | None = None,
                 agents: Sequence[str] | None = None) -> go.Figure:
    """Agents x turns on one sequential scale (the threshold a tick on the colour bar; the
    engine's default when None), the winners marked, the colour bar and legend under the plot
    (on a phone a side colour bar left the cells 40% of the width)."""
    if threshold is None:
        threshold = float(chat_default("threshold"))
    if value not in ("score", "adjusted"):
        raise ValueError(f"value must be 'score' or 'adjusted', got {value!r}")
    if bids.empty:
        return empty_figure(title="Bids by turn")
    order = _order(bids, agents)
    z = bids.pivot_table(index="agent", columns="turn", values=value, aggfunc="first")
    z = z.reindex(index=order)
    low = min(0.0, float(bids[value].min()))
    high = max(1.0, float(bids[value].max()))
    thr = format_decimal(threshold)
    labels = cell_text(len(order), len(z.columns))
    fig = go.Figure(go.Heatmap(
        z=z.to_numpy(), x=list(z.columns), y=order, zmin=low, zmax=high,
        colorscale=SCORE_SCALE, texttemplate="%{z:.2f}" if labels else None,
        hovertemplate="%{y}, turn %{x}: %{z:.3f}<extra></extra>", name=value,
        colorbar={"title": {"text": value, "side": "top"}, "tickvals": [low, threshold, high],
                  "ticktext": [f"{low:g}", f"threshold {thr}", f"{high:g}"],
                  "orientation": "h", "thickness": 10, "len": 1, "lenmode": "fraction",
                  "x": 0, "xanchor": "left", "y": 1.0, "yanchor": "bottom",
                  "ticks": "outside"},
    ))
    rows_of = {agent: i for i, agent in enumerate(order)}
    size = mark_size(len(z.columns))
    won = bids[bids["winner"].astype(bool)]
    fig.add_trace(_mark(won, rows_of, -MARK_OFFSET, WINNER_LABEL, {
        "symbol": "triangle-down", "size": size, "color": "#d94801",
        "line": {"color": "white", "width": 1 if size >= 6 else 0}}, "winner"))
    silent, failed = bids[_silent(bids)], bids[_failed(bids)]
    if not silent.empty:
        fig.add_trace(_mark(silent, rows_of, MARK_OFFSET, SILENT_LABEL, {
            "symbol": "circle-open", "size": size, "color": "black",
            "line": {"width": 2 if size >= 6 else 1}}, "silent (no message)"))
    if not failed.empty:
        fig.add_trace(_mark(failed, rows_of, MARK_OFFSET, FAILED_LABEL, {
            "symbol": "x-thin-open", "size": size, "color": "crimson",
            "line": {"width": 2 if size >= 6 else 1}}, "failed"))
    # y2 overlays the agent rows as numbers (row i spans i - 0.5 .. i + 0.5, top row first), so a
    # mark can sit at a cell's edge; it follows y (fixed: the rows are few, zoom is by turn).
    rows_range = [len(order) - 0.5, -0.5]
    fig.update_layout(yaxis2={"overlaying": "y", "range": rows_range, "visible": False,
                              "fixedrange": True})
    fig.layout.yaxis.update(range=rows_range, fixedrange=True, categoryorder="array",
                            categoryarray=order, automargin=True)
    turn_ticks(fig, z.columns)
    _turn_range(fig, z.columns)
    fig.update_layout(title=f"Bids by turn ({value}); threshold {thr}", showlegend=True)
    fig.update_xaxes(automargin=True)  # no axis title: it sat on the ticks; the title says it
    _size(fig, plot_px=ROW_PX * len(order) + 40, top_px=110)
    return fig


def _mark_stops(fig: go.Figure, turns: pd.DataFrame) -> None:
    """A dotted vertical line at each turn without a winner: a lull, or no readable bid."""
    if turns.empty:
        return
    for _, row in turns[turns["winner"].isna()].iterrows():
        label = "lull" if bool(row.get("lull")) else "no readable bid"
        fig.add_vline(x=int(row["turn"]), line_dash="dot", line_color="grey",
                      annotation_text=label, annotation_position="top")


def focus_agents(bids: pd.DataFrame, order: Sequence[str], value: str = "adjusted") -> list[str]:
    """The agents the bid lines draw in colour: all of them up to FOCUS_MAX, else the FOCUS
    with the most wins, then the highest mean bid (in roster order)."""
    if len(order) <= FOCUS_MAX or bids.empty:
        return list(order)
    wins = bids[bids["winner"].astype(bool)].groupby("agent").size()
    mean = bids.groupby("agent")[value].mean()
    ranked = sorted(order, key=lambda a: (-int(wins.get(a, 0)), -float(mean.get(a, 0.0))))
    top = set(ranked[:FOCUS])
    return [a for a in order if a in top]


def bid_lines(bids: pd.DataFrame, turns: pd.DataFrame, threshold: float,
              value: str = "adjusted", agents: Sequence[str] | None = None,
              focus: Sequence[str] | None = None) -> go.Figure:
    """Each agent's bid per turn, the threshold as a line, winners starred, the lull marked.
    Past FOCUS_MAX agents only `focus` (default: focus_agents) keep their colour; the rest are
    thin grey lines under one legend entry."""
    if bids.empty:
        return empty_figure(title="Bids per turn")
    order = _order(bids, agents)
    colors = agent_colors(order)
    shown = set(focus_agents(bids, order, value) if focus is None else focus)
    mode = "lines+markers" if len(bids) <= LINE_MARKERS_MAX else "lines"
    fig = go.Figure()
    others = [a for a in order if a not in shown]
    for agent in order:
        mine = bids[bids["agent"] == agent].sort_values("turn")
        lit = agent in shown
        fig.add_trace(go.Scatter(
            x=list(mine["turn"]), y=list(mine[value]), name=agent, mode=mode if lit else "lines",
            line={"color": colors[agent] if lit else OTHERS_COLOR, "width": 2 if lit else 1},
            legendgroup=None if lit else "others", showlegend=lit,
            hovertemplate="%{fullData.name}, turn %{x}: %{y:.2f}<extra></extra>"))
    if others:  # one legend entry for the grey lines (a click hides or shows them all)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", legendgroup="others",
                                 name=f"{len(others)} other agents (grey)",
                                 line={"color": OTHERS_COLOR, "width": 1}))
    won = bids[bids["winner"].astype(bool)]
    fig.add_trace(go.Scatter(
        x=list(won["turn"]), y=list(won[value]), mode="markers", name="winner",
        text=list(won["agent"]), hovertemplate="winner %{text}, turn %{x}<extra></extra>",
        marker={"symbol": "star", "size": 12 if len(order) <= FOCUS_MAX else 9,
                "color": [colors[a] if a in shown else OTHERS_COLOR for a in won["agent"]],
                "line": {"color": "black", "width": 1}},
    ))
    thr = format_decimal(threshold)
    # the label on a white ground: drawn bare, the lines under it struck it through
    fig.add_hline(y=threshold, line_dash="dash", line_color="crimson",
                  annotation_text=f"threshold {thr}", annotation_position="bottom right",
                  annotation_bgcolor="rgba(255,255,255,0.85)")
    _mark_stops(fig, turns)
    turn_ticks(fig, bids["turn"])
    _turn_range(fig, bids["turn"])
    fig.update_layout(title=f"Bids per turn ({value})", xaxis_title="turn", yaxis_title=value)
    fig.update_yaxes(automargin=True)
    _size(fig, plot_px=340, top_px=70)
    return fig


def winner_timeline(turns: pd.DataFrame, agents: Sequence[str] | None = None) -> go.Figure:
    """Who won each turn, as dots on one row per agent, with lulls marked."""
    if turns.empty:
        return empty_figure("no turns yet", title="Speakers over time")
    won = turns.dropna(subset=["winner"]).sort_values("turn")
    order = list(agents) if agents is not None else []
    order += [a for a in dict.fromkeys(won["winner"]) if a not in order]
    colors = agent_colors(order)
    fig = go.Figure(go.Scatter(x=list(won["turn"]), y=list(won["winner"]), mode="lines",
                               line={"color": "lightgrey"}, name="sequence",
                               hoverinfo="skip"))
    for agent in order:
        mine = won[won["winner"] == agent]
        fig.add_trace(go.Scatter(x=list(mine["turn"]), y=[agent] * len(mine), mode="markers",
                                 name=agent, marker={"color": colors[agent], "size": 12}))
    _mark_stops(fig, turns)
    turn_ticks(fig, turns["turn"])
    fig.update_yaxes(categoryorder="array", categoryarray=order, autorange="reversed",
                     automargin=True)
    fig.update_layout(title="Speakers over time", xaxis_title="turn", showlegend=False,
                      margin=SIDE_MARGIN)
    return fig


def transition_heatmap(matrix: pd.DataFrame) -> go.Figure:
    """Speaker -> next speaker counts (from analysis.transition_matrix)."""
    if matrix.empty:
        return empty_figure("no messages yet", title="Who follows whom")
    fig = go.Figure(go.Heatmap(
        z=matrix.to_numpy(), x=list(matrix.columns), y=list(matrix.index), colorscale="Blues",
        texttemplate="%{z}", zmin=0,
        hovertemplate="%{y} then %{x}: %{z}<extra></extra>",
        # above the cells, as in bids_heatmap: beside them it left a phone's cells 56% of the width
        colorbar={"orientation": "h", "thickness": 10, "len": 1, "lenmode": "fraction", "x": 0,
                  "xanchor": "left", "y": 1.0, "yanchor": "bottom"},
    ))
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_layout(title="Who follows whom", xaxis_title="next speaker",
                      yaxis_title="speaker", margin=SIDE_MARGIN)
    return fig


def turn_shares(shares: SpeakerMetrics | Mapping[str, float] | pd.Series) -> go.Figure:
    """Share of posted messages per agent, with the equal-share level as a reference line."""
    if isinstance(shares, SpeakerMetrics):
        shares = shares.shares
    data = {str(agent): float(share) for agent, share in shares.items()}
    if not data:
        return empty_figure("no messages yet", title="Turn shares")
    order = list(data)
    colors = agent_colors(order)
    # each share is printed under its bar, with the name: printed above the bar it sat on the
    # equal-share line, which the line's own label struck too; that label is a legend entry now
    fig = go.Figure(go.Bar(x=order, y=[data[a] for a in order], name="share", showlegend=False,
                           marker={"color": [colors[a] for a in order]},
                           hovertemplate="%{x}: %{y:.0%}<extra></extra>"))
    equal = 1 / len(order)
    fig.add_hline(y=equal, line_dash="dot", line_color="grey")
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=f"equal share {equal:.0%}",
                             line={"dash": "dot", "color": "grey"}))
    # one line per label: 16 two-line labels, turned upright on a phone, were 30 px wide each
    # for 21 px per bar and overlapped their neighbours; the legend's one entry above the plot
    # (under it, upright labels ran into it and were cut: "Agent01 21" without its "%")
    fig.update_xaxes(tickmode="array", tickvals=order,
                     ticktext=[f"{a} {data[a]:.0%}" for a in order], automargin=True)
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%", automargin=True)
    fig.update_layout(title="Turn shares", yaxis_title="share of messages", showlegend=True,
                      legend=LEGEND_BELOW | {"y": 1.02, "yanchor": "bottom"}, margin=SIDE_MARGIN)
    return fig


def _floor_label(row: Any, recency_penalty: float) -> str:
    if row is None:
        return "waiting…"
    if bid_outcome(row) == "failed":
        return "failed"
    if not (isinstance(row.get("message"), str) and row.get("message")):
        return "silent"
    if bool(row.get("penalized")):
        return f"−{format_decimal(recency_penalty)} recency"
    return ""


def bidding_floor(bids: pd.DataFrame | Iterable[Any] | None, threshold: float,
                  recency_penalty: float, agents: Sequence[str] | None = None) -> go.Figure:
    """The live turn: raw and adjusted score per agent, penalties hatched, threshold drawn."""
    frame = as_bids_frame(bids)
    order = _order(frame, agents)
    if not order:
        return empty_figure(title="Bidding floor")
    by_agent = {str(r["agent"]): r for r in frame.to_dict("records")} if not frame.empty else {}
    rows = [by_agent.get(a) for a in order]
    colors = [agent_colors(order)[a] for a in order]
    raw = [None if r is None else r["score"] for r in rows]
    adjusted = [None if r is None else r["adjusted"] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=order, y=raw, name="raw score", opacity=0.4,
                         marker={"color": colors}))
    fig.add_trace(go.Bar(
        x=order, y=adjusted, name="adjusted", text=[_floor_label(r, recency_penalty)
                                                    for r in rows],
        textposition="outside",
        marker={"color": colors,
                "pattern": {"shape": ["/" if r and r.get("penalized") else "" for r in rows]},
                "line": {"color": "black",
                         "width": [3 if r and r.get("winner") else 0 for r in rows]}},
    ))
    fig.add_hline(y=threshold, line_dash="dash", line_color="crimson",
                  annotation_text=f"threshold {format_decimal(threshold)}")
    fig.update_yaxes(range=[min([0.0, *(a for a in adjusted if a is not None)]) - 0.05, 1.15])
    fig.update_layout(barmode="group", title=(
        f"Bidding floor: threshold {format_decimal(threshold)}, recency penalty "
        f"{format_decimal(recency_penalty)}"))
    return fig
