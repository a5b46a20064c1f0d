"""Outcome charts shared by the Sweeps and Analysis pages: accuracy with its Wilson interval
per group, and turn-taking equality against outcome with the correlation in the title.

Why in the kit: both pages draw the same figures from groupchat_core.sweeps' numbers
(accuracy_table, equality_outcome); DataFrame in, Figure out, no streamlit.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go

from groupchat_core.analysis.charts import PALETTE, empty_figure
from groupchat_core.sweeps import Correlation

EQUALITY = {"gini": "Gini of turn shares (0: equal)", "evenness": "evenness (1: equal)"}


def _text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float | int) and not isinstance(value, bool) \
        else str(value)


def accuracy_chart(table: pd.DataFrame, by: list[str],
                   name: Callable[[str], str] = str) -> go.Figure:
    """Accuracy per group as points with their Wilson 95 % interval, on a 0-1 axis."""
    if table.empty or table["n"].sum() == 0:
        return empty_figure("no scored chat finished yet", "accuracy")
    names = [" · ".join(_text(v) for v in row) for row in
             table[by].itertuples(index=False)] if by else ["all cells"]
    acc = table["accuracy"].astype(float)
    counts = [f"{c} of {n} right" for c, n in zip(table["correct"], table["n"], strict=True)]
    # the count is printed under its group's name: beside the point the last one ran past the
    # plot's right edge ("210 of 300 ri")
    fig = go.Figure(go.Scatter(
        x=names, y=acc, mode="markers", marker={"size": 12, "color": PALETTE[0]},
        error_y={"type": "data", "symmetric": False,
                 "array": (table["ci_high"].astype(float) - acc).tolist(),
                 "arrayminus": (acc - table["ci_low"].astype(float)).tolist()},
        customdata=table[["correct", "n"]].to_numpy(),
        hovertemplate="%{x}: %{customdata[0]} of %{customdata[1]} right<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=names,
                     ticktext=[f"{g}<br>{c}" for g, c in zip(names, counts, strict=True)],
                     automargin=True)
    fig.update_layout(title="accuracy with its 95% Wilson interval", height=340,
                      margin={"t": 50, "b": 40, "l": 50, "r": 20},
                      xaxis_title=" · ".join(name(b) for b in by) or None)
    fig.update_yaxes(range=[0, 1.05], title="share of tasks right")
    return fig


def _jitter(key: object) -> float:
    """A small fixed offset per chat (the same on every rerun) so equal points stay apart."""
    return ((zlib.crc32(str(key).encode()) % 21) - 10) / 400


def equality_chart(points: pd.DataFrame, result: Correlation, equality: str, outcome: str,
                   color: str | None, name: Callable[[str], str] = str) -> go.Figure:
    """One point per scored chat: its turn-taking equality (x) and outcome (y, 0/1 jittered
    a little so equal points stay visible), coloured by `color` when given."""
    if points.empty:
        return empty_figure("no scored chat finished yet", "equality against outcome")
    fig = go.Figure()
    groups = points.groupby(color, sort=True) if color and color in points \
        else [("all chats", points)]
    for i, (group, part) in enumerate(groups):
        keys = part["run_id"] if "run_id" in part else part.index
        y = [float(v) + _jitter(k) for v, k in zip(part[outcome], keys, strict=True)]
        fig.add_trace(go.Scatter(
            x=part[equality], y=y,
            mode="markers", name=_text(group),
            marker={"size": 9, "opacity": 0.7, "color": PALETTE[i % len(PALETTE)]}))
    fig.update_layout(title=result.text(EQUALITY[equality].split(" (")[0], "outcome"),
                      height=380, margin={"t": 60, "b": 40, "l": 50, "r": 20},
                      title_font_size=13, legend_title=name(color or ""))
    fig.update_xaxes(title=EQUALITY[equality])
    fig.update_yaxes(title="outcome (1: right)", range=[-0.15, 1.15])
    return fig
