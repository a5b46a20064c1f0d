"""The Sweeps page's Outcomes tab: accuracy per cell or strategy with its Wilson interval, calls
and tokens per correct answer, and turn-taking equality against outcome (the Woolley question).

Why only drawing here: the numbers come from groupchat_core.sweeps (accuracy_table,
equality_outcome), the same functions `sweep export --table accuracy` uses; a sweep with sim
agents says "simulated" next to every figure.
"""

from __future__ import annotations

import math
import zlib

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from groupchat_core.sweeps import Correlation, accuracy_table, equality_outcome, frame_csv
from groupchat_ui.kit.charts import PALETTE, empty_figure

from . import charts
from . import logic as svc

SIM_CAPTION = ("Simulated: sim/ agents answered with their persona's declared accuracy, not a "
               "model's; these numbers test the pipeline, they say nothing about LLMs.")
EQUALITY = {"gini": "Gini of turn shares (0: equal)", "evenness": "evenness (1: equal)"}
SHOWN = ["n", "correct", "accuracy", "ci_low", "ci_high", "calls_per_correct",
         "tokens_per_correct", "cost_per_correct", "simulated", "note"]


def is_scored(frame: pd.DataFrame) -> bool:
    """Whether the sweep's tasks carry answers (the tab has something to show)."""
    return "scorer" in frame and bool(frame["scorer"].notna().any())


def accuracy_chart(table: pd.DataFrame, by: list[str]) -> go.Figure:
    """Accuracy per group as points with their Wilson 95 % interval, on a 0-1 axis."""
    if table.empty or table["n"].sum() == 0:
        return empty_figure("no scored chat finished yet", "accuracy")
    names = [" · ".join(charts.value_text(v) for v in row) for row in
             table[by].itertuples(index=False)] if by else ["all cells"]
    acc = table["accuracy"].astype(float)
    fig = go.Figure(go.Scatter(
        x=names, y=acc, mode="markers+text", marker={"size": 12, "color": PALETTE[0]},
        text=[f"{c} of {n} right" for c, n in zip(table["correct"], table["n"], strict=True)],
        textposition="middle right",
        error_y={"type": "data", "symmetric": False,
                 "array": (table["ci_high"].astype(float) - acc).tolist(),
                 "arrayminus": (acc - table["ci_low"].astype(float)).tolist()},
        customdata=table[["correct", "n"]].to_numpy(),
        hovertemplate="%{x}: %{customdata[0]} of %{customdata[1]} right<extra></extra>"))
    fig.update_layout(title="accuracy with its 95% Wilson interval", height=340,
                      margin={"t": 50, "b": 40, "l": 50, "r": 20},
                      xaxis_title=" · ".join(charts.axis_name(b) for b in by) or None)
    fig.update_yaxes(range=[0, 1.05], title="share of tasks right")
    return fig


def _jitter(key: object) -> float:
    """A small fixed offset per chat (the same on every rerun) so equal points stay apart."""
    return ((zlib.crc32(str(key).encode()) % 21) - 10) / 400


def equality_chart(points: pd.DataFrame, result: Correlation, equality: str, outcome: str,
                   color: str | None) -> go.Figure:
    """One point per scored chat: its turn-taking equality (x) and outcome (y, 0/1 jittered
    a little so equal points stay visible), coloured by `color` when given."""
    if points.empty:
        return empty_figure("no scored chat finished yet", "equality against outcome")
    fig = go.Figure()
    groups = points.groupby(color, sort=True) if color and color in points \
        else [("all chats", points)]
    for i, (name, part) in enumerate(groups):
        keys = part["run_id"] if "run_id" in part else part.index
        y = [float(v) + _jitter(k) for v, k in zip(part[outcome], keys, strict=True)]
        fig.add_trace(go.Scatter(
            x=part[equality], y=y,
            mode="markers", name=charts.value_text(name),
            marker={"size": 9, "opacity": 0.7, "color": PALETTE[i % len(PALETTE)]}))
    fig.update_layout(title=result.text(EQUALITY[equality].split(" (")[0], "outcome"),
                      height=380, margin={"t": 60, "b": 40, "l": 50, "r": 20},
                      title_font_size=13, legend_title=charts.axis_name(color or ""))
    fig.update_xaxes(title=EQUALITY[equality])
    fig.update_yaxes(title="outcome (1: right)", range=[-0.15, 1.15])
    return fig


def outcomes_tab(frame: pd.DataFrame, sweep_id: str, simulated: bool) -> None:
    """Accuracy per group, cost per correct answer, and equality against outcome."""
    if not is_scored(frame):
        st.info("This sweep's tasks have no answers to score. Give its tasks an answer and a "
                "scorer (docs/outcomes.md), e.g. `tasks: {file: du_math_100.jsonl}`.")
        return
    if simulated:
        st.warning(SIM_CAPTION, icon=":material/science:")
    axes = svc.group_columns(frame)
    default = ["strategy"] if "strategy" in axes else axes[:1]
    by = st.multiselect("Accuracy per", axes, default=default, key="sw_acc_by",
                        format_func=charts.axis_name)
    table = accuracy_table(frame, by=by)
    st.plotly_chart(accuracy_chart(table, by), key="sw_acc_chart")
    st.caption("Accuracy: scored finished chats right, with the Wilson 95% interval. Per "
               "correct answer: the group's calls (on a cold bid cache), tokens and cost, "
               "divided by its correct answers.")
    with st.container(key="sw_acc_box"):  # a keyed box: browser tests find the grid in it
        st.dataframe(svc.display_frame(table[[*by, *SHOWN]]), hide_index=True,
                     key="sw_acc_table")
    st.download_button("Download accuracy CSV", frame_csv(table),
                       file_name=f"sweep-{sweep_id[:8]}-accuracy.csv", mime="text/csv",
                       icon=":material/download:", key="sw_acc_csv")
    cols = st.columns(2)
    equality = cols[0].selectbox("Turn-taking equality", list(EQUALITY), key="sw_eq_metric",
                                 format_func=lambda m: EQUALITY[m])
    outcome = "score" if frame["scorer"].eq("judge").any() else "correct"
    colors = ["(none)", *axes]
    color = cols[1].selectbox("Colour by", colors, key="sw_eq_color",
                              index=colors.index("strategy") if "strategy" in colors else 0,
                              format_func=charts.axis_name)
    points, result = equality_outcome(frame, equality, outcome)
    if color != "(none)" and color not in points and "run_id" in points:
        points = points.merge(frame[["run_id", color]].dropna(subset=["run_id"]),
                              on="run_id", how="left")
    st.plotly_chart(equality_chart(points, result, equality, outcome,
                                   None if color == "(none)" else color), key="sw_eq_chart")
    note = " A strategy that fixes who speaks (round_robin, all_speak) gives every chat the " \
        "same equality: colour by strategy to see it." if "strategy" in axes else ""
    st.caption(f"{result.text(equality, outcome)} One point per scored chat (outcomes "
               "jittered a little so equal points stay visible). Woolley et al. (2010) found "
               "groups with more equal turn-taking did better; a correlation here is not a "
               f"cause.{note}" + ("" if math.isnan(result.r) or not simulated else
                                  " Simulated: sims never change their answer after hearing "
                                  "others, so no relation is expected."))
