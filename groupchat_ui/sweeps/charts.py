"""Plotly builders for sweep results: DataFrame in, Figure out; no streamlit.

Heatmaps are faceted by recency_window (one panel per window value); interval charts draw the
mean per value of any axis (threshold by default; order, roster, model as categories) with the
95 % interval `aggregate` chose for the metric (Wilson for rates, bootstrap for bounded
metrics, t for counts), one line per value of a second axis, over the chats' own values;
importance charts rank the parameters per metric; the parallel-coordinates view shows one line
per finished cell.

Readability: a metric's axis never runs past what the metric can be (a chat length is never
negative, a rate stays within 0 to 1: METRIC_BOUNDS), and the error bars stop there too; lines
for different penalties are dodged sideways and drawn half-transparent so none hides another.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from groupchat_core.analysis.charts import PALETTE, empty_figure
from groupchat_core.sweeps import NATURES, heatmap_frame

METRIC_LABELS: dict[str, str] = {
    "messages": "mean chat length (messages)",
    "lulled": "lull rate",
    "entropy_bits": "speaker entropy (bits)",
    "gini": "Gini of turn shares",
    "total_cost_usd": "cost (USD)",
}
# Short names for the parallel-coordinates axes (their labels sit side by side).
SHORT_LABELS: dict[str, str] = {
    "threshold": "threshold", "recency_penalty": "recency<br>penalty",
    "recency_window": "recency<br>window", "messages": "chat length<br>(messages)",
    "lulled": "lull rate", "entropy_bits": "entropy<br>(bits)", "gini": "Gini",
    "total_cost_usd": "cost<br>(USD)",
}
# What a metric can be: (lowest, highest); None: no bound on that side. From the engine's one
# table of metric natures (groupchat_core.sweeps.NATURES), so charts and intervals agree.
METRIC_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    name: (nature.low, nature.high) for name, nature in NATURES.items()}
DODGE = 0.06  # share of the smallest threshold gap between neighbouring penalty lines
EMPTY = "no finished cells yet"


def _label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def matrix_heatmap(matrix: pd.DataFrame, title: str, colorbar: str = "",
                   x_title: str = "threshold", y_title: str = "recency_penalty") -> go.Figure:
    """A y × x matrix (rows: y values, columns: x values) as an annotated heatmap; a colour
    bar titled "turn" gets whole-number ticks."""
    if matrix is None or matrix.empty:
        return empty_figure("nothing to show", title)
    values = matrix.astype(float)
    text = [[("" if pd.isna(v) else f"{v:.3g}") for v in row] for row in values.to_numpy()]
    fig = go.Figure(go.Heatmap(
        z=values.to_numpy(), x=[f"{c:g}" for c in values.columns],
        y=[f"{i:g}" for i in values.index], text=text, texttemplate="%{text}",
        colorscale="Viridis", colorbar=_colorbar(colorbar, values), hoverongaps=False))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title)
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


def _colorbar(title: str, values: pd.DataFrame) -> dict[str, object]:
    bar: dict[str, object] = {"title": title}
    if title == "turn":
        finite = [float(v) for v in values.to_numpy().ravel() if pd.notna(v)]
        span = max(finite) - min(finite) if finite else 0.0
        bar.update(tickformat="d", tickmode="linear", dtick=max(1, math.ceil(span / 10)))
    return bar


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


def _clip(values: pd.Series, metric: str) -> pd.Series:
    low, high = METRIC_BOUNDS.get(metric, (None, None))
    return values.clip(lower=low, upper=high)


def metric_range(metric: str, values: Sequence[float]) -> list[float] | None:
    """A y range over `values` with a little padding, never past the metric's bounds (the
    traces draw with cliponaxis=False, so a marker on the bound shows whole)."""
    finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not finite:
        return None
    low, high = min(finite), max(finite)
    pad = ((high - low) or max(abs(high), 1.0)) * 0.08
    lo, hi = low - pad, high + pad
    bottom, top = METRIC_BOUNDS.get(metric, (None, None))
    return [lo if bottom is None else max(lo, bottom), hi if top is None else min(hi, top)]


def _dodge_step(positions: pd.Series, lines: int) -> float:
    values = sorted(set(float(t) for t in positions.dropna()))
    gaps = [b - a for a, b in zip(values, values[1:], strict=False) if b > a]
    return (min(gaps) if gaps else 0.1) * DODGE if lines > 1 else 0.0


def _numeric(values: pd.Series) -> bool:
    return bool(values.notna().all()) and pd.api.types.is_numeric_dtype(values)


def value_text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float | int) and not isinstance(value, bool) \
        else str(value)


def metric_label(metric: str) -> str:
    """A metric's name in pickers and titles ('mean chat length (messages)')."""
    return METRIC_LABELS.get(metric, metric)


def axis_name(column: str) -> str:
    """A short name for an axis in legends ('penalty 0.3')."""
    return {"recency_penalty": "penalty", "recency_window": "window",
            "agent_models": "models", "task_index": "task"}.get(column, column)


def ci_chart(agg: pd.DataFrame, results: pd.DataFrame, metric: str,
             window: int | None = None, x: str = "threshold",
             line: str | None = "recency_penalty") -> go.Figure:
    """Mean ± 95 % interval per value of `x`, a line per value of `line` (None: one line),
    with each chat's value as a dot. `agg` must be aggregated by x (and line); the interval is
    the one that fits the metric (`interval_method`: Wilson, bootstrap or t).

    A numeric x (threshold) keeps its scale; any other axis (order, roster, model) is drawn as
    categories. The lines are dodged sideways and half-transparent; the interval and the axis
    stop at the metric's bounds (METRIC_BOUNDS)."""
    part = agg[agg["metric"] == metric] if not agg.empty else agg
    if part.empty or part["n"].sum() == 0:
        return empty_figure(EMPTY, _label(metric))
    if window is not None and "recency_window" in part:
        part = part[part["recency_window"] == window]
        results = results[results["recency_window"] == window]
    done = results[results["status"] == "finished"] if "status" in results else results
    numeric = _numeric(part[x])
    ticks = sorted(part[x].dropna().unique().tolist(), key=lambda v: (not numeric, v)) \
        if numeric else sorted(part[x].astype(str).unique().tolist())
    where = (lambda v: v) if numeric else {t: i for i, t in enumerate(ticks)}.__getitem__
    fig = go.Figure()
    groups = list(part.groupby(line, dropna=False)) if line else [(None, part)]
    positions = pd.Series([float(where(v if numeric else str(v))) for v in part[x]])
    step = _dodge_step(positions, len(groups))
    shown: list[float] = []
    for i, (value, group) in enumerate(groups):
        group = group.sort_values(x)
        color = PALETTE[i % len(PALETTE)]
        offset = (i - (len(groups) - 1) / 2) * step
        name = "mean" if line is None else f"{axis_name(line)} {value_text(value)}"
        xs = [float(where(v if numeric else str(v))) + offset for v in group[x]]
        high = _clip(group["ci_high"], metric)
        low = _clip(group["ci_low"], metric)
        fig.add_trace(go.Scatter(
            x=xs, y=group["mean"], mode="lines+markers",
            opacity=0.8, marker={"color": color, "size": 8}, line={"color": color},
            customdata=list(group[x]), name=name, cliponaxis=False, legendgroup=name,
            hovertemplate=(f"{name}, {axis_name(x)} %{{customdata}}: mean %{{y:.3g}}"
                           "<extra></extra>"),
            error_y={"type": "data", "symmetric": False, "array": high - group["mean"],
                     "arrayminus": group["mean"] - low, "color": color, "thickness": 1.5}))
        raw = done if line is None else done[done[line] == value]
        values = pd.to_numeric(raw[metric], errors="coerce")
        fig.add_trace(go.Scatter(
            x=[float(where(v if numeric else str(v))) + offset for v in raw[x]], y=values,
            mode="markers", marker={"color": color, "opacity": 0.35, "size": 6},
            showlegend=False, name=f"chats, {name}", legendgroup=name, cliponaxis=False))
        shown += [*group["mean"], *high, *low, *values]
    fig.update_yaxes(range=metric_range(metric, shown))
    fig.update_xaxes(tickmode="array", tickvals=[float(where(t)) for t in ticks],
                     ticktext=[value_text(t) for t in ticks])
    dodge = f" (lines dodged sideways per {axis_name(line)})" if line else ""
    fig.update_layout(title=f"{_label(metric)}: mean and 95% interval over chats",
                      xaxis_title=f"{axis_name(x)}{dodge}", yaxis_title=_label(metric))
    return fig


def importance_chart(table: pd.DataFrame, metric: str) -> go.Figure:
    """Omega squared per parameter for one metric, most important on top; parameters with too
    few chats to say anything are left out (the table says why)."""
    part = table[(table["metric"] == metric) & table["enough"].astype(bool)] \
        if not table.empty else table
    if part.empty:
        return empty_figure("too few finished chats to rank the parameters", _label(metric))
    part = part.iloc[::-1]
    values = pd.to_numeric(part["omega_squared"], errors="coerce").clip(lower=0.0)
    text = [f"ω² {w:.2f} · η² {e:.2f} · p {p:.3g}" for w, e, p in
            zip(values, part["eta_squared"], part["p_value"], strict=True)]
    fig = go.Figure(go.Bar(x=values, y=[axis_name(p) for p in part["parameter"]],
                           orientation="h", text=text, textposition="auto",
                           marker={"color": PALETTE[0]}))
    fig.update_layout(title=f"What moves {_label(metric)}: variance explained per parameter",
                      xaxis_title="omega squared (share of variance, corrected for levels)",
                      xaxis={"range": [0, 1]})
    return fig


# Parcoords draws each axis's min and max once more above and below it ("range" labels); a
# two-line axis title's second line sat on the top one ("penalty" over "0.3"). They are left
# out: the ticks give the values.
HIDDEN_RANGE: dict[str, str] = {"color": "rgba(0,0,0,0)"}


def flat_range(values: pd.Series) -> list[float] | None:
    """A range for an axis whose values are all one value v: 0..v (0..1 at 0), never plotly's
    v-1..v+1 (an all-zero cost axis ran from -1 to 1). None for an axis with a spread."""
    finite = values.dropna()
    if finite.empty or finite.min() != finite.max():
        return None
    v = float(finite.iloc[0])
    return [min(0.0, v), max(0.0, v) or 1.0]


def parcoords_dimension(label: str, values: pd.Series) -> dict[str, object]:
    """One parcoords axis (missing values at 0), with flat_range for a constant one."""
    dim: dict[str, object] = {"label": label, "values": values.fillna(0.0)}
    flat = flat_range(values.fillna(0.0))
    if flat is not None:
        dim["range"] = flat
    return dim


def parcoords(results: pd.DataFrame, params: Sequence[str], metrics: Sequence[str]) -> go.Figure:
    """One line per finished cell across its parameters and metrics, coloured by the first
    metric."""
    done = results[results["status"] == "finished"] if "status" in results else results
    if done.empty:
        return empty_figure(EMPTY, "cells: parameters and metrics")
    columns = [c for c in [*params, *metrics] if c in done]
    numeric = done[columns].apply(pd.to_numeric, errors="coerce").astype(float)
    # a text axis (order, roster, model) has no numeric scale here: left out, not drawn as 0
    columns = [c for c in columns if c in metrics or numeric[c].notna().any()]
    dims = [parcoords_dimension(SHORT_LABELS.get(c, c), numeric[c]) for c in columns]
    color = numeric[metrics[0]].fillna(0.0) if metrics and metrics[0] in numeric else None
    line = {"color": color, "colorscale": "Viridis", "showscale": True,
            "colorbar": {"title": {"text": SHORT_LABELS.get(metrics[0], metrics[0])}}} \
        if color is not None else {}
    fig = go.Figure(go.Parcoords(dimensions=dims, line=line, labelangle=0,
                                 rangefont=HIDDEN_RANGE,
                                 labelfont={"size": 12}))
    # the outer axes' labels are centred on them: side margins keep them whole ("threshold",
    # not "hold"), and the top margin leaves room for two-line labels under the title
    fig.update_layout(title="cells: parameters and metrics",
                      margin={"l": 90, "r": 110, "t": 120, "b": 40})
    return fig
