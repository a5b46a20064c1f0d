"""The Runs page's comparison, beyond the metrics: the two runs' parameters side by side (all,
or only what differs) and overlaid per-turn charts (the top bid of each turn, who spoke).

Why its own module: the numbers come from groupchat_core.analysis (config_diff, top_bids,
rotation); this only draws them.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from groupchat_core.analysis import config_diff, rotation, top_bids
from groupchat_core.analysis.charts import PALETTE, empty_figure, turn_ticks
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.store_access import RunData

CHART: dict[str, object] = {"displaylogo": False}
# A legend under the x axis, left-aligned (plotly paper coordinates).
BELOW: dict[str, object] = {"orientation": "h", "yanchor": "top", "y": -0.25, "xanchor": "left",
                            "x": 0}


def parameters(a: RunData, b: RunData, labels: tuple[str, str]) -> None:
    only = st.toggle("Only what differs", value=True, key="compare_only_differs")
    table = config_diff(a.info["spec"], b.info["spec"], only_differs=only)
    changed = int(config_diff(a.info["spec"], b.info["spec"])["differs"].sum())
    st.caption(f"Parameters: {changed} setting(s) differ between "
               f"{escape_markdown(labels[0])} and {escape_markdown(labels[1])}.")
    st.dataframe(table.rename(columns={"A": labels[0], "B": labels[1]}),
                 hide_index=True, key="compare_params")


def overlaid(a: RunData, b: RunData, labels: tuple[str, str]) -> None:
    bids, spoke = overlaid_figures(a, b, labels)
    st.plotly_chart(bids, key="compare_bids_chart", config=CHART)
    st.plotly_chart(spoke, key="compare_rotation_chart", config=CHART)


def overlaid_figures(a: RunData, b: RunData,
                     labels: tuple[str, str]) -> tuple[go.Figure, go.Figure]:
    """The two runs' top bid per turn and their rotation, overlaid (pure: tested as figures)."""
    bids = go.Figure()
    spoke = go.Figure()
    for i, (data, label) in enumerate(((a, labels[0]), (b, labels[1]))):
        color = PALETTE[i]
        top = top_bids(data.bids)
        bids.add_trace(go.Scatter(x=top["turn"], y=top["top_adjusted"], mode="lines+markers",
                                  name=label, line={"color": color},
                                  customdata=top["top_agent"],
                                  hovertemplate="turn %{x}: top bid %{y:.2f} by "
                                                "%{customdata}<extra></extra>"))
        bids.add_hline(y=data.threshold, line={"color": color, "dash": "dot", "width": 1})
        rot = rotation(data.turns)
        spoke.add_trace(go.Scatter(x=rot["turn"], y=rot["speaker"], mode="markers+lines",
                                   name=label, line={"color": color,
                                                                     "width": 1},
                                   marker={"size": 9, "symbol": ["circle", "x"][i]},
                                   connectgaps=False))
    if not len(bids.data) or all(len(t.x) == 0 for t in bids.data):
        bids = empty_figure("no bids recorded", "top bid per turn")
    bids.update_layout(title="Bids per turn: the top adjusted bid of each run (dotted: its "
                             "threshold)", xaxis_title="turn", yaxis_title="adjusted bid")
    spoke.update_layout(title="Rotation: who spoke on each turn", xaxis_title="turn",
                        yaxis_title="speaker")
    spoke.update_yaxes(type="category")
    every_turn = [*a.turns.get("turn", []), *b.turns.get("turn", []),
                  *a.bids.get("turn", []), *b.bids.get("turn", [])]
    for fig in (bids, spoke):  # the runs' long labels under the plot: a phone keeps its width
        fig.update_layout(legend=BELOW)
        turn_ticks(fig, every_turn)  # whole turns: plotly's own ticks gave turn 1.5
    return bids, spoke
