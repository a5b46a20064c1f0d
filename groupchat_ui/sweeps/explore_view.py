"""The Sweeps page's exploring tabs (issue 21 item 4): parallel coordinates with brushing, log
axes and top-k %; group by any parameters with seeds collapsed into interval bands; only the
configuration columns that differ; a config x seed matrix with a baseline and deltas; bid
stability across seeds; failed bids grouped by reason.

Why a module of its own: every number is a pure function of groupchat_core.sweeps (_views.py);
this only lays out controls, charts and tables, and never changes the store.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    bid_stability,
    differing,
    failures,
    group_bands,
    run_matrix,
    top_k,
)
from groupchat_ui.kit.safety import escape_markdown

from . import charts, explore_charts
from . import logic as svc

METRICS = list(charts.METRIC_LABELS)
TABS = ["Group by", "Configurations", "Run matrix", "Stability", "Failures"]
LOWER_IS_BETTER = frozenset({"gini", "total_cost_usd"})
REASON_TEXT = {
    "unreadable": "a reply came back, but no score could be read from it (counted as 0.0)",
    "provider error": "the call produced no reply: the provider refused or failed",
    "timeout": "the call produced no reply in time",
}


def parcoords_tab(frame: pd.DataFrame, by: list[str]) -> None:
    """Parallel coordinates coloured by a metric, brushed to its top k % (or dragged)."""
    cols = st.columns([2, 2, 1])
    color = cols[0].selectbox("Colour and brush by", METRICS, key="sw_pc_metric",
                              format_func=charts.metric_label)
    percent = cols[1].slider("Top k % of cells", 1, 100, 100, key="sw_pc_topk",
                             help="Keeps the lines of the best k % of finished cells on this "
                                  "metric (lowest for Gini and cost). Drag along any axis of "
                                  "the chart to brush it by hand.")
    highest = color not in LOWER_IS_BETTER
    axes = list(dict.fromkeys(c for c in [*by, *svc.group_columns(frame)] if c in frame))
    best = top_k(frame, color, percent, highest=highest)
    values = pd.to_numeric(best[color], errors="coerce").dropna()
    brush = (float(values.min()), float(values.max())) if percent < 100 and len(values) else None
    st.plotly_chart(explore_charts.parcoords_brushed(frame, axes, METRICS, color, brush),
                    key="sw_parcoords")
    finished = int((frame["status"] == "finished").sum())
    cols[2].metric("Cells kept", f"{len(best)} of {finished}")
    if percent < 100:
        st.caption(f"Top {percent}% on {charts.metric_label(color)} "
                   f"({'highest' if highest else 'lowest'} first; ties at the cut kept). "
                   "Axes marked (log) span a factor of 10 or more.")
        shown = [c for c in ["cell", *axes, color, "run_id"] if c in best]
        st.dataframe(svc.display_frame(best[shown]), hide_index=True, key="sw_pc_table",
                     height=200)


def group_tab(frame: pd.DataFrame) -> None:
    """Any set of parameters: the first is the x axis, the others make one band each."""
    axes = svc.group_columns(frame)
    if not axes:
        st.info("Only one parameter set was swept: nothing to group by.")
        return
    cols = st.columns([1, 2])
    metric = cols[0].selectbox("Metric", METRICS, key="sw_grp_metric",
                               format_func=charts.metric_label)
    by = cols[1].multiselect("Group by (the first is the x axis)", axes, default=axes[:2],
                             key="sw_grp_by", format_func=charts.axis_name)
    if not by:
        st.info("Pick at least one parameter to group by.")
        return
    bands = group_bands(frame, by, metric)
    st.plotly_chart(explore_charts.bands_chart(bands, metric, by[0]), key="sw_grp_chart")
    st.caption("Each band: the mean over a group's seeds (repeats and tasks) with its 95% "
               "interval, never past what the metric can be; a group whose repeats all agree "
               "has no band (its note says so).")
    shown = [*by, "n", "mean", "ci_low", "ci_high", "interval_method", "note"]
    st.dataframe(svc.display_frame(bands[shown]), hide_index=True, key="sw_grp_table",
                 height=220)


def differs_tab(frame: pd.DataFrame) -> None:
    """The configurations of the sweep, with only the columns that differ by default."""
    only = st.toggle("Only what differs", value=True, key="sw_diff_only")
    table = differing(frame, only_differs=only)
    shown = [c for c in table.columns if c != "cells"]
    if only and not shown:
        st.info("Every cell has the same configuration (only seeds and tasks differ).")
    what = (f"columns that differ: {', '.join(shown)}" if only
            else "all columns (turn on Only what differs to hide the ones every cell shares)")
    st.caption(f"{len(table)} configuration(s); {what}. `cells` counts each one's seeds "
               "and tasks.")
    st.dataframe(svc.display_frame(table), hide_index=True, key="sw_diff_table")


def matrix_tab(frame: pd.DataFrame) -> None:
    """promptfoo-style: a column per configuration, a row per seed, deltas to a baseline."""
    metric = st.selectbox("Metric", METRICS, key="sw_mx_metric",
                          format_func=charts.metric_label)
    values, _, _ = run_matrix(frame, metric)
    if values.empty:
        st.info("No finished cells yet.")
        return
    baseline = st.selectbox("Baseline", list(values.columns), key="sw_mx_base")
    values, deltas, baseline = run_matrix(frame, metric, baseline)
    st.plotly_chart(explore_charts.delta_matrix(deltas, values, baseline, metric),
                    key="sw_mx_chart")
    st.caption("Each cell: the run's value and, in brackets, its difference to the baseline "
               "configuration's run on the same seed (task and repeat).")
    table = deltas.drop(columns=[baseline]).add_prefix("Δ ")
    st.dataframe(pd.concat([values, table], axis=1), key="sw_mx_table", height=220)


def stability_tab(store: RunStore, frame: pd.DataFrame) -> None:
    """How much each agent's bid moves across seeds for one setting."""
    runs = [r for r in frame["run_id"].dropna() if isinstance(r, str)]
    setting = [c for c in svc.group_columns(frame) if c not in ("task_index",)]
    table = bid_stability(store.bids(runs) if runs else pd.DataFrame(), frame, setting)
    st.plotly_chart(explore_charts.stability_chart(table, setting), key="sw_stab_chart")
    st.caption("Per setting and agent: each seed's mean bid over its turns, then its spread "
               "across seeds (sd, min to max). Failed calls are left out.")
    st.dataframe(svc.display_frame(table), hide_index=True, key="sw_stab_table", height=240)


def failures_tab(store: RunStore, frame: pd.DataFrame) -> None:
    """Failed bids by reason, read from each bid's recorded outcome."""
    runs = [r for r in frame["run_id"].dropna() if isinstance(r, str)]
    table = failures(store.bids(runs), frame) if runs else pd.DataFrame()
    errored = frame[frame["status"] == "error"]
    if table.empty:
        st.success("No failed bids: every bid of this sweep's runs was read.",
                   icon=":material/check_circle:")
    else:
        for row in table.itertuples(index=False):
            st.warning(f"**{row.reason}**: {row.bids} bid(s) in {row.runs} run(s), by "
                       f"{escape_markdown(str(row.agents))}. {REASON_TEXT[str(row.reason)]}.",
                       icon=":material/error:")
        st.dataframe(table, hide_index=True, key="sw_fail_table")
    if not errored.empty:
        st.caption(f"{len(errored)} cell run(s) ended in error: see Cells & runs.")


def bodies(store: RunStore, frame: pd.DataFrame) -> dict[str, Callable[[], None]]:
    """The TABS' bodies by name, in TABS order, for the page's lazy st.tabs."""
    return dict(zip(TABS, [lambda: group_tab(frame), lambda: differs_tab(frame),
                           lambda: matrix_tab(frame), lambda: stability_tab(store, frame),
                           lambda: failures_tab(store, frame)], strict=True))
