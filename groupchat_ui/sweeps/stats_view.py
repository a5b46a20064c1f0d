"""The Sweeps page's statistics tabs: parameter importance and a comparison of two cells.

Why separate from results_view: both only read the results frame and call the engine's pure
functions (groupchat_core.sweeps.importance / compare_cells); the page shows their numbers and,
when repeats are too few, says so instead of a figure.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from groupchat_core import ConfigError
from groupchat_core.sweeps import CACHE_METRICS, compare_cells, compare_pairs, importance
from groupchat_ui.kit.safety import escape_markdown

from . import charts
from . import logic as svc

METRICS = list(charts.METRIC_LABELS)
IMPORTANCE_HELP = (
    "For each parameter: eta squared, the share of the metric's variance across finished chats "
    "that its values explain (between-level sum of squares / total); omega squared, the same "
    "corrected for the number of values (a parameter with many values, such as every agent "
    "order, explains some variance by chance), which ranks the bars; and p, from a seeded "
    "seeded permutation test with 200 shuffles per row of the table (at least 999), so "
    "Holm's correction can still reject in tables of many rows (the F test's p past 50 million "
    "shuffled values; the `test` column says which). p (Holm) is adjusted across the rows "
    "shown (p_bh: Benjamini-Hochberg): read that one when several parameters are tested. "
    "Grid values are "
    "kept as they are (a 6-value grid is 6 groups); an axis drawn anew per sample (random "
    "search) is tested by Spearman's rank correlation instead (the `test` column says which; "
    "rho squared then stands in for eta and omega squared). "
    "Values with fewer than 2 finished chats are left out; a parameter needs 2 values with 2+ "
    "chats each, else it is listed as too few. Calls made, hit rate and cost measure the bid "
    "cache (what earlier cells left behind), not the parameters: they are not ranked.")
COMPARE_HELP = (
    "B against A over their finished chats (pooled over the axes not picked). When both cells "
    "ran the same seeds (same tasks and repeats) the test is paired: a sign-flip test on the "
    "per-seed differences (6 pairs reach p < 0.05). Otherwise a permutation test on the "
    "difference in means, exact when the splits are at most 20,000, else 9,999 seeded ones. "
    "Rates: difference in proportions with Newcombe's interval. Others: Cliff's delta (share "
    "of pairs where B is higher minus the reverse, -1 to 1, with Feng and Cliff's interval) "
    "and, for counts, Cohen's d (Hedges-Olkin interval). Too few: when no possible split could "
    "reach p < 0.05 (3 vs 3 chats: the smallest p is 0.1), or a side has under 2 chats, no "
    "p-value is given. The verdict reads Holm's p adjusted across every pair of the cells the "
    "axes offer (up to 45 pairs: 10 cells), not the raw p: browsing pairs of a sweep without "
    "effects would otherwise find 'a difference' in most sweeps. Calls made, hit rate and cost "
    "measure the bid cache: shown, not tested. Comparing many metrics at once (`sweep export "
    "--table compare`) adjusts the p-values by Holm across the metrics.")


def importance_tab(frame: pd.DataFrame) -> None:
    """Which parameter moves the chosen metric most, as bars and a table."""
    metric = st.selectbox("Metric", [m for m in METRICS if m not in CACHE_METRICS],
                          key="sw_imp_metric",
                          format_func=charts.metric_label)
    params = svc.group_columns(frame)
    if not params:
        st.info("Only one parameter set was swept: nothing to rank.")
        return
    table = importance(frame, parameters=params, metrics=[metric])
    st.plotly_chart(charts.importance_chart(table, metric), key="sw_importance")
    st.caption("Variance explained per parameter (one-way, over finished chats); p (Holm) is "
               "adjusted across these rows.", help=IMPORTANCE_HELP)
    st.dataframe(svc.display_frame(table), hide_index=True, key="sw_importance_table")


def _cell_name(columns: list[str], values: tuple[Any, ...]) -> str:
    return " · ".join(f"{charts.axis_name(c)} {charts.value_text(v)}"
                      for c, v in zip(columns, values, strict=True))


def compare_tab(frame: pd.DataFrame) -> None:
    """Two cells picked by their parameter values, compared on one metric."""
    axes = svc.group_columns(frame)
    done = frame[frame["status"] == "finished"]
    if not axes or done.empty:
        st.info("Comparing needs a sweep with finished chats at two parameter values.")
        return
    cols = st.columns(2)
    metric = cols[0].selectbox("Metric", METRICS, key="sw_cmp_metric",
                               format_func=charts.metric_label)
    by = cols[1].multiselect("Cells by", axes, default=axes, key="sw_cmp_by",
                             format_func=charts.axis_name)
    if not by:
        st.info("Pick at least one axis that tells the cells apart.")
        return
    unique = done[by].astype(object).drop_duplicates()
    combos = sorted((tuple(r) for r in unique.itertuples(index=False)), key=str)
    if len(combos) < 2:
        st.info("These axes give a single cell: pick another axis.")
        return
    names = {i: _cell_name(by, c) for i, c in enumerate(combos)}
    pick = st.columns(2)
    a = pick[0].selectbox("Cell A", list(names), key="sw_cmp_a", format_func=lambda i: names[i])
    b = pick[1].selectbox("Cell B", list(names), index=1, key="sw_cmp_b",
                          format_func=lambda i: names[i])
    if a == b:
        st.info("Pick two different cells.")
        return
    result = compare_cells(frame, dict(zip(by, combos[a], strict=True)),
                           dict(zip(by, combos[b], strict=True)), metric)
    result = svc.family_verdict(result, *_family_p(frame, by, metric, a, b))
    text = escape_markdown(svc.comparison_text(result, charts.METRIC_LABELS[metric]))
    (st.success if result.enough else st.warning)(text, icon=":material/compare_arrows:")
    st.caption(f"Test: {result.test}; corrected by Holm across every pair of these "
               f"{len(combos)} cells.", help=COMPARE_HELP)


def _family_p(frame: pd.DataFrame, by: list[str], metric: str, a: int,
              b: int) -> tuple[float | None, int | None]:
    """The Holm p of pair (a, b) across all pairs of the cells `by` tells apart, and how many
    pairs that is; (None, None) when they are too many to correct across on a page."""
    try:
        pairs = compare_pairs(frame, by, metric)
    except ConfigError:
        return None, None
    row = pairs[(pairs["a"] == min(a, b)) & (pairs["b"] == max(a, b))]
    p_holm = row["p_holm"].iloc[0] if len(row) else None
    return (None if p_holm is None or pd.isna(p_holm) else float(p_holm)), len(pairs)
