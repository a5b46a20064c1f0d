"""How records show themselves in Jupyter: one escaped HTML summary table, and the seam through
which `RunRecord.figures()` reaches the chart builders.

Why escaping here, once: every value (the task, agent names, an error) is model or user text
and untrusted; a notebook renders `_repr_html_` as live HTML. Why a seam: records sit at the
bottom of the import layers and the charts (analysis, plotly) well above; the package root,
which may import anything, sets `figures_builder` (groupchat_core/__init__.py).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

FiguresBuilder = Callable[[Any], dict[str, Any]]
figures_builder: FiguresBuilder | None = None  # set by groupchat_core/__init__.py

SIM_MARK = "simulated: offline sim/ agents took part, not language models"
_STYLE = "text-align:left;vertical-align:top;padding:1px 8px"


def summary_html(title: str, rows: Sequence[tuple[str, str]], mark: str | None = None) -> str:
    """A compact two-column table under a bold title (and a mark such as SIM_MARK), every
    piece of text escaped."""
    body = "".join(f'<tr><th style="{_STYLE}">{html.escape(k)}</th>'
                   f'<td style="{_STYLE}">{html.escape(v)}</td></tr>' for k, v in rows)
    note = f"<p><em>{html.escape(mark)}</em></p>" if mark else ""
    return f"<div><strong>{html.escape(title)}</strong>{note}<table>{body}</table></div>"


def shares_text(counts: dict[str, int]) -> str:
    """`A 3 (50%), B 3 (50%)`: who spoke how often, most first (ties in first-spoke order)."""
    total = sum(counts.values())
    if not total:
        return "nobody spoke"
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{name} {n} ({n / total:.0%})" for name, n in ranked)


def record_figures(record: Any) -> dict[str, Any]:
    """The key Analysis figures of `record`, through the builder the package root installed."""
    if figures_builder is None:  # only while groupchat_core/__init__.py is still importing
        raise RuntimeError("groupchat_core is not fully imported yet")
    return figures_builder(record)
