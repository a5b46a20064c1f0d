"""The Runs page's comparison of two stored runs: metrics side by side, then the speaker of
every turn aligned by turn number.

Why its own module: the page stays a thin script; the numbers come from `logic`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from groupchat_core.analysis import speaker_metrics
from groupchat_ui.kit import store_access
from groupchat_ui.kit.safety import escape_markdown
from groupchat_ui.kit.store_access import RunData

from . import compare_view, logic


def delete_question(runs: pd.DataFrame, run_ids: tuple[str, ...]) -> str:
    """The delete confirmation naming the runs; names are user text, so escaped for markdown."""
    return logic.confirm_text([escape_markdown(n) for n in logic.run_names(runs, run_ids)])


SCOPE_KEY = "filter_scope"


def scope(every: pd.DataFrame) -> str:
    """Which runs the table shows: all, the single runs, or one sweep's (so a big sweep's
    runs do not bury the single ones). Applied at once, and kept in the address
    (`?runs=single`, `?sweep=<id>`) so a link shows the same runs."""
    choices = logic.run_scopes(every, store_access.store().list_sweeps())
    params = st.query_params.to_dict()
    wanted = logic.scope_from_query(params, choices)
    if ("runs" in params or "sweep" in params) and st.session_state.get(SCOPE_KEY) != wanted:
        st.session_state[SCOPE_KEY] = wanted
    elif st.session_state.get(SCOPE_KEY) not in choices:
        st.session_state[SCOPE_KEY] = logic.ALL_RUNS
    picked = st.selectbox("Show", list(choices), key=SCOPE_KEY, format_func=choices.__getitem__,
                               on_change=_on_scope,
                               help="Single runs were started alone; a sweep's runs are its "
                                    "cells. The other filters apply within this choice.")
    return str(picked)


def _on_scope() -> None:
    """The address names the picked scope (and no other)."""
    for name in ("runs", "sweep"):
        st.query_params.pop(name, None)
    st.query_params.update(logic.scope_query(str(st.session_state.get(SCOPE_KEY))))


def table(runs: pd.DataFrame) -> pd.DataFrame:
    """The Runs table with labels, local times and honest costs (the store keeps an unknown
    cost as NULL and each run's unpriced bids: no bids are read)."""
    return logic.runs_table(runs)


def compare(a: RunData, b: RunData) -> None:
    """Two runs side by side: metrics, then the speaker of every turn aligned by turn."""
    labels = logic.compare_labels(a.info, a.record.task, b.info, b.record.task)
    ma = speaker_metrics(a.turns, a.bids, stop_reason=a.record.stop_reason)
    mb = speaker_metrics(b.turns, b.bids, stop_reason=b.record.stop_reason)
    st.dataframe(logic.compare_metrics(ma, mb, labels), hide_index=True, key="compare_metrics")
    aligned = logic.aligned_speakers(a.turns, b.turns, labels)
    same = int(aligned["same"].sum()) if not aligned.empty else 0
    st.caption(f"Same speaker on {same} of {len(aligned)} turns.")
    st.dataframe(aligned, hide_index=True, key="compare_speakers")
    compare_view.parameters(a, b, labels)
    compare_view.overlaid(a, b, labels)
