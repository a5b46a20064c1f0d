"""The Settings page's table of tool-choice modes the engine remembers per provider.

Why visible: a model whose server rejected forced tool calls is asked in a simpler mode (auto,
then plain JSON text) for a while; a room that behaves oddly after a server change may just be
on a remembered mode. "Re-probe now" forgets them all (docs/engine.md, fallback modes).
"""

from __future__ import annotations

import streamlit as st

from groupchat_core import remembered_modes as engine_modes
from groupchat_ui.kit.components import feedback

from . import actions, logic
from .actions import STREAM_KEY


def remembered_modes() -> None:
    table = logic.modes_table(engine_modes())
    if table.empty:
        st.caption("None: every model is asked with forced tool choice first.")
    else:
        st.caption("After a server rejected forced tool calls, these models are asked in a "
                   "simpler mode until the time runs out; then the next bid probes again.")
        st.dataframe(table, hide_index=True, key="remembered_modes")
    st.button("Re-probe now", key="reprobe_modes", icon=":material/refresh:",
              on_click=actions.on_reprobe, disabled=table.empty,
              help="Forget every remembered mode: the next bid of each model tries forced "
                   "tool choice again.")
    feedback("modes")


def streaming() -> None:
    """Whether runs started here stream their bids (the Run page shows candidates forming)."""
    st.toggle("Stream bids live", value=bool(st.session_state.get(STREAM_KEY, True)),
              key="pref_stream_bids", on_change=actions.on_stream_bids,
              help="On: every candidate's reply shows on the Run page as it is written (bids "
                   "are requested with stream=true). Off: bids arrive whole. Sweeps never "
                   "stream. For this browser tab, until it is reloaded.")
