"""The Runs page's comparison of two stored runs: metrics side by side, then the speaker of
every turn aligned by turn number.

Why its own module: the page stays a thin script; the numbers come from `logic`.
"""

from __future__ import annotations

import streamlit as st

from groupchat_core.analysis import speaker_metrics
from ui.kit.store_access import RunData

from . import logic


def compare(a: RunData, b: RunData) -> None:
    """Two runs side by side: metrics, then the speaker of every turn aligned by turn."""
    labels = (f"A: {a.info['name']} ({a.info['run_id'][:8]})",
              f"B: {b.info['name']} ({b.info['run_id'][:8]})")
    ma = speaker_metrics(a.turns, a.bids, stop_reason=a.record.stop_reason)
    mb = speaker_metrics(b.turns, b.bids, stop_reason=b.record.stop_reason)
    st.dataframe(logic.compare_metrics(ma, mb, labels), hide_index=True, key="compare_metrics")
    aligned = logic.aligned_speakers(a.turns, b.turns, labels)
    same = int(aligned["same"].sum()) if not aligned.empty else 0
    st.caption(f"Same speaker on {same} of {len(aligned)} turns.")
    st.dataframe(aligned, hide_index=True, key="compare_speakers")
