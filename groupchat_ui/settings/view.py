"""The Settings page's table of tool-choice modes the engine remembers per provider, and where
the data lives (with any older store found next to it, so none is silently abandoned).

Why visible: a model whose server rejected forced tool calls is asked in a simpler mode (auto,
then plain JSON text) for a while; a room that behaves oddly after a server change may just be
on a remembered mode. "Re-probe now" forgets them all (docs/engine.md, fallback modes).
"""

from __future__ import annotations

import streamlit as st

from groupchat_core import remembered_modes as engine_modes
from groupchat_core.store import data_location, stray_databases
from groupchat_ui.kit import traces as kit_traces
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


def data_home(shown_url: str) -> None:
    """Where runs, agents and presets are stored, why, and older stores not in use."""
    location = data_location()
    st.markdown(f"Runs, agents and presets are stored at `{shown_url}`: "
                f"{logic.data_source(location.source)}. Set `GROUPCHAT_DB` (any SQLAlchemy "
                "URL) or `GROUPCHAT_HOME` (a folder) before starting the server to keep them "
                "elsewhere.")
    for path in stray_databases():
        st.warning("An existing store that is not in use was found (an earlier default). To "
                   "use it, start the server with the line below, or move the file to "
                   f"{'the path above' if location.path else 'a folder of your choice'}.",
                   icon=":material/database:")
        st.code(f"GROUPCHAT_DB=sqlite:///{path}", language=None)


STREAM_HELP = (
    "On: the reply of every candidate on a real model shows on the Run page as it is written "
    "(bids are requested with stream=true). Simulated agents (sim/ models) never stream: they "
    "answer whole, in-process, and a sim winner's message is replayed word by word. Off: bids "
    "arrive whole. Sweeps never stream. For this browser tab, until it is reloaded.")


def streaming() -> None:
    """Whether runs started here stream their bids (the Run page shows candidates forming)."""
    st.toggle("Stream bids live", value=bool(st.session_state.get(STREAM_KEY, True)),
              key="pref_stream_bids", on_change=actions.on_stream_bids,
              help=STREAM_HELP)


def endpoint_key_form() -> None:
    """A key for one API base: saved agents are shared, so a provider key typed above never
    goes to an agent pointing at some other server; its owner's key for it goes here."""
    with st.form("endpoint_key_form", clear_on_submit=False):
        cols = st.columns(2)
        cols[0].text_input("API base (exactly as the agent has it)", key="endpoint_key_base",
                           placeholder="https://llm.example.org/v1")
        cols[1].text_input("Key for that API base", type="password", key="endpoint_key_value",
                           autocomplete="off", placeholder="paste a key to set it")
        st.form_submit_button("Save key for this API base", key="save_endpoint_key",
                              on_click=actions.on_save_endpoint_key)


def traces() -> None:
    """Whether runs started here export OpenTelemetry traces (as `run --trace`), and where."""
    available = kit_traces.tracing_available()
    st.toggle("Trace runs (OpenTelemetry)", key="pref_trace_runs",
              value=bool(st.session_state.get(kit_traces.TRACE_KEY, False)) and available,
              on_change=actions.on_trace_runs, disabled=not available,
              help="On: each run started from the Run page, and each cell of a sweep started "
                   "(or resumed) on the Sweeps page, in this browser tab exports its spans "
                   "(run, turns, bids, model calls; no message content, no key), as "
                   "`groupchat-lab run --trace` and `sweep run --trace` do.")
    if available:
        st.caption(kit_traces.trace_destination() + " Set OTEL_EXPORTER_OTLP_ENDPOINT or "
                   "OTEL_TRACES_EXPORTER before starting the server to send them elsewhere.")
    else:
        st.caption(f"Needs the OpenTelemetry SDK on the server: {kit_traces.INSTALL}.")
