"""Plotly builders for sweep results: DataFrame in, Figure out; no streamlit.

Heatmaps are faceted by recency_window (one panel per window value); confidence-interval
charts draw the mean per threshold with 95 % error bars from `aggregate`, one line per penalty,
over the repeats' own values; the parallel-coordinates view shows one line per finished cell.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from groupchat_core.sweeps import heatmap_frame
from ui.kit.charts import PALETTE, empty_figure

METRIC_LABELS: dict[str, str] = {
    "messages": "mean chat length (messages)",
    "lulled": "lull rate",
    "entropy_bits": "speaker entropy (bits)",
    "gini": "Gini of turn shares",
    "total_cost_usd": "cost (USD)",
}
EMPTY = "no finished cells yet"


def _label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def matrix_heatmap(matrix: pd.DataFrame, title: str, colorbar: str = "",
                   x_title: str = "threshold", y_title: str = "recency_penalty") -> go.Figure:
    """A y × x matrix (rows: y values, columns: x values) as an annotated heatmap."""
    if matrix is None or matrix.empty:
        return empty_figure("nothing to show", title)
    values = matrix.astype(float)
    text = [[("" if pd.isna(v) else f"{v:.3g}") for v in row] for row in values.to_numpy()]
    fig = go.Figure(go.Heatmap(
        z=values.to_numpy(), x=[f"{c:g}" for c in values.columns],
        y=[f"{i:g}" for i in values.index], text=text, texttemplate="%{text}",
        colorscale="Viridis", colorbar={"title": colorbar}, hoverongaps=False))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title)
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


def sweep_heatmaps(agg: pd.DataFrame, metric: str, facet: str = "recency_window") -> go.Figure:
    """Mean `metric` over threshold × recency_penalty, one panel per `facet` value."""
    part = agg[agg["metric"] == metric] if not agg.empty else agg
    if part.empty or part["n"].sum() == 0:
        return empty_figure(EMPTY, _label(metric))
    values = sorted(part[facet].dropna().unique()) if facet in part else [None]
    fig = make_subplots(rows=1, cols=len(values), shared_yaxes=True,
                        subplot_titles=[f"{facet} = {v}" for v in values])
    for i, value in enumerate(values, start=1):
        sub = part if value is None else part[part[facet] == value]
        matrix = heatmap_frame(sub.drop(columns=[facet], errors="ignore"), metric).astype(float)
        fig.add_trace(go.Heatmap(
            z=matrix.to_numpy(), x=[f"{c:g}" for c in matrix.columns],
            y=[f"{r:g}" for r in matrix.index], coloraxis="coloraxis",
            texttemplate="%{z:.3g}", hoverongaps=False,
            name=f"{facet} {value}"), row=1, col=i)
        fig.update_xaxes(title_text="threshold", row=1, col=i)
    fig.update_yaxes(title_text="recency_penalty", row=1, col=1)
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    fig.update_layout(title=_label(metric), coloraxis={"colorscale": "Viridis",
                                                       "colorbar": {"title": ""}})
    return fig


def ci_chart(agg: pd.DataFrame, results: pd.DataFrame, metric: str,
             window: int | None = None) -> go.Figure:
    """Mean ± 95 % CI per threshold, a line per penalty, with each repeat's value as a dot."""
    part = agg[agg["metric"] == metric] if not agg.empty else agg
    if part.empty or part["n"].sum() == 0:
        return empty_figure(EMPTY, _label(metric))
    if window is not None:
        part = part[part["recency_window"] == window]
        results = results[results["recency_window"] == window]
    done = results[results["status"] == "finished"]
    fig = go.Figure()
    for i, (penalty, group) in enumerate(part.sort_values("threshold").groupby(
            "recency_penalty")):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(
            x=group["threshold"], y=group["mean"], mode="lines+markers", marker={"color": color},
            name=f"penalty {penalty:g}", error_y={"type": "data", "symmetric": False,
                                                  "array": group["ci_high"] - group["mean"],
                                                  "arrayminus": group["mean"] - group["ci_low"]}))
        raw = done[done["recency_penalty"] == penalty]
        fig.add_trace(go.Scatter(
            x=raw["threshold"], y=pd.to_numeric(raw[metric], errors="coerce"), mode="markers",
            marker={"color": color, "opacity": 0.35, "size": 6}, showlegend=False,
            name=f"repeats, penalty {penalty:g}"))
    fig.update_layout(title=f"{_label(metric)}: mean and 95% CI over repeats",
                      xaxis_title="threshold", yaxis_title=_label(metric))
    return fig


def parcoords(results: pd.DataFrame, params: Sequence[str], metrics: Sequence[str]) -> go.Figure:
    """One line per finished cell across its parameters and metrics, coloured by the first
    metric."""
    done = results[results["status"] == "finished"] if "status" in results else results
    if done.empty:
        return empty_figure(EMPTY, "cells: parameters and metrics")
    columns = [c for c in [*params, *metrics] if c in done]
    numeric = done[columns].apply(pd.to_numeric, errors="coerce").astype(float)
    dims = [{"label": _label(c), "values": numeric[c].fillna(0.0)} for c in columns]
    color = numeric[metrics[0]].fillna(0.0) if metrics and metrics[0] in numeric else None
    line = {"color": color, "colorscale": "Viridis", "showscale": True} if color is not None \
        else {}
    fig = go.Figure(go.Parcoords(dimensions=dims, line=line))
    fig.update_layout(title="cells: parameters and metrics")
    return fig
