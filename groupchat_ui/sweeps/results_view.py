"""The Sweeps page's results: a sweep picker (`?sweep=<id>`), heatmaps, 95 % intervals along
any axis (with their method), parameter importance and a two-cell comparison (stats_view),
parallel coordinates, click-through to a cell's runs, CSV export, and a what-if for one run.

Why read from the store, not the job: results of a sweep stopped, resumed or run by the CLI
read the same way (sweeps/results.py). The what-if replays a recorded run's bids under other
thresholds and penalties, with no model calls (groupchat_core.analysis, what-if).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from groupchat_core import NAMES_SPEAKERS, SIM_NOTE, ConfigError, StoreError
from groupchat_core.analysis import whatif_pivot, whatif_record
from groupchat_core.store import RunStore
from groupchat_core.sweeps import (
    aggregate,
    export_meta,
    frame_csv,
    methods_text,
    plain_json,
    sweep_results,
    sweep_summary,
)
from groupchat_ui.kit.components import refresh_every
from groupchat_ui.kit.frames import records
from groupchat_ui.kit.jobs import JobRegistry
from groupchat_ui.kit.safety import escape_markdown

from . import charts, outcome_view, stats_view
from . import explore_view as views_explore
from . import logic as svc
from .view import Snapshot, panel_snapshot, ray_workers

BY = ["threshold", "recency_penalty", "recency_window"]  # the heatmaps' axes
REFRESH_S = 0.5
METRICS = list(charts.METRIC_LABELS)


def pick(store: RunStore) -> str | None:
    """A stored sweep: `?sweep=<id>` first (a full id or a unique prefix, resolved by the
    store), then this session's choice, then the newest. A link naming no single sweep shows
    why and an empty picker: None, never another sweep, and its `?sweep=` kept."""
    sweeps = store.list_sweeps()
    if sweeps.empty:
        st.info("No sweeps in the store yet: define a grid above and start one (the presets "
                "are offline sim/ agents: simulations, no key needed).")
        return None
    rows = {r["sweep_id"]: r for r in records(sweeps)}
    asked = st.query_params.get("sweep")
    try:
        wanted = store.resolve_sweep(asked) if asked else None
    except StoreError as exc:
        st.error(f"The link's sweep `{escape_markdown(asked[:80] if asked else '')}` opens "
                 f"nothing: {escape_markdown(str(exc))}. Fix the link, or pick a sweep below.",
                 icon=":material/link_off:")
        st.session_state["sw_pick"] = None  # until a pick replaces the link's ?sweep=
        st.selectbox("Sweep", list(rows), key="sw_pick", index=None, placeholder="pick a sweep",
                     format_func=lambda i: svc.sweep_label(rows[i]), on_change=_on_pick)
        return None
    if wanted in rows and st.session_state.get("sw_pick") != wanted:
        st.session_state["sw_pick"] = wanted
    elif st.session_state.get("sw_pick") not in rows:
        st.session_state["sw_pick"] = next(iter(rows))
    sweep_id: str = st.selectbox("Sweep", list(rows), key="sw_pick",
                                 format_func=lambda i: svc.sweep_label(rows[i]),
                                 on_change=_on_pick)
    st.query_params["sweep"] = sweep_id
    return sweep_id


def _on_pick() -> None:
    """A picked sweep replaces the one the address names (so a bad link's error goes)."""
    if st.session_state.get("sw_pick"):
        st.query_params["sweep"] = st.session_state["sw_pick"]


def header(store: RunStore, sweep_id: str, registry: JobRegistry | None = None,
           owner: str | None = None) -> dict[str, Any]:
    """The sweep's status line (the same as the live panel's and the sidebar's, from
    kit/sweep_status.py) and totals, redrawn every half second while the sweep runs; the
    sim note when its agents are sims. Returns the summary read at this script run.

    When this session's live panel shows the same sweep, the line draws the panel's own last
    read (view.panel_snapshot) instead of a second one of its own: the two lines then show
    one snapshot, not two taken half a second apart on separate timers."""
    info = sweep_summary(store, sweep_id)
    live = svc.status_of(store, info["sweep_id"], registry, owner).live
    timer = refresh_every("sweep-results", REFRESH_S if live else None)
    if live and timer is None and panel_snapshot(info["sweep_id"]) is not None:
        # the live panel above holds the page's one timer and shows this very sweep
        st.caption(f"{escape_markdown(info.get('name') or 'sweep')} · live status in the "
                   "panel above")
        return _tail(info)

    @st.fragment(run_every=timer)
    def line() -> None:
        shown = panel_snapshot(info["sweep_id"])
        if shown is None or shown.summary is None:
            status = svc.status_of(store, info["sweep_id"], registry, owner)
            shown = Snapshot(status, sweep_summary(store, info["sweep_id"]) if live else info)
        status = shown.status
        if live and not status.live:
            st.rerun()  # it ended: redraw the charts, the Resume button and the picker
        st.caption(f"{escape_markdown(status.name)} · {status.text()} · {shown.totals()}"
                   + (f" · {escape_markdown(status.reason)}" if status.reason else ""))

    line()
    return _tail(info)


def _tail(info: dict[str, Any]) -> dict[str, Any]:
    """Under the status line: the shareable link and the sim note."""
    # shareable: the address minus this browser's ?sid= (which handed over its drafts)
    st.caption(f"Link to this sweep: `sweeps?{urlencode({'sweep': info['sweep_id']})}`")
    if info["simulated"]:  # any agent of any cell, also through the model axis
        st.caption(f":material/science: Simulated. {SIM_NOTE}")
    return info


def results(store: RunStore, sweep_id: str, registry: JobRegistry | None = None) -> None:
    """Tabs over one sweep's results; only the open one runs (`on_change="rerun"`), so a big
    sweep opens on its heatmaps without the run matrix, the bid stability over every bid and
    the other tabs behind them (a 1,200-cell sweep: most of the page's time). The open tab is
    kept across reruns and runs."""
    frame = sweep_results(store, sweep_id)
    by = [c for c in BY if c in frame]
    scored = outcome_view.is_scored(frame)

    def meta() -> dict[str, Any]:  # every CSV opens with its commented header
        return export_meta(store, sweep_id)

    def cells() -> None:
        if registry is not None:
            ray_workers(registry, sweep_id)
        info = meta()
        _cells(frame, sweep_id, info)
        _meta_download(info, sweep_id)

    bodies: dict[str, Callable[[], None]] = {
        "Heatmaps": lambda: _heatmaps(frame, by),
        "95% intervals": lambda: _intervals(frame, sweep_id, meta()),
        "Importance": lambda: stats_view.importance_tab(frame),
        "Compare two cells": lambda: stats_view.compare_tab(frame),
        "Parallel coordinates": lambda: views_explore.parcoords_tab(frame, by),
        "Cells & runs": cells,
        "What-if": lambda: whatif(store, frame),
        **views_explore.bodies(store, frame),
    }
    if scored:
        bodies["Outcomes"] = lambda: outcome_view.outcomes_tab(
            frame, sweep_id, bool(frame["simulated"].any()), meta())
    shown = st.tabs(list(bodies), key="sw_results_tab", on_change="rerun")
    for tab, body in zip(shown, bodies.values(), strict=True):
        if tab.open:
            with tab:
                body()


def _heatmaps(frame: pd.DataFrame, by: list[str]) -> None:
    metric = st.selectbox("Metric", METRICS, key="sw_metric", format_func=charts.metric_label)
    agg = aggregate(frame, by=by, metrics=[metric])  # the shown one: no 13 metrics' intervals
    st.plotly_chart(charts.sweep_heatmaps(agg, metric), key="sw_heatmap")
    st.caption("Mean over finished cells (all repeats, tasks and other axes) per "
               "threshold × penalty; one panel per recency_window.")


def _intervals(frame: pd.DataFrame, sweep_id: str, meta: dict[str, Any]) -> None:
    """Mean and the metric's own 95 % interval along any axis, a line per another axis."""
    axes = svc.group_columns(frame) or ["threshold"]
    cols = st.columns(3)
    metric = cols[0].selectbox("Metric", METRICS, key="sw_ci_metric",
                               format_func=charts.metric_label)
    x = cols[1].selectbox("Along", axes, key="sw_ci_x", format_func=charts.axis_name)
    lines = ["(none)", *[a for a in axes if a != x]]
    line = cols[2].selectbox("A line per", lines, key="sw_ci_line",
                             index=1 if len(lines) > 1 else 0, format_func=charts.axis_name)
    by = [x] if line == "(none)" else [x, line]
    agg = aggregate(frame, by=by, metrics=METRICS)
    st.plotly_chart(charts.ci_chart(agg, frame, metric, x=x,
                                    line=None if line == "(none)" else line), key="sw_ci")
    st.caption("Lines: the mean with its 95% interval over finished chats, pooled over the "
               "axes not shown; dots: each chat's own value. " + methods_text(),
               help="Wilson: the score interval for a binomial proportion. bootstrap-t: the "
                    "studentized bootstrap, 2,000 resamples of the chats, seeded (the same "
                    "sweep draws the same bars), each resample's spread floored at a quarter "
                    "of the sample's, cut to what the metric can be (messages by max_loops, "
                    "Gini and entropy by the agents). Below 5 repeats no bar is drawn (none "
                    "would be informative); its coverage and width per metric and repeat "
                    "count are measured in the statistics guide. The table below names the "
                    "method of every row (column interval_method) and, in its note, why a "
                    "row has no interval.")
    table = agg[agg["metric"] == metric]
    for line in svc.interval_notes(table):
        st.warning(line, icon=":material/info:")
    st.dataframe(svc.display_frame(table), hide_index=True, key="sw_ci_table", height=220)
    st.download_button("Download intervals CSV", frame_csv(agg, meta, "intervals"),
                       file_name=f"sweep-{sweep_id[:8]}-intervals.csv", mime="text/csv",
                       icon=":material/download:", key="sw_ci_csv")


def _meta_download(meta: dict[str, Any], sweep_id: str) -> None:
    """What makes the CSVs reproducible and citable: spec, seeds, statistics settings, models,
    the simulated flag, the versions and the methods paragraph (as `sweep export` writes it;
    each CSV carries the short form in its `# ` header)."""
    if meta["simulated"]:
        st.caption("Simulated: some agents of this sweep are sim/ models, not language models; "
                   "the exports say so (`simulated`).")
    st.download_button("Download methods & metadata (JSON)",
                       json.dumps(plain_json(meta), indent=1, ensure_ascii=False),
                       file_name=f"sweep-{sweep_id[:8]}.meta.json", mime="application/json",
                       icon=":material/description:", key="sw_meta_json")


def _cells(frame: pd.DataFrame, sweep_id: str, meta: dict[str, Any]) -> None:
    st.dataframe(svc.display_frame(frame), hide_index=True, key="sw_results_table", height=280)
    st.download_button("Download results CSV", frame_csv(frame, meta, "results"),
                       file_name=f"sweep-{sweep_id[:8]}.csv", mime="text/csv",
                       icon=":material/download:", key="sw_csv")
    runs = {r["run_id"]: r for r in records(frame) if isinstance(r["run_id"], str)}
    if not runs:
        st.caption("No cell has a run yet.")
        return
    run_id = st.selectbox("A cell's run", list(runs), key="sw_cell_run",
                          format_func=lambda i: f"{svc.cell_label(runs[i])} · {i[:8]}")
    st.page_link("app_pages/analysis.py", label="Open this run in Analysis",
                 icon=":material/monitoring:", query_params={"run": run_id})


def whatif(store: RunStore, frame: pd.DataFrame) -> None:
    """Threshold × penalty heatmaps of a recorded run's first divergence and lull turn."""
    runs = {r["run_id"]: r for r in records(frame)
            if isinstance(r["run_id"], str) and r["status"] == "finished"}
    if not runs:
        st.caption("What-if needs a finished run.")
        return
    run_id = st.selectbox("Recorded run", list(runs), key="sw_whatif_run",
                          format_func=lambda i: f"{svc.cell_label(runs[i])} · {i[:8]}")
    try:
        record = store.load_run(run_id)
        grid = whatif_record(record)
    except (StoreError, ConfigError) as exc:
        st.error(escape_markdown(str(exc)))
        return
    left, right = st.columns(2)
    left.plotly_chart(charts.matrix_heatmap(
        whatif_pivot(grid, "first_divergence"), "first divergence turn", "turn"),
        key="sw_whatif_div")
    right.plotly_chart(charts.matrix_heatmap(
        whatif_pivot(grid, "lull_turn"), "lull turn (before any divergence)", "turn"),
        key="sw_whatif_lull")
    st.caption("No model calls: each turn is re-selected from the recorded bids. Exact up to "
               "the first divergence (blank: the run would have gone the same way); assumes bids "
               "do not depend on the numbers in the prompt, true for sim/ agents.")
    strategy = record.config.get("strategy")
    if strategy in NAMES_SPEAKERS:
        st.caption(f"This run's strategy, {strategy}, names its speakers without reading "
                   "threshold, penalty or window: every value gives the recorded run.")
