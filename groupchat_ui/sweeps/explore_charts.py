"""Plotly builders for the Sweeps page's exploring views: parallel coordinates with a top-k
brush and log axes, interval bands, a config x seed delta matrix, bid stability. DataFrame in,
Figure out; no streamlit. The numbers come from groupchat_core.sweeps (_views.py).

Brushing: plotly's parallel coordinates let a user drag along any axis to keep only the lines
through that range (constraintrange); the top-k % control sets that range on the colour
metric's axis, so the brush and the table of kept cells agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from groupchat_core.analysis.charts import PALETTE, empty_figure
from groupchat_core.sweeps import log_axis

from .charts import (
    EMPTY,
    HIDDEN_RANGE,
    SHORT_LABELS,
    axis_name,
    metric_label,
    metric_range,
    parcoords_dimension,
    value_text,
)


def _dimension(name: str, values: pd.Series, brush: tuple[float, float] | None) -> dict[str, Any]:
    """One parcoords axis; a log axis (log10 values, ticks in the original units) where
    log_axis says it fits."""
    label = SHORT_LABELS.get(name, name)
    finite = values.dropna()
    if log_axis(finite) and len(finite) == len(values):
        logs = np.log10(values.astype(float))
        ticks = sorted(set(float(v) for v in finite))
        dim: dict[str, Any] = {"label": f"{label} (log)", "values": logs,
                     "tickvals": [math.log10(t) for t in ticks],
                     "ticktext": [f"{t:g}" for t in ticks]}
        if brush:
            dim["constraintrange"] = [math.log10(b) for b in brush]
        return dim
    dim = parcoords_dimension(label, values)
    if brush:
        dim["constraintrange"] = list(brush)
    return dim


def parcoords_brushed(results: pd.DataFrame, params: Sequence[str], metrics: Sequence[str],
              color: str, brush: tuple[float, float] | None = None) -> go.Figure:
    """One line per finished cell across `params` then `metrics`, coloured by `color`; `brush`
    (low, high) keeps only the lines whose `color` value is in it (drawn as the axis's range)."""
    done = results[results["status"] == "finished"] if "status" in results else results
    if done.empty:
        return empty_figure(EMPTY, "cells: parameters and metrics")
    columns = list(dict.fromkeys(c for c in [*params, *metrics, color] if c in done))
    numeric = done[columns].apply(pd.to_numeric, errors="coerce").astype(float)
    columns = [c for c in columns if c in metrics or c == color or numeric[c].notna().any()]
    dims = [_dimension(c, numeric[c], brush if c == color else None) for c in columns]
    shade = numeric[color].fillna(0.0) if color in numeric else None
    line = {"color": shade, "colorscale": "Viridis", "showscale": True,
            "colorbar": {"title": {"text": SHORT_LABELS.get(color, color)}}} \
        if shade is not None else {}
    fig = go.Figure(go.Parcoords(dimensions=dims, line=line, labelangle=0,
                                 rangefont=HIDDEN_RANGE,
                                 labelfont={"size": 12}))
    fig.update_layout(title="cells: parameters and metrics (drag along an axis to brush)",
                      margin={"l": 90, "r": 110, "t": 120, "b": 40})
    return fig


def bands_chart(bands: pd.DataFrame, metric: str, x: str) -> go.Figure:
    """Mean per value of `x` with its 95 % interval as a shaded band, one band per `band`
    label; a log x axis where it fits; rows without an interval show the mean alone."""
    if bands.empty:
        return empty_figure(EMPTY, metric_label(metric))
    numeric = pd.api.types.is_numeric_dtype(bands[x]) and bands[x].notna().all()
    fig = go.Figure()
    shown: list[float] = []
    for i, (name, group) in enumerate(bands.groupby("band", sort=False)):
        group = group.sort_values(x)
        xs = list(group[x]) if numeric else [str(v) for v in group[x]]
        color = PALETTE[i % len(PALETTE)]
        low, high = group["ci_low"], group["ci_high"]
        has = low.notna() & high.notna()
        if has.any():
            bx = [v for v, h in zip(xs, has, strict=True) if h]
            fig.add_trace(go.Scatter(
                x=[*bx, *bx[::-1]], y=[*high[has], *low[has][::-1]], fill="toself",
                fillcolor=color, opacity=0.2, line={"width": 0}, hoverinfo="skip",
                showlegend=False, legendgroup=str(name), name=f"95% band, {name}"))
        fig.add_trace(go.Scatter(x=xs, y=group["mean"], mode="lines+markers", name=str(name),
                                 legendgroup=str(name), line={"color": color},
                                 customdata=np.stack([group["n"], low, high], axis=-1),
                                 hovertemplate="mean %{y:.3g} (n %{customdata[0]}), 95% "
                                               "%{customdata[1]:.3g} to %{customdata[2]:.3g}"
                                               "<extra>%{fullData.name}</extra>"))
        shown += [*group["mean"], *low.dropna(), *high.dropna()]
    fig.update_yaxes(range=metric_range(metric, shown), title=metric_label(metric))
    fig.update_xaxes(title=axis_name(x) + (" (log)" if numeric and log_axis(bands[x]) else ""),
                     type="log" if numeric and log_axis(bands[x]) else
                     (None if numeric else "category"))
    fig.update_layout(title=f"{metric_label(metric)} by {axis_name(x)}: seeds collapsed into "
                            "95% bands", legend_title_text="band")
    return fig


def delta_matrix(deltas: pd.DataFrame, values: pd.DataFrame, baseline: str,
                 metric: str) -> go.Figure:
    """Seeds x configurations, coloured by the delta to the baseline (diverging around 0),
    each cell labelled with its value and delta."""
    if deltas.empty:
        return empty_figure(EMPTY, metric_label(metric))
    text = [[("" if pd.isna(v) else f"{value_text(round(float(v), 3))}"
              + ("" if pd.isna(d) or c == baseline else f" ({d:+.3g})"))
             for v, d, c in zip(vrow, drow, deltas.columns, strict=True)]
            for vrow, drow in zip(values.to_numpy(), deltas.to_numpy(), strict=True)]
    span = float(np.nanmax(np.abs(deltas.to_numpy()))) if deltas.notna().any().any() else 0.0
    fig = go.Figure(go.Heatmap(
        z=deltas.to_numpy(), x=[("baseline: " if c == baseline else "") + str(c)
                                for c in deltas.columns],
        y=list(deltas.index), text=text, texttemplate="%{text}", colorscale="RdBu",
        zmid=0, zmin=-span or -1, zmax=span or 1, hoverongaps=False,
        colorbar={"title": {"text": "delta"}}))
    fig.update_xaxes(type="category", tickangle=-20)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_layout(title=f"{metric_label(metric)}: value (delta to the baseline) per seed")
    return fig


def stability_chart(table: pd.DataFrame, setting: Sequence[str]) -> go.Figure:
    """Per setting and agent, the spread of its mean bid across seeds (min to max, a dot at
    the mean); the longer the bar, the less stable the agent's bid."""
    if table.empty:
        return empty_figure("no finished runs with bids yet", "bid stability across seeds")
    fig = go.Figure()
    labels = [" · ".join(f"{axis_name(c)} {value_text(r[c])}" for c in setting) or "all"
              for _, r in table.iterrows()]
    for i, agent in enumerate(dict.fromkeys(table["agent"])):
        mask = (table["agent"] == agent).to_numpy()
        part = table[mask]
        ys = [lab for lab, m in zip(labels, mask, strict=True) if m]
        fig.add_trace(go.Scatter(
            x=part["mean_bid"], y=ys, mode="markers", name=str(agent),
            marker={"color": PALETTE[i % len(PALETTE)], "size": 9},
            error_x={"type": "data", "symmetric": False,
                     "array": part["max_bid"] - part["mean_bid"],
                     "arrayminus": part["mean_bid"] - part["min_bid"]},
            customdata=np.stack([part["std_bid"], part["seeds"]], axis=-1),
            hovertemplate="mean bid %{x:.3f}, sd across seeds %{customdata[0]:.3f} "
                          "(%{customdata[1]} seeds)<extra>%{fullData.name}</extra>"))
    fig.update_xaxes(title="mean bid per seed: min, mean, max across seeds", range=[0, 1])
    fig.update_yaxes(type="category", title="setting")
    fig.update_layout(title="bid stability: how much each agent's bid varies across seeds",
                      height=max(320, 60 + 40 * len(set(labels))))
    return fig
