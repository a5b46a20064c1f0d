"""The Sweeps page's Outcomes tab: accuracy per cell or strategy with its Wilson interval, calls
and tokens per correct answer, and turn-taking equality against outcome (the Woolley question).

Why only drawing here: the numbers come from groupchat_core.sweeps (accuracy_table,
equality_outcome, distractor_report), the same functions `sweep export --table accuracy` and
`--table distractors` use; a sweep with sim agents says "simulated" next to every figure.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from groupchat_core.sweeps import (
    accuracy_table,
    distractor_report,
    equality_outcome,
    frame_csv,
    has_distractors,
)
from groupchat_ui.kit.outcome_charts import EQUALITY, accuracy_chart, equality_chart
from groupchat_ui.kit.safety import escape_markdown

from . import charts
from . import logic as svc

SIM_CAPTION = ("Simulated: sim/ agents answered with their persona's declared accuracy, not a "
               "model's; these numbers test the pipeline, they say nothing about LLMs.")
SHOWN = ["n", "correct", "accuracy", "ci_low", "ci_high", "calls_per_correct",
         "tokens_per_correct", "cost_per_correct", "simulated", "note"]


def is_scored(frame: pd.DataFrame) -> bool:
    """Whether the sweep's tasks carry answers (the tab has something to show)."""
    return "scorer" in frame and bool(frame["scorer"].notna().any())


def outcomes_tab(frame: pd.DataFrame, sweep_id: str, simulated: bool,
                 meta: dict[str, Any] | None = None) -> None:
    """Accuracy per group, cost per correct answer, and equality against outcome."""
    if not is_scored(frame):
        st.info("This sweep's tasks have no answers to score. Give its tasks an answer and a "
                "scorer (e.g. `answer: \"42\"` and `scorer: numeric`), or name a task set "
                "such as `tasks: {file: du_math_100.jsonl}`.")
        return
    if simulated:
        st.warning(SIM_CAPTION, icon=":material/science:")
    axes = svc.group_columns(frame)
    default = ["strategy"] if "strategy" in axes else axes[:1]
    by = st.multiselect("Accuracy per", axes, default=default, key="sw_acc_by",
                        format_func=charts.axis_name)
    table = accuracy_table(frame, by=by)
    st.plotly_chart(accuracy_chart(table, by, charts.axis_name), key="sw_acc_chart")
    st.caption("Accuracy: scored finished chats right, with the Wilson 95% interval. Per "
               "correct answer: the group's calls (on a cold bid cache), tokens and cost, "
               "divided by its correct answers.")
    with st.container(key="sw_acc_box"):  # a keyed box: browser tests find the grid in it
        st.dataframe(svc.display_frame(table[[*by, *SHOWN]]), hide_index=True,
                     key="sw_acc_table")
    st.download_button("Download accuracy CSV", frame_csv(table, meta, "accuracy"),
                       file_name=f"sweep-{sweep_id[:8]}-accuracy.csv", mime="text/csv",
                       icon=":material/download:", key="sw_acc_csv")
    if has_distractors(frame):
        distractors(frame, by, sweep_id, meta)
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
                                   None if color == "(none)" else color, charts.axis_name),
                    key="sw_eq_chart")
    note = " A strategy that fixes who speaks (round_robin, all_speak) gives every chat the " \
        "same equality: colour by strategy to see it." if "strategy" in axes else ""
    st.caption(f"{result.text(equality, outcome)} One point per scored chat (outcomes "
               "jittered a little so equal points stay visible). Woolley et al. (2010) found "
               "groups with more equal turn-taking did better; a correlation here is not a "
               f"cause.{note}" + ("" if math.isnan(result.r) or not simulated else
                                  " Simulated: sims never change their answer after hearing "
                                  "others, so no relation is expected."))


DISTRACTOR_SHOWN = ["distractors", "chats", "turns", "distractor_turns", "share", "ci_low",
                    "ci_high", "accuracy_with", "accuracy_without", "accuracy_baseline", "note"]


def distractor_lines(table: pd.DataFrame, by: list[str]) -> list[str]:
    """One sentence per group: who held the floor how often, with the Wilson interval."""
    lines = []
    for row in table.to_dict("records"):
        group = ", ".join(f"{charts.axis_name(c)} {row[c]}" for c in by)
        if not row["turns"]:
            text = "no posted turn in a finished chat with a distractor."
        else:
            text = (f"distractors ({row['distractors']}) held the floor in "
                    f"{row['distractor_turns']} of {row['turns']} turns ({row['share']:.0%}, "
                    f"95% interval {row['ci_low']:.0%} to {row['ci_high']:.0%}).")
        line = f"{group}: {text}" if group else text
        lines.append(line[0].upper() + line[1:])
    return lines


def distractors(frame: pd.DataFrame, by: list[str], sweep_id: str,
                meta: dict[str, Any] | None) -> None:
    """How often the floor went to a distractor per group, and the accuracy beside it."""
    table = distractor_report(frame, by=by)
    st.subheader("Distractors")
    with st.container(key="sw_dist_box"):
        for line in distractor_lines(table, by):
            st.markdown(escape_markdown(line))  # agent names and labels are untrusted
        st.dataframe(svc.display_frame(table[[*by, *DISTRACTOR_SHOWN]]), hide_index=True,
                     key="sw_dist_table")
    st.caption("Share: posted turns that went to a distractor in finished chats, with the "
               "Wilson 95% interval. Accuracy with / without: scored chats in which a "
               "distractor held the floor at least once, and those in which none did; "
               "baseline: cells whose roster has no distractor. The note says when the data "
               "cannot answer.")
    st.download_button("Download distractors CSV", frame_csv(table, meta, "distractors"),
                       file_name=f"sweep-{sweep_id[:8]}-distractors.csv", mime="text/csv",
                       icon=":material/download:", key="sw_dist_csv")
